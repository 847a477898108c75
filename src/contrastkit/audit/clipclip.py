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
  the lower dimension is dropped first); :class:`ClipClip` saves and loads that choice
  as JSON.
* :class:`ClippedScorer` wraps any :class:`~contrastkit.interfaces.ImageTextScorer`:
  image and text embeddings keep only the kept dimensions and are L2-normalised again.
* :func:`parse_clip_clip_spec` reads ``clip-clip:m=100,fit=DATA:BASE_SPEC`` (``DATA`` a
  COCO folder or a contrast-set export whose labelled images fit the choice, ``BASE_SPEC``
  any dual-encoder spec; ``split=train2017`` among the options picks the COCO split) or
  ``clip-clip:load=FILE.json:BASE_SPEC`` (a saved choice);
  :func:`load_clip_clip` loads the base model and fits or loads the choice.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from contrastkit.errors import ConfigError, DataFormatError

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.config import ModelConfig
    from contrastkit.interfaces import ImageTextScorer

__all__ = [
    "PREFIX",
    "ClipClip",
    "ClipClipSpec",
    "ClippedScorer",
    "describe",
    "fit_clip_clip",
    "load_clip_clip",
    "mutual_information",
    "parse_clip_clip_spec",
]

#: The spec prefix of a CLIP-clip model.
PREFIX = "clip-clip:"


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


@dataclass(frozen=True)
class ClipClip:
    """A CLIP-clip choice of dimensions.

    Attributes:
        dims: the embedding width.
        dropped: the ``m`` dropped dimensions, most informative first.
        mutual_information: ``I(x_d; g)`` of every dimension (nats).
        fitted_on: what it was fitted on (a description).
    """

    dims: int
    dropped: tuple[int, ...]
    mutual_information: tuple[float, ...]
    fitted_on: str = ""

    @property
    def kept(self) -> np.ndarray:
        """The kept dimensions, in increasing order."""
        return np.setdiff1d(np.arange(self.dims), np.asarray(self.dropped, dtype=np.int64))

    def save(self, path: Path) -> Path:
        """Write the choice as JSON; return ``path``."""
        from contrastkit.io import atomic_write_text

        record = {
            "method": "clip-clip",
            "dims": self.dims,
            "m": len(self.dropped),
            "dropped": list(self.dropped),
            "mutual_information": list(self.mutual_information),
            "fitted_on": self.fitted_on,
        }
        atomic_write_text(path, json.dumps(record, indent=2) + "\n")
        return path

    @classmethod
    def load(cls, path: Path) -> ClipClip:
        """Read a choice written by :meth:`save`.

        Raises:
            DataFormatError: not such a file.
        """
        from contrastkit.records import read_json_object

        record = read_json_object(path, "a CLIP-clip JSON object")
        try:
            dims = int(record["dims"])
            dropped = tuple(int(d) for d in record["dropped"])
            information = tuple(float(v) for v in record["mutual_information"])
        except (KeyError, TypeError, ValueError) as error:
            raise DataFormatError(path, None, None, f"not a CLIP-clip file ({error})") from error
        if any(not 0 <= d < dims for d in dropped) or len(set(dropped)) != len(dropped):
            raise DataFormatError(
                path, None, "dropped", f"dimensions must be distinct, in 0..{dims - 1}"
            )
        return cls(dims, dropped, information, str(record.get("fitted_on", "")))


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


class ClippedScorer:
    """A dual encoder scoring with the kept dimensions of a :class:`ClipClip` only."""

    def __init__(self, base: ImageTextScorer, choice: ClipClip, spec: str | None = None):
        self.base = base
        self.choice = choice
        self.kept = choice.kept
        self.spec = spec or f"{PREFIX}m={len(choice.dropped)}:{base.spec}"
        self.batch_size = int(getattr(base, "batch_size", 32))

    def _clip(self, vectors: np.ndarray) -> np.ndarray:
        array = np.asarray(vectors, dtype=np.float32)
        if array.shape[1] != self.choice.dims:
            raise ConfigError(
                f"{self.spec}: the model's embeddings have {array.shape[1]} dimensions, "
                f"the CLIP-clip choice was fitted on {self.choice.dims}"
            )
        kept = array[:, self.kept]
        norms = np.linalg.norm(kept, axis=1, keepdims=True)
        result: np.ndarray = kept / np.where(norms > 0, norms, 1.0)
        return result

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """The base model's image embeddings, clipped and normalised."""
        return self._clip(self.base.encode_images(images))

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """The base model's text embeddings, clipped and normalised."""
        return self._clip(self.base.encode_texts(texts))

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities of the clipped embeddings, ``(len(images), len(texts))``."""
        result: np.ndarray = self.encode_images(images) @ self.encode_texts(texts).T
        return result


@dataclass(frozen=True)
class ClipClipSpec:
    """A parsed ``clip-clip:`` spec: ``m`` and ``fit`` (data to fit on) or ``load``
    (a saved choice), and the base model's spec."""

    base: str
    m: int | None = None
    fit: Path | None = None
    load: Path | None = None
    split: str | None = None


def parse_clip_clip_spec(spec: str) -> ClipClipSpec:
    """Parse ``clip-clip:m=M,fit=DATA[,split=SPLIT]:BASE`` or ``clip-clip:load=FILE:BASE``.

    Raises:
        ConfigError: a malformed spec, naming what is wrong.
    """
    if not spec.startswith(PREFIX):
        raise ConfigError(f"{spec!r} is not a {PREFIX} spec")
    options_text, sep, base = spec[len(PREFIX) :].partition(":")
    if not sep or not base.strip():
        raise ConfigError(f"{spec!r}: write clip-clip:m=100,fit=DATA:BASE_SPEC")
    options: dict[str, str] = {}
    for part in options_text.split(","):
        key, eq, value = part.partition("=")
        if not eq or key.strip() not in ("m", "fit", "load", "split") or not value.strip():
            raise ConfigError(
                f"{spec!r}: options are m=M, fit=DATA, split=SPLIT or load=FILE, not {part!r}"
            )
        options[key.strip()] = value.strip()
    if "load" in options:
        if "fit" in options:
            raise ConfigError(f"{spec!r}: give fit= or load=, not both")
        return ClipClipSpec(base.strip(), load=Path(options["load"]))
    if "fit" not in options or "m" not in options:
        raise ConfigError(f"{spec!r}: fitting needs m= and fit=")
    try:
        m = int(options["m"])
    except ValueError as error:
        raise ConfigError(f"{spec!r}: m must be an integer, not {options['m']!r}") from error
    if m < 0:
        raise ConfigError(f"{spec!r}: m must be >= 0, not {m}")
    return ClipClipSpec(base.strip(), m=m, fit=Path(options["fit"]), split=options.get("split"))


def load_clip_clip(
    spec: str,
    config: ModelConfig | None = None,
    *,
    save: Path | None = None,
) -> ClippedScorer:
    """Load the base model of a ``clip-clip:`` spec and fit (on the labelled images of
    ``fit``, read by :func:`contrastkit.audit.data.load_audit_data`) or load its choice;
    with ``save``, write the fitted choice there (:meth:`ClipClip.save`).

    Raises:
        ConfigError, DataFormatError, ModelNotFoundError: a bad spec, data or model.
    """
    from contrastkit.audit.data import load_audit_data
    from contrastkit.evaluators.models.registry import load_scorer
    from contrastkit.pipeline import embed_images

    parsed = parse_clip_clip_spec(spec)
    base = load_scorer(parsed.base, config)
    if parsed.load is not None:
        choice = ClipClip.load(parsed.load)
    else:
        assert parsed.fit is not None and parsed.m is not None
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


def describe(choice: ClipClip) -> dict[str, Any]:
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
