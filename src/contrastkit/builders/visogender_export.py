"""The ``visogender`` kind's export: official-format OP/OO TSVs as configs ``OP`` and
``OO`` of a Hugging Face dataset (:func:`contrastkit.builders.export.export_visogender`,
which runs :func:`write_visogender_export` through the one export job).

A row's image is a URL (read from an image store) or a local file inside the TSV's
folder; an export embeds every image or none (:func:`write_visogender_export`).
"""

from __future__ import annotations

import functools
import hashlib
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict
from urllib.parse import urlsplit

from datasets import ClassLabel, Features, Image, Value
from PIL import Image as PILImage
from typing_extensions import NotRequired

from contrastkit.builders.export_folder import (
    CONTEXT_LABELS,
    GENDER_LABELS,
    ExportResult,
    ImageCell,
    SourceFile,
    SplitRows,
    TableMetadata,
    UrlCheckSummary,
    check_replaceable,
    url_check_summary,
    write_export,
)
from contrastkit.config import require
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.kinds import kinds
from contrastkit.records import data_file
from contrastkit.schema import URL_COLUMN, Context, VisoGenderRow, VisoGenderTable
from contrastkit.store import ImageStore
from contrastkit.tsv import read_visogender_tsv

__all__ = [
    "ExportVisoGenderConfig",
    "VisoGenderMetadata",
    "VisoGenderRecord",
    "visogender_config_features",
    "visogender_features",
    "write_visogender_export",
]


def visogender_features(context: Context, *, with_images: bool) -> Features:
    """Typed features of an exported VisoGender-style ``context`` table."""
    features: dict[str, Value | ClassLabel | Image] = {
        "idx": Value("string"),
        "context": ClassLabel(names=CONTEXT_LABELS),
        "sector": Value("string"),
        "specialisation": Value("string"),
        "occupation": Value("string"),
    }
    if context is Context.OP:
        features["participant"] = Value("string")
    else:
        features["object"] = Value("string")
    features["occupation_gender"] = ClassLabel(names=GENDER_LABELS)
    if context is Context.OP:
        features["participant_gender"] = ClassLabel(names=GENDER_LABELS)
    features |= {
        "url": Value("string"),
        "licence": Value("string"),
        "annotator": Value("string"),
        "error_codes": Value("string"),
    }
    if with_images:
        features |= {"image": Image(), "image_sha256": Value("string")}
    return Features(features)


class VisoGenderRecord(TypedDict):
    """A row of a VisoGender-style export (:func:`visogender_features`): ``participant``
    and ``participant_gender`` in an OP table, ``object`` in an OO one; ``image`` and
    ``image_sha256`` when the export embeds its images."""

    idx: str
    context: str
    sector: str
    specialisation: str
    occupation: str
    participant: NotRequired[str | None]
    object: NotRequired[str | None]
    occupation_gender: str
    participant_gender: NotRequired[str]
    url: str
    licence: str
    annotator: str
    error_codes: str
    image: NotRequired[ImageCell]
    image_sha256: NotRequired[str]


class VisoGenderMetadata(TableMetadata):
    """What the metadata of a VisoGender-style export says (the configs' files, the row
    count, the version and the time are added by
    :func:`~contrastkit.builders.export_folder.write_export`)."""

    image_sources: dict[str, int]
    counts: dict[str, dict[str, dict[str, int]]]
    cells: dict[str, list[str]]
    sectors: dict[str, dict[str, int]]
    url_check: UrlCheckSummary | None


def _row_record(row: VisoGenderRow) -> VisoGenderRecord:
    """The exported record of ``row`` without its image (the features encode it by
    name, in their own order)."""
    record: VisoGenderRecord = {
        "idx": row.idx,
        "context": row.context.value,
        "sector": row.sector,
        "specialisation": row.specialisation,
        "occupation": row.occupation,
        "occupation_gender": row.occupation_gender.value,
        "url": row.url,
        "licence": row.licence,
        "annotator": row.annotator,
        "error_codes": row.error_codes,
    }
    if row.context is Context.OP:
        assert row.participant_gender is not None
        record["participant"] = row.participant
        record["participant_gender"] = row.participant_gender.value
    else:
        record["object"] = row.object
    return record


def _is_image_url(value: str) -> bool:
    """Whether a row's image reference is an http(s) URL (read from the image store);
    anything else names a local file."""
    return urlsplit(value).scheme.lower() in ("http", "https")


@dataclass(frozen=True)
class _Kept:
    """A row to export and where its image comes from: ``file`` (a local file inside
    the TSV's folder, ``name`` its name relative to that folder) or ``sha`` (the store's
    object of its URL); neither for a URL-only export."""

    row: VisoGenderRow
    name: str
    file: Path | None = None
    sha: str | None = None


def _local_image(table: VisoGenderTable, row: VisoGenderRow) -> tuple[str, Path, str | None]:
    """The name (relative to the TSV's folder), the file and why it cannot be embedded
    (``None`` when it can) of a row's local image. Naming a file outside the TSV's folder
    is an error, never a missing image."""
    file = data_file(Path(table.path), row.line, URL_COLUMN, row.url)  # SECURITY.md
    name = file.relative_to(Path(table.path).parent).as_posix()
    if not file.is_file():
        return name, file, f"image file not found: {file}"
    try:  # the header only: the bytes are read once, when the row is written
        with PILImage.open(file):
            pass
    except (OSError, SyntaxError, ValueError, PILImage.DecompressionBombError) as error:
        return name, file, f"{file} is not a readable image ({error})"
    return name, file, None


def _refuse_mixed(tables: list[VisoGenderTable]) -> None:
    """Without an image store, refuse rows that name local files beside rows that name
    URLs: an export embeds every image or none, and a URL-only export must not publish
    the exporter's file names."""
    rows = [(table, row) for table in tables for row in table.rows]
    url = next(((t, r) for t, r in rows if _is_image_url(r.url)), None)
    local = next(((t, r) for t, r in rows if not _is_image_url(r.url)), None)
    if url is None or local is None:
        return
    (table, row), (other, other_row) = local, url
    raise DataFormatError(
        table.path, row.line, URL_COLUMN,
        f"a local image file ({row.url!r}) while {other.path}:{other_row.line} gives an "
        "image URL: an export embeds every image or none. Pass --store DIR (the image "
        f"store `contrastkit urls check {other.path} --store DIR` filled) to embed the "
        "URLs' images too, or give every row a URL (a URL-only export) or a local file",
    )  # fmt: skip


def _table_rows(
    table: VisoGenderTable, store: ImageStore | None, with_images: bool, skip_missing: bool
) -> tuple[list[_Kept], list[str]]:
    """The rows of ``table`` to export and the IDX of those left out; a row whose image
    is not available (a local file missing or unreadable, a URL the store lacks) is an
    error, or left out with ``skip_missing``. Checked before anything is written; the
    image bytes are read later, one at a time."""
    kept: list[_Kept] = []
    skipped: list[str] = []
    for row in table.rows:
        if not with_images:
            kept.append(_Kept(row, row.url))
            continue
        if _is_image_url(row.url):
            assert store is not None  # with_images: a store, or no URL at all
            sha = store.sha_for_url(row.url)
            found = _Kept(row, row.url, sha=sha)
            missing = (
                None if sha is not None and store.has(sha) else
                f"the image store {store.root} has no image for this URL; run `contrastkit "
                f"urls check {table.path} --store {store.root}` first"
            )  # fmt: skip
        else:
            name, file, missing = _local_image(table, row)
            found = _Kept(row, name, file=file)
        if missing is not None:
            if skip_missing:
                skipped.append(row.idx)
                continue
            raise DataFormatError(
                table.path, row.line, URL_COLUMN,
                f"{missing}, or pass --skip-missing to leave such rows out",
            )  # fmt: skip
        kept.append(found)
    return kept, skipped


def _table_records(rows: list[_Kept], store: ImageStore | None) -> Iterator[VisoGenderRecord]:
    """One exported record per row, its image read (from its file or the store) when it
    is yielded. A local image's ``url`` is its name relative to the TSV's folder."""
    for kept in rows:
        record = _row_record(kept.row)
        record["url"] = kept.name
        if kept.file is not None:
            data = kept.file.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
        elif kept.sha is not None:
            assert store is not None
            sha, data = kept.sha, store.read(kept.sha)
        else:
            yield record
            continue
        record["image"] = {"bytes": data, "path": sha}
        record["image_sha256"] = sha
        yield record


@dataclass(frozen=True)
class ExportVisoGenderConfig:
    """What :func:`export_visogender` exports (strings are taken as paths).

    Attributes:
        files: Official-format OP/OO TSVs; each becomes the config of its context (one
            file per context).
        out: Export folder (replaced atomically if it exists).
        store: The image store of the rows' URLs (``urls check --store``). Images are
            embedded when every row's image can be: local files (the URL column may name
            a file inside the TSV's folder, as ``evaluate`` reads it) are read directly,
            URLs from the store. Without a store, a set of URLs is exported URL-only, a
            set of local files with its images, and a set mixing both is refused.
        checks: ``urls check --results`` file whose status counts and dates go in the
            card.
        skip_missing: Leave out rows whose image is not available (a local file missing
            or unreadable, a URL the store lacks; listed in the metadata) instead of
            failing.
        split: Split name of every config (VisoGender is an evaluation set: ``test``).
        pretty_name: The card's title.
        license: SPDX-style license id of the annotations (the card's ``license``).
    """

    files: tuple[Path, ...]
    out: Path
    store: Path | None = None
    checks: Path | None = None
    skip_missing: bool = False
    split: str = "test"
    pretty_name: str = "VisoGender-style occupation and pronoun resolution set"
    license: str = "cc-by-4.0"

    def __post_init__(self) -> None:
        files: object = self.files
        if isinstance(files, str | Path):  # one file
            files = [files]
        if not isinstance(files, Iterable):
            raise ConfigError(f"files: expected TSV paths, not {files!r}")
        object.__setattr__(self, "files", tuple(Path(f) for f in files))
        object.__setattr__(self, "out", Path(self.out))
        for name in ("store", "checks"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(bool(self.files), "files", "needs at least one OP or OO TSV")
        require(bool(self.split.strip()), "split", "must not be empty")
        require(self.out not in self.files, "out", f"{self.out} is also one of the files")


def write_visogender_export(config: ExportVisoGenderConfig) -> ExportResult:
    """Write the export of ``config`` (the work of
    :func:`contrastkit.builders.export.export_visogender`, which documents it): every
    row and image checked first, then the folder written."""
    check_replaceable(config.out)
    kind = kinds()["visogender"]
    store = ImageStore(config.store) if config.store is not None else None
    paths, skip_missing, split = config.files, config.skip_missing, config.split
    tables = [read_visogender_tsv(path) for path in paths]
    seen: dict[Context, Path] = {}
    for table in tables:
        if table.context in seen:
            raise DataFormatError(
                table.path,
                None,
                None,
                f"a second {table.context.value} file ({seen[table.context]})",
            )
        seen[table.context] = Path(table.path)
    if store is None:
        _refuse_mixed(tables)
    local_rows = any(not _is_image_url(r.url) for table in tables for r in table.rows)
    with_images = store is not None or local_rows
    configs: dict[str, dict[str, SplitRows]] = {}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    sectors: dict[str, dict[str, int]] = {}
    sources: list[SourceFile] = []
    skipped: dict[str, list[str]] = {}
    images: Counter[str] = Counter()
    for table in sorted(tables, key=lambda t: CONTEXT_LABELS.index(t.context.value)):
        kept, missing = _table_rows(table, store, with_images, skip_missing)
        name = table.context.value
        features = kind.export_features(name, with_images=with_images)
        configs[name] = {split: SplitRows(features, functools.partial(_table_records, kept, store))}
        sectors[name] = dict(sorted(Counter(k.row.sector for k in kept).items()))
        cells: dict[str, Counter[str]] = defaultdict(Counter)
        for k in kept:
            cells[k.row.occupation][k.row.cell] += 1
            if with_images:
                images["local_files" if k.file is not None else "image_store"] += 1
        counts[name] = {
            occupation: {cell: cells[occupation][cell] for cell in table.context.cells}
            for occupation in sorted(cells)
        }
        sources.append({
            "path": str(table.path),
            "sha256": hashlib.sha256(Path(table.path).read_bytes()).hexdigest(),
            "rows": len(table.rows),
        })  # fmt: skip
        if missing:
            skipped[name] = missing
    metadata: VisoGenderMetadata = {
        "kind": "visogender",
        "pretty_name": config.pretty_name,
        "license": config.license,
        "split": split,
        "sources": sources,
        "with_images": with_images,
        "image_store": str(store.root) if store is not None else None,
        "image_sources": {
            "local_files": images["local_files"],
            "image_store": images["image_store"],
        },
        "skipped_missing_images": skipped,
        "counts": counts,
        "cells": {name: list(Context(name).cells) for name in configs},
        "sectors": sectors,
        "url_check": url_check_summary(config.checks) if config.checks is not None else None,
    }
    return write_export(config.out, configs, metadata, card=kind.render_card)


def visogender_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``OP`` or ``OO`` of a VisoGender-style export (what the
    ``visogender`` kind declares; :func:`visogender_features`)."""
    if config_name not in CONTEXT_LABELS:
        raise ConfigError(f"config: a VisoGender-style export has OP and OO, not {config_name!r}")
    return visogender_features(Context(config_name), with_images=with_images)
