"""One registry from model spec strings to adapters.

=================================  =====================================================
spec                               loads
=================================  =====================================================
``open_clip:ARCH/TAG``             OpenCLIP architecture + pretrained tag (cached)
``open_clip:ARCH/PATH``            OpenCLIP architecture + checkpoint file
``open_clip:ARCH/random``          OpenCLIP architecture, random weights (benchmarks)
``open_clip:FOLDER``               folder with ``open_clip_config.json`` + weights
``hf-clip:ID_OR_FOLDER``           transformers CLIP / SigLIP dual encoder
``blip:ID_OR_FOLDER``              transformers BLIP captioning model
``git:ID_OR_FOLDER``               transformers GIT captioning model
``blip2:ID_OR_FOLDER``             transformers BLIP-2 (OPT) captioning model
=================================  =====================================================

Dual encoders are :class:`ImageTextScorer`\\ s, captioning models :class:`PronounScorer`\\ s.
Nothing is downloaded unless ``download=True``: a model neither on disk nor in the local
cache raises :class:`ModelNotFoundError` saying how to get it.
"""

from __future__ import annotations

from dataclasses import dataclass

from contrastkit.evaluators.models.base import (
    ImageTextScorer,
    PronounScorer,
    resolve_device,
    resolve_dtype,
)
from contrastkit.evaluators.models.captioning import FAMILIES

__all__ = ["KINDS", "ModelSpec", "load_model", "load_scorer", "parse_spec"]

#: Spec prefix -> "dual" (an ImageTextScorer) or "captioning" (a PronounScorer).
KINDS: dict[str, str] = {
    "open_clip": "dual",
    "hf-clip": "dual",
    **{family: "captioning" for family in FAMILIES},
}


@dataclass(frozen=True)
class ModelSpec:
    """A parsed spec: ``prefix`` (``open_clip``, ``hf-clip``, ``blip`` ...) and ``target``."""

    prefix: str
    target: str

    @property
    def kind(self) -> str:
        """``dual`` or ``captioning``."""
        return KINDS[self.prefix]

    def __str__(self) -> str:
        return f"{self.prefix}:{self.target}"


def parse_spec(spec: str) -> ModelSpec:
    """Split ``PREFIX:TARGET``.

    Raises:
        ValueError: no prefix, an unknown prefix, or an empty target.
    """
    prefix, sep, target = spec.strip().partition(":")
    if not sep or prefix not in KINDS:
        raise ValueError(
            f"model spec {spec!r} must start with one of {', '.join(p + ':' for p in KINDS)} "
            "(e.g. open_clip:ViT-B-32/openai, hf-clip:openai/clip-vit-base-patch32, "
            "blip:Salesforce/blip-image-captioning-large)"
        )
    if not target.strip():
        raise ValueError(f"model spec {spec!r} names no model after {prefix!r}")
    return ModelSpec(prefix, target.strip())


def load_model(
    spec: str,
    *,
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int = 32,
    download: bool = False,
) -> ImageTextScorer | PronounScorer:
    """Load the adapter a spec names.

    Args:
        spec: see the module docstring.
        device: ``cpu``, ``cuda``, ``cuda:1`` ...; ``None`` picks CUDA when available.
        dtype: ``float32`` (default), ``bfloat16``, or ``float16`` (GPU only).
        batch_size: images (and texts) per forward pass.
        download: allow fetching weights missing from the local cache.

    Returns:
        An :class:`ImageTextScorer` for dual encoders, a :class:`PronounScorer` for
        captioning models.

    Raises:
        ModelNotFoundError: weights neither on disk nor cached (says how to get them).
        ValueError: a malformed spec, unknown architecture/tag, or bad device/dtype.
    """
    parsed = parse_spec(spec)
    chosen_device = resolve_device(device)
    chosen_dtype = resolve_dtype(dtype, chosen_device)
    if batch_size < 1:
        raise ValueError(f"batch size must be at least 1, not {batch_size}")
    options = {
        "device": chosen_device,
        "dtype": chosen_dtype,
        "batch_size": batch_size,
        "download": download,
    }
    if parsed.prefix == "open_clip":
        from contrastkit.evaluators.models.openclip import load_open_clip

        return load_open_clip(parsed.target, **options)  # type: ignore[arg-type]
    if parsed.prefix == "hf-clip":
        from contrastkit.evaluators.models.hf_clip import load_hf_clip

        return load_hf_clip(parsed.target, **options)  # type: ignore[arg-type]
    from contrastkit.evaluators.models.captioning import load_captioning

    return load_captioning(parsed.prefix, parsed.target, **options)  # type: ignore[arg-type]


def load_scorer(
    spec: str,
    *,
    device: str | None = None,
    dtype: str | None = None,
    batch_size: int = 32,
    download: bool = False,
) -> ImageTextScorer:
    """Load a dual encoder (:class:`ImageTextScorer`): image and text embeddings.

    Same arguments as :func:`load_model`.

    Raises:
        ValueError: for a captioning spec (``blip:``, ``git:``, ``blip2:``), which has no
            image-text embedding space; plus everything :func:`load_model` raises.
    """
    parsed = parse_spec(spec)
    if parsed.kind != "dual":
        raise ValueError(
            f"{spec} is a captioning model: it scores pronoun continuations, not image-text "
            "similarity; use an open_clip: or hf-clip: model for embeddings"
        )
    model = load_model(spec, device=device, dtype=dtype, batch_size=batch_size, download=download)
    assert isinstance(model, ImageTextScorer)
    return model
