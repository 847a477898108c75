"""Loading transformers models from a local folder or the Hugging Face cache, never
reaching for the network unless asked to.

A failed load is told apart by what failed:

* the weights are not on this machine (not a folder, not in the cache, or an id the Hub
  could not have): :class:`~contrastkit.errors.ModelNotFoundError` saying how to get them;
* a folder, or a cached copy, that exists but does not load (a config that is not JSON,
  an architecture transformers does not know, corrupt weights, weights of another shape):
  :class:`~contrastkit.errors.ModelNotFoundError` saying so;
* anything else (a network failure while downloading, a bug) propagates.

The loader's own error is always chained as ``__cause__``.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from contrastkit.errors import ConfigError, ModelNotFoundError
from contrastkit.models.base import LOAD_ERRORS, ModelRuntime
from contrastkit.models.folders import meant_as_path, missing_folder

__all__ = [
    "hf_expect_model_type",
    "hf_from_pretrained",
    "hf_load_model",
    "hf_locate",
    "hf_model_type",
    "hf_text_and_image_processors",
]

T = TypeVar("T")


def _causes(error: BaseException) -> list[BaseException]:
    """``error`` and the errors it was raised from or while handling, outermost first."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def _is_missing(error: BaseException) -> bool:
    """Whether ``error`` says the files are not on this machine (nor, when downloads are
    allowed, on the Hub), rather than that they are there and broken."""
    from huggingface_hub.errors import EntryNotFoundError, RepositoryNotFoundError

    missing = (EntryNotFoundError, RepositoryNotFoundError)
    return any(isinstance(cause, missing) for cause in _causes(error))


def _is_bad_id(error: BaseException) -> bool:
    from huggingface_hub.errors import HFValidationError

    return any(isinstance(cause, HFValidationError) for cause in _causes(error))


def _how_to_get(target: str) -> str:
    looks = "neither a folder nor" if "/" not in target else "not a folder and not"
    return (
        f"{target!r} is {looks} in the Hugging Face cache. Get it on a machine with internet "
        f"access with `hf download {target}` (then copy ~/.cache/huggingface), pass a folder "
        "written by save_pretrained, or pass download=True (`--allow-download`)"
    )


def _load_error(target: str, what: str, error: Exception, *, download: bool) -> Exception | None:
    """The error to report for a failed load, or ``None`` to let ``error`` propagate."""
    if Path(target).is_dir():
        return ModelNotFoundError(
            f"{target} is a folder, but loading its {what} failed ({type(error).__name__}: "
            f"{error}); a model folder holds what save_pretrained writes: config.json, the "
            "weights, the tokenizer and preprocessor files"
        )
    if meant_as_path(target) and not Path(target).expanduser().exists():
        return missing_folder(target)
    if _is_bad_id(error):
        return ModelNotFoundError(
            f"{target!r} is neither a folder nor a Hugging Face model id (ORG/NAME)"
        )
    if _is_missing(error) and download:
        return ModelNotFoundError(
            f"{target!r} is not in the Hugging Face cache and could not be downloaded: check "
            "the id, and log in with `hf auth login` for a gated or private model"
        )
    if _is_missing(error):
        return ModelNotFoundError(_how_to_get(target))
    if not download:  # nothing was fetched: the cached copy is there but does not load
        return ModelNotFoundError(
            f"{target} is in the Hugging Face cache, but loading its {what} failed "
            f"({type(error).__name__}: {error}); delete it with `hf cache delete` and "
            f"download it again (`hf download {target}`)"
        )
    return None


def hf_locate_target(target: str, download: bool) -> None:
    """The registry's locate step of a transformers family: :func:`hf_locate` on the
    target without its ``?`` options."""
    hf_locate(target.partition("?")[0].strip(), download=download)


def hf_locate(target: str, *, download: bool = False) -> None:
    """Check, without loading anything, that the transformers model ``target`` (a folder
    or a Hub id) is on this machine: a folder, or an id whose ``config.json`` is in the
    local Hugging Face cache (any id, with ``download``).

    Raises:
        ModelNotFoundError: no such folder (a path), a file, or an id not in the cache
            (says how to get it).
    """
    path = Path(target).expanduser()
    if path.is_dir():
        return
    if path.exists():
        raise ModelNotFoundError(f"{target} is a file; give a model folder or a Hub id")
    if path.is_absolute() or target.startswith((".", "~")) or target.count("/") > 1:
        raise missing_folder(target)
    if download:
        return
    from huggingface_hub import try_to_load_from_cache

    try:
        found = try_to_load_from_cache(target, "config.json")
    except ValueError as error:  # not a valid repo id (HFValidationError)
        raise ModelNotFoundError(
            f"{target!r} is neither a folder nor a Hugging Face model id (ORG/NAME)"
        ) from error
    if not isinstance(found, str):
        raise ModelNotFoundError(_how_to_get(target))


def hf_from_pretrained(
    loader: Callable[..., T], target: str, what: str, *, download: bool, **kwargs: Any
) -> T:
    """``loader(target, local_files_only=not download, **kwargs)``, its failures reported
    as described in the module docstring.

    Raises:
        ModelNotFoundError: the model is not on this machine, or it is and does not load
            (the loader's error chained).
    """
    local_only = not download or Path(target).is_dir()
    try:
        return loader(target, local_files_only=local_only, **kwargs)
    except LOAD_ERRORS as error:
        reported = _load_error(target, what, error, download=download)
        if reported is None:
            raise
        raise reported from error


def hf_model_type(target: str, *, download: bool) -> str:
    """The ``model_type`` of the config at ``target`` (``clip``, ``siglip``, ``blip`` ...)."""
    from transformers import AutoConfig

    config = hf_from_pretrained(AutoConfig.from_pretrained, target, "config", download=download)
    return str(config.model_type)


def hf_expect_model_type(spec: str, target: str, expected: str, *, download: bool) -> None:
    """Check that the config at ``target`` is a ``expected`` model before its weights load.

    Raises:
        ConfigError: another ``model_type`` (the spec names the wrong family).
        ModelNotFoundError: as :func:`hf_from_pretrained`.
    """
    model_type = hf_model_type(target, download=download)
    if model_type != expected:
        raise ConfigError(f"{spec} holds a {model_type!r} model, not {expected!r}")


def hf_load_model(model_class: Any, target: str, runtime: ModelRuntime) -> tuple[Any, list[str]]:
    """``model_class.from_pretrained(target)`` in ``runtime.dtype``, moved to
    ``runtime.device`` in eval mode, with the names of the weights the checkpoint lacked
    (``missing_keys``: transformers initialised them at random, so a loader can refuse a
    checkpoint without the head it scores with).

    Raises:
        ModelNotFoundError: as :func:`hf_from_pretrained`.
    """
    loaded: Any = hf_from_pretrained(
        model_class.from_pretrained, target, "weights", download=runtime.download,
        dtype=runtime.dtype, output_loading_info=True,
    )  # fmt: skip
    model, info = loaded
    missing = [str(key) for key in info.get("missing_keys", ())]
    return model.to(device=runtime.device).eval(), missing


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
