"""CLIP-clip as a model of the registry: ``clip-clip:load=FILE.json:BASE_SPEC``.

CLIP-clip (Wang et al. 2021, "Are gender-neutral queries really gender-neutral?", the
debiased baseline of GenSynth Sec. 5) scores with a dual encoder's embeddings minus the
``m`` dimensions that carry the most mutual information with the gender label. This
module holds what scoring needs and nothing that reads a dataset:

* :class:`ClipClip`, a choice of dimensions, saved and loaded as JSON (``clip_clip_N.json``
  of ``contrastkit audit``: ``method``, ``dims``, ``m``, ``dropped``,
  ``mutual_information``, ``fitted_on``);
* :class:`ClippedScorer`, any :class:`~contrastkit.interfaces.ImageTextScorer` with the
  dropped dimensions removed and the rest L2-normalised again;
* :func:`parse_clip_clip_spec` for ``clip-clip:m=M,fit=DATA[,split=S]:BASE`` and
  ``clip-clip:load=FILE:BASE``, and :func:`load_clip_clip_scorer`, the registry's loader,
  which takes saved choices only.

Fitting a choice (the mutual information on a labelled image set) reads COCO folders and
contrast sets, so it lives in :mod:`contrastkit.audit.clipclip` (``contrastkit audit
--model clip-clip:m=100,fit=DATA:BASE`` writes ``clip_clip_N.json``); a ``fit=`` spec given
to the registry (``contrastkit evaluate``, ``load_scorer``) is a :class:`ConfigError`
saying so. This module imports neither torch nor anything above ``evaluators``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.interfaces import ImageTextScorer
    from contrastkit.models.base import ModelRuntime
    from contrastkit.models.families import LoadContext

__all__ = [
    "PREFIX",
    "ClipClip",
    "ClipClipSpec",
    "ClippedScorer",
    "base_spec",
    "load_clip_clip_scorer",
    "parse_clip_clip_spec",
    "require_saved",
]

#: The spec prefix of a CLIP-clip model.
PREFIX = "clip-clip:"


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
        if len(dropped) >= dims:
            raise DataFormatError(path, None, "dropped", f"drops all {dims} dimensions")
        return cls(dims, dropped, information, str(record.get("fitted_on", "")))


class ClippedScorer:
    """A dual encoder scoring with the kept dimensions of a :class:`ClipClip` only.

    Image and text embeddings of ``base`` keep the dimensions :attr:`ClipClip.kept` and
    are L2-normalised again, so scores stay cosine similarities (Wang et al. 2021, Sec. 4).
    When ``base`` has the pixel interface of
    :class:`~contrastkit.models.base.DualEncoder` (``image_preprocess``,
    ``encode_pixels``, ``device``, ``pipeline``), so does the wrapper: images reach the
    base model through the same pipeline, preprocessed once.

    Attributes:
        base: the wrapped model.
        choice: the dimensions kept and dropped.
        spec: the spec reports name it by (default ``clip-clip:m=M:BASE``).
        random_weights: the base model's flag (its weights are what is scored).
    """

    def __init__(self, base: ImageTextScorer, choice: ClipClip, spec: str | None = None):
        self.base = base
        self.choice = choice
        self.kept = choice.kept
        self.spec = spec or f"{PREFIX}m={len(choice.dropped)}:{base.spec}"
        self.batch_size = int(getattr(base, "batch_size", 32))
        self.random_weights = bool(getattr(base, "random_weights", False))
        self.device: Any = getattr(base, "device", "cpu")
        self.pipeline: Any = getattr(base, "pipeline", None)
        pixels: Callable[[Any], np.ndarray] | None = getattr(base, "encode_pixels", None)
        self._encode_pixels = pixels
        self.image_preprocess: Any = (
            getattr(base, "image_preprocess", None) if pixels is not None else None
        )

    def _clip(self, vectors: np.ndarray) -> np.ndarray:
        array = np.asarray(vectors, dtype=np.float32)
        if array.ndim != 2 or array.shape[1] != self.choice.dims:
            width = array.shape[1] if array.ndim == 2 else array.shape
            raise ConfigError(
                f"{self.spec}: the model's embeddings have {width} dimensions, "
                f"the CLIP-clip choice was fitted on {self.choice.dims}"
            )
        kept = array[:, self.kept]
        norms = np.linalg.norm(kept, axis=1, keepdims=True)
        result: np.ndarray = kept / np.where(norms > 0, norms, 1.0)
        return result

    @property
    def embedding_dim(self) -> int:
        """The number of kept dimensions."""
        return int(self.kept.size)

    @property
    def cached_texts(self) -> int:
        """How many distinct texts the base model has cached (0 if it caches none)."""
        return int(getattr(self.base, "cached_texts", 0))

    def encode_pixels(self, pixels: Any) -> np.ndarray:
        """The base model's embeddings of a preprocessed batch, clipped and normalised.

        Raises:
            ConfigError: the base model takes no preprocessed pixels.
        """
        if self._encode_pixels is None:
            raise ConfigError(f"{self.spec}: the base model takes images, not pixel batches")
        return self._clip(self._encode_pixels(pixels))

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

    def __repr__(self) -> str:
        return f"ClippedScorer({self.spec!r}, kept={self.kept.size} of {self.choice.dims})"


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
    spec = spec.strip()
    if not spec.startswith(PREFIX):
        raise ConfigError(f"{spec!r} is not a {PREFIX} spec")
    options_text, sep, base = spec[len(PREFIX) :].partition(":")
    if not sep or not base.strip():
        raise ConfigError(
            f"{spec!r}: write clip-clip:load=FILE.json:BASE_SPEC (a saved choice) or "
            "clip-clip:m=100,fit=DATA:BASE_SPEC (fitted by contrastkit audit)"
        )
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
        return ClipClipSpec(base.strip(), load=Path(options["load"]).expanduser())
    if "fit" not in options or "m" not in options:
        raise ConfigError(f"{spec!r}: fitting needs m= and fit=")
    try:
        m = int(options["m"])
    except ValueError as error:
        raise ConfigError(f"{spec!r}: m must be an integer, not {options['m']!r}") from error
    if m < 0:
        raise ConfigError(f"{spec!r}: m must be >= 0, not {m}")
    return ClipClipSpec(base.strip(), m=m, fit=Path(options["fit"]), split=options.get("split"))


def base_spec(spec: str) -> str:
    """The base model's spec of a ``clip-clip:`` spec; any other spec as it is. Never
    raises: a malformed ``clip-clip:`` spec is returned whole."""
    if not spec.strip().startswith(PREFIX):
        return spec
    try:
        return parse_clip_clip_spec(spec).base
    except ConfigError:
        return spec


def check_target(prefix: str, target: str) -> str:
    """The registry's check of a ``clip-clip:`` target: a saved choice; returns the base
    model's spec.

    Raises:
        ConfigError: see :func:`require_saved`.
    """
    return require_saved(f"{prefix}:{target}").base


def require_saved(spec: str) -> ClipClipSpec:
    """Parse a ``clip-clip:`` spec the registry can load: a saved choice (``load=``).

    Raises:
        ConfigError: a malformed spec, or a ``fit=`` spec, which only ``contrastkit
            audit`` can fit (it reads the labelled images); the message says how.
    """
    parsed = parse_clip_clip_spec(spec)
    if parsed.load is None:
        raise ConfigError(
            f"{spec}: a CLIP-clip choice is fitted by `contrastkit audit DATA --only baselines "
            f"--model {spec} --out DIR` (it needs labelled images), which saves it as "
            f"DIR/clip_clip_N.json; then give clip-clip:load=DIR/clip_clip_N.json:{parsed.base}"
        )
    return parsed


def load_clip_clip_scorer(
    target: str, runtime: ModelRuntime, context: LoadContext
) -> ClippedScorer:
    """Load ``clip-clip:TARGET`` (``load=FILE:BASE``): the base model by
    ``context.load_base`` (the registry's loader) and the saved choice.

    Raises:
        ConfigError: a ``fit=`` or malformed spec; a choice fitted on another width.
        DataFormatError: a file that is not a CLIP-clip choice.
        ModelNotFoundError: the choice file is missing, or the base model is.
    """
    from contrastkit.errors import ModelNotFoundError

    spec = f"{PREFIX}{target}"
    parsed = require_saved(spec)
    assert parsed.load is not None
    if not parsed.load.is_file():
        raise ModelNotFoundError(
            f"{spec}: the CLIP-clip choice {parsed.load} is not a file; `contrastkit audit "
            "--model clip-clip:m=M,fit=DATA:BASE` writes one (clip_clip_N.json in --out)"
        )
    choice = ClipClip.load(parsed.load)
    base = context.load_base(parsed.base, runtime)
    width = getattr(base, "embedding_dim", None)
    if isinstance(width, int) and width != choice.dims:
        raise ConfigError(
            f"{spec}: {parsed.base} embeds in {width} dimensions, the CLIP-clip choice "
            f"{parsed.load} was fitted on {choice.dims}"
        )
    return ClippedScorer(base, choice, spec)
