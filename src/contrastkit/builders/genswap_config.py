"""The settings of the GenSwap baseline's job (:class:`GenSwapConfig`), apart from the
job (:mod:`contrastkit.builders.genswap_job`, which gives the same name) so that the face
swapping it configures (:mod:`contrastkit.builders.genswap`) can name it without an
import back up to the job."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contrastkit.config import ModelConfig, require
from contrastkit.curation.faces import DEFAULT_MIN_AGE

__all__ = ["GenSwapConfig"]


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
