"""``contrastkit audit``: is the benchmark itself biased? (GenSynth Sec. 3 and 5)

:func:`audit` runs, on one data set, the analyses of GenSynth Sec. 3 that need no
model of gender at all, and writes ``audit.json``, ``audit.md`` and plots (PNG, SVG):

1. **composition** (:mod:`contrastkit.audit.composition`): images per caption label
   (Sec. 3.2);
2. **baselines** (:mod:`contrastkit.audit.baselines`): Bias@K and MaxSkew@K of a random
   model and a TF-IDF caption-to-caption model, and of any registry dual encoder, on the
   gender-neutral captions, on the data as is and on balanced subsamples (Sec. 3.4,
   Tab. 1);
3. **classifier** (:mod:`contrastkit.audit.classifier`): held-out AUC of predicting the
   label from neutral captions (Sec. 3.3); with an ``image_probe`` model, also from
   person-masked and unmasked images (:mod:`contrastkit.audit.image_probe`);
4. **clusters** (:mod:`contrastkit.audit.clusters`): K-means context clusters of neutral
   caption embeddings and their male over-representation (Sec. 3.3, Fig. 1, Tab. 6).

With ``build`` (the GenSynth / GenSwap build folder a contrast set came from), it also
measures how much context the build's edits changed outside the person mask
(:mod:`contrastkit.builders.gensynth.context`), for any build, old or new.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit import __version__
from contrastkit.audit.baselines import (
    BalancedSet,
    Baselines,
    Cutoffs,
    QueryOwners,
    balanced_subsample,
    random_scores,
    retrieval_bias,
    run_statistics,
    tfidf_scores,
)
from contrastkit.audit.classifier import (
    FineTunedClassifier,
    LinearClassifier,
    ProbeSettings,
    caption_classifier,
)
from contrastkit.audit.clusters import ClusterSettings, cluster_member, context_clusters
from contrastkit.audit.composition import PAPER_COUNTS, cell_composition, composition
from contrastkit.audit.data import AuditData, load_audit_data
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.metrics import Summary
from contrastkit.io import atomic_write_text
from contrastkit.results import SCHEMA_VERSION

if TYPE_CHECKING:
    from contrastkit.audit.image_probe import ImageProbeSection, SkippedProbe

__all__ = ["ANALYSES", "AuditConfig", "AuditResult", "audit"]

#: The analyses, in the order they run and are reported.
ANALYSES = ("composition", "baselines", "classifier", "image_probe", "clusters")


def _positive_ks(name: str, values: tuple[int, ...]) -> None:
    if not values or any(isinstance(k, bool) or not isinstance(k, int) or k < 1 for k in values):
        raise ConfigError(f"{name} must be positive integers, not {values!r}")


@dataclass(frozen=True)
class AuditConfig:
    """What :func:`audit` reads, runs and writes.

    Attributes:
        data: a COCO folder (``annotations/captions_<split>.json``, optional
            ``instances_<split>.json``, images in ``<split>/``), a contrast-set export, or
            a VisoGender-style set (:func:`contrastkit.audit.data.load_audit_data`).
        out: the output folder (created).
        split: the COCO split (``val2017``; default the only one present), or the split
            of a saved dataset dict.
        analyses: which of :data:`ANALYSES` to run.
        ks_bias: Bias@K cut-offs (Tab. 1: 5, 10).
        ks_skew: MaxSkew@K cut-offs (Tab. 1: 25, 100).
        balanced: also score balanced subsamples (Tab. 1, right).
        runs: balanced subsamples drawn (the paper: 5).
        seed: seeds every random choice (random model, subsamples, split, bootstrap,
            K-means).
        models: registry dual-encoder specs added to the baselines table.
        image_probe: a registry dual-encoder spec whose frozen image embeddings the
            image probe uses (needs images and COCO person boxes); ``None``: no probe.
        clusters: ``M``, the K-means clusters (the paper: 20).
        text_encoder: a local ``transformers`` model folder for the cluster embeddings;
            ``None``: the LSA fallback.
        test_fraction: held-out share of the caption classifier's images.
        caption_model: a local ``transformers`` folder fine-tuned as the caption
            classifier (the paper's BERT-base; :func:`~.classifier.fine_tuned_scores`);
            ``None``: the linear model on TF-IDF.
        epochs: fine-tuning epochs of ``caption_model``.
        resamples, level: the classifier's bootstrap interval.
        model: device, dtype, batch size and download permission of ``models``, the
            image probe's model and the text encoder (:class:`contrastkit.config.ModelConfig`).
        build: the build folder the contrast set came from: adds the ``context`` section
            (the share of pixels each edit changed outside the dilated person mask, and
            the mean change inside the box but outside the person) and
            ``context_change.jsonl`` (one line per edit).
    """

    data: Path
    out: Path
    split: str | None = None
    analyses: tuple[str, ...] = ANALYSES
    ks_bias: tuple[int, ...] = (5, 10)
    ks_skew: tuple[int, ...] = (25, 100)
    balanced: bool = False
    runs: int = 5
    seed: int = 0
    models: tuple[str, ...] = ()
    image_probe: str | None = None
    clusters: int = 20
    text_encoder: Path | None = None
    caption_model: Path | None = None
    epochs: int = 3
    test_fraction: float = 0.3
    resamples: int = 1000
    level: float = 0.95
    model: ModelConfig = field(default_factory=ModelConfig)
    build: Path | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "data", Path(self.data))  # strings are taken as paths
        object.__setattr__(self, "out", Path(self.out))
        for name in ("text_encoder", "caption_model", "build"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        if self.epochs < 1:
            raise ConfigError(f"epochs must be at least 1, not {self.epochs}")
        object.__setattr__(self, "analyses", tuple(self.analyses))
        unknown = [a for a in self.analyses if a not in ANALYSES]
        if unknown or not self.analyses:
            raise ConfigError(f"analyses must be some of {', '.join(ANALYSES)}, not {unknown}")
        _positive_ks("ks_bias", self.ks_bias)
        _positive_ks("ks_skew", self.ks_skew)
        if self.runs < 1:
            raise ConfigError(f"runs must be at least 1, not {self.runs}")
        if self.clusters < 1:
            raise ConfigError(f"clusters must be at least 1, not {self.clusters}")
        if not 0 < self.test_fraction < 1:
            raise ConfigError(f"test_fraction must be between 0 and 1, not {self.test_fraction}")
        if self.resamples < 1:
            raise ConfigError(f"resamples must be at least 1, not {self.resamples}")
        if not 0 < self.level < 1:
            raise ConfigError(f"level must be between 0 and 1, not {self.level}")
        if not isinstance(self.model, ModelConfig):
            raise ConfigError("model: must be a ModelConfig")
        if self.models:
            from contrastkit.audit.clipclip import PREFIX, parse_clip_clip_spec
            from contrastkit.models.registry import check_dual

            for spec in self.models:
                check_dual(parse_clip_clip_spec(spec).base if spec.startswith(PREFIX) else spec)
        if self.image_probe is not None:
            from contrastkit.models.registry import check_dual

            check_dual(self.image_probe)


@dataclass(frozen=True)
class AuditResult:
    """What :func:`audit` found and wrote.

    Attributes:
        report: the content of ``audit.json``.
        json_path, markdown_path: ``audit.json`` and ``audit.md``.
        plots: the plots (each as PNG and SVG), in report order.
        points: the per-image coordinates of the cluster map (not in the JSON).
    """

    report: dict[str, Any]
    json_path: Path
    markdown_path: Path
    plots: tuple[Path, ...] = ()
    points: dict[str, list[Any]] = field(default_factory=dict)


@dataclass(frozen=True)
class _RetrievalSet:
    """The images ``indices`` as a retrieval set: each image's group number, every
    image's neutral captions (and the position of their image) as the TF-IDF corpus,
    and the queries: each group's distinct neutral captions, with the group number."""

    indices: list[int]
    labels: list[str]
    image_groups: np.ndarray
    captions: list[str]
    caption_images: np.ndarray
    queries: list[str]
    query_groups: np.ndarray

    @classmethod
    def of(cls, data: AuditData, indices: Sequence[int]) -> _RetrievalSet:
        numbers: dict[str, int] = {}
        groups: list[int] = []
        captions: list[str] = []
        owners: list[int] = []
        queries: list[str] = []
        query_groups: list[int] = []
        seen: set[tuple[int, str]] = set()
        for position, index in enumerate(indices):
            image = data.images[index]
            group = numbers.setdefault(image.group_key, len(numbers))
            groups.append(group)
            for caption in image.neutral_captions:
                captions.append(caption)
                owners.append(position)
                if (group, caption) not in seen:
                    seen.add((group, caption))
                    queries.append(caption)
                    query_groups.append(group)
        return cls(
            list(indices),
            [data.images[i].label for i in indices],
            np.asarray(groups, dtype=np.int64),
            captions,
            np.asarray(owners, dtype=np.int64),
            queries,
            np.asarray(query_groups, dtype=np.int64),
        )


@dataclass
class _Embedded:
    """A dual encoder's image embeddings (all images) and the text embedding of every
    distinct neutral caption (``rows``: caption -> row of ``texts``)."""

    spec: str
    images: np.ndarray
    texts: np.ndarray
    rows: dict[str, int]


def _embed_model(
    spec: str, data: AuditData, config: AuditConfig, fitted: Path | None = None
) -> _Embedded:
    """Embed every image and distinct neutral caption with ``spec`` (a ``clip-clip:``
    spec is fitted first, and its choice written to ``fitted``)."""
    from contrastkit.models.base import batched
    from contrastkit.models.registry import load_scorer
    from contrastkit.pipeline import embed_images

    missing = [
        image
        for image in data.images
        if image.source is None and (image.path is None or not image.path.is_file())
    ]
    if missing:
        where = missing[0].path or data.source
        raise DataFormatError(
            where, None, None,
            f"image file missing ({len(missing)} of {len(data.images)} images); "
            "--model needs the images",
        )  # fmt: skip
    from contrastkit.audit.clipclip import PREFIX, load_clip_clip

    runtime = config.model
    if spec.startswith(PREFIX):
        scorer: Any = load_clip_clip(spec, runtime, save=fitted)
    else:
        scorer = load_scorer(spec, runtime)
    images = embed_images(scorer, [image.image_source for image in data.images])
    rows: dict[str, int] = {}
    for image in data.images:
        for caption in image.neutral_captions:
            rows.setdefault(caption, len(rows))
    texts = np.concatenate([scorer.encode_texts(list(chunk)) for chunk in batched(list(rows), 256)])
    return _Embedded(spec, np.asarray(images, np.float64), np.asarray(texts, np.float64), rows)


def _model_scores(embedded: _Embedded, subset: _RetrievalSet) -> Any:
    texts = embedded.texts[[embedded.rows[query] for query in subset.queries]]
    images = embedded.images[np.asarray(subset.indices)]

    def block(start: int, stop: int) -> np.ndarray:
        result: np.ndarray = texts[start:stop] @ images.T
        return result

    return block


def _score_set(
    data: AuditData,
    indices: Sequence[int],
    config: AuditConfig,
    rng: np.random.Generator,
    embedded: Sequence[_Embedded],
) -> dict[str, dict[str, Summary]]:
    """Every model's metrics on the images ``indices``."""
    subset = _RetrievalSet.of(data, indices)
    labels = subset.labels
    owners = QueryOwners(subset.query_groups, subset.image_groups)
    cutoffs = Cutoffs(config.ks_bias, config.ks_skew)
    result = {
        "random": retrieval_bias(random_scores(rng, len(indices)), labels, owners, cutoffs),
        "tfidf": retrieval_bias(
            tfidf_scores(subset.captions, subset.caption_images, subset.queries),
            labels,
            replace(owners, exclude_own=True),
            cutoffs,
        ),
    }
    for model in embedded:
        result[model.spec] = retrieval_bias(_model_scores(model, subset), labels, owners, cutoffs)
    return result


def _baselines(data: AuditData, config: AuditConfig, say: Callable[[str], None]) -> Baselines:
    from contrastkit.audit.clipclip import PREFIX

    embedded = []
    fitted: dict[str, str] = {}
    for number, spec in enumerate(config.models, start=1):
        say(f"embedding images and captions with {spec}")
        saved = None
        if spec.startswith(PREFIX):
            saved = Path(config.out) / f"clip_clip_{number}.json"
            fitted[spec] = saved.name
        embedded.append(_embed_model(spec, data, config, saved))
    everything = list(range(len(data.images)))
    say("scoring the baselines on the data as is")
    original = _score_set(data, everything, config, np.random.default_rng(config.seed), embedded)
    models = list(original)
    result: Baselines = {
        "ks_bias": list(config.ks_bias),
        "ks_skew": list(config.ks_skew),
        "queries": int(_RetrievalSet.of(data, everything).query_groups.size),
        "labelled_images": sum(label in ("masculine", "feminine") for label in data.labels),
        "ranked_images": len(data.images),  # undefined images take ranks too
        "models": {name: {"original": original[name]} for name in models},
    }
    if config.models:
        from contrastkit.audit.clipclip import parse_clip_clip_spec
        from contrastkit.models.registry import weights_note

        bases = {
            spec: parse_clip_clip_spec(spec).base if spec.startswith(PREFIX) else spec
            for spec in config.models
        }
        result["weights_notes"] = {
            spec: note for spec, base in bases.items() if (note := weights_note(base)) is not None
        }
        if fitted:
            result["clip_clip_files"] = fitted
    if not config.balanced:
        return result
    labels = data.labels
    runs: list[dict[str, dict[str, Summary]]] = []
    sets: list[BalancedSet] = []
    for run in range(config.runs):
        say(f"scoring balanced subsample {run + 1} of {config.runs}")
        chosen = balanced_subsample(labels, np.random.default_rng((config.seed, run)))
        chosen_labels = [labels[i] for i in chosen]
        sets.append(
            {
                "run": run,
                "images": int(chosen.size),
                "masculine": chosen_labels.count("masculine"),
                "feminine": chosen_labels.count("feminine"),
                "undefined": chosen_labels.count("undefined"),
            }
        )
        runs.append(
            _score_set(
                data,
                chosen.tolist(),
                config,
                np.random.default_rng((config.seed, run, 1)),
                embedded,
            )
        )
    result["balanced_sets"] = sets
    for name in models:
        result["models"][name]["balanced"] = run_statistics([run[name] for run in runs])
    return result


def _probe_settings(config: AuditConfig) -> ProbeSettings:
    """The split and the bootstrap interval of the caption classifier and image probe."""
    return ProbeSettings(config.test_fraction, config.seed, config.resamples, config.level)


def _caption_classifier_kind(config: AuditConfig) -> LinearClassifier | FineTunedClassifier:
    """The linear caption classifier, or the transformer of ``--caption-model``."""
    if config.caption_model is None:
        return LinearClassifier()
    return FineTunedClassifier(
        config.caption_model, epochs=config.epochs, device=config.model.device or "cpu"
    )


def _image_probe(data: AuditData, config: AuditConfig) -> ImageProbeSection | SkippedProbe:
    from contrastkit.audit.image_probe import image_probe
    from contrastkit.models.registry import load_scorer

    assert config.image_probe is not None
    if not data.has_instances:
        return {"skipped": "the data has no person boxes (COCO instances_<split>.json)"}
    scorer = load_scorer(config.image_probe, config.model)
    from contrastkit.models.registry import weights_note

    found = image_probe(
        data.images,
        scorer,
        _probe_settings(config),
    )
    found["weights_note"] = weights_note(config.image_probe)
    return found


def _finite_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (strict JSON)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: _finite_json(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite_json(item) for item in value]
    return value


def audit(config: AuditConfig, say: Callable[[str], None] | None = None) -> AuditResult:
    """Audit one data set for gender skew and spurious context (module docstring).

    Args:
        config: what to read, run and write.
        say: called with a line of progress before each step (default: nothing).

    Returns:
        The report and the files written under ``config.out``: ``audit.json``,
        ``audit.md`` and ``plots/*.png`` / ``.svg``.

    Raises:
        DataFormatError: unreadable or malformed data; a missing image with ``models``.
        ConfigError, ModelNotFoundError: a model or text encoder that cannot be used.
    """
    say = say or (lambda _line: None)
    say(f"reading {config.data}")
    data = load_audit_data(config.data, config.split)
    out = Path(config.out)
    out.mkdir(parents=True, exist_ok=True)
    labels = data.labels
    captions = sum(len(image.captions) for image in data.images)
    config_json = {
        key: (str(value) if isinstance(value, Path) else value)
        for key, value in asdict(config).items()
        if key != "build" or value is not None  # audits without one read as before
    }
    report: dict[str, Any] = {
        "task": "audit",
        "schema_version": SCHEMA_VERSION,
        "contrastkit_version": __version__,
        "data": str(config.data),
        "format": data.format,
        "split": data.split,
        "label_source": data.label_source,
        "config": config_json,
    }
    points: dict[str, list[Any]] = {}
    if "composition" in config.analyses:
        report["composition"] = composition(labels, captions)
        if data.split in PAPER_COUNTS and data.format == "coco":
            report["composition"]["paper_counts"] = PAPER_COUNTS[data.split]
        if data.format == "visogender":
            report["composition"]["cells"] = cell_composition(
                [image.cell for image in data.images], labels
            )
    if captions == 0:
        # a VisoGender set: every other analysis reads captions
        reason = f"a {data.format} set has no captions"
        for name in ("baselines", "classifier", "clusters"):
            if name in config.analyses:
                report[_SECTIONS[name]] = {"skipped": reason}
        return _write(report, {}, out, {})
    if "baselines" in config.analyses:
        report["baselines"] = _baselines(data, config, say)
    if "classifier" in config.analyses:
        say("fitting the caption classifier")
        report["caption_classifier"] = caption_classifier(
            [" ".join(image.neutral_captions) for image in data.images],
            labels,
            groups=[image.group_key for image in data.images],
            settings=_probe_settings(config),
            classifier=_caption_classifier_kind(config),
        )
    if "image_probe" in config.analyses and config.image_probe is not None:
        say(f"probing person-masked images with {config.image_probe}")
        report["image_probe"] = _image_probe(data, config)
    if "clusters" in config.analyses:
        say("clustering the neutral captions")
        found = context_clusters(
            [image.neutral_captions for image in data.images],
            labels,
            ClusterSettings(
                clusters=config.clusters,
                text_encoder=config.text_encoder,
                seed=config.seed,
                device=config.model.device or "cpu",
            ),
            [cluster_member(image, data.source) for image in data.images],
        )
        points = found.pop("points", {})
        report["clusters"] = found
    if config.build is not None:
        from contrastkit.audit.context import context_section

        report["context"] = context_section(config.data, config.build, out, say)
    return _write(report, points, out, _weights_notes(config, report))


def _weights_notes(config: AuditConfig, report: Mapping[str, Any]) -> dict[str, str]:
    """The random-weights note of every model the audit's analyses used (the baselines'
    ``--model`` specs, the image probe's, the caption classifier's and the text encoder's
    folders), by spec; empty when none has random weights."""
    from contrastkit.audit.clipclip import PREFIX, parse_clip_clip_spec
    from contrastkit.models.registry import weights_note
    from contrastkit.tiny.marker import marked_random, random_weights_note

    def ran(key: str) -> bool:
        section = report.get(key)
        return isinstance(section, Mapping) and "skipped" not in section

    specs: dict[str, str] = {}  # what the report names -> what carries the weights
    if ran("baselines"):
        for spec in config.models:
            specs[spec] = parse_clip_clip_spec(spec).base if spec.startswith(PREFIX) else spec
    if ran("image_probe") and config.image_probe is not None:
        specs[config.image_probe] = config.image_probe
    notes = {spec: note for spec, base in specs.items() if (note := weights_note(base))}
    folders = [
        folder
        for key, folder in (("caption_classifier", config.caption_model),
                            ("clusters", config.text_encoder))
        if ran(key) and folder is not None
    ]  # fmt: skip
    for folder in folders:
        if marked_random(folder):
            notes[str(folder)] = random_weights_note(str(folder))
    return notes


#: The report key of each analysis.
_SECTIONS = {
    "composition": "composition",
    "baselines": "baselines",
    "classifier": "caption_classifier",
    "image_probe": "image_probe",
    "clusters": "clusters",
    "context": "context",
}


def _write(
    report: dict[str, Any], points: dict[str, list[Any]], out: Path, notes: dict[str, str]
) -> AuditResult:
    """Write ``audit.json``, ``audit.md`` and the plots of ``report`` into ``out``, with
    ``random_weights`` and ``weights_notes`` (``notes``: the models with random weights,
    which the report, the console summary and every plot mark)."""
    from contrastkit.audit.report import audit_markdown, write_plots

    report["random_weights"] = bool(notes)
    report["weights_notes"] = notes
    report["analyses"] = [name for name, key in _SECTIONS.items() if key in report]
    plots = write_plots(report, points, out / "plots")
    report["plots"] = [str(path.relative_to(out)) for path in plots]
    report = _finite_json(report)
    json_path = out / "audit.json"
    markdown_path = out / "audit.md"
    atomic_write_text(json_path, json.dumps(report, indent=2, allow_nan=False) + "\n")
    atomic_write_text(markdown_path, audit_markdown(report))
    return AuditResult(report, json_path, markdown_path, tuple(plots), points)
