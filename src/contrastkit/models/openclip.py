"""OpenCLIP dual encoders: ``open_clip:ARCH/PRETRAINED`` and ``open_clip:FOLDER``.

``PRETRAINED`` is an OpenCLIP tag (``openai``, ``laion2b_s34b_b79k`` ...), a checkpoint
file path, or ``random`` (the architecture with random weights, for benchmarks: compute
cost does not depend on the weights). A folder holds ``open_clip_config.json`` and its
weights (OpenCLIP's ``local-dir:`` layout); ``open_clip:hf-hub:ORG/NAME`` is passed to
OpenCLIP as it is.

Tags are resolved to a file in the local cache before OpenCLIP is called, so a model that
was never downloaded fails at once with a message saying how to get it, rather than
reaching for the network (pass ``download=True`` to let OpenCLIP fetch it).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import torch
from PIL import Image

from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.models.base import LOAD_ERRORS, DualEncoder, ModelRuntime
from contrastkit.models.families import LoadContext
from contrastkit.models.folders import meant_as_path, missing_folder
from contrastkit.pipeline import TorchvisionPreprocess

__all__ = ["OpenCLIPScorer", "load_open_clip", "locate_open_clip"]

#: OpenCLIP keeps float32 weights and runs under ``torch.autocast`` in the asked dtype
#: ("amp": OpenCLIP's own mixed-precision setting).
_PRECISION = {torch.float32: "fp32", torch.float16: "amp", torch.bfloat16: "amp_bf16"}
_CHECKPOINT_SUFFIXES = (".pt", ".pth", ".bin", ".safetensors", ".ckpt")


class OpenCLIPScorer(DualEncoder):
    """An :class:`~contrastkit.models.ImageTextScorer` over an OpenCLIP model.

    Images go through the model's own evaluation transform (in the pipeline's workers, or
    as tensor ops on the GPU); texts through its tokenizer. Half precision runs under
    ``torch.autocast`` with float32 weights. Scores are cosine similarities (the model's
    ``logit_scale`` is left out).
    """

    def __init__(
        self,
        spec: str,
        model: Any,
        preprocess: Callable[[Image.Image], torch.Tensor],
        tokenizer: Callable[[list[str]], torch.Tensor],
        runtime: ModelRuntime,
    ):
        super().__init__(
            spec, runtime, image_preprocess=TorchvisionPreprocess(preprocess), autocast=True
        )
        self.model = model
        self.preprocess = preprocess
        self.tokenizer = tokenizer

    def _pixel_features(self, pixels: torch.Tensor) -> torch.Tensor:
        features: torch.Tensor = self.model.encode_image(pixels)
        return features

    def _text_features(self, texts: Sequence[str]) -> torch.Tensor:
        tokens = self.tokenizer(list(texts)).to(self.device)
        features: torch.Tensor = self.model.encode_text(tokens)
        return features

    @property
    def embedding_dim(self) -> int:
        """The width of the joint embedding space."""
        projection = getattr(self.model, "text_projection", None)
        if isinstance(projection, torch.Tensor):
            return int(projection.shape[-1])
        with torch.inference_mode():
            return int(self._text_features(["a"]).shape[-1])


def _how_to_get(arch: str, tag: str, cfg: Mapping[str, object]) -> str:
    hub = str(cfg.get("hf_hub", ""))
    steps = []
    if hub:
        repo, filename = os.path.split(hub)
        steps.append(f"`hf download {repo}{' ' + filename if filename else ''}`")
    if cfg.get("url"):
        steps.append(f"download {cfg['url']} into ~/.cache/clip/")
    steps.append(
        f'or run `python -c "import open_clip; open_clip.create_model_and_transforms('
        f"'{arch}', pretrained='{tag}')\"` once with internet access"
    )
    return (
        f"OpenCLIP weights {arch}/{tag} are not in the local cache. Get them on a machine with "
        f"internet access: {'; '.join(steps)}. Or pass download=True (`--allow-download`), or a "
        f"checkpoint file: open_clip:{arch}/PATH"
    )


def _cached_checkpoint(cfg: Mapping[str, object]) -> str | None:
    """The cached file of an OpenCLIP pretrained config, without touching the network."""
    if "file" in cfg:
        return str(cfg["file"])
    hub = str(cfg.get("hf_hub", ""))
    if hub:
        from huggingface_hub import try_to_load_from_cache

        repo, filename = os.path.split(hub)
        names = [filename] if filename else []
        names += ["open_clip_model.safetensors", "open_clip_pytorch_model.bin"]
        for name in names:
            for candidate in (name, *_safe_alternative(name)):
                found = try_to_load_from_cache(repo, candidate)
                if isinstance(found, str):
                    return found
    url = str(cfg.get("url", ""))
    if url:
        target = Path("~/.cache/clip").expanduser() / Path(url).name
        if target.is_file():
            return str(target)
    return None


def _safe_alternative(name: str) -> list[str]:
    if name.endswith((".bin", ".pth")):
        return [name[:-4] + ".safetensors"]
    return []


def _arch_error(arch: str) -> ConfigError:
    import open_clip

    known = open_clip.list_models()
    close = difflib.get_close_matches(arch, known, n=3, cutoff=0.6)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    return ConfigError(
        f"unknown OpenCLIP architecture {arch!r}{hint}; see open_clip.list_models(), or pass "
        "a folder with open_clip_config.json"
    )


def _is_path(text: str) -> bool:
    return "/" in text or os.sep in text or text.endswith(_CHECKPOINT_SUFFIXES)


class _CreateOptions(TypedDict, total=False):
    """What ``create_model_and_transforms`` is told of a cached pretrained config: its
    activation and, where the config gives them, its image preprocessing."""

    force_quick_gelu: bool
    image_mean: Sequence[float]
    image_std: Sequence[float]
    image_interpolation: str
    image_resize_mode: str


@dataclass(frozen=True)
class _Source:
    """What ``create_model_and_transforms`` is called with, and where its files are."""

    name: str
    pretrained: str | None
    kwargs: _CreateOptions
    files: str | None  # the user's folder / checkpoint, or the cached file; None: nothing local
    cached: bool = False  # ``files`` is a file of the local cache


def _folder_source(target: str) -> _Source:
    folder = Path(target)
    if not (folder / "open_clip_config.json").is_file():
        raise ModelNotFoundError(
            f"{target} is a folder without open_clip_config.json; an OpenCLIP model folder "
            "holds that file and the weights (open_clip_model.safetensors or "
            "open_clip_pytorch_model.bin)"
        )
    if not any(p.suffix in (".safetensors", ".bin", ".pth") for p in folder.iterdir()):
        # OpenCLIP would log a warning and go on with random weights
        raise ModelNotFoundError(
            f"{target} holds open_clip_config.json but no weights (open_clip_model.safetensors "
            "or open_clip_pytorch_model.bin)"
        )
    return _Source(f"local-dir:{target}", None, {}, target)


def _hub_source(target: str, download: bool) -> _Source:
    if not download:
        from huggingface_hub import try_to_load_from_cache

        repo = target.removeprefix("hf-hub:")
        if not isinstance(try_to_load_from_cache(repo, "open_clip_config.json"), str):
            raise ModelNotFoundError(
                f"{repo} is not in the Hugging Face cache; get it with `hf download {repo}` "
                "on a machine with internet access, or pass download=True (`--allow-download`)"
            )
    return _Source(target, None, {}, None, cached=not download)


def _tag_source(target: str, download: bool) -> _Source:
    import open_clip

    arch, sep, pretrained = target.partition("/")
    if not sep or not pretrained:
        raise ConfigError(
            f"model spec 'open_clip:{target}': write open_clip:ARCH/PRETRAINED, e.g. "
            "open_clip:ViT-B-32/openai, open_clip:ViT-B-32/PATH.pt or open_clip:ViT-B-32/random"
        )
    if arch not in open_clip.list_models():
        if meant_as_path(target):  # a mistyped folder, not an architecture
            raise missing_folder(target, "OpenCLIP model folder")
        raise _arch_error(arch)
    if pretrained == "random":
        return _Source(arch, None, {}, None)
    if _is_path(pretrained) or Path(pretrained).is_file():
        if not Path(pretrained).is_file():
            raise ModelNotFoundError(f"OpenCLIP checkpoint file not found: {pretrained}")
        return _Source(arch, pretrained, {}, pretrained)
    cfg = open_clip.get_pretrained_cfg(arch, pretrained)
    if not cfg:
        tags = open_clip.list_pretrained_tags_by_model(arch)
        raise ConfigError(
            f"unknown OpenCLIP tag {pretrained!r} for {arch}; known tags: "
            f"{', '.join(tags) or 'none'} (or give a checkpoint file path)"
        )
    if download:
        return _Source(arch, pretrained, {}, None)
    cached = _cached_checkpoint(cfg)
    if cached is None:
        raise ModelNotFoundError(_how_to_get(arch, pretrained, cfg))
    kwargs: _CreateOptions = {"force_quick_gelu": bool(cfg.get("quick_gelu", False))}
    if cfg.get("mean") is not None:
        kwargs["image_mean"] = cfg["mean"]
    if cfg.get("std") is not None:
        kwargs["image_std"] = cfg["std"]
    if cfg.get("interpolation") is not None:
        kwargs["image_interpolation"] = cfg["interpolation"]
    if cfg.get("resize_mode") is not None:
        kwargs["image_resize_mode"] = cfg["resize_mode"]
    return _Source(arch, cached, kwargs, cached, cached=True)


def _load_error(spec: str, source: _Source, error: Exception, download: bool) -> Exception | None:
    """The error to report for a failed ``create_model_and_transforms``, or ``None`` to let
    ``error`` propagate (a network failure while downloading, a bug)."""
    reason = f"{type(error).__name__}: {error}"
    if source.cached:
        return ModelNotFoundError(
            f"{spec}: the cached weights {source.files or ''} do not load ({reason}); delete "
            "them and download them again"
        )
    if source.files is not None:
        what = "folder" if Path(source.files).is_dir() else "checkpoint"
        return ModelNotFoundError(
            f"{spec}: the {what} {source.files} does not load as an OpenCLIP model ({reason})"
        )
    if download and isinstance(error, RuntimeError) and "download" in str(error).lower():
        return ModelNotFoundError(f"{spec}: the weights could not be downloaded ({reason})")
    return None


def locate_target(target: str, download: bool) -> None:
    """The registry's locate step of ``open_clip:`` (:func:`locate_open_clip`)."""
    locate_open_clip(target, download)


def locate_open_clip(target: str, download: bool = False) -> _Source:
    """Where the OpenCLIP model ``target`` (the part of a spec after ``open_clip:``) is,
    checked without loading it: the folder, checkpoint or cached weights exist (or
    ``download`` allows fetching them).

    Raises:
        ModelNotFoundError: weights neither on disk nor cached (says how to get them).
        ConfigError: unknown architecture or tag, or a malformed target.
    """
    if target.startswith("hf-hub:"):
        return _hub_source(target, download)
    if Path(target).is_dir():
        return _folder_source(target)
    return _tag_source(target, download)


def load_open_clip(
    target: str, runtime: ModelRuntime, context: LoadContext | None = None
) -> OpenCLIPScorer:
    """Load an OpenCLIP model from the part of a spec after ``open_clip:``.

    Args:
        target: ``ARCH/TAG``, ``ARCH/CHECKPOINT_PATH``, ``ARCH/random``, a folder with
            ``open_clip_config.json``, or ``hf-hub:ORG/NAME``.
        runtime: device, dtype, batch size, and whether OpenCLIP may download weights
            missing from the cache.

    Raises:
        ModelNotFoundError: weights neither on disk nor cached (says how to get them), or
            a folder, checkpoint or cached file that does not load (its error chained).
        ConfigError: unknown architecture or tag, or a malformed target.
    """
    import open_clip

    spec = f"open_clip:{target}"
    source = locate_open_clip(target, runtime.download)
    try:
        model, _, preprocess = open_clip.create_model_and_transforms(
            source.name,
            pretrained=source.pretrained,
            device=runtime.device,
            precision=_PRECISION[runtime.dtype],
            **source.kwargs,
        )
        tokenizer = open_clip.get_tokenizer(source.name)
    except LOAD_ERRORS as error:
        reported = _load_error(spec, source, error, runtime.download)
        if reported is None:
            raise
        raise reported from error
    model.eval()
    return OpenCLIPScorer(spec, model, preprocess, tokenizer, runtime)
