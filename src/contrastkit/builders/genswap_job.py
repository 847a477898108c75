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

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.builders.genswap_config import GenSwapConfig
from contrastkit.builders.gensynth.quality import run_quality_checks
from contrastkit.builders.manifest import CONTRAST_SET, MANIFEST, SUMMARY
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.io import check_writable

if TYPE_CHECKING:
    from contrastkit.builders.genswap import SwapEntry

__all__ = ["GenSwapConfig", "GenSwapResult", "build_genswap"]


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
