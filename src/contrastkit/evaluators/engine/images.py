"""Image references of a task's items read the way VisoGender rows are read: what the
engine does for a task offering the ``images`` options (``--store``, ``--fetch``,
``--skip-missing``).

Each image an item names by a string or a path (a file beside the data, or a URL) is
checked before any model loads: a URL the image store does not hold is fetched with
``--fetch``; an item whose image is still not available is refused (naming every such
row) or, with ``--skip-missing``, left out and listed. The images kept are opened by the
image loader (:class:`~contrastkit.evaluators.data.ImageLoader`) when their batch is
scored. Images given otherwise (bytes, a decoded image, a function) are left as given.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.engine.protocol import Item, Task
from contrastkit.evaluators.outcome import Images

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.evaluators.data import EvalItem, ImageLoader
    from contrastkit.interfaces import ProgressFactory

__all__ = ["ImageView", "Images", "available"]

#: The option group that makes the engine read image references (OPTION_GROUPS).
IMAGES = "images"


@dataclass(frozen=True)
class _RowView:
    """The few row fields the image loader reads of an item."""

    idx: str
    group: str
    line: int | None
    error_codes: str = ""

    @property
    def context(self) -> _RowView:  # a skipped row's ``context``: the item's group
        return self

    @property
    def value(self) -> str:
        return self.group


@dataclass(frozen=True)
class ImageView:
    """One image of an item, shaped like an :class:`~contrastkit.evaluators.data.EvalItem`
    so that the image loader, the fetching and ``--skip-missing`` of VisoGender rows serve
    it as they are (local paths, URLs through the image store, images stored in a saved
    dataset: ``dataset_index`` / ``dataset_split`` set, ``item.source`` its folder).

    Attributes:
        item: the item.
        name: the image's name in ``item.images``; errors name it as the field.
        image_ref: the reference as written.
    """

    item: Item
    name: str
    image_ref: str
    dataset_index: int | None = None
    dataset_split: str | None = None

    @property
    def source(self) -> Path:
        return self.item.source if self.item.source is not None else Path()

    @property
    def row(self) -> _RowView:
        return _RowView(self.item.name or self.item.key, self.item.group, self.item.line)

    def error(self, reason: str, field: str | None = None) -> DataFormatError:
        if self.dataset_index is not None:
            return DataFormatError(self.source, None, f"row {self.dataset_index}", reason)
        return DataFormatError(self.source, self.item.line, field or self.name, reason)


def _opener(loader: ImageLoader, view: ImageView) -> Any:
    def open_image() -> Image.Image:
        return loader.open(cast("EvalItem", view))

    return open_image


def available(
    task: Task[Any, Any],
    config: Any,
    paths: tuple[Path, ...],
    items: Sequence[Item],
    progress: ProgressFactory | None,
) -> tuple[list[Item], Images]:
    """The items to score, their string and path images opened through the image loader,
    and what was done (:class:`Images`); ``items`` as they are for a task without the
    ``images`` options. ``config`` is an
    :class:`~contrastkit.evaluators.evaluation.EvaluateConfig`.

    Raises:
        DataFormatError: an image that is not available (without ``skip_missing``), or
            no item with its images available.
    """
    if IMAGES not in task.options:
        return list(items), Images()
    from contrastkit.evaluators.availability import available_items

    views = [
        ImageView(item, name, str(ref))
        for item in items
        for name, ref in item.images.items()
        if isinstance(ref, str | Path)
    ]
    found = cast("list[EvalItem]", views)
    kept, loader, skipped, (fetched, checked) = available_items(config, paths, found, progress)
    kept_views = cast("list[ImageView]", kept)
    left_out = {id(view.item) for view in views} - {id(view.item) for view in kept_views}
    openers = {(id(view.item), view.name): _opener(loader, view) for view in kept_views}
    ready = [
        dataclasses.replace(item, images={
            name: openers.get((id(item), name), ref) for name, ref in item.images.items()
        })
        for item in items
        if id(item) not in left_out
    ]  # fmt: skip
    store = loader.store.root if loader.store is not None else None
    done = Images(store, checked, fetched, tuple(skipped), bool(config.skipping))
    return ready, done
