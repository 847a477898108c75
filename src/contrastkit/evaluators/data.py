"""What the evaluator scores: annotated rows and where each row's image comes from.

Three image sources:

* a **local path** in the URL column of an official-format TSV (absolute, relative to the
  TSV's folder, or a ``file://`` URL);
* an **http(s) URL**, read from the content-addressed image store that
  ``contrastkit urls check FILE --store DIR`` fills (:class:`contrastkit.store.ImageStore`);
  the evaluation job fetches into it only when asked (``EvaluateConfig.fetch``, the
  default for the bundled sets);
* the ``image`` column of a **Hugging Face dataset** saved with ``save_to_disk``.

A dataset is given as one or more official-format TSVs, a folder of them (every ``*.tsv``
with an official header), a ``save_to_disk`` folder, or the folder ``contrastkit export
visogender`` writes (its ``saved/<config>`` datasets; ``ClassLabel`` genders and contexts
are read as their names). Rows of a Hugging Face dataset
carry the same fields as the TSVs, under either the official column names or the
snake-case names of :class:`~contrastkit.schema.VisoGenderRow` (``idx``, ``context``,
``sector``, ``specialisation``, ``occupation``, ``participant``, ``object``,
``occupation_gender``, ``participant_gender``, ``url``, ``image``).

The official VisoGender OP and OO sets ship with contrastkit (:func:`visogender_files`;
``--data visogender``).

Every image reference is checked before any model runs: the rows whose file is missing
or whose URL the store does not hold are either one
:class:`~contrastkit.schema.DataFormatError` located at the first of them and naming them
all (:meth:`ImageLoader.check`), or set aside, one :class:`SkippedRow` each, together with
the rows ``contrastkit urls maintain`` flagged ``retired`` or ``content_changed``
(:meth:`ImageLoader.available`, ``--skip-missing``).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict
from urllib.parse import urlparse

from PIL import Image

from contrastkit.errors import DataFormatError
from contrastkit.pipeline.sources import DECODE_ERRORS, DatasetImage, decode
from contrastkit.records import data_file
from contrastkit.saved_datasets import load_saved_split
from contrastkit.schema import URL_COLUMN, Context, Gender, VisoGenderRow
from contrastkit.store import ImageStore
from contrastkit.tsv import (
    VISOGENDER,
    VISOGENDER_FILES,
    parse_visogender_tsv,
    read_visogender_tsv,
    visogender_files,
)

__all__ = [
    "VISOGENDER",
    "VISOGENDER_FILES",
    "EvalItem",
    "ImageLoader",
    "SkippedRow",
    "SkippedRowJson",
    "load_items",
    "maintenance_flags",
    "visogender_files",
]

#: Codes ``contrastkit urls maintain`` writes into ``Error codes`` that mean the row's
#: image is not the annotated one any more, whatever the image store holds: the row was
#: retired (it kept failing), or its URL now serves another picture.
RETIRED_CODES = ("retired", "content_changed")

#: How many missing rows an error message names before "... and N more".
SHOWN_MISSING = 5


def maintenance_flags(error_codes: str) -> list[str]:
    """The codes ``contrastkit urls maintain`` wrote into a row's ``Error codes`` cell
    (``http_error:404``, ``timeout``, ``content_changed``, ``retired`` ...), without the
    codes a person wrote there."""
    if not error_codes.strip():
        return []
    managed = _managed_codes()
    codes = (part.strip() for part in error_codes.replace(",", ";").split(";"))
    return [code for code in codes if code and code.split(":", 1)[0] in managed]


@functools.cache
def _managed_codes() -> frozenset[str]:
    from contrastkit.curation.urls.status import Status

    return frozenset(
        {status.value for status in Status if status is not Status.OK} | set(RETIRED_CODES)
    )


class SkippedRowJson(TypedDict):
    """A :class:`SkippedRow` as JSON (:meth:`SkippedRow.to_dict`)."""

    idx: str
    context: str
    source: str
    line: int | None
    url: str
    reason: str


@dataclass(frozen=True)
class SkippedRow:
    """A row left out of an evaluation because its image is not available.

    Attributes:
        idx: the row's ``IDX``.
        context: ``OP`` or ``OO``.
        source: the name of the file (or dataset folder) the row is from.
        line: the row's line in a TSV, else ``None``.
        url: the image reference (URL or path) as written.
        reason: why the image is not available, in words (``not in the image store``,
            ``http_error:404 (HTTP 404) when fetched``, ``flagged retired by urls
            maintain`` ...).
    """

    idx: str
    context: str
    source: str
    line: int | None
    url: str
    reason: str

    def to_dict(self) -> SkippedRowJson:
        """A JSON-ready dict (one entry of the results' ``skipped_rows.rows``), the URL
        without credentials (SECURITY.md)."""
        from contrastkit.curation.urls import redact_url

        return {
            "idx": self.idx,
            "context": self.context,
            "source": self.source,
            "line": self.line,
            "url": redact_url(self.url),
            "reason": self.reason,
        }


@dataclass(frozen=True)
class EvalItem:
    """One annotated image to score.

    Attributes:
        row: the annotations.
        source: the file the row came from (a TSV or a dataset folder).
        image_ref: the image's reference as written (URL or path), or
            ``dataset:<folder>#<index>`` for an image stored in a dataset.
        dataset_index: the row's index in a Hugging Face dataset, else ``None``.
        dataset_split: the split of a dataset dict the row is from, else ``None``.
    """

    row: VisoGenderRow
    source: Path
    image_ref: str
    dataset_index: int | None = None
    dataset_split: str | None = None

    @property
    def key(self) -> str:
        """Identifies the image of this row across runs (resuming reuses scores by it)."""
        return f"{self.row.context.value}:{self.row.idx}:{self.image_ref}"

    def error(self, reason: str, field: str | None = None) -> DataFormatError:
        """A :class:`DataFormatError` located at this row."""
        if self.dataset_index is not None:
            return DataFormatError(self.source, None, f"row {self.dataset_index}", reason)
        return DataFormatError(self.source, self.row.line, field or URL_COLUMN, reason)


def _is_dataset_folder(path: Path) -> bool:
    return (path / "dataset_info.json").is_file() or (path / "dataset_dict.json").is_file()


def _official_tsvs(folder: Path) -> list[Path]:
    found = []
    for path in sorted(folder.glob("*.tsv")):
        try:
            parse_visogender_tsv(path)
        except DataFormatError:
            continue
        found.append(path)
    return found


def load_items(paths: Sequence[str | Path], *, split: str | None = None) -> list[EvalItem]:
    """Read every row of the given TSVs, folders of TSVs, or dataset folders.

    Args:
        paths: official-format TSV files, folders holding them, or ``save_to_disk``
            folders of Hugging Face datasets.
        split: the split of a dataset dict (default: its only split, or ``test``).

    Raises:
        DataFormatError: a missing or malformed file, a folder without any dataset, or a
            row ID used twice within one context.
    """
    items: list[EvalItem] = []
    for raw in paths:
        path = Path(raw)
        exported = sorted(p for p in (path / "saved").glob("*") if _is_dataset_folder(p))
        if path.is_dir() and _is_dataset_folder(path):
            items.extend(_dataset_items(path, split))
        elif path.is_dir() and exported:  # a `contrastkit export visogender` folder
            for folder in exported:
                items.extend(_dataset_items(folder, split))
        elif path.is_dir():
            tsvs = _official_tsvs(path)
            if not tsvs:
                raise DataFormatError(
                    path, None, None, "folder holds no official-format TSV and no saved dataset"
                )
            for tsv in tsvs:
                items.extend(_tsv_items(tsv))
        else:
            items.extend(_tsv_items(path))
    seen: dict[tuple[Context, str], EvalItem] = {}
    for item in items:
        key = (item.row.context, item.row.idx)
        if key in seen:
            raise item.error(f"IDX {item.row.idx!r} also used by {seen[key].source}", "IDX")
        seen[key] = item
    return items


def _tsv_items(path: Path) -> Iterator[EvalItem]:
    table = read_visogender_tsv(path)
    for row in table.rows:
        yield EvalItem(row=row, source=path, image_ref=row.url)


_ALIASES = {
    "idx": ("idx", "IDX"),
    "context": ("context",),
    "sector": ("sector", "Sector"),
    "specialisation": ("specialisation", "Specialisation"),
    "occupation": ("occupation", "Occupation"),
    "participant": ("participant", "Participant"),
    "object": ("object", "Object"),
    "occupation_gender": ("occupation_gender", "Occupation_perceived_gender"),
    "participant_gender": ("participant_gender", "Participant_perceived_gender"),
    "url": ("url", URL_COLUMN),
    "image": ("image", "Image"),
}


def _dataset_items(folder: Path, split: str | None) -> Iterator[EvalItem]:
    from datasets import ClassLabel

    loaded, split = load_saved_split(folder, split)
    columns = {
        name: next((c for c in aliases if c in loaded.column_names), None)
        for name, aliases in _ALIASES.items()
    }
    for needed in ("idx", "occupation", "occupation_gender"):
        if columns[needed] is None:
            raise DataFormatError(folder, None, needed, "the dataset has no such column")
    if columns["image"] is None and columns["url"] is None:
        raise DataFormatError(folder, None, "image", "the dataset has neither image nor url")
    text_columns = [c for name, c in columns.items() if c is not None and name != "image"]
    labels = {  # ClassLabel columns (exported genders and contexts) hold integers
        c: feature.int2str
        for c in text_columns
        if isinstance(feature := loaded.features[c], ClassLabel)
    }
    for index, record in enumerate(loaded.select_columns(text_columns)):
        values = {
            name: labels[c](record[c]) if c in labels and record[c] is not None else record[c]
            for name, c in columns.items()
            if c in record
        }
        row = _dataset_row(folder, index, values)
        ref = f"dataset:{folder}#{split or ''}/{index}" if columns["image"] else row.url
        yield EvalItem(row, folder, ref, dataset_index=index, dataset_split=split)


def _dataset_row(folder: Path, index: int, values: dict[str, Any]) -> VisoGenderRow:
    def text(name: str) -> str:
        value = values.get(name)
        return "" if value is None else str(value).strip()

    def gender(name: str) -> Gender | None:
        if not text(name):
            return None
        try:
            return Gender.parse_label(text(name))
        except ValueError as exc:
            raise DataFormatError(folder, None, f"row {index} {name}", str(exc)) from exc

    participant = text("participant") or None
    context_text = text("context") or ("OP" if participant else "OO")
    try:
        context = Context.parse(context_text)
        occupation_gender = gender("occupation_gender")
        if occupation_gender is None:
            raise ValueError("occupation_gender is empty")
        return VisoGenderRow(
            idx=text("idx"),
            context=context,
            sector=text("sector"),
            specialisation=text("specialisation"),
            occupation=text("occupation"),
            url=text("url"),
            licence="",
            occupation_gender=occupation_gender,
            participant=participant if context is Context.OP else None,
            object=(text("object") or None) if context is Context.OO else None,
            participant_gender=gender("participant_gender") if context is Context.OP else None,
        )
    except ValueError as exc:
        if isinstance(exc, DataFormatError):
            raise
        raise DataFormatError(folder, None, f"row {index}", str(exc)) from exc


class ImageLoader:
    """Opens the images of :class:`EvalItem`\\ s: local files, URLs through the image
    store, and dataset ``image`` columns.

    Args:
        store: the image store URLs are read from (``contrastkit urls check --store``);
            ``None`` when the dataset has no URLs.
    """

    def __init__(self, store: ImageStore | Path | str | None = None):
        self.store = ImageStore(store) if isinstance(store, Path | str) else store
        self._datasets: dict[tuple[Path, str | None], list[DatasetImage]] = {}
        self._urls: dict[str, str] | None = None  # the store's URL index, read once

    def refresh(self) -> None:
        """Read the store's URL index again at the next lookup (after adding to it)."""
        self._urls = None

    def _sha_for_url(self, url: str) -> str | None:
        if self.store is None:
            return None
        if self._urls is None:
            self._urls = dict(self.store.urls())
        return self._urls.get(url)

    def _local_path(self, item: EvalItem) -> Path | None:
        ref = item.image_ref
        parsed = urlparse(ref)
        if parsed.scheme in ("http", "https"):
            return None
        folder = item.source if item.source.is_dir() else item.source.parent
        try:  # the one path rule: inside the data's folder, links resolved
            return data_file(item.source, None, None, ref, folder=folder)
        except DataFormatError as exc:
            raise item.error(exc.reason) from None

    def _store_sha(self, item: EvalItem) -> str:
        reason = self.missing(item)
        if reason is not None:
            raise item.error(f"{reason}: {self._advice([(item, reason)])}")
        assert self.store is not None
        sha = self._sha_for_url(item.image_ref)
        assert sha is not None
        return sha

    def missing(self, item: EvalItem, failures: Mapping[str, str] | None = None) -> str | None:
        """Why the item's image is not available, or ``None`` when it is.

        Args:
            item: the row.
            failures: what fetching each URL found in this run (URL -> reason), if URLs
                were fetched; used for the reason of a URL the store does not hold.
        """
        if item.image_ref.startswith("dataset:"):
            return None
        path = self._local_path(item)
        if path is not None:
            return None if path.is_file() else f"image file not found: {path}"
        if self.store is not None:
            sha = self._sha_for_url(item.image_ref)
            if sha is not None and self.store.has(sha):
                return None
        if failures and item.image_ref in failures:
            return failures[item.image_ref]
        flags = [f for f in maintenance_flags(item.row.error_codes) if f not in RETIRED_CODES]
        if flags:
            return f"flagged {', '.join(flags)} by `urls maintain`; not in the image store"
        if self.store is None:
            return "no image store given"
        return f"URL not in the image store {self.store.root}"

    def available(
        self,
        items: Sequence[EvalItem],
        failures: Mapping[str, str] | None = None,
        *,
        skip_retired: bool = True,
    ) -> tuple[list[EvalItem], list[SkippedRow]]:
        """Split ``items`` into those whose image is available and the rows left out.

        Args:
            items: the dataset.
            failures: what fetching URLs found in this run (URL -> reason), if anything.
            skip_retired: also leave out rows ``urls maintain`` flagged ``retired`` or
                ``content_changed`` (:data:`RETIRED_CODES`), even when the store holds an
                image for their URL: it is not, or no longer, the annotated picture.

        Returns:
            The items kept, in order, and a :class:`SkippedRow` for each row left out.
        """
        kept: list[EvalItem] = []
        skipped: list[SkippedRow] = []
        for item in items:
            retired = [f for f in maintenance_flags(item.row.error_codes) if f in RETIRED_CODES]
            if skip_retired and retired:
                reason: str | None = f"flagged {', '.join(retired)} by `urls maintain`"
            else:
                reason = self.missing(item, failures)
            if reason is None:
                kept.append(item)
                continue
            skipped.append(
                SkippedRow(
                    idx=item.row.idx,
                    context=item.row.context.value,
                    source=item.source.name,
                    line=None if item.dataset_index is not None else item.row.line,
                    url=item.image_ref,
                    reason=reason,
                )
            )
        return kept, skipped

    def check(self, items: Iterable[EvalItem], failures: Mapping[str, str] | None = None) -> None:
        """Raise for the rows whose image is not available, before any model work: one
        error located at the first such row, counting and naming them all (the first
        :data:`SHOWN_MISSING` in full) and saying what helps.

        Args:
            items: the rows.
            failures: what fetching URLs found in this run (URL -> reason), if anything.

        Raises:
            DataFormatError: a missing file, or a URL the store does not hold.
        """
        missing = [
            (item, reason) for item in items if (reason := self.missing(item, failures)) is not None
        ]
        if not missing:
            return
        first, reason = missing[0]
        if len(missing) == 1:
            raise first.error(f"{reason}: {self._advice(missing)}")
        named = "; ".join(
            f"{item.row.idx} ({item.image_ref}): {why}" for item, why in missing[:SHOWN_MISSING]
        )
        more = len(missing) - SHOWN_MISSING
        raise first.error(
            f"{len(missing)} rows have no image available: {named}"
            + (f"; and {more} more" if more > 0 else "")
            + f". {self._advice(missing)}"
        )

    def _advice(self, missing: Sequence[tuple[EvalItem, str]]) -> str:
        """What helps, for these missing rows: advice that can work for each kind."""
        advice: list[str] = []
        urls = [item for item, _ in missing if self._local_path(item) is None]
        sources = sorted({str(item.source) for item in urls})
        gone = [item for item, why in missing if "flagged" in why or "when fetched" in why]
        unfetched = [item for item in urls if item not in gone]
        if unfetched:
            files = " ".join(sources) if len(sources) <= 2 else "FILE..."
            if self.store is None:
                advice.append(
                    f"image URLs are read from the image store: run `contrastkit urls check "
                    f"{files} --store DIR` and pass --store DIR"
                )
            else:
                advice.append(
                    f"fetch them into the store with `contrastkit urls check {files} "
                    f"--store {self.store.root}` (or `contrastkit evaluate --fetch`)"
                )
        if gone:
            advice.append(
                "a URL that failed when fetched or that `urls maintain` flagged is gone: "
                "fetching it again will not help"
            )
        advice.append(
            "or pass --skip-missing (EvaluateConfig.skip_missing) to leave these rows out; "
            "they are then listed in the report"
        )
        return "; ".join(advice)

    def source(self, item: EvalItem) -> Any:
        """Where the item's image is, as an image source of :mod:`contrastkit.pipeline`:
        a local file, the store object of a URL, or a dataset row (read lazily)."""
        if item.image_ref.startswith("dataset:"):
            return self._dataset_image(item)
        path = self._local_path(item)
        if path is None:
            return self.store.path(self._store_sha(item))  # type: ignore[union-attr]
        return path

    def open(self, item: EvalItem) -> Image.Image:
        """The item's image, decoded, turned as its EXIF ``Orientation`` tag says (as a
        viewer shows it, and as the URL checker measured and hashed it), in RGB: the
        pipeline's reference rule (:func:`contrastkit.pipeline.decode`).

        Raises:
            DataFormatError: the image is missing or cannot be decoded.
        """
        source = self.source(item)
        if isinstance(source, Path) and not source.is_file():
            raise item.error(f"image file not found: {source}")
        try:
            return decode(source)
        except DataFormatError:
            raise
        except DECODE_ERRORS as exc:
            raise item.error(f"image cannot be decoded: {exc}") from exc

    def _dataset_image(self, item: EvalItem) -> DatasetImage:
        from datasets import load_from_disk

        folder = item.source
        key = (folder, item.dataset_split)
        if key not in self._datasets:
            dataset = load_from_disk(str(folder))
            if item.dataset_split is not None:  # a DatasetDict
                dataset = dataset[item.dataset_split]
            from datasets import Image as ImageFeature

            column = "image" if "image" in dataset.column_names else "Image"
            if not isinstance(dataset.features.get(column), ImageFeature):
                raise item.error(f"column {column!r} does not hold images", column)
            self._datasets[key] = DatasetImage.column_of(dataset, column)
        column_refs = self._datasets[key]
        assert item.dataset_index is not None
        return column_refs[item.dataset_index]
