"""The GenSwap baseline as one job: swap faces, then the Sec. 4.3 quality checks.

:func:`build_genswap` replaces the face MTCNN finds in each COCO person with an adult face
of each target gender from a labelled face bank (:func:`contrastkit.builders.genswap.swap_faces`;
GenSynth Sec. 4.3, App. A.2) and, given a CLIP-like ``embedder``, scores the result with
the same quality checks as a GenSynth build (:mod:`contrastkit.builders.gensynth.quality`).

Example::

    from contrastkit.builders.genswap_job import GenSwapConfig, build_genswap

    result = build_genswap(GenSwapConfig(
        coco="coco", faces="fairface/train_labels.csv", out="build/genswap",
        same_sources="build/gensynth", embedder="open_clip:ViT-B-32/openai",
    ))
    print(result.sources_kept, result.swap["no_face"])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.builders.gensynth.quality import run_quality_checks
from contrastkit.builders.manifest import CONTRAST_SET, MANIFEST, SUMMARY
from contrastkit.config import ModelConfig, require
from contrastkit.curation.faces import DEFAULT_MIN_AGE
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.io import check_writable

if TYPE_CHECKING:
    from contrastkit.builders.genswap import SwapEntry

__all__ = ["GenSwapConfig", "GenSwapResult", "build_genswap"]


@dataclass(frozen=True)
class GenSwapConfig:
    """What :func:`build_genswap` does (strings are taken as paths).

    Attributes:
        coco: COCO folder with ``annotations/`` and images.
        faces: The face bank table (``file``, ``gender``, ``age``; FairFace's label CSV
            works as is).
        out: The build folder (created; reruns resume).
        split: COCO split (default: the only one).
        limit: Use the first ``limit`` selected sources only.
        min_box_side: Smallest person box side, in pixels.
        same_sources: A GenSynth build folder (or its ``contrast_set.jsonl``): swap the
            same source images (the paper's GenSwap does).
        min_age: Youngest age a bank face may have (the paper: older than 19).
        seed: Seed of the donor draw, per source and gender.
        feather: Blend ramp of the face ellipse, as a fraction of its radius.
        embedder: A CLIP-like model spec: run the Sec. 4.3 quality checks with it
            (``None``: no checks).
        pool: Folder of images to retrieve among in the checks (e.g. COCO val2017).
        pool_limit: Use the first ``pool_limit`` images of ``pool``.
        model: Device of the face detector and the embedder; dtype, batch size and
            download permission of the embedder.
    """

    coco: Path
    faces: Path
    out: Path
    split: str | None = None
    limit: int | None = None
    min_box_side: float = 0.0
    same_sources: Path | None = None
    min_age: int = DEFAULT_MIN_AGE
    seed: int = 0
    feather: float = 0.3
    embedder: str | None = None
    pool: Path | None = None
    pool_limit: int | None = None
    model: ModelConfig = field(default_factory=ModelConfig)

    def __post_init__(self) -> None:
        for name in ("coco", "faces", "out"):
            object.__setattr__(self, name, Path(getattr(self, name)))
        for name in ("same_sources", "pool"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(isinstance(self.model, ModelConfig), "model", "must be a ModelConfig")
        require(self.limit is None or self.limit >= 1, "limit", f"must be >= 1, not {self.limit}")
        require(self.min_box_side >= 0, "min_box_side", f"must be >= 0, not {self.min_box_side}")
        require(self.min_age >= 0, "min_age", f"must be >= 0, not {self.min_age}")
        require(0 < self.feather <= 1, "feather", f"must be in (0, 1], not {self.feather}")
        require(
            self.pool_limit is None or self.pool_limit >= 1,
            "pool_limit",
            f"must be >= 1, not {self.pool_limit}",
        )
        if self.embedder is not None:
            from contrastkit.models import check_dual

            check_dual(self.embedder)


@dataclass(frozen=True)
class GenSwapResult:
    """What :func:`build_genswap` did.

    Attributes:
        out: The build folder.
        swap: This run's swap summary (sources, ``no_face``, ``swapped``,
            ``skipped_finished``, ``sources_kept``, ``images``, the face bank's counts).
        summary: ``build_summary.json`` after the run (``genswap`` and ``quality``).
        summary_path, manifest, contrast_set: Where the summary, the manifest and the
            contrast set are.
        sources_kept: Sources with a swap of each gender; 0 means an empty contrast set.
        quality: The Sec. 4.3 checks (``None`` without an embedder).
    """

    out: Path
    swap: SwapEntry
    summary: dict[str, Any]
    summary_path: Path
    manifest: Path
    contrast_set: Path
    sources_kept: int
    quality: dict[str, Any] | None


def build_genswap(
    config: GenSwapConfig, *, progress: ProgressFactory | None = None
) -> GenSwapResult:
    """Build (or resume) a GenSwap contrast set and, given an embedder, check it
    (GenSynth Sec. 4.3, Tab. 2).

    Args:
        config: What to build (:class:`GenSwapConfig`).
        progress: ``progress(label)`` -> a context manager yielding ``update(done,
            total)`` (:class:`contrastkit.interfaces.ProgressFactory`).

    Raises:
        ResourceError: the build folder cannot be written (checked before anything runs).
        ConfigError: a bad pool folder, or a model spec of the wrong kind.
        DataFormatError: a malformed COCO folder, face bank or GenSynth contrast set.
        ModelNotFoundError: the embedder is not on this machine.
    """
    from contrastkit.builders.genswap import swap_faces
    from contrastkit.builders.gensynth import read_summary
    from contrastkit.builders.quality import list_pool_images
    from contrastkit.curation.faces import FaceDetector

    out = config.out
    check_writable(out, "the GenSwap build folder")
    pool = (
        list_pool_images(config.pool, config.pool_limit)
        if config.embedder and config.pool
        else None
    )
    with progress_stage(progress, "swapping faces") as update:
        swap = swap_faces(config, detector=FaceDetector(config.model.device), progress=update)
    quality = None
    if config.embedder:
        from contrastkit.models import load_scorer

        quality = run_quality_checks(out, load_scorer(config.embedder, config.model), pool)
    return GenSwapResult(
        out=out,
        swap=swap,
        summary=read_summary(out),
        summary_path=out / SUMMARY,
        manifest=out / MANIFEST,
        contrast_set=out / CONTRAST_SET,
        sources_kept=int(swap["sources_kept"]),
        quality=quality,
    )
