"""What every GenSynth / GenSwap stage shares: the build summary (and the shapes of its
entries and of a shard's ``shard.json``), images, person crops."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

from PIL import Image
from typing_extensions import NotRequired

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.manifest import BUILD_LOCK, SUMMARY
from contrastkit.builders.source_photos import load_photo
from contrastkit.curation.editing import EditSettingsJSON
from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text, exclusive_lock
from contrastkit.records import read_json_object

__all__ = [
    "SETTINGS",
    "STALE",
    "EditEntry",
    "Progress",
    "ShardFile",
    "ShardSelection",
    "ShardStorage",
    "load_image",
    "person_crop",
    "read_summary",
    "record_settings",
    "recorded_settings",
    "update_summary",
]

#: The build summary's entry with the options of the build's latest run (the job's
#: settings: sources, models, edit settings, filter thresholds, checks), which a later
#: run on the folder reuses for every option it is not given.
SETTINGS = "settings"

#: The key a stage entry gets when a later stage changed its inputs (a re-filter makes
#: the selection stale): why, and the stage to run again.
STALE = "stale"


class EditEntry(TypedDict):
    """The ``edit`` entry of a build summary: what the edit stage did
    (:class:`~contrastkit.builders.gensynth.edit.EditStageReport`), or a merge of shards
    (:func:`~contrastkit.builders.gensynth.merging.merged_edit_entry`, which adds
    ``merged_shards``; a shard made before the storage was recorded gives no
    ``image_format`` / ``image_quality``, and one made before the editor families none of
    the ``editor_*`` keys)."""

    sources: int
    planned: int
    skipped_finished: int
    edited: int
    removed_temp_files: int
    selection: dict[str, int]
    settings: EditSettingsJSON
    editor: str
    shard: str | None
    merged_shards: NotRequired[list[int]]
    image_format: str | None
    image_quality: int | None
    editor_random_weights: bool
    editor_family: NotRequired[str]
    editor_pipeline: NotRequired[str | None]
    editor_dtype: NotRequired[str | None]


class ShardSelection(TypedDict):
    """How a shard's sources were selected: the COCO split, the limit, the smallest
    person box side (a shard's positions compare only with those of the same)."""

    split: str
    limit: int | None
    min_box_side: float


class ShardStorage(TypedDict):
    """How a shard stored its edits."""

    image_format: str
    image_quality: int


class ShardFile(TypedDict):
    """The content of a shard's ``shard.json``
    (:meth:`~contrastkit.builders.gensynth.shards.ShardInfo.to_json`); ``storage`` is
    missing in shards made before it was recorded."""

    shard: int
    shards: int
    edit: EditSettingsJSON
    editor: str
    selection: ShardSelection
    storage: NotRequired[ShardStorage]
    fingerprint: str
    positions: dict[str, int]


#: Called with (finished, total) as work progresses.
Progress = Callable[[int, int], None]


def load_image(path: Path) -> Image.Image:
    """An RGB image turned as its EXIF orientation says (as a viewer shows it, and as
    the exports and the model pipeline read it:
    :func:`~contrastkit.builders.source_photos.load_photo`), or a
    :class:`DataFormatError` naming the file."""
    return load_photo(path)


def person_crop(image: Image.Image, source: SourceImage) -> Image.Image:
    """The person box of ``source`` cut from ``image`` (the original or an edit)."""
    return image.crop(source.box.xyxy(image.width, image.height))


def read_summary(folder: str | Path) -> dict[str, Any]:
    """``build_summary.json`` of a build folder (``{}`` before any stage).

    Raises:
        DataFormatError: the file is not a JSON object.
    """
    path = Path(folder) / SUMMARY
    if not path.exists():
        return {}
    return read_json_object(path)


def update_summary(
    folder: str | Path,
    key: str,
    value: Any,
    *,
    stale: Sequence[str] = (),
    outdated: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Set one stage's entry of ``build_summary.json`` and drop the ``stale`` entries that
    described earlier outputs, in one atomic write; return the summary.

    ``outdated``: entries kept but marked :data:`STALE` (entry -> why), because this
    stage changed what they were made from (a re-filter: the selection on disk is the
    previous decisions'); the stage that rewrites such an entry clears the mark.
    """
    summary = read_summary(folder)
    summary[key] = value
    for name in stale:
        summary.pop(name, None)
    for name, why in (outdated or {}).items():
        entry = summary.get(name)
        if isinstance(entry, dict):
            entry[STALE] = why
    text = json.dumps(summary, indent=2, ensure_ascii=False) + "\n"
    atomic_write_text(Path(folder) / SUMMARY, text)
    return summary


def recorded_settings(folder: str | Path) -> dict[str, Any]:
    """The options a build folder recorded, by
    :class:`~contrastkit.builders.gensynth.job.GenSynthConfig`
    field name (``edit`` as :meth:`EditSettings.to_json` writes it): its :data:`SETTINGS`
    entry, completed from what the stages recorded (for folders built before that entry
    existed): the edit stage's ``settings``, ``editor``, ``image_format`` and
    ``image_quality``, the encoder of the ``embed`` / ``filter`` stage, the filter's
    ``k``, ``tau_real`` and ``tau_gender``. ``{}`` for a folder without a summary.

    Raises:
        DataFormatError: ``build_summary.json`` is not a JSON object, or its
            :data:`SETTINGS` entry is not one.
    """
    summary = read_summary(folder)
    found: dict[str, Any] = {}
    edit = summary.get("edit")
    if isinstance(edit, dict):
        if isinstance(edit.get("settings"), dict):
            found["edit"] = edit["settings"]
        for key, name in (("editor", "editor"), ("image_format", "image_format"),
                          ("image_quality", "image_quality")):  # fmt: skip
            if edit.get(key) is not None:
                found[name] = edit[key]
    for stage in ("embed", "filter"):
        entry = summary.get(stage)
        if isinstance(entry, dict) and isinstance(entry.get("encoder"), str):
            found["embedder"] = entry["encoder"]
    filtered = summary.get("filter")
    if isinstance(filtered, dict):
        found |= {key: filtered[key] for key in ("k", "tau_real", "tau_gender") if key in filtered}
    if isinstance(edit, dict) and edit.get("image_format") is None:
        stored = _stored_format(Path(folder))  # made before the format was recorded
        if stored is not None:
            found["image_format"] = stored
    settings = summary.get(SETTINGS)
    if settings is not None:
        if not isinstance(settings, dict):
            path = Path(folder) / SUMMARY
            raise DataFormatError(path, None, SETTINGS, "not a JSON object")
        found |= {k: v for k, v in settings.items() if k not in ("chosen", "limit")}
    return found


def _stored_format(folder: Path) -> str | None:
    """The image format of the first edit the folder holds (``None``: none)."""
    from contrastkit.builders.manifest import IMAGE_FORMATS, Manifest

    by_suffix = {suffix: name for name, suffix in IMAGE_FORMATS.items()}
    for record in Manifest(folder).records():
        return by_suffix.get(Path(record.path).suffix.lower().replace(".jpeg", ".jpg"))
    return None


def record_settings(folder: str | Path, settings: Mapping[str, Any]) -> None:
    """Store ``settings`` (JSON-ready) as the :data:`SETTINGS` entry of the build folder
    ``folder``, holding its build lock; nothing when the folder does not exist.

    Raises:
        StateError: another run holds the folder's lock.
    """
    folder = Path(folder)
    if not folder.is_dir():
        return
    with exclusive_lock(folder / BUILD_LOCK, str(folder), "contrastkit build gensynth"):
        update_summary(folder, SETTINGS, dict(settings))
