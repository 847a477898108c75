"""Datasets named by a Hugging Face Hub id, for ``contrastkit evaluate --data``.

``--data hf:USER/NAME`` (the prefix keeps Hub ids apart from local paths) loads every
config of the dataset with ``datasets.load_dataset`` (from the user's cache, or the Hub
when online) and saves it under the output folder in the layout of a
``contrastkit export`` folder (``saved/<config>``), so the evaluator reads Hub datasets,
exported folders and its own copies the same way. ``hf:`` also takes a local folder laid
out like a Hub repository (what ``contrastkit publish --dry-run`` writes).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.io import resource_error
from contrastkit.repo_ids import is_repo_id

__all__ = ["HUB_PREFIX", "hub_name", "materialize_hub_dataset"]

HUB_PREFIX = "hf:"


def hub_name(data: str) -> str | None:
    """The Hub id (or repository-like folder) ``data`` names after ``hf:``, or None for a
    local path.

    Raises:
        ConfigError: ``hf:`` followed by something that is neither ``USER/NAME`` nor an
            existing folder.
    """
    if not data.startswith(HUB_PREFIX):
        return None
    name = data[len(HUB_PREFIX) :]
    if not (is_repo_id(name) or Path(name).is_dir()):
        raise ConfigError(f"data {data!r}: expected hf:USER/NAME or hf:FOLDER")
    return name


def materialize_hub_dataset(name: str, dest: Path) -> Path:
    """Load every config of ``name`` and save it to ``dest/saved/<config>``; return ``dest``.

    Raises:
        DataFormatError: the dataset cannot be found or loaded (message says why; the
            error of ``datasets`` chained as ``__cause__``).
        ResourceError: ``dest`` cannot be written.
    """
    from datasets import DatasetDict, load_dataset

    # datasets keys its cache of a local folder by the folder's name, so another folder of
    # the same name would be read back stale: local folders are read through a fresh
    # cache of their own (cheap), Hub datasets through the user's cache.
    local = Path(name).is_dir()
    for config in _config_names(name):
        with tempfile.TemporaryDirectory(prefix="contrastkit-hub-") as cache:
            try:
                loaded = load_dataset(name, config, cache_dir=cache if local else None)
            except (ValueError, ConnectionError, OSError) as error:
                raise _unloadable(name, error) from error
            assert isinstance(loaded, DatasetDict)  # what load_dataset gives without split=
            target = dest / "saved" / config
            try:
                loaded.save_to_disk(str(target))
            except OSError as error:
                raise resource_error(target, "a local copy of the dataset", error) from error
    return dest


def _config_names(name: str) -> list[str]:
    from datasets import get_dataset_config_names

    try:
        return list(get_dataset_config_names(name))
    except (ValueError, ConnectionError, OSError) as error:
        raise _unloadable(name, error) from error


def _unloadable(name: str, error: Exception) -> DataFormatError:
    return DataFormatError(
        f"{HUB_PREFIX}{name}", None, None,
        f"cannot load this dataset ({type(error).__name__}: {error}); check the id, log in "
        "with `hf auth login` for a private one, or download it while online",
    )  # fmt: skip
