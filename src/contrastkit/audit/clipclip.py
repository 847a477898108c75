"""CLIP-clip (Wang et al. 2021, "Are gender-neutral queries really gender-neutral?"), the
debiased baseline of GenSynth Sec. 5: drop the ``m`` embedding dimensions that carry the
most mutual information with the gender label (``m = 100`` on COCO train2017 in the
paper), and score with the rest.

* :func:`mutual_information` estimates ``I(x_d; g)`` of every dimension ``d`` of image
  embeddings ``x`` with a binary label ``g``: each dimension is cut into ``bins``
  equal-count (quantile) bins and the mutual information of the discrete bin index with
  the label is computed in nats (a plug-in histogram estimate; Wang et al. use
  scikit-learn's ``mutual_info_classif``, a nearest-neighbour estimate, so the ranking of
  weakly informative dimensions may differ).
* :func:`fit_clip_clip` ranks the dimensions and keeps all but the ``m`` highest (ties:
  the lower dimension is dropped first), as a :class:`ClipClip`, saved and loaded as JSON.
* :func:`load_clip_clip` reads ``clip-clip:m=100,fit=DATA:BASE_SPEC`` (``DATA`` a COCO
  folder or a contrast-set export whose labelled images fit the choice, ``BASE_SPEC`` any
  dual-encoder spec; ``split=train2017`` among the options picks the COCO split) or
  ``clip-clip:load=FILE.json:BASE_SPEC`` (a saved choice), loads the base model and fits
  or loads the choice.

What scoring needs (:class:`ClipClip`, :class:`ClippedScorer`, the spec parser) lives in
:mod:`contrastkit.models.clipclip`, so ``contrastkit evaluate`` and
``load_scorer`` take saved choices (``clip-clip:load=FILE:BASE``) without importing the
audit; it is re-exported here. Fitting reads labelled images (COCO, contrast sets), so it
stays in the audit.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.models.clipclip import (
    PREFIX,
    ClipClip,
    ClipClipSpec,
    ClippedScorer,
    parse_clip_clip_spec,
)

if TYPE_CHECKING:
    from contrastkit.config import ModelConfig

__all__ = [
    "PREFIX",
    "ClipClip",
    "ClipClipSpec",
    "ClipClipSummary",
    "ClippedScorer",
    "describe",
    "fit_clip_clip",
    "load_clip_clip",
    "mutual_information",
    "parse_clip_clip_spec",
]


def mutual_information(features: ArrayLike, labels: ArrayLike, bins: int = 10) -> np.ndarray:
    """``I(x_d; g)`` in nats for every column ``d`` of ``features`` (module docstring).

    Args:
        features: ``(n, dims)`` embeddings.
        labels: ``n`` binary labels (booleans, or two distinct values).
        bins: quantile bins per dimension.
    """
    x = np.asarray(features, dtype=np.float64)
    raw = np.asarray(labels)
    classes, y = np.unique(raw, return_inverse=True)
    if classes.size != 2:
        raise ConfigError(f"mutual information needs two label values, found {classes.size}")
    n, dims = x.shape
    # equal-count bins: the rank of each value, cut into ``bins`` groups (ties share a bin)
    edges = np.quantile(x, np.linspace(0, 1, bins + 1)[1:-1], axis=0)  # (bins - 1, dims)
    index = np.zeros((n, dims), dtype=np.int64)
    for edge in edges:
        index += x > edge[None, :]
    joint = np.zeros((dims, bins, 2))
    for label in (0, 1):
        rows = index[y == label]
        for b in range(bins):
            joint[:, b, label] = (rows == b).sum(axis=0)
    joint /= n
    p_bin = joint.sum(axis=2, keepdims=True)
    p_label = joint.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(joint > 0, joint * np.log(joint / (p_bin * p_label)), 0.0)
    result: np.ndarray = terms.sum(axis=(1, 2))
    return result


def fit_clip_clip(
    features: ArrayLike, labels: Sequence[str], m: int, *, bins: int = 10, fitted_on: str = ""
) -> ClipClip:
    """Choose the ``m`` dimensions to drop: the highest mutual information with the
    label among the ``masculine`` / ``feminine`` rows (others are ignored).

    Raises:
        ConfigError: ``m`` not in ``0 .. dims - 1``, or fewer than one row per gender.
    """
    x = np.asarray(features, dtype=np.float64)
    names = np.asarray(labels, dtype=object)
    keep = (names == "masculine") | (names == "feminine")
    dims = x.shape[1]
    if not 0 <= m < dims:
        raise ConfigError(f"clip-clip m must be between 0 and {dims - 1} (the width), not {m}")
    if (names[keep] == "masculine").sum() < 1 or (names[keep] == "feminine").sum() < 1:
        raise ConfigError("clip-clip needs labelled images of both genders to fit on")
    information = mutual_information(x[keep], names[keep] == "masculine", bins)
    order = np.lexsort((np.arange(dims), -information))
    return ClipClip(
        dims, tuple(int(d) for d in order[:m]), tuple(float(v) for v in information), fitted_on
    )


def load_clip_clip(
    spec: str,
    config: ModelConfig | None = None,
    *,
    save: Path | None = None,
) -> ClippedScorer:
    """Load the base model of a ``clip-clip:`` spec and fit its choice (on the labelled
    images of ``fit``, read by :func:`contrastkit.audit.data.load_audit_data`); with
    ``save``, write the choice there (:meth:`ClipClip.save`). A saved choice (``load=``)
    is loaded by the model registry, as ``contrastkit evaluate`` loads it (and copied to
    ``save``).

    Raises:
        ConfigError, DataFormatError, ModelNotFoundError: a bad spec, data or model.
    """
    from contrastkit.audit.data import load_audit_data
    from contrastkit.models.registry import load_scorer
    from contrastkit.pipeline import embed_images

    parsed = parse_clip_clip_spec(spec)
    if parsed.load is not None:
        loaded = load_scorer(spec, config)
        assert isinstance(loaded, ClippedScorer)
        if save is not None:  # the audit names the file of every clip-clip model it scored
            loaded.choice.save(save)
        return loaded
    assert parsed.fit is not None and parsed.m is not None
    base = load_scorer(parsed.base, config)
    data = load_audit_data(parsed.fit, parsed.split)
    labelled = [i for i in data.images if i.label in ("masculine", "feminine")]
    missing = [i for i in labelled if i.image_source is None]
    if missing or any(
        isinstance(i.image_source, Path) and not i.image_source.is_file() for i in labelled
    ):
        raise DataFormatError(parsed.fit, None, None, "clip-clip fitting needs the images")
    features = embed_images(base, [i.image_source for i in labelled])
    choice = fit_clip_clip(
        features, [i.label for i in labelled], parsed.m, fitted_on=str(parsed.fit)
    )
    if save is not None:
        choice.save(save)
    return ClippedScorer(base, choice, spec)


class ClipClipSummary(TypedDict):
    """What :func:`describe` says of a choice of dimensions."""

    m: int
    dims: int
    dropped: list[int]
    mean_mi_dropped: float | None
    mean_mi_kept: float | None
    fitted_on: str


def describe(choice: ClipClip) -> ClipClipSummary:
    """A JSON summary of a choice: ``m``, ``dims``, the dropped dimensions and the mean
    mutual information of the dropped and the kept ones."""
    information = np.asarray(choice.mutual_information)
    kept = choice.kept
    dropped = np.asarray(choice.dropped, dtype=np.int64)
    return {
        "m": int(dropped.size),
        "dims": choice.dims,
        "dropped": dropped.tolist(),
        "mean_mi_dropped": float(information[dropped].mean()) if dropped.size else None,
        "mean_mi_kept": float(information[kept].mean()) if kept.size else None,
        "fitted_on": choice.fitted_on,
    }
