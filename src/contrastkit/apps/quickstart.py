"""The whole contrastkit workflow in one offline run: ``contrastkit quickstart``.

Steps, each with the same library code the separate commands use:

1. a COCO-format folder of the public-domain photos that installed packages ship
   (:mod:`contrastkit.samples`);
2. GenSynth edits of each one-person photo
   (:func:`~contrastkit.builders.gensynth.run_edit_stage`), the KNN filter (Eq. 4-5), the
   per-gender selection and the Sec. 4.3 quality checks;
3. the Hugging Face export with its dataset card, and the dry-run publish that checks
   that ``datasets.load_dataset`` loads the repository tree;
4. the contrast-set evaluation (GenSynth Sec. 5) of the CLIP-like model;
5. ``QUICKSTART.md`` and ``quickstart.json``: what ran, with which models, and where every
   output is.

Models: ``editor`` / ``model`` when given (a model asked for that does not load is an
error); otherwise the defaults (``timbrooks/instruct-pix2pix``,
``open_clip:ViT-B-32/openai``) when they are on this machine; otherwise, and only then,
tiny models with the real architectures and random weights built on the spot
(:mod:`contrastkit.tiny`), which the log, the result and the report say. ``tiny=True``
uses tiny models whatever is cached. With tiny models the figures are a pipeline check,
not a measurement; the filter then accepts every edit (``tau = -1``), because random
embeddings make the paper's thresholds meaningless.

Example::

    from contrastkit.apps.quickstart import QuickstartConfig, quickstart

    result = quickstart(QuickstartConfig(out="build/quickstart"), log=print)
    print(result.tiny, result.fallbacks, result.files["report"])
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from contrastkit.config import ModelConfig, require
from contrastkit.curation.editing import DEFAULT_EDITOR
from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.text import UNDEFINED, format_number, table_header, table_row

if TYPE_CHECKING:
    from contrastkit.builders.gensynth.select import SelectEntry

__all__ = [
    "DEFAULT_MODEL",
    "PIPELINE_CHECK_NOTE",
    "SAMPLE_PHOTOS",
    "TINY_ASKED_NOTE",
    "QuickstartConfig",
    "QuickstartResult",
    "quickstart",
    "sample_provenance",
]

DEFAULT_MODEL = "open_clip:ViT-B-32/openai"
PIPELINE_CHECK_NOTE = (
    "No real models were available, so tiny models with random weights were used: these "
    "figures are a pipeline check, not a measurement. Pass --editor and --model (or cache "
    "timbrooks/instruct-pix2pix and ViT-B-32/openai) for real figures."
)
TINY_ASKED_NOTE = (
    "Tiny models with random weights were used (--tiny): these figures are a pipeline "
    "check, not a measurement. Pass --editor and --model (or cache "
    "timbrooks/instruct-pix2pix and ViT-B-32/openai) for real figures."
)
#: The repository id the dry-run publish rehearses with.
QUICKSTART_REPO = "contrastkit/quickstart"

#: Where the photos of :mod:`contrastkit.samples` come from: photo name -> (what, credit
#: and licence). The quickstart card names these, never COCO or Flickr.
SAMPLE_PHOTOS: dict[str, tuple[str, str]] = {
    "grace_hopper": ("Grace Hopper (matplotlib's grace_hopper.jpg)", "US Navy, public domain"),
    "astronaut": ("Eileen Collins (scikit-image's astronaut)", "NASA photo, public domain"),
    "camera": ('the "cameraman" (scikit-image\'s camera)', "CC0, by Lav Varshney"),
}  # fmt: skip


def sample_provenance() -> tuple[str, str]:
    """The quickstart card's source description and licence sentence, from the photos
    :func:`contrastkit.samples.write_coco` actually writes (:data:`SAMPLE_PHOTOS`)."""
    from contrastkit.samples import IMAGES

    names = list(dict.fromkeys(photo for photo, _, _ in IMAGES.values()))
    credits = "; ".join(f"{SAMPLE_PHOTOS[name][0]}: {SAMPLE_PHOTOS[name][1]}" for name in names)
    description = (
        "the public-domain sample photos that matplotlib and scikit-image ship, laid out as "
        "a small COCO-format folder by contrastkit (person boxes drawn and captions written "
        "by hand; not COCO images), keeping photos with exactly one person box and a "
        "caption gender label"
    )
    licence = (
        f"Source photos: {credits}. They are in the public domain or CC0, so the edits "
        "carry no third-party licence; no COCO or Flickr image is included."
    )
    return description, licence


@dataclass(frozen=True)
class QuickstartConfig:
    """What :func:`quickstart` runs (a string ``out`` is taken as a path).

    Attributes:
        out: Output folder (created; rerunning reuses finished edits).
        editor: InstructPix2Pix folder or Hub id; ``None``: the default if it is on this
            machine, else a tiny editor.
        model: CLIP-like spec for the filter, quality checks and evaluation; ``None``:
            ``open_clip:ViT-B-32/openai`` if it is on this machine, else a tiny model.
        tiny: Use tiny random-weight models even if real ones are cached (then
            ``editor`` and ``model`` must be ``None``).
        steps: Denoising steps of a real editor (tiny editors use 2).
        tau_real, tau_gender: Filter thresholds; default the paper's with real models
            and ``-1`` (accept all) with tiny ones.
        runtime: Device, dtype, batch size and download permission of the models.
    """

    out: Path
    editor: str | None = None
    model: str | None = None
    tiny: bool = False
    steps: int = 20
    tau_real: float | None = None
    tau_gender: float | None = None
    runtime: ModelConfig = field(default_factory=lambda: ModelConfig(batch_size=8))

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))
        require(self.steps >= 1, "steps", f"must be >= 1, not {self.steps}")
        require(isinstance(self.runtime, ModelConfig), "runtime", "must be a ModelConfig")
        for name in ("editor", "model"):
            value = getattr(self, name)
            require(value is None or bool(value.strip()), name, "names no model")
            require(
                not (self.tiny and value is not None),
                name,
                "tiny=True (`--tiny`) builds its own models; leave editor and model unset",
            )
        if self.model is not None:
            from contrastkit.models import check_dual

            check_dual(self.model)


class QuickstartSummary(TypedDict):
    """What the quickstart did: edits made and accepted by the filter, source photos
    edited and kept, images in the contrast set, the rows the Hub tree check loaded (by
    config and split), the evaluation's summary and the pipeline-check note."""

    edits: int
    edits_accepted: int | None
    sources_edited: int
    sources_kept: int
    images: int
    hub_tree_loads: dict[str, dict[str, int]]
    evaluation: Mapping[str, Any]
    note: str | None


class QuickstartJson(TypedDict):
    """A :class:`QuickstartResult` as written to ``quickstart.json``."""

    editor: str
    model: str
    tiny_models: bool
    fallbacks: list[str]
    files: dict[str, str]
    summary: QuickstartSummary


@dataclass(frozen=True)
class QuickstartResult:
    """What :func:`quickstart` ran and wrote.

    Attributes:
        out: The output folder.
        editor, model: What edited and what scored (a spec, or a tiny model's folder).
        tiny: Whether any tiny model was used (the figures are then a pipeline check).
        tiny_editor, tiny_model: Which of the two was tiny.
        fallbacks: Why a tiny model replaced a default one, one line each (empty when
            the defaults loaded, a model was given, or ``tiny=True`` asked for them).
        files: Name -> path of every output.
        summary: Edits, kept sources, images, the Hub tree check, the evaluation
            summary and the pipeline-check note (``None`` with real models).
    """

    out: Path
    editor: str
    model: str
    tiny: bool
    tiny_editor: bool
    tiny_model: bool
    fallbacks: tuple[str, ...]
    files: dict[str, str]
    summary: QuickstartSummary

    def to_json(self) -> QuickstartJson:
        """The result as written to ``quickstart.json``."""
        return {
            "editor": self.editor,
            "model": self.model,
            "tiny_models": self.tiny,
            "fallbacks": list(self.fallbacks),
            "files": self.files,
            "summary": self.summary,
        }


@dataclass(frozen=True)
class _Built:
    """What the build did: the select stage's summary, the edits made and how many the
    filter accepted (``None`` when its report does not say)."""

    select: SelectEntry
    edits_made: int
    edits_accepted: int | None


@dataclass(frozen=True)
class _Loaded:
    model: Any
    name: str
    tiny: bool
    fallback: str | None = None


def _first_sentence(error: Exception) -> str:
    """What was missing, without the how-to (passing the model by name shows it all)."""
    text = str(error)
    return text.split(". ", 1)[0].rstrip(".")


@dataclass(frozen=True)
class _ModelChoice:
    """A model of the quickstart: the one ``asked`` for (or None), the ``default``, what it
    is called in messages, how to load a spec and how to build a tiny one."""

    asked: str | None
    default: str
    what: str
    load: Callable[[str], Any]
    build_tiny: Callable[[], tuple[Any, str]]


def _load_or_tiny(choice: _ModelChoice, tiny: bool, say: Callable[[str], None]) -> _Loaded:
    """The model asked for; else the default; else, only if the default is not on this
    machine (or ``tiny``), a tiny one built by ``choice.build_tiny``. A model asked for by
    name that does not load is an error, never silently replaced."""
    fallback = None
    if not tiny:
        spec = choice.asked or choice.default
        try:
            return _Loaded(choice.load(spec), spec, False)
        except ModelNotFoundError as error:
            if choice.asked is not None:
                raise
            fallback = (
                f"the default {choice.what} is not available ({_first_sentence(error)}); "
                "using a tiny one"
            )
            say(f"  {fallback}")
    model, name = choice.build_tiny()
    return _Loaded(model, name, True, fallback)


def _load_editor(config: QuickstartConfig, folder: Path, say: Callable[[str], None]) -> _Loaded:
    """The InstructPix2Pix editor (:func:`_load_or_tiny`)."""
    from contrastkit.curation.editing import load_editor

    def build_tiny() -> tuple[Any, str]:
        from contrastkit.tiny.editor import tiny_instruct_pix2pix

        spec = tiny_instruct_pix2pix(folder)  # ip2p:FOLDER/tiny-instruct-pix2pix
        editor = load_editor(spec, replace(config.runtime, batch_size=16, dtype=None))
        return editor, str(folder / "tiny-instruct-pix2pix")

    def load(spec: str) -> Any:
        return load_editor(spec, config.runtime)

    choice = _ModelChoice(config.editor, DEFAULT_EDITOR, "editor", load, build_tiny)
    return _load_or_tiny(choice, config.tiny, say)


def _load_model(config: QuickstartConfig, folder: Path, say: Callable[[str], None]) -> _Loaded:
    """The CLIP-like model (:func:`_load_or_tiny`)."""
    from contrastkit.models import load_scorer

    def build_tiny() -> tuple[Any, str]:
        from contrastkit.tiny.clip import tiny_open_clip

        spec = tiny_open_clip(folder)
        return load_scorer(spec, replace(config.runtime, dtype=None)), spec

    def load(spec: str) -> Any:
        return load_scorer(spec, config.runtime)

    choice = _ModelChoice(config.model, DEFAULT_MODEL, "CLIP-like model", load, build_tiny)
    return _load_or_tiny(choice, config.tiny, say)


def _thresholds(config: QuickstartConfig, any_tiny: bool) -> tuple[float, float]:
    from contrastkit.curation.knn_filter import DEFAULT_TAU_GENDER, DEFAULT_TAU_REAL

    if any_tiny and config.tau_real is None and config.tau_gender is None:
        return -1.0, -1.0  # random embeddings: the paper's thresholds mean nothing
    return (
        DEFAULT_TAU_REAL if config.tau_real is None else config.tau_real,
        DEFAULT_TAU_GENDER if config.tau_gender is None else config.tau_gender,
    )


def _accepted(report: Any) -> int | None:
    """How many edits the filter accepted, from its report (a dict or a dataclass)."""
    if isinstance(report, dict):
        value = report.get("accepted")
    else:
        value = getattr(report, "accepted", None)
    return int(value) if isinstance(value, int) else None


def _build(
    config: QuickstartConfig, coco: Path, editor: _Loaded, scorer: _Loaded, build: Path
) -> _Built:
    """Edit, filter, select and check; return the select summary."""
    from contrastkit.builders.gensynth import (
        EditStageConfig,
        FilterSettings,
        run_edit_stage,
        run_filter_stage,
        run_select_stage,
    )
    from contrastkit.builders.gensynth.quality import run_quality_checks
    from contrastkit.curation.editing import EditSettings

    settings = (
        EditSettings(steps=2, resolution=32) if editor.tiny else EditSettings(steps=config.steps)
    )
    edited = run_edit_stage(EditStageConfig(coco, build, settings, min_box_side=64), editor.model)
    tau_real, tau_gender = _thresholds(config, editor.tiny or scorer.tiny)
    thresholds = FilterSettings(k=50, tau_real=tau_real, tau_gender=tau_gender)
    filtered = run_filter_stage(build, scorer.model, thresholds)
    built = _Built(
        run_select_stage(build, seed=0),
        edits_made=edited.edited + edited.skipped_finished,
        edits_accepted=_accepted(filtered),
    )
    if built.select["sources_kept"] == 0:
        raise ConfigError(
            f"tau_real, tau_gender: no source photo kept an accepted edit of each gender "
            f"({build / 'manifest.jsonl'} has the P_R and P_G of every edit); rerun with "
            "lower --tau-real / --tau-gender"
        )
    run_quality_checks(build, scorer.model, None)
    return built


def _evaluate(
    export_dir: Path, scorer: ImageTextScorer, name: str, folder: Path, note: str | None
) -> tuple[dict[str, Any], dict[str, Path]]:
    """GenSynth Sec. 5 on the exported set: retrieval bias and pair preference."""
    from contrastkit.evaluators.report import model_slug
    from contrastkit.evaluators.runner import EvalConfig
    from contrastkit.evaluators.tasks.contrast_sets.scoring import (
        ContrastLabels,
        ContrastSettings,
        evaluate_contrast,
        load_contrast,
        write_contrast_outputs,
    )

    # the bootstrap of `contrastkit evaluate` (its default resamples): the report and plot
    # show intervals, not a legend telling the reader to rerun with --bootstrap N
    settings = ContrastSettings(ks=(2, 4), bootstrap=EvalConfig().bootstrap)
    evaluation = evaluate_contrast(load_contrast(export_dir), scorer, settings)
    files = write_contrast_outputs(
        evaluation, folder / model_slug(name), ContrastLabels(name, str(export_dir), note=note)
    )
    return evaluation, files


def quickstart(
    config: QuickstartConfig, *, log: Callable[[str], None] | None = None
) -> QuickstartResult:
    """Run build -> filter -> select -> export -> dry-run publish -> evaluate -> report.

    Args:
        config: What to run (:class:`QuickstartConfig`).
        log: Called with one line per step, and with the reason of any fallback to a
            tiny model.

    Raises:
        ResourceError: ``out`` cannot be written (checked first).
        ModelNotFoundError: an editor or model asked for by name does not load (never
            replaced by a tiny one).
        ConfigError: the filter thresholds kept no source photo.
    """
    from contrastkit.builders.export import ExportContrastConfig, export_contrast_set
    from contrastkit.builders.publish import PublishConfig, publish
    from contrastkit.evaluators.html import HtmlReportConfig, write_html_report
    from contrastkit.samples import write_coco

    say = log or (lambda line: None)
    out = check_writable(config.out, "the quickstart folder")
    say("1/6 writing the sample COCO folder (public-domain photos)")
    coco = write_coco(out / "coco")
    say("2/6 loading models")
    editor = _load_editor(config, out / "models", say)
    scorer = _load_model(config, out / "models", say)
    build = out / "build"
    say(f"3/6 editing with {editor.name}, filtering and selecting with {scorer.name}")
    built = _build(config, coco, editor, scorer, build)
    say("4/6 exporting the contrast set with its dataset card")
    export_dir = out / "export"
    description, licence = sample_provenance()
    export_contrast_set(ExportContrastConfig(
        build, export_dir, pretty_name="contrastkit quickstart contrast set",
        source_description=description, source_licence=licence,
    ))  # fmt: skip
    dry = publish(PublishConfig(export_dir, QUICKSTART_REPO, dry_run=True, tree=out / "export-hub"))
    say(f"5/6 evaluating {scorer.name} on the exported set")
    any_tiny = editor.tiny or scorer.tiny
    note = (TINY_ASKED_NOTE if config.tiny else PIPELINE_CHECK_NOTE) if any_tiny else None
    evaluation, files = _evaluate(export_dir, scorer.model, scorer.name, out / "results", note)
    say("6/6 writing the reports (markdown and the offline HTML report)")
    html = write_html_report(
        HtmlReportConfig(results=(files["benchmark"].parent,), out=out / "report")
    )
    result = QuickstartResult(
        out=out,
        editor=editor.name,
        model=scorer.name,
        tiny=any_tiny,
        tiny_editor=editor.tiny,
        tiny_model=scorer.tiny,
        fallbacks=tuple(f for f in (editor.fallback, scorer.fallback) if f),
        files={
            "coco": str(coco),
            "build": str(build),
            "build_summary": str(build / "build_summary.json"),
            "export": str(export_dir),
            "card": str(export_dir / "README.md"),
            "hub_tree": str(dry.tree),
            **{f"evaluation_{name}": str(path) for name, path in files.items()},
            "report": str(out / "QUICKSTART.md"),
            "html_report": str(html.index),
        },
        summary={
            "edits": built.edits_made,
            "edits_accepted": built.edits_accepted,
            "sources_edited": built.select["sources_with_edits"],
            "sources_kept": built.select["sources_kept"],
            "images": built.select["images"],
            "hub_tree_loads": dry.loaded_rows,
            "evaluation": evaluation["summary"],
            "note": note,
        },
    )
    atomic_write_text(out / "quickstart.json", json.dumps(result.to_json(), indent=2) + "\n")
    atomic_write_text(out / "QUICKSTART.md", _markdown(result))
    return result


def _markdown(result: QuickstartResult) -> str:
    s = result.summary
    evaluation = s["evaluation"]
    retrieval = evaluation["retrieval"]
    lines = ["# contrastkit quickstart", ""]
    if result.tiny:
        lines += [f"> **{s['note']}**", ""]
    lines += [f"> {line}" for line in result.fallbacks]
    lines += [""] if result.fallbacks else []
    lines += [
        f"- Editor: `{result.editor}`" + (" (tiny, random weights)" if result.tiny_editor else ""),
        f"- CLIP-like model (filter, quality checks, evaluation): `{result.model}`"
        + (" (tiny, random weights)" if result.tiny_model else ""),
        f"- Contrast set: {s['images']} images from {s['sources_kept']} source photos "
        f"(of {s['sources_edited']} edited; {s['edits']} edits made, "
        f"{s['edits_accepted'] if s['edits_accepted'] is not None else UNDEFINED} accepted by "
        "the filter)",
        f"- Hub tree check: `datasets.load_dataset` loads {s['hub_tree_loads']}",
        "",
        "## Evaluation (GenSynth Sec. 5)",
        "",
        *table_header(["metric", "mean"], "lr"),
    ]
    for name in ("bias_gensynth@2", "bias@2", "maxskew@2", "bias_gensynth@4", "bias@4"):
        if name in retrieval:
            lines.append(table_row([name, format_number(retrieval[name]["mean"], 3, sign=True)]))
    pairs = evaluation["pairs"]
    lines += [
        table_row(["masculine preferred in pairs", format_number(pairs["masculine_preferred"], 3)]),
        "",
        "## Files",
        "",
    ]
    lines += [f"- {name}: `{path}`" for name, path in result.files.items()]
    lines += ["", "## Next", ""]
    lines += [
        f"Open `{result.files['html_report']}` in a browser (it needs no server and no "
        "network): the figures, and each source's two versions with the model's scores.",
        "",
    ]
    if result.tiny:
        lines += [
            "This set was made with random-weight models: do not publish it. Its card says "
            "so, and `contrastkit publish` refuses it without "
            "`--i-know-these-are-random-weights`. Rehearse the upload with "
            f"`contrastkit publish {result.files['export']} --repo-id USER/NAME --dry-run` "
            "(nothing leaves the machine), and build a real set with real models first.",
        ]
    else:
        lines += [
            "Rehearse the upload with `contrastkit publish "
            f"{result.files['export']} --repo-id USER/NAME --dry-run` (nothing leaves the "
            "machine); read the card (`README.md` of the export) before publishing anything.",
        ]
    return "\n".join(lines) + "\n"
