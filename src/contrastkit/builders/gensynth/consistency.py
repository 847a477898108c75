"""One set of settings per build: a run never mixes edits made with other settings.

Every setting that decides an edit's pixels (the editor, every
:class:`~contrastkit.curation.editing.EditSettings` field that reaches the pixels, how
the edits are stored) is the same for every edit of a build folder. A run whose settings
differ from those the folder's edits were made with is refused before anything is
edited or recorded, naming each difference by its option
(:func:`check_edit_settings`): resumed as it is, it would keep the old edits beside new
ones and record the new settings as if they held for all (issue 43, item 1). A rerun
without those options resumes with the recorded settings; a build with other settings
goes into another folder (``--out``).

What the edits were made with is read from the build summary: the edit stage's entry
(the last finished edit run), else the ``settings`` entry its run recorded before the
first edit (a run killed before it finished).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.builders.gensynth.summary import SETTINGS, read_summary
from contrastkit.builders.manifest import (
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_IMAGE_QUALITY,
    IMAGE_FORMATS,
    Manifest,
)
from contrastkit.curation.editing import EditSettings
from contrastkit.curation.editor_families import parse_editor_spec
from contrastkit.errors import ConfigError, DataFormatError

__all__ = ["EditMaking", "check_edit_settings", "recorded_making"]

#: How a difference names each setting: its command-line option (``feather`` has none).
_OPTIONS: dict[str, str] = {
    "editor": "--editor",
    "instructions": "--instructions",
    "text_guidance_scales": "--scales",
    "image_guidance_scale": "--image-guidance",
    "steps": "--steps",
    "resolution": "--resolution",
    "margin": "--margin",
    "feather": "feather",
    "seed": "--seed",
    "composite": "--composite",
    "mask_dilation": "--mask-dilation",
    "image_format": "--image-format",
    "image_quality": "--image-quality",
}

#: Formats whose quality setting changes the stored pixels.
_LOSSY = ("webp", "jpeg")


@dataclass(frozen=True)
class EditMaking:
    """What decides the pixels of a build's edits: the editor spec, the edit settings and
    how the edits are stored."""

    editor: str
    edit: EditSettings
    image_format: str = DEFAULT_IMAGE_FORMAT
    image_quality: int = DEFAULT_IMAGE_QUALITY

    def differences(self, other: EditMaking) -> list[tuple[str, Any, Any]]:
        """``(option, this value, other value)`` for each setting that makes ``other``'s
        edits differ from these: every edit setting that reaches the pixels (``feather``
        in box mode, ``mask_dilation`` in mask mode), the editor (the same model spelt
        otherwise is the same) and the storage (quality only for lossy formats)."""
        found: list[tuple[str, Any, Any]] = []
        if _editor_key(self.editor) != _editor_key(other.editor):
            found.append(("editor", self.editor, other.editor))
        mine, theirs = self.edit, other.edit
        names = ["instructions", "text_guidance_scales", "image_guidance_scale", "steps",
                 "resolution", "margin", "seed", "composite"]  # fmt: skip
        if mine.composite == theirs.composite:
            names.append("mask_dilation" if mine.composite == "mask" else "feather")
        for name in names:
            a, b = getattr(mine, name), getattr(theirs, name)
            if name == "instructions":
                a, b = dict(a), dict(b)
            if a != b:
                found.append((name, a, b))
        if self.image_format != other.image_format:
            found.append(("image_format", self.image_format, other.image_format))
        elif self.image_format in _LOSSY and self.image_quality != other.image_quality:
            found.append(("image_quality", self.image_quality, other.image_quality))
        return found


def _editor_key(spec: str) -> tuple[str, str]:
    """An editor spec as (family, model): a local folder by its absolute path."""
    try:
        family, target = parse_editor_spec(spec)
    except ConfigError:
        return ("", spec.strip())
    path = Path(target).expanduser()
    return (family.prefix, str(path.resolve()) if path.exists() else target)


def _making(
    data: Mapping[str, Any], edit: Any, folder: Path, where: str, stored: str
) -> EditMaking | None:
    """The :class:`EditMaking` of one summary entry (``None`` without an editor or edit
    settings in it)."""
    editor = data.get("editor")
    if not isinstance(editor, str) or not isinstance(edit, Mapping):
        return None
    try:
        settings = EditSettings.from_json(edit)
    except (ValueError, ConfigError) as error:
        raise DataFormatError(folder / "build_summary.json", None, where, str(error)) from error
    return EditMaking(
        editor=editor,
        edit=settings,
        image_format=str(data.get("image_format") or stored),
        image_quality=int(data.get("image_quality") or DEFAULT_IMAGE_QUALITY),
    )


def recorded_making(folder: str | Path) -> tuple[EditMaking, int] | None:
    """What the edits in the build folder ``folder`` were made with, and how many edits
    it holds; ``None`` when it holds none (or records no settings, a folder older than
    the record).

    Raises:
        DataFormatError: a malformed build summary or manifest.
    """
    folder = Path(folder)
    count, first = 0, ""
    for record in Manifest(folder).records():
        count, first = count + 1, first or record.path
    if not count:
        return None
    summary = read_summary(folder)
    # builds made before the storage was recorded: the format of their files
    suffix = Path(first).suffix.lower().replace(".jpeg", ".jpg")
    stored = {v: k for k, v in IMAGE_FORMATS.items()}.get(suffix, DEFAULT_IMAGE_FORMAT)
    for entry, edit, where in (
        (summary.get("edit"), "settings", "edit.settings"),
        (summary.get(SETTINGS), "edit", f"{SETTINGS}.edit"),
    ):
        if isinstance(entry, Mapping):
            found = _making(entry, entry.get(edit), folder, where, stored)
            if found is not None:
                return found, count
    return None


def _difference(name: str, old: Any, new: Any) -> str:
    """One difference as the error lists it."""
    if name == "instructions":
        return "--instructions: other instructions than the recorded ones"
    return f"{_OPTIONS[name]} {_shown(name, old)} (recorded), {_shown(name, new)} (this run)"


def _shown(name: str, value: Any) -> str:
    if name == "text_guidance_scales":
        return ",".join(f"{v:g}" for v in value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def check_edit_settings(folder: str | Path, run: EditMaking) -> None:
    """Refuse to run on the build folder ``folder`` with settings that would make edits
    other than those it holds (:meth:`EditMaking.differences`).

    Raises:
        ConfigError: naming the folder, how many edits it holds, each differing option
            with the recorded value and this run's, and what to do instead.
        DataFormatError: a malformed build summary or manifest.
    """
    recorded = recorded_making(folder)
    if recorded is None:
        return
    made, count = recorded
    differences = made.differences(run)
    if not differences:
        return
    listed = "; ".join(_difference(*difference) for difference in differences)
    raise ConfigError(
        f"{folder} holds {count} edits made with other settings than this run's: {listed}. "
        "Every edit of a build is made with the same settings: rerun without these "
        "options to resume with the recorded ones, or build with them into a new folder "
        "(another --out; delete this one to start it over)"
    )
