"""The whole contrastkit workflow in one offline run: ``contrastkit quickstart``.

Steps, each with the same library code the separate commands use:

1. a COCO-format folder of the public-domain photos that installed packages ship
   (:mod:`contrastkit.samples`);
2. GenSynth edits of each one-person photo (:func:`~contrastkit.builders.gensynth.run_edit_stage`),
   the KNN filter (Eq. 4-5) and the per-gender selection with the Sec. 4.3 quality checks;
3. the Hugging Face export with its dataset card, and the ``publish --dry-run`` check that
   ``datasets.load_dataset`` loads the repository tree;
4. the contrast-set evaluation (GenSynth Sec. 5) of the CLIP-like model;
5. ``QUICKSTART.md`` and ``quickstart.json``: what ran, with which models, and where every
   output is.

Models: ``editor`` / ``model`` when given; otherwise the defaults
(``timbrooks/instruct-pix2pix``, ``open_clip:ViT-B-32/openai``) when they are in the local
cache; otherwise tiny models with the real architectures and random weights built on the
spot (:mod:`contrastkit.tiny`). With tiny models the figures are a pipeline check, not a
measurement, and the report says so; the filter then accepts every edit (``tau = -1``),
because random embeddings make the paper's thresholds meaningless.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit.builders.export import export_contrast_set
from contrastkit.builders.gensynth import run_edit_stage, run_filter_stage, run_select_stage
from contrastkit.builders.publish import publish
from contrastkit.curation.editing import DEFAULT_EDITOR, EditSettings, load_editor
from contrastkit.curation.knn_filter import DEFAULT_TAU_GENDER, DEFAULT_TAU_REAL
from contrastkit.evaluators.contrast import evaluate_contrast, load_contrast, write_contrast_outputs
from contrastkit.evaluators.models import ModelNotFoundError, load_scorer
from contrastkit.evaluators.report import model_slug
from contrastkit.io import atomic_write_text
from contrastkit.samples import write_coco
from contrastkit.tiny.clip import tiny_open_clip
from contrastkit.tiny.editor import tiny_instruct_pix2pix

__all__ = ["DEFAULT_MODEL", "PIPELINE_CHECK_NOTE", "QuickstartResult", "run_quickstart"]

DEFAULT_MODEL = "open_clip:ViT-B-32/openai"
PIPELINE_CHECK_NOTE = (
    "No real models were available, so tiny models with random weights were used: these "
    "figures are a pipeline check, not a measurement. Pass --editor and --model (or cache "
    "timbrooks/instruct-pix2pix and ViT-B-32/openai) for real figures."
)


@dataclass
class QuickstartResult:
    """What the quickstart ran and wrote."""

    out: Path
    editor: str
    model: str
    tiny: bool
    files: dict[str, str] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)


def _editor(spec: str | None, folder: Path, force_tiny: bool) -> tuple[Any, str, bool]:
    if not force_tiny:
        try:
            chosen = spec or DEFAULT_EDITOR
            return load_editor(chosen, batch_size=8), chosen, False
        except ValueError:
            if spec is not None:
                raise
    path = tiny_instruct_pix2pix(folder / "tiny-instruct-pix2pix")
    return load_editor(path, batch_size=16), str(path), True


def _scorer(spec: str | None, folder: Path, force_tiny: bool) -> tuple[Any, str, bool]:
    if not force_tiny:
        try:
            chosen = spec or DEFAULT_MODEL
            return load_scorer(chosen), chosen, False
        except ModelNotFoundError:
            if spec is not None:
                raise
    tiny = tiny_open_clip(folder)
    return load_scorer(tiny), tiny, True


def run_quickstart(
    out: Path,
    *,
    editor: str | None = None,
    model: str | None = None,
    tiny: bool = False,
    steps: int = 20,
    tau_real: float | None = None,
    tau_gender: float | None = None,
    log: Callable[[str], None] | None = None,
) -> QuickstartResult:
    """Run build -> filter -> select -> export -> dry-run publish -> evaluate -> report.

    Args:
        out: Output folder (created; rerunning reuses finished edits).
        editor: InstructPix2Pix folder or Hub id (cached); default: cached default, or tiny.
        model: CLIP-like spec for the filter, quality checks and evaluation; default:
            cached ``ViT-B-32/openai``, or tiny.
        tiny: Use tiny random-weight models even if real ones are cached.
        steps: Denoising steps of real editors (tiny editors use 2).
        tau_real, tau_gender: Filter thresholds; default the paper's with real models and
            ``-1`` (accept all) with tiny ones.
        log: Called with one line per step.
    """
    say = log or (lambda line: None)
    out = Path(out)
    models = out / "models"
    say("1/6 writing the sample COCO folder (public-domain photos)")
    coco = write_coco(out / "coco")
    say("2/6 loading models")
    ip2p, editor_name, tiny_editor = _editor(editor, models, tiny)
    scorer, model_name, tiny_model = _scorer(model, models, tiny)
    any_tiny = tiny_editor or tiny_model
    settings = EditSettings(steps=2, resolution=32) if tiny_editor else EditSettings(steps=steps)
    build = out / "build"
    say(f"3/6 editing with {editor_name}, filtering and selecting with {model_name}")
    run_edit_stage(coco, build, ip2p, settings, min_box_side=64)
    accept_all = any_tiny and tau_real is None and tau_gender is None
    run_filter_stage(
        build,
        scorer,
        k=50,
        tau_real=-1.0 if accept_all else (DEFAULT_TAU_REAL if tau_real is None else tau_real),
        tau_gender=-1.0 if accept_all else (
            DEFAULT_TAU_GENDER if tau_gender is None else tau_gender
        ),
    )  # fmt: skip
    select = run_select_stage(build, seed=0, model=scorer)
    if select["sources_kept"] == 0:
        raise ValueError(
            f"no source photo kept an accepted edit of each gender ({build}/manifest.jsonl "
            "has the P_R and P_G of every edit); rerun with lower --tau-real / --tau-gender"
        )
    say("4/6 exporting the contrast set with its dataset card")
    export_dir = out / "export"
    export_contrast_set(build, export_dir, pretty_name="contrastkit quickstart contrast set")
    dry = publish(export_dir, "contrastkit/quickstart", dry_run=True, tree=out / "export-hub")
    say(f"5/6 evaluating {model_name} on the exported set")
    results_dir = out / "results" / model_slug(model_name)
    note = PIPELINE_CHECK_NOTE if any_tiny else None
    evaluation = evaluate_contrast(load_contrast(export_dir), scorer, ks=(2, 4))
    files = write_contrast_outputs(
        evaluation, results_dir, model=model_name, data=str(export_dir), note=note
    )
    result = QuickstartResult(
        out=out,
        editor=editor_name,
        model=model_name,
        tiny=any_tiny,
        files={
            "coco": str(coco),
            "build": str(build),
            "build_summary": str(build / "build_summary.json"),
            "export": str(export_dir),
            "card": str(export_dir / "README.md"),
            "hub_tree": str(dry.tree),
            **{f"evaluation_{name}": str(path) for name, path in files.items()},
            "report": str(out / "QUICKSTART.md"),
        },
        summary={
            "edits": select["sources_with_edits"],
            "sources_kept": select["sources_kept"],
            "images": select["images"],
            "hub_tree_loads": dry.loaded_rows,
            "evaluation": evaluation["summary"],
            "note": note,
        },
    )
    say("6/6 writing the report")
    payload = {
        "editor": result.editor,
        "model": result.model,
        "tiny_models": result.tiny,
        "files": result.files,
        "summary": result.summary,
    }
    atomic_write_text(out / "quickstart.json", json.dumps(payload, indent=2) + "\n")
    atomic_write_text(out / "QUICKSTART.md", _markdown(result))
    return result


def _markdown(result: QuickstartResult) -> str:
    s = result.summary
    evaluation = s["evaluation"]
    retrieval = evaluation["retrieval"]
    lines = ["# contrastkit quickstart", ""]
    if result.tiny:
        lines += [f"> **{PIPELINE_CHECK_NOTE}**", ""]
    lines += [
        f"- Editor: `{result.editor}`",
        f"- CLIP-like model (filter, quality checks, evaluation): `{result.model}`",
        f"- Contrast set: {s['images']} images from {s['sources_kept']} source photos "
        f"(of {s['edits']} edited)",
        f"- Hub tree check: `datasets.load_dataset` loads {s['hub_tree_loads']}",
        "",
        "## Evaluation (GenSynth Sec. 5)",
        "",
        "| metric | mean |",
        "|---|---:|",
    ]
    for name in ("bias_gensynth@2", "bias@2", "maxskew@2", "bias_gensynth@4", "bias@4"):
        if name in retrieval:
            lines.append(f"| {name} | {retrieval[name]['mean']:+.3f} |")
    pairs = evaluation["pairs"]
    lines += [
        f"| masculine preferred in pairs | {pairs['masculine_preferred']:.3f} |",
        "",
        "## Files",
        "",
    ]
    lines += [f"- {name}: `{path}`" for name, path in result.files.items()]
    lines += [
        "",
        "Next: `contrastkit publish "
        f"{result.files['export']} --repo-id USER/NAME --dry-run`, then without --dry-run.",
    ]
    return "\n".join(lines) + "\n"
