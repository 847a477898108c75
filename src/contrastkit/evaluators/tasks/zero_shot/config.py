"""What one zero-shot disparity analysis does: :class:`ZeroShotDisparityConfig` and the
choices it checks (:data:`CALIBRATION_MODES`, :data:`WORD_SOURCES`), importable from
:mod:`.job` as well, where :func:`~.job.zero_shot_disparity` runs it."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from contrastkit.config import ModelConfig, require
from contrastkit.evaluators.bootstrap import require_bootstrap
from contrastkit.evaluators.tasks.zero_shot.groups import IMAGES_WITHOUT_CONCEPTS, LAYOUTS
from contrastkit.evaluators.tasks.zero_shot.metrics import DEFAULT_BINS

__all__ = [
    "CALIBRATION_MODES",
    "DEFAULT_PROMPT",
    "DEFAULT_TEMPERATURE",
    "TASK",
    "WORD_SOURCES",
    "ZeroShotDisparityConfig",
]

#: The paper's text input: the object class itself (Sec. 2.1); ``{}`` is the concept's
#: words (:func:`~contrastkit.evaluators.tasks.zero_shot.groups.concept_words`).
DEFAULT_PROMPT = "{}"

#: ``multi-label``: ECE only from predictions that carry probabilities (a dual encoder's
#: cosine similarities do not); ``softmax``: the dual encoder's single-label softmax over
#: the concepts (Appendix A.2).
CALIBRATION_MODES: tuple[str, ...] = ("multi-label", "softmax")

#: Where the word vectors of Experiment 3 come from.
WORD_SOURCES: tuple[str, ...] = ("file", "model", "both")

#: CLIP's learned logit scale (exp of the log-temperature, capped at 100 in training).
DEFAULT_TEMPERATURE = 100.0

TASK = "zero-shot-disparity"


@dataclass(frozen=True)
class ZeroShotDisparityConfig:
    """What one zero-shot disparity analysis does (strings are taken as paths).

    Attributes:
        data: a Visual Genome or COCO folder (:mod:`.groups`).
        out: output folder; results go to ``out/<model slug>/zero_shot/``.
        model: a dual-encoder spec of the registry (``open_clip:...``, ``hf-clip:...``);
            exactly one of ``model`` and ``predictions``.
        predictions: a bring-your-own predictions file (:mod:`.predictions`); the
            concepts and groups still come from ``data``.
        layout: ``auto``, ``vg`` or ``coco``.
        split: the COCO split evaluated; filter_split: the COCO split whose images
            decide the concept filter (the paper: train).
        concept_map: a TSV of COCO category -> synset entries over the built-in table.
        prompt: the text for each concept, with ``{}`` for its words.
        min_images: images per group a concept needs (default: 50 Visual Genome, 100
            COCO).
        images_without_concepts: ``keep`` (default; the paper's reading, Sec. 2.1-2.2)
            the single-group images that show no kept concept, as negatives of every
            concept, or ``drop`` them (:mod:`.groups`).
        bins: ECE bins (equal width; 15).
        bootstrap: resamples of the intervals (0: none); confidence: their level;
            seed: their seed.
        calibration: ``multi-label`` or ``softmax`` (:data:`CALIBRATION_MODES`).
        temperature: the softmax's scale of the cosine similarities (``softmax`` only;
            default 100, CLIP's logit scale).
        words: a word2vec / GloVe vectors file for Experiment 3.
        word_source: ``file``, ``model`` or ``both`` (``None``: ``file`` when ``words``
            is given, else no Experiment 3).
        compare: a second dataset for the consistency colouring (Fig. 3-4): a
            ``disparity.json`` (or the folder holding it) from an earlier run, or a data
            folder, which is then evaluated with the same model (not with
            ``predictions``), the same ``min_images`` (or its layout's default) and the
            default split into ``zero_shot/compare/``.
        threshold: the consistency colouring's threshold, in AP points (5).
        top: concepts in the top-differences plot and table.
        plots: draw the plots (PNG and SVG; off: only the JSON and the markdown).
        model_config: device, dtype, batch size and download permission of the model.

    Raises:
        ConfigError: naming the field: neither or both of ``model`` and ``predictions``,
            an unknown layout, ``images_without_concepts``, calibration mode or word
            source, ``softmax`` without a model, a ``model`` word source without a
            model, a ``file`` one without ``words``, a prompt without ``{}``, a bad
            number.
    """

    data: Path
    out: Path
    model: str | None = None
    predictions: Path | None = None
    layout: str = "auto"
    split: str | None = None
    filter_split: str | None = None
    concept_map: Path | None = None
    prompt: str = DEFAULT_PROMPT
    min_images: int | None = None
    images_without_concepts: str = "keep"
    bins: int = DEFAULT_BINS
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0
    calibration: str = "multi-label"
    temperature: float = DEFAULT_TEMPERATURE
    words: Path | None = None
    word_source: str | None = None
    compare: Path | None = None
    threshold: float = 5.0
    top: int = 20
    plots: bool = True
    model_config: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        for name in ("data", "out", "predictions", "concept_map", "words", "compare"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value))
        if self.model is not None:
            object.__setattr__(self, "model", self.model.strip() or None)
        require(
            (self.model is None) != (self.predictions is None),
            "model",
            "give exactly one of a model spec and a predictions file",
        )
        if self.model is not None:
            from contrastkit.models.registry import check_dual

            check_dual(self.model)
        require(self.layout in LAYOUTS, "layout", f"choose from {', '.join(LAYOUTS)}")
        require(
            self.images_without_concepts in IMAGES_WITHOUT_CONCEPTS,
            "images_without_concepts",
            f"unknown value {self.images_without_concepts!r}; choose from "
            f"{', '.join(IMAGES_WITHOUT_CONCEPTS)}",
        )
        require(
            self.calibration in CALIBRATION_MODES,
            "calibration",
            f"unknown mode {self.calibration!r}; choose from {', '.join(CALIBRATION_MODES)}",
        )
        require(
            not (self.calibration == "softmax" and self.model is None),
            "calibration",
            "softmax turns a dual encoder's similarities into probabilities and needs a "
            "model; predictions bring their probabilities as 'confidence' (or scores in [0, 1])",
        )
        require(
            self.word_source is None or self.word_source in WORD_SOURCES,
            "word_source",
            f"unknown source {self.word_source!r}; choose from {', '.join(WORD_SOURCES)}",
        )
        source = self.words_from
        require(
            not ("model" in source and self.model is None),
            "word_source",
            "the model's own text encoder needs a model spec, not a predictions file",
        )
        require(
            not ("file" in source and self.words is None),
            "words",
            "give a word-vectors file (word2vec or GloVe) for the word source 'file'",
        )
        require("{}" in self.prompt, "prompt", "must contain {} where the concept goes")
        require(
            self.min_images is None or self.min_images >= 1,
            "min_images",
            f"must be at least 1, not {self.min_images}",
        )
        require(
            not isinstance(self.bins, bool) and isinstance(self.bins, int) and self.bins >= 1,
            "bins",
            f"must be a whole number >= 1, not {self.bins!r}",
        )
        require_bootstrap(self.bootstrap, self.confidence)
        require(self.temperature > 0, "temperature", "must be positive")
        require(self.threshold >= 0, "threshold", "must be >= 0 (AP points)")
        require(self.top >= 1, "top", "must be at least 1")
        require(isinstance(self.model_config, ModelConfig), "model_config", "must be a ModelConfig")

    @property
    def words_from(self) -> tuple[str, ...]:
        """The word-vector sources of Experiment 3, ``()`` for none."""
        source = self.word_source or ("file" if self.words is not None else None)
        if source is None:
            return ()
        return ("file", "model") if source == "both" else (source,)

    @property
    def label(self) -> str:
        """What the results are of: the model spec, or ``predictions:FILE``."""
        return self.model if self.model is not None else f"predictions:{self.predictions}"

    @property
    def folder(self) -> Path:
        """``out/<model slug>/zero_shot``; for predictions ``out/predictions-<file
        stem>/zero_shot`` (two files of one stem share it: give them separate ``out``)."""
        from contrastkit.evaluators.report.results import model_slug

        if self.model is not None:
            return self.out / model_slug(self.model) / "zero_shot"
        assert self.predictions is not None
        stem = re.sub(r"[^A-Za-z0-9._-]+", "-", self.predictions.stem).strip("-.") or "file"
        return self.out / f"predictions-{stem}" / "zero_shot"
