"""Reading a Hugging Face ``datasets`` folder written by ``save_to_disk``: one place for
the split rule that the VisoGender loader (:mod:`contrastkit.evaluators.data`) and the
probe-set reader (:mod:`contrastkit.probes`) share.

A top-level module, so that builders, evaluators and curation may all import it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError

__all__ = ["load_saved_split"]


def load_saved_split(folder: Path, split: str | None = None) -> tuple[Any, str | None]:
    """The rows of a saved dataset, and the split they are.

    A ``Dataset`` is returned as it is, with split ``None`` (``split`` is ignored: there is
    nothing to choose). Of a ``DatasetDict`` the split named by ``split``; without one, its
    only split, else ``test``.

    Args:
        folder: a ``save_to_disk`` folder.
        split: the split of a dataset dict.

    Returns:
        The ``datasets.Dataset`` and the name of its split (``None`` for a plain
        ``Dataset``).

    Raises:
        DataFormatError: the folder does not load as a dataset, or the split is not one
            of the dict's (the message lists them and names ``--split``).
    """
    from datasets import Dataset, DatasetDict, load_from_disk

    try:
        loaded = load_from_disk(str(folder))
    except (OSError, ValueError) as exc:
        raise DataFormatError(folder, None, None, f"cannot load the dataset: {exc}") from exc
    if not isinstance(loaded, DatasetDict):
        assert isinstance(loaded, Dataset)
        return loaded, None
    names = list(loaded)
    if split is None:
        split = names[0] if len(names) == 1 else ("test" if "test" in names else None)
    if split is None or split not in loaded:
        raise DataFormatError(
            folder, None, None, f"choose a split with --split: one of {', '.join(names)}"
        )
    return loaded[split], split
