"""Loading transformers models from a local folder or the Hugging Face cache, never
reaching for the network unless asked to."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["hf_from_pretrained", "hf_model_type", "hf_text_and_image_processors"]

T = TypeVar("T")


def _not_found(target: str, what: str, exc: Exception) -> Exception:
    from contrastkit.evaluators.models.base import ModelNotFoundError

    if Path(target).is_dir():
        return ModelNotFoundError(
            f"{target} is a folder, but its {what} could not be loaded ({exc}); a model folder "
            "holds what save_pretrained writes: config.json, the weights, the tokenizer and "
            "preprocessor files"
        )
    if "/" not in target and not Path(target).exists():
        looks = "neither a folder nor"
    else:
        looks = "not a folder and not"
    return ModelNotFoundError(
        f"{target!r} is {looks} in the Hugging Face cache. Get it on a machine with internet "
        f"access with `hf download {target}` (then copy ~/.cache/huggingface), pass a folder "
        "written by save_pretrained, or pass download=True (`--download`)"
    )


def hf_from_pretrained(
    loader: Callable[..., T], target: str, what: str, *, download: bool, **kwargs: Any
) -> T:
    """``loader(target, local_files_only=not download, **kwargs)``, with a missing model
    turned into a :class:`~contrastkit.evaluators.models.ModelNotFoundError` that says
    how to get it."""
    local_only = not download or Path(target).is_dir()
    try:
        return loader(target, local_files_only=local_only, **kwargs)
    except OSError as exc:
        raise _not_found(target, what, exc) from None
    except ValueError as exc:  # a folder without a usable config.json
        if Path(target).is_dir():
            raise _not_found(target, what, exc) from None
        raise


def hf_model_type(target: str, *, download: bool) -> str:
    """The ``model_type`` of the config at ``target`` (``clip``, ``siglip``, ``blip`` ...)."""
    from transformers import AutoConfig

    config = hf_from_pretrained(AutoConfig.from_pretrained, target, "config", download=download)
    return str(config.model_type)


def hf_text_and_image_processors(target: str, *, download: bool) -> tuple[Any, Any]:
    """The tokenizer and the image processor saved with the model at ``target``."""
    from transformers import AutoImageProcessor, AutoTokenizer

    tokenizer = hf_from_pretrained(
        AutoTokenizer.from_pretrained, target, "tokenizer", download=download
    )
    processor = hf_from_pretrained(
        AutoImageProcessor.from_pretrained, target, "image processor", download=download
    )
    return tokenizer, processor
