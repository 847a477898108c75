"""The edit manifest and the contrast-set outputs shared by GenSynth and GenSwap builds.

A build folder holds:

* ``sources.jsonl``: the selected source images (id, file, person box, captions, label).
* ``manifest.jsonl``: one :class:`EditRecord` per *finished* edit. A line is appended,
  flushed and fsynced only after its image has been written (temporary file, then
  rename), so a crash leaves neither a half-written image nor a line for an edit that
  is not on disk. A torn last line (the process died while writing it) is ignored when
  reading and cut off before the next append. The filter stage rewrites the file
  atomically with ``p_real``, ``p_gender`` and ``accepted`` filled in.
* ``edits/<source_id>/<edit_id>.webp``: the edited images (:func:`write_image`; WebP at
  quality :data:`DEFAULT_IMAGE_QUALITY` by default, PNG or JPEG on request; builds made
  before WebP became the default hold ``.png`` files: a record's ``path`` says which).
* ``shards/K-of-N/``: with ``--shard``, each shard's own build folder
  (:mod:`contrastkit.builders.gensynth.shards`).
* ``contrast_set.jsonl``: per kept source, one masculine and one feminine edit with its
  gender-adjusted captions (GenSynth Sec. 4.3).
* ``build_summary.json``: counts, acceptance rates, parameters, quality checks.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from PIL import Image

from contrastkit.builders.coco import Box, SourceImage
from contrastkit.errors import DataFormatError
from contrastkit.gender_words import to_gender
from contrastkit.io import atomic_write_bytes, atomic_write_text, exclusive_lock
from contrastkit.records import json_lines
from contrastkit.schema import Gender

__all__ = [
    "BUILD_LOCK",
    "CONTRAST_SET",
    "DEFAULT_IMAGE_FORMAT",
    "DEFAULT_IMAGE_QUALITY",
    "IMAGE_FORMATS",
    "MANIFEST",
    "SOURCES",
    "SUMMARY",
    "ContrastItem",
    "EditImage",
    "EditRecord",
    "Manifest",
    "composite_edit",
    "contrast_items",
    "edit_image",
    "encode_image",
    "encode_lossless",
    "holds_build_lock",
    "missing_contrast_set",
    "read_contrast_set",
    "read_sources",
    "remove_stale_temp_files",
    "source_file",
    "write_contrast_set",
    "write_image",
    "write_sources",
]

MANIFEST = "manifest.jsonl"
SOURCES = "sources.jsonl"
CONTRAST_SET = "contrast_set.jsonl"
SUMMARY = "build_summary.json"


@dataclass(frozen=True)
class EditRecord:
    """One finished edit, as a manifest line.

    ``path`` is relative to the build folder. ``instruction``, the guidance scales and
    ``steps`` are ``None`` for GenSwap edits, which record their ``donor`` face instead.
    ``p_real``, ``p_gender`` and ``accepted`` stay ``None`` until the filter stage.
    ``composite`` is ``mask`` for an edit confined to the person mask: its file holds
    only the pixels the edit reached (an alpha channel marks them) and is put onto the
    decoded source photo when read (:func:`composite_edit`, :class:`EditImage`); ``None``
    (left out of the line) for a whole image, the box composite of the paper.
    """

    edit_id: str
    source_id: str
    method: str
    target: str
    source_label: str
    box: list[float]
    seed: int
    path: str
    editor: str
    instruction: str | None = None
    text_guidance_scale: float | None = None
    image_guidance_scale: float | None = None
    steps: int | None = None
    donor: str | None = None
    p_real: float | None = None
    p_gender: float | None = None
    accepted: bool | None = None
    composite: str | None = None

    def to_line(self) -> str:
        """The JSON line, newline included (``composite`` only when set, so a box
        build's lines are what they were before it existed)."""
        data = asdict(self)
        if data["composite"] is None:
            del data["composite"]
        return json.dumps(data, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, path: Path, line: int, data: Any) -> EditRecord:
        """Parse one manifest object; errors name the file, line and field."""
        if not isinstance(data, dict):
            raise DataFormatError(path, line, None, "expected a JSON object")
        names = {f.name for f in fields(cls)}
        for required in ("edit_id", "source_id", "method", "target", "path"):
            if not isinstance(data.get(required), str) or not data[required]:
                raise DataFormatError(path, line, required, "missing or not a text")
        if data["target"] not in ("masculine", "feminine"):
            raise DataFormatError(path, line, "target", f"unknown gender {data['target']!r}")
        unknown = set(data) - names
        if unknown:
            raise DataFormatError(path, line, sorted(unknown)[0], "unknown field")
        try:
            return cls(**data)
        except TypeError as error:
            raise DataFormatError(path, line, None, str(error)) from error


class Manifest:
    """``manifest.jsonl`` of a build folder: read, append durably, rewrite atomically."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self.path = self.folder / MANIFEST
        self._repaired = False

    def read(self) -> list[EditRecord]:
        """The finished edits, in file order (a torn last line is left out).

        Raises:
            DataFormatError: a malformed line other than a torn last one, or an edit id
                that appears twice.
        """
        return list(self.records())

    def records(self) -> Iterator[EditRecord]:
        """The finished edits one at a time, in file order, read line by line so that
        memory does not grow with the manifest (184k edits at the paper's scale); a torn
        last line is left out. Errors as :meth:`read` (raised when reached)."""
        if not self.path.exists():
            return
        seen: set[str] = set()
        # a last line without its newline: the last append never finished, not done
        for number, parsed in json_lines(self.path, torn_tail=True):
            record = EditRecord.from_json(self.path, number, parsed)
            if record.edit_id in seen:
                raise DataFormatError(
                    self.path, number, "edit_id", f"edit {record.edit_id!r} listed twice"
                )
            seen.add(record.edit_id)
            yield record

    def _repair_tail(self) -> None:
        if self._repaired or not self.path.exists():
            self._repaired = True
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            with self.path.open("r+b") as handle:
                handle.truncate(data.rfind(b"\n") + 1)
                handle.flush()
                os.fsync(handle.fileno())
        self._repaired = True

    def append(self, *records: EditRecord) -> None:
        """Append finished edits: one write of all their lines, flushed and fsynced
        before returning (the edit stage appends a whole window at once, so a kill
        leaves either all of a window's edits finished or none)."""
        if not records:
            return
        self.folder.mkdir(parents=True, exist_ok=True)
        self._repair_tail()
        with self.path.open("ab") as handle:
            handle.write("".join(r.to_line() for r in records).encode("utf-8"))
            handle.flush()
            os.fsync(handle.fileno())

    def rewrite(self, records: Iterable[EditRecord]) -> None:
        """Replace the whole manifest atomically (used by the filter stage)."""
        atomic_write_text(self.path, "".join(r.to_line() for r in records))
        self._repaired = True


#: Image formats an edit can be stored in, by name: the file suffix.
IMAGE_FORMATS = {"webp": ".webp", "png": ".png", "jpeg": ".jpg"}
#: How edits are stored by default: WebP, lossy (issue 16: ~5-9x smaller than PNG on
#: 640x480 photos at ~40 dB PSNR; figures in bench/storage.py's output).
DEFAULT_IMAGE_FORMAT = "webp"
#: WebP / JPEG quality of stored edits (0-100; PNG is lossless and ignores it).
DEFAULT_IMAGE_QUALITY = 90
_PIL_FORMATS = {".webp": "WEBP", ".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG"}


def write_image(
    path: Path,
    image: Image.Image,
    image_format: str | None = None,
    *,
    quality: int = DEFAULT_IMAGE_QUALITY,
) -> None:
    """Save ``image`` through a temporary file and a rename, as ``image_format``
    (``webp``, ``png`` or ``jpeg``; default: from ``path``'s suffix), encoded by
    :func:`encode_image`.

    Raises:
        ConfigError: an unknown format or suffix, or a quality outside 0-100.
    """
    from contrastkit.errors import ConfigError

    if image_format is None:
        by_suffix = {suffix: name for name, suffix in IMAGE_FORMATS.items()}
        image_format = by_suffix.get(path.suffix.lower().replace(".jpeg", ".jpg"))
        if image_format is None:
            raise ConfigError(f"image_format: cannot tell the format of {path} from its suffix")
    atomic_write_bytes(path, encode_image(image, image_format, quality=quality))


def encode_image(
    image: Image.Image, image_format: str, *, quality: int = DEFAULT_IMAGE_QUALITY
) -> bytes:
    """The bytes of ``image`` stored as ``image_format`` (``webp``, ``png`` or ``jpeg``)
    at ``quality`` (0-100, for the lossy WebP / JPEG; PNG is lossless). The same image
    and settings give the same bytes in every process, so an edit encoded on a Ray actor
    is the file a local run writes.

    Raises:
        ConfigError: an unknown format, or a quality outside 0-100.
    """
    from contrastkit.errors import ConfigError

    if image_format not in IMAGE_FORMATS:
        raise ConfigError(f"image_format: {image_format!r} is not one of "
                          f"{', '.join(IMAGE_FORMATS)}")  # fmt: skip
    if not 0 <= quality <= 100:
        raise ConfigError(f"image_quality: must be in 0-100, not {quality}")
    pil_format = _PIL_FORMATS[IMAGE_FORMATS[image_format]]
    buffer = io.BytesIO()
    options: dict[str, int] = {} if pil_format == "PNG" else {"quality": quality}
    if pil_format == "WEBP":
        options["method"] = 4  # PIL's default; spelled out: it sets the output bytes
    if pil_format == "JPEG" and image.mode != "RGB":
        image = image.convert("RGB")
    image.save(buffer, format=pil_format, **options)
    return buffer.getvalue()


def encode_lossless(image: Image.Image) -> bytes:
    """``image`` as lossless WebP (fast settings): how an edit confined to the person
    mask is exported, so that every pixel outside the mask is the decoded source's,
    exactly (about 8x the bytes of the lossy WebP a box edit is exported as)."""
    buffer = io.BytesIO()
    image.save(buffer, format="WEBP", lossless=True, quality=0, method=0)
    return buffer.getvalue()


def composite_edit(stored: Image.Image, source: Image.Image) -> Image.Image:
    """A mask-composite edit as a whole RGB image: the ``stored`` pixels its alpha
    channel marks (255), put onto the decoded ``source`` photo; every other pixel is the
    source's own, exactly (lossy storage of the stored file changes only marked ones).

    Raises:
        ValueError: the two images differ in size, or ``stored`` has no alpha.
    """
    import numpy as np

    if stored.mode != "RGBA":
        raise ValueError(f"a mask edit has no alpha channel (mode {stored.mode})")
    if stored.size != source.size:
        raise ValueError(
            f"the edit is {stored.width}x{stored.height}, its source photo "
            f"{source.width}x{source.height}"
        )
    pixels = np.asarray(stored)
    result = np.array(source.convert("RGB"), dtype=np.uint8)
    marked = pixels[..., 3] >= 128  # stored exactly (0 or 255): WebP keeps alpha lossless
    result[marked] = pixels[..., :3][marked]
    return Image.fromarray(result)


@dataclass(frozen=True)
class EditImage:
    """A picklable image source (a callable returning the RGB image) of one stored
    edit: the file at ``path``, put onto the photo at ``source`` when it is a mask
    composite (``source`` set), or the file itself (``source`` ``None``)."""

    path: Path
    source: Path | None = None

    def __call__(self) -> Image.Image:
        """The whole RGB image (:class:`DataFormatError` naming a file that is missing,
        unreadable, or does not fit its source photo)."""
        from contrastkit.builders.source_photos import load_photo  # as shown (EXIF)

        stored = _open(self.path, keep_alpha=self.source is not None)
        if self.source is None:
            return stored
        try:
            return composite_edit(stored, load_photo(self.source))
        except ValueError as error:
            raise DataFormatError(self.path, None, None, str(error)) from error


def _open(path: Path, *, keep_alpha: bool) -> Image.Image:
    try:
        with Image.open(path) as image:
            return image.convert("RGBA" if keep_alpha else "RGB")
    except FileNotFoundError as error:
        raise DataFormatError(path, None, None, "image file not found") from error
    except OSError as error:
        raise DataFormatError(path, None, None, f"not a readable image ({error})") from error


def edit_image(folder: Path, record: EditRecord, source: SourceImage) -> Path | EditImage:
    """How to read ``record``'s image: its file (a box composite, the paper's method),
    or an :class:`EditImage` that puts it onto ``source``'s photo (a mask composite)."""
    if record.composite == "mask":
        return EditImage(folder / record.path, source_file(folder, source.path))
    return folder / record.path


def source_file(folder: Path, path: Path) -> Path:
    """A source photo's file: ``path`` as recorded, or relative to the build folder."""
    if path.is_absolute() or path.is_file():
        return path
    return folder / path


#: The lock a build stage holds on its folder (one run per folder at a time).
BUILD_LOCK = ".build.lock"

F = TypeVar("F", bound=Callable[..., Any])


def holds_build_lock(
    run: str,
    *,
    create: bool = False,
    folder: Callable[[dict[str, Any]], Path] | None = None,
) -> Callable[[F], F]:
    """Make a stage hold an exclusive lock on its build folder (its ``out`` argument)
    while it runs (:func:`contrastkit.io.exclusive_lock`): a second run on the same
    folder fails at once with a :class:`~contrastkit.errors.StateError` naming the
    holder, instead of both deleting each other's temporary files and appending the same
    edits. ``create``: make the folder if missing (the first stage); otherwise a missing
    folder is left to the stage's own error. ``folder``: the folder to lock, from the
    call's arguments by name (default: ``out``; a shard locks its shard folder).
    """

    def wrap(function: F) -> F:
        signature = inspect.signature(function)

        @functools.wraps(function)
        def locked(*args: Any, **kwargs: Any) -> Any:
            arguments = signature.bind(*args, **kwargs).arguments
            out = Path(arguments["out"]) if folder is None else folder(arguments)
            if not out.is_dir() and not create:
                return function(*args, **kwargs)
            with exclusive_lock(out / BUILD_LOCK, str(out), run):
                return function(*args, **kwargs)

        return locked  # type: ignore[return-value]

    return wrap


#: The temporary files a killed run leaves: ``.NAME.RANDOM.tmp`` and, from
#: :func:`contrastkit.io.atomic_path`, ``.NAME.RANDOM.tmp.SUFFIX``
#: (``.manifest.jsonl.k2j4x9_a.tmp.jsonl``).
_TEMPORARY = re.compile(r"^\..+\.tmp(\.[A-Za-z0-9]+)?$")


def remove_stale_temp_files(folder: Path) -> int:
    """Delete the temporary files (:data:`_TEMPORARY`) a killed run left under
    ``folder``; return how many. Call it only while holding the folder's lock
    (:func:`holds_build_lock`): the temporary files of a run in progress would go too.
    ``folder/shards/`` is left out: each shard folder has its own lock and cleans its
    own files."""
    count = 0
    if folder.is_dir():
        for stale in folder.rglob(".*.tmp*"):
            if stale.relative_to(folder).parts[0] == "shards" or not (
                _TEMPORARY.match(stale.name) and stale.is_file()
            ):
                continue
            with contextlib.suppress(FileNotFoundError):
                stale.unlink()
                count += 1
    return count


def write_sources(folder: Path, sources: Sequence[SourceImage]) -> None:
    """Write ``sources.jsonl``, keeping sources an earlier run recorded (by id)."""
    merged = {s.source_id: s for s in read_sources(folder)}
    merged.update({s.source_id: s for s in sources})
    text = "".join(json.dumps(s.to_json(), ensure_ascii=False) + "\n" for s in merged.values())
    atomic_write_text(folder / SOURCES, text)


def read_sources(folder: Path) -> list[SourceImage]:
    """The sources of a build folder (``[]`` when the edit stage has not run)."""
    path = folder / SOURCES
    if not path.exists():
        return []
    sources = []
    for number, data in json_lines(path):
        try:
            sources.append(
                SourceImage(
                    source_id=str(data["source_id"]),
                    path=Path(data["path"]),
                    width=int(data["width"]),
                    height=int(data["height"]),
                    box=Box(*(float(v) for v in data["box"])),
                    captions=tuple(str(c) for c in data["captions"]),
                    label=Gender(data["label"]),
                    segmentation=data.get("segmentation"),
                    sha256=None if data.get("sha256") is None else str(data["sha256"]),
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise DataFormatError(path, number, None, f"malformed source: {exc}") from exc
    return sources


@dataclass(frozen=True)
class ContrastItem:
    """One image of a contrast set: an accepted edit with its gender-adjusted captions."""

    source_id: str
    gender: str
    edit_id: str
    image: str
    source_image: str
    box: list[float]
    captions: list[str]
    original_captions: list[str]
    method: str
    p_real: float | None = None
    p_gender: float | None = None


def write_contrast_set(
    folder: Path,
    chosen: dict[str, dict[Gender, EditRecord]],
    sources: dict[str, SourceImage],
) -> list[ContrastItem]:
    """Write ``contrast_set.jsonl``: per source, its masculine then its feminine edit, with
    the source's captions rewritten to the edit's gender (GenSynth Sec. 4.3,
    :func:`contrastkit.gender_words.to_gender`)."""
    items = []
    for source_id, per_gender in chosen.items():
        source = sources[source_id]
        for gender in Gender.binary():
            record = per_gender[gender]
            items.append(
                ContrastItem(
                    source_id=source_id,
                    gender=gender.value,
                    edit_id=record.edit_id,
                    image=record.path,
                    source_image=str(source.path),
                    box=source.box.as_list(),
                    captions=[to_gender(c, gender) for c in source.captions],
                    original_captions=list(source.captions),
                    method=record.method,
                    p_real=record.p_real,
                    p_gender=record.p_gender,
                )
            )
    atomic_write_text(
        folder / CONTRAST_SET,
        "".join(json.dumps(asdict(i), ensure_ascii=False) + "\n" for i in items),
    )
    return items


def read_contrast_set(path: str | Path) -> list[ContrastItem]:
    """Read a ``contrast_set.jsonl`` (or the build folder holding one)."""
    path = Path(path)
    folder = path.parent
    if path.is_dir() or (not path.exists() and path.name != CONTRAST_SET):
        folder, path = path, path / CONTRAST_SET
    if not path.is_file():
        raise missing_contrast_set(folder)
    return [item for _, item in contrast_items(path)]


def missing_contrast_set(folder: Path) -> DataFormatError:
    """The error for a ``folder`` without a ``contrast_set.jsonl``, saying why: it does
    not exist, it is no build folder, or its build has not run the select stage."""
    if not folder.exists():
        return DataFormatError(folder, None, None, "no such folder")
    if not folder.is_dir():
        return DataFormatError(folder, None, None, "not a folder (give a build folder)")
    built = any((folder / name).exists() for name in (MANIFEST, SUMMARY, "sources.jsonl"))
    if not built and any(folder.iterdir()):  # an empty folder: a build not yet run
        return DataFormatError(
            folder, None, None,
            "not a build folder: no contrast_set.jsonl, manifest.jsonl or "
            "build_summary.json (give the --out folder of `contrastkit build gensynth` or "
            "`build genswap`)",
        )  # fmt: skip
    return DataFormatError(
        folder / CONTRAST_SET, None, None, "no such file (run the select stage first)"
    )


def contrast_items(path: Path) -> Iterator[tuple[int, ContrastItem]]:
    """The items of a ``contrast_set.jsonl`` with their line numbers, read one line at a
    time (:func:`~contrastkit.records.json_lines`); a line that is not an item is a
    :class:`DataFormatError` naming it."""
    for number, data in json_lines(path):
        if not isinstance(data, dict):
            raise DataFormatError(path, number, None, "malformed item: not a JSON object")
        try:
            item = ContrastItem(**data)
        except TypeError as exc:
            raise DataFormatError(path, number, None, f"malformed item: {exc}") from exc
        _check_item(path, number, item)
        yield number, item


def _is_number(value: object) -> bool:
    """A finite JSON number (not a bool, not an integer too large for a float)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def _check_item(path: Path, line: int, item: ContrastItem) -> None:
    """Each field of a contrast-set item of its type, or a located error (a value of
    another type would fail deep inside the export)."""
    for name in ("source_id", "gender", "edit_id", "image", "source_image", "method"):
        if not isinstance(getattr(item, name), str):
            found = type(getattr(item, name)).__name__
            raise DataFormatError(path, line, name, f"expected a string, found {found}")
    for name in ("captions", "original_captions"):
        value = getattr(item, name)
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise DataFormatError(path, line, name, "expected a list of strings")
    if not isinstance(item.box, list) or len(item.box) != 4 or not all(map(_is_number, item.box)):
        raise DataFormatError(path, line, "box", "expected [x, y, w, h], four finite numbers")
    for name in ("p_real", "p_gender"):
        value = getattr(item, name)
        if value is not None and not _is_number(value):
            raise DataFormatError(path, line, name, "expected a finite number or null")


def with_scores(record: EditRecord, p_real: float, p_gender: float, accepted: bool) -> EditRecord:
    """``record`` with its filter scores."""
    return replace(record, p_real=p_real, p_gender=p_gender, accepted=accepted)
