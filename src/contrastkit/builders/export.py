"""Export contrastkit datasets as Hugging Face ``datasets``, with build metadata for the card.

An export folder holds everything a person or the Hub needs::

    OUT/README.md                       dataset card: Hub YAML + datasheet (data_cards)
    OUT/build_metadata.json             every number the card states, and where it came from
    OUT/data/<config>/<split>-00000-of-0000N.parquet   the Hub's data files (images inside)
    OUT/saved/<config>/                 the same DatasetDict, ``save_to_disk`` format

:func:`export` is the one export job: it finds the kind of its source
(:func:`contrastkit.kinds.detect_source`: VisoGender-style TSVs, a GenSynth / GenSwap
build folder, a stereotype probe set) and runs that kind's export, whose Hugging Face
features and dataset card the kind declares (:class:`contrastkit.kinds.DatasetKind`).
:func:`export_visogender`, :func:`export_contrast_set` and :func:`export_stereotype` are
the same job with the kind named.

One *config* per table shape: ``OP`` and ``OO`` for VisoGender-style sets (their columns
differ), ``contrast`` for GenSynth / GenSwap contrast sets. Perceived genders and contexts
are ``ClassLabel`` features, images ``Image`` features (bytes embedded), the rest plain
values. Loading either copy back gives the same rows and the same image bytes.

The folder is built under a temporary name beside ``OUT`` and renamed into place, so an
interrupted export never leaves a half-written one, and a previous export is replaced only
once the new one is complete.

Peak memory does not grow with the number of rows or images: each split's rows come
from a generator (:class:`SplitRows`; an image is read when its row is written), are
encoded in batches, written once to the ``saved/`` Arrow files, and read back from those
files batch by batch into the parquet shards (see :func:`write_export`). A contrast
set's manifest is looked up through a scratch SQLite index, never held whole.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
import re
import shutil
import sqlite3
import tempfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from datasets import (
    ClassLabel,
    Dataset,
    DatasetDict,
    Features,
    Image,
    Sequence,
    Value,
    load_from_disk,
)
from PIL import Image as PILImage

from contrastkit import __version__
from contrastkit.builders.dataset_files import (
    dataset_batches,
    encode_batches,
    progress_bars_off,
    write_split,
)
from contrastkit.builders.manifest import (
    BUILD_LOCK,
    CONTRAST_SET,
    SUMMARY,
    ContrastItem,
    EditImage,
    EditRecord,
    Manifest,
    contrast_items,
    encode_lossless,
    source_file,
)
from contrastkit.config import require
from contrastkit.data_cards import render_card
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.gender_words import neutralize
from contrastkit.io import atomic_write_text, check_writable, shared_lock, staging_folder
from contrastkit.kinds import DatasetKind, detect_source, kinds
from contrastkit.records import (
    json_lines,
    local_file_name,
    read_json_object,
    read_records,
    relative_file_name,
)
from contrastkit.schema import URL_COLUMN, Context, Gender, VisoGenderRow, VisoGenderTable
from contrastkit.store import ImageStore
from contrastkit.tiny.marker import spec_has_random_weights
from contrastkit.tsv import read_visogender_tsv

__all__ = [
    "COCO_LICENCE",
    "COCO_SOURCES",
    "CONTEXT_LABELS",
    "GENDER_LABELS",
    "METADATA_FILE",
    "ORIGINALS_NOTE",
    "STEREOSET_LICENCE",
    "STEREOTYPE_CONFIG",
    "ExportConfig",
    "ExportContrastConfig",
    "ExportResult",
    "ExportStereotypeConfig",
    "ExportVisoGenderConfig",
    "SplitRows",
    "build_weights",
    "check_replaceable",
    "contrast_card",
    "contrast_config_features",
    "contrast_features",
    "export",
    "export_contrast_kind",
    "export_contrast_set",
    "export_originals",
    "export_stereotype",
    "export_stereotype_kind",
    "export_visogender",
    "export_visogender_kind",
    "load_export",
    "originals_card",
    "public_metadata",
    "public_text",
    "read_metadata",
    "stereotype_config_features",
    "stereotype_features",
    "visogender_config_features",
    "visogender_features",
    "write_export",
]

METADATA_FILE = "build_metadata.json"
GENDER_LABELS = [Gender.MASCULINE.value, Gender.FEMININE.value]
"""ClassLabel names of perceived gender: 0 masculine, 1 feminine."""
CONTEXT_LABELS = [Context.OP.value, Context.OO.value]
"""ClassLabel names of the scene context: 0 OP (occupation-participant), 1 OO."""
COCO_SOURCES = "COCO images with exactly one person box and a caption gender label"
"""The card's default description of a contrast set's source photos."""
COCO_LICENCE = (
    "Source photos are COCO images (Flickr, each under its own Creative Commons licence); "
    "check the licence of each source before redistributing edits."
)
"""The card's default licence sentence for a contrast set's source photos."""
RANDOM_BUILD_NOTE = (
    "This set was built with models that have random weights ({which}: tiny test models, "
    "not trained ones), so its edits and filter decisions are meaningless: it is a "
    "pipeline check, not a dataset to measure or train anything with."
)
"""What a card says when a build's editor or image encoder had random weights."""

#: An absolute local path inside a string (``/home/me/x``, ``~/x``, or the part after a
#: spec prefix, ``open_clip:/tmp/m``); URLs (``https://host/path``) and relative paths
#: (``data/contrast/test-*.parquet``) do not match. Group 1 is its last component.
_LOCAL_PATH = re.compile(
    r"(?<![\w/.~-])(?:[A-Za-z]:)?(?:~/|/)(?:[^\s`'\"(),;/]+/)*([^\s`'\"(),;/]+)/?"
)


@dataclass
class ExportResult:
    """What :func:`write_export` wrote."""

    out_dir: Path
    configs: dict[str, DatasetDict]
    metadata: dict[str, Any]
    parquet_files: list[Path] = field(default_factory=list)


def visogender_features(context: Context, *, with_images: bool) -> Features:
    """Typed features of an exported VisoGender-style ``context`` table."""
    features: dict[str, Any] = {
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


def _row_record(row: VisoGenderRow) -> dict[str, Any]:
    record: dict[str, Any] = {
        "idx": row.idx,
        "context": row.context.value,
        "sector": row.sector,
        "specialisation": row.specialisation,
        "occupation": row.occupation,
    }
    if row.context is Context.OP:
        record["participant"] = row.participant
    else:
        record["object"] = row.object
    record["occupation_gender"] = row.occupation_gender.value
    if row.context is Context.OP:
        assert row.participant_gender is not None
        record["participant_gender"] = row.participant_gender.value
    record |= {
        "url": row.url,
        "licence": row.licence,
        "annotator": row.annotator,
        "error_codes": row.error_codes,
    }
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
    name = local_file_name(Path(table.path), row.line, URL_COLUMN, row.url)
    file = Path(table.path).parent / name
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


def _table_records(rows: list[_Kept], store: ImageStore | None) -> Iterator[dict[str, Any]]:
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


def _url_check_summary(checks: Path) -> dict[str, Any]:
    """Status counts and check time from ``urls check --results`` JSON lines."""
    statuses: Counter[str] = Counter()
    times: list[str] = []
    for record in read_records(checks):
        status = record.get("status")
        if not status:
            raise record.error("status", "missing; expected a `urls check --results` file")
        statuses[status] += 1
        if record.get("checked_at"):
            times.append(record.get("checked_at"))
    return {
        "source": str(checks),
        "checked_from": min(times) if times else None,
        "checked_to": max(times) if times else None,
        "status_counts": dict(sorted(statuses.items())),
    }


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


def export_visogender(config: ExportVisoGenderConfig) -> ExportResult:
    """Export official-format OP/OO TSVs (configs ``OP`` and ``OO``) to ``config.out``:
    :func:`export` of kind ``visogender``.

    A row's image is a URL (read from ``config.store``) or a local file inside the TSV's
    folder: a relative name, or an absolute path or ``file://`` URL inside that folder.
    Local files are embedded as they are, and the row's ``url`` becomes the file's name
    relative to the TSV's folder, so no path of the exporter's machine is published.

    Raises:
        DataFormatError: a malformed TSV, two files of one context, a local image
            outside the TSV's folder, local images beside URLs without a store, a row
            whose image is not available (unless ``skip_missing``), a malformed checks
            file.
        ResourceError: the export folder cannot be written (checked first).
    """
    return export(ExportConfig(
        source=config.files, out=config.out, kind="visogender", store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        pretty_name=config.pretty_name, license=config.license,
    ))  # fmt: skip


def _export_visogender(config: ExportVisoGenderConfig) -> ExportResult:
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
    sources = []
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
    metadata: dict[str, Any] = {
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
        "url_check": _url_check_summary(config.checks) if config.checks is not None else None,
    }
    return write_export(config.out, configs, metadata, card=kind.render_card)


def visogender_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``OP`` or ``OO`` of a VisoGender-style export (what the
    ``visogender`` kind declares; :func:`visogender_features`)."""
    if config_name not in CONTEXT_LABELS:
        raise ConfigError(f"config: a VisoGender-style export has OP and OO, not {config_name!r}")
    return visogender_features(Context(config_name), with_images=with_images)


def contrast_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``contrast`` of a contrast-set export, edits or originals
    (what the ``contrast`` kind declares; :func:`contrast_features`). Its images are
    always embedded, so ``with_images`` changes nothing."""
    if config_name != "contrast":
        raise ConfigError(f"config: a contrast-set export has contrast, not {config_name!r}")
    return contrast_features()


def contrast_features() -> Features:
    """Typed features of an exported GenSynth / GenSwap contrast set."""
    return Features(
        {
            "source_id": Value("string"),
            "gender": ClassLabel(names=GENDER_LABELS),
            "image": Image(),
            "edit_id": Value("string"),
            "method": Value("string"),
            "source_label": ClassLabel(names=GENDER_LABELS),
            "captions": Sequence(Value("string")),
            "neutral_captions": Sequence(Value("string")),
            "original_captions": Sequence(Value("string")),
            "box": Sequence(Value("float32")),
            "p_real": Value("float32"),
            "p_gender": Value("float32"),
            "instruction": Value("string"),
            "text_guidance_scale": Value("float32"),
            "image_guidance_scale": Value("float32"),
            "steps": Value("int32"),
            "seed": Value("int64"),
            "donor": Value("string"),
        }
    )


@dataclass(frozen=True)
class ExportContrastConfig:
    """What :func:`export_contrast_set` exports (strings are taken as paths).

    Attributes:
        build: A GenSynth or GenSwap build folder, after its select stage.
        out: Export folder (replaced atomically if it exists).
        split: Split name (contrast sets are evaluation sets: ``test``).
        pretty_name: The card's title (default from the method).
        license: License id of the edited images and captions; COCO images carry their
            Flickr licenses, so the default is ``other`` (say which in the card).
        source_description: What the source photos are, as the card's "Sources:" line
            (default :data:`COCO_SOURCES`; say what they really are: the card is their
            provenance).
        source_licence: The licence of the source photos, as a sentence for the card's
            licence section (default :data:`COCO_LICENCE`).
        originals: Export the build's *original* photos instead of its edits: one row
            per edited source's unedited photo, ``gender`` its caption label, the
            ``neutral_captions`` its own captions made neutral (GenSynth Sec. 5.1,
            COCO_g: the same source ids as the contrast set). The comparison set of
            GenSynth Tab. 3 (:func:`export_originals`).
        balanced: With ``originals``: keep as many masculine as feminine sources, drawn
            without replacement with ``seed`` (Sec. 5.1, COCO_g Bal).
        seed: The seed of the ``balanced`` draw.
    """

    build: Path
    out: Path
    split: str = "test"
    pretty_name: str | None = None
    license: str = "other"
    source_description: str = COCO_SOURCES
    source_licence: str = COCO_LICENCE
    originals: bool = False
    balanced: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "build", Path(self.build))
        object.__setattr__(self, "out", Path(self.out))
        require(bool(self.split.strip()), "split", "must not be empty")
        require(self.out != self.build, "out", "must not be the build folder")
        require(bool(self.source_description.strip()), "source_description", "must not be empty")
        require(bool(self.source_licence.strip()), "source_licence", "must not be empty")
        require(self.originals or not self.balanced, "balanced", "needs originals (--originals)")
        require(
            isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
            "seed", f"must be a whole number >= 0, not {self.seed!r}",
        )  # fmt: skip


def export_contrast_set(config: ExportContrastConfig) -> ExportResult:
    """Export a GenSynth or GenSwap build folder's contrast set (config ``contrast``).

    Each row is one edited image (the bytes the build wrote; for an edit confined to the
    person mask, its pixels put onto the decoded source photo and stored as lossless
    WebP, so that every pixel outside the dilated mask is the source's own) with its target
    ``gender``, its gender-adjusted ``captions`` (GenSynth Sec. 4.3), the same captions
    made gender-neutral (for retrieval queries), the source's own captions and label, the
    person box, the filter scores ``p_real`` / ``p_gender`` (Eq. 4; GenSynth only) and
    what made the edit (instruction, guidance scales, steps, seed; the donor face for
    GenSwap). The build summary (editor, settings, filter thresholds, acceptance rates,
    quality checks) goes into the metadata and the card. With ``config.originals`` the
    build's original photos are exported instead (:func:`export_originals`). This is
    :func:`export` of kind ``contrast``.

    Raises:
        DataFormatError: the build is not finished (no contrast set or build summary),
            or its contrast set names an edit the manifest or the folder lacks.
        ResourceError: the export folder cannot be written (checked first).
        StateError: a build stage is running on the folder now (it holds the folder's
            lock); while the export reads the folder, a new stage there is refused.
    """
    return export(ExportConfig(
        source=(config.build,), out=config.out, kind="contrast", split=config.split,
        pretty_name=config.pretty_name, license=config.license,
        source_description=config.source_description, source_licence=config.source_licence,
        originals=config.originals, balanced=config.balanced, seed=config.seed,
    ))  # fmt: skip


def _export_contrast_locked(config: ExportContrastConfig) -> ExportResult:
    check_replaceable(config.out)
    # A build that runs a stage now rewrites the summary, the manifest and the contrast
    # set: export a finished state only, and keep new stages out while reading it.
    with shared_lock(config.build / BUILD_LOCK, str(config.build), "export it"):
        return _export_contrast_set(config)


def _export_contrast_set(config: ExportContrastConfig) -> ExportResult:
    build_dir, split = config.build, config.split
    contrast_path = build_dir / CONTRAST_SET
    if not contrast_path.is_file():
        raise DataFormatError(
            contrast_path, None, None, "no such file (run the select stage first)"
        )
    summary_path = build_dir / SUMMARY
    if not summary_path.is_file():
        raise DataFormatError(summary_path, None, None, "no build summary (run the build)")
    summary: dict[str, Any] = read_json_object(summary_path, "a build summary (a JSON object)")
    _require_finite(summary_path, summary)  # the card prints these figures
    kind = "genswap" if "genswap" in summary else "gensynth"
    if config.originals:
        return export_originals(config, summary, kind)
    with tempfile.TemporaryDirectory(prefix="contrastkit-export-") as scratch:
        index = _ManifestIndex(Manifest(build_dir).path, Path(scratch) / "manifest.sqlite")
        try:
            # Every item is checked (and counted) before anything is written; the rows,
            # images included, are then produced one at a time while they are written.
            genders: Counter[str] = Counter()
            labels: Counter[str] = Counter()
            sources: set[str] = set()
            for line, item in contrast_items(contrast_path):
                record = _edit_of(index, build_dir, contrast_path, line, item)
                genders[item.gender] += 1
                labels[record.source_label] += 1
                sources.add(item.source_id)
            rows = SplitRows(
                kinds()["contrast"].export_features("contrast"),
                functools.partial(_contrast_records, build_dir, contrast_path, index),
            )
            metadata: dict[str, Any] = {
                "kind": kind,
                "pretty_name": config.pretty_name
                or (
                    "GenSynth synthetic gender contrast set"
                    if kind == "gensynth"
                    else "GenSwap face-swap gender contrast set"
                ),
                "license": config.license,
                "split": split,
                "build_dir": build_dir.name,
                "source_description": config.source_description,
                "source_licence": config.source_licence,
                **build_weights(summary),
                "sources_kept": len(sources),
                "counts": {"contrast": {g: genders.get(g, 0) for g in GENDER_LABELS}},
                "source_labels": dict(sorted(labels.items())),
                "build_summary": summary,
            }
            del sources
            card = kinds()["contrast"].render_card
            return write_export(config.out, {"contrast": {split: rows}}, metadata, card=card)
        finally:
            index.close()


ORIGINALS_NOTE = (
    "The unedited source photos of a contrast set (GenSynth Sec. 5.1, COCO_g{bal}): one row "
    "per source photo, labelled by its captions, for comparing a model's retrieval bias "
    "on natural photos with its bias on the contrast set (Tab. 3). Pair preference does "
    "not apply: each photo has one version."
)
"""What the card and the metadata say an originals export is (``{bal}``: `` Bal``)."""


def export_originals(
    config: ExportContrastConfig, summary: Mapping[str, Any], kind: str
) -> ExportResult:
    """Export the original photos of a build's contrast set (GenSynth Sec. 5.1).

    One row per source of ``contrast_set.jsonl`` (the same source ids as the contrast
    set, in its order: the paper's COCO_g), in the contrast export's layout (config
    ``contrast``, :func:`contrast_features`) so that ``contrastkit evaluate`` scores it
    like a contrast set: ``image`` the source photo's bytes unchanged, ``gender`` and
    ``source_label`` its caption label, ``captions`` and ``original_captions`` its own
    captions, ``neutral_captions`` those made gender-neutral (GenSynth Tab. 4 words),
    ``method`` ``original``; the edit fields are empty. With ``config.balanced``, as
    many masculine as feminine sources are kept (the smaller count of the two), drawn
    without replacement with ``config.seed`` and kept in order (COCO_g Bal; the paper
    averages 5 seeds: export one set per seed).

    Raises:
        DataFormatError: ``sources.jsonl`` lacks a source of the contrast set, or a
            source photo is missing; a balanced set with no source of one gender.
    """
    import random

    from contrastkit.builders.manifest import SOURCES, read_sources

    build_dir, contrast_path = config.build, config.build / CONTRAST_SET
    sources = {s.source_id: s for s in read_sources(build_dir)}
    order: dict[str, None] = {}
    for line, item in contrast_items(contrast_path):
        if item.source_id not in sources:
            raise DataFormatError(
                build_dir / SOURCES, None, None,
                f"no source {item.source_id!r} (named on line {line} of {contrast_path})",
            )  # fmt: skip
        order[item.source_id] = None
    kept = list(order)
    by_label: dict[str, list[str]] = {g: [] for g in GENDER_LABELS}
    for source_id in kept:
        by_label.setdefault(sources[source_id].label.value, []).append(source_id)
    before = {g: len(by_label.get(g, [])) for g in GENDER_LABELS}
    if config.balanced:
        size = min(before.values())
        if size == 0:
            raise DataFormatError(
                contrast_path, None, None,
                f"cannot balance: the sources are {before['masculine']} masculine and "
                f"{before['feminine']} feminine",
            )  # fmt: skip
        rng = random.Random(config.seed)
        chosen = {s for g in GENDER_LABELS for s in rng.sample(by_label[g], size)}
        kept = [s for s in kept if s in chosen]
    for source_id in kept:
        file = source_file(build_dir, sources[source_id].path)
        if not file.is_file():
            raise DataFormatError(
                build_dir / SOURCES, None, "path",
                f"the photo of source {source_id!r} is missing: {file}",
            )  # fmt: skip
    counts = Counter(sources[s].label.value for s in kept)

    def records() -> Iterator[dict[str, Any]]:
        for source_id in kept:
            source = sources[source_id]
            file = source_file(build_dir, source.path)
            yield {
                "source_id": source_id,
                "gender": source.label.value,
                "image": {"bytes": file.read_bytes(), "path": file.name},
                "edit_id": None,
                "method": "original",
                "source_label": source.label.value,
                "captions": list(source.captions),
                "neutral_captions": [neutralize(c) for c in source.captions],
                "original_captions": list(source.captions),
                "box": [float(v) for v in source.box.as_list()],
                "p_real": None, "p_gender": None, "instruction": None,
                "text_guidance_scale": None, "image_guidance_scale": None,
                "steps": None, "seed": None, "donor": None,
            }  # fmt: skip

    bal = " Bal" if config.balanced else ""
    method = "GenSynth" if kind == "gensynth" else "GenSwap"
    metadata: dict[str, Any] = {
        "kind": "originals",
        "pretty_name": config.pretty_name
        or f"Original photos of a {method} contrast set{' (balanced)' if bal else ''}",
        "license": config.license,
        "split": config.split,
        "build_dir": build_dir.name,
        "build_kind": kind,
        "description": ORIGINALS_NOTE.format(bal=bal),
        "source_description": config.source_description,
        "source_licence": config.source_licence,
        "balanced": config.balanced,
        "seed": config.seed if config.balanced else None,
        "sources_in_contrast_set": len(order),
        "sources_kept": len(kept),
        "labels_before_balancing": before,
        "counts": {"contrast": {g: counts.get(g, 0) for g in GENDER_LABELS}},
        "pair_preference": "not applicable: one version per photo",
    }
    exported = kinds()["contrast"]
    rows = SplitRows(exported.export_features("contrast"), records)
    return write_export(
        config.out, {"contrast": {config.split: rows}}, metadata, card=exported.render_card
    )


def contrast_card(metadata: dict[str, Any]) -> str:
    """The dataset card of a contrast-set export (what the ``contrast`` kind declares):
    :func:`originals_card` for an originals export, else the datasheet of
    :func:`~contrastkit.data_cards.render_card`."""
    if metadata.get("kind") == "originals":
        return originals_card(metadata)
    return render_card(metadata)


def originals_card(metadata: dict[str, Any]) -> str:
    """The dataset card of an originals export (:func:`export_originals`)."""
    import yaml

    configs = [
        {"config_name": name, "default": True,
         "data_files": [{"split": split, "path": f"data/{name}/{split}-*.parquet"}
                        for split in config["splits"]]}
        for name, config in metadata["configs"].items()
    ]  # fmt: skip
    header = yaml.safe_dump(
        {
            "license": metadata["license"],
            "pretty_name": metadata["pretty_name"],
            "task_categories": ["text-to-image", "zero-shot-image-classification"],
            "language": ["en"],
            "tags": ["gender-bias", "fairness", "evaluation", "contrastkit", "originals"],
            "configs": configs,
        },
        sort_keys=False,
        allow_unicode=True,
    )
    counts = metadata["counts"]["contrast"]
    lines = [f"# {metadata['pretty_name']}", ""]
    if metadata.get("balanced"):
        before = metadata["labels_before_balancing"]
        lines += [
            f"{metadata['description']}", "",
            f"Balanced: {counts['masculine']:,} masculine and {counts['feminine']:,} "
            f"feminine photos, drawn with seed {metadata['seed']} from the "
            f"{metadata['sources_in_contrast_set']:,} sources of the contrast set "
            f"({before['masculine']:,} masculine, {before['feminine']:,} feminine).",
        ]  # fmt: skip
    else:
        lines += [
            f"{metadata['description']}", "",
            f"{metadata['total_rows']:,} photos, every source of the contrast set of build "
            f"`{metadata['build_dir']}`: {counts['masculine']:,} masculine and "
            f"{counts['feminine']:,} feminine by their captions.",
        ]  # fmt: skip
    lines += [
        "",
        "Each row: the unedited source `image` (bytes unchanged), `gender` and "
        "`source_label` (the caption label, ClassLabel masculine = 0, feminine = 1), its "
        "`captions`, the same made gender-neutral (`neutral_captions`, the retrieval "
        "queries; GenSynth Tab. 4 words) and the person `box`; the edit fields are empty "
        "(`method` is `original`).",
        "",
        "## Uses",
        "",
        "Evaluation only: `contrastkit evaluate --data THIS_FOLDER` measures retrieval bias "
        "(Bias@K, MaxSkew@K) on these photos; `contrastkit report` puts it beside the "
        "contrast set's (GenSynth Tab. 3). Labels are perceived gender from the captions, "
        "not anyone's identity. Do not train on it.",
        "",
        "## Sources and licence",
        "",
        f"Sources: {metadata['source_description']}.",
        "",
        f"- Licence of the annotations and metadata: `{metadata['license']}`.",
        f"- {metadata['source_licence']}",
        f"- Exported with contrastkit {metadata['contrastkit_version']} on "
        f"{metadata['exported_at']}; the full metadata is in `{METADATA_FILE}`.",
    ]
    return f"---\n{header}---\n\n" + "\n".join(lines) + "\n"


class _ManifestIndex:
    """A build's manifest as an SQLite table keyed by edit id, in a scratch file, so a
    contrast set of any size looks its edits up without holding the manifest in memory.
    Reading checks what :meth:`Manifest.read` checks (a torn last line is left out)."""

    def __init__(self, manifest: Path, database: Path) -> None:
        self.manifest = manifest
        self.connection = sqlite3.connect(database)
        self.connection.execute("PRAGMA journal_mode = OFF")
        self.connection.execute("PRAGMA synchronous = OFF")
        self.connection.execute("CREATE TABLE edits (edit_id TEXT PRIMARY KEY, record TEXT)")
        if manifest.exists():
            self._load()

    def _load(self) -> None:
        where: dict[str, Any] = {"line": 0, "edit_id": ""}

        def records() -> Iterator[tuple[str, str]]:
            # a torn last line (its append never finished) is left out
            for number, parsed in json_lines(self.manifest, torn_tail=True):
                record = EditRecord.from_json(self.manifest, number, parsed)
                where["line"], where["edit_id"] = number, record.edit_id
                yield record.edit_id, record.to_line()

        try:
            with self.connection:
                self.connection.executemany("INSERT INTO edits VALUES (?, ?)", records())
        except sqlite3.IntegrityError as error:
            raise DataFormatError(
                self.manifest, int(where["line"]), "edit_id",
                f"edit {where['edit_id']!r} listed twice",
            ) from error  # fmt: skip

    def get(self, edit_id: str) -> EditRecord | None:
        """The manifest's record of ``edit_id``, or ``None``."""
        row = self.connection.execute(
            "SELECT record FROM edits WHERE edit_id = ?", (edit_id,)
        ).fetchone()
        return None if row is None else EditRecord(**json.loads(row[0]))

    def close(self) -> None:
        self.connection.close()


def _require_finite(path: Path, value: Any, where: str = "") -> None:
    """Refuse a NaN or an infinity anywhere in ``value`` (a build summary): a build never
    writes one, and a card must not state "nan" as a figure."""
    if isinstance(value, float) and not math.isfinite(value):
        raise DataFormatError(path, None, where or None, f"{value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _require_finite(path, item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _require_finite(path, item, f"{where}[{number}]")


def _edit_of(
    index: _ManifestIndex, build_dir: Path, path: Path, line: int, item: ContrastItem
) -> EditRecord:
    """The manifest record of a contrast-set item whose image is an image file inside the
    build folder, or a clear error (checked for every item before anything is written)."""
    relative_file_name(path, line, "image", item.image)
    record = index.get(item.edit_id)
    if record is None or not (build_dir / item.image).is_file():
        raise DataFormatError(
            path, line, "edit_id",
            f"edit {item.edit_id} is not in the manifest or its image {item.image} is missing",
        )  # fmt: skip
    try:  # the header only: the bytes are read once, when the row is written
        with PILImage.open(build_dir / item.image):
            pass
    except (OSError, SyntaxError, ValueError, PILImage.DecompressionBombError) as error:
        raise DataFormatError(
            path, line, "image", f"{item.image} is not a readable image ({error})"
        ) from error
    if record.composite == "mask" and not source_file(build_dir, Path(item.source_image)).is_file():
        raise DataFormatError(
            path, line, "source_image",
            f"edit {item.edit_id} holds only the person's pixels, which are put onto its "
            f"source photo, and {item.source_image} is missing",
        )  # fmt: skip
    return record


def _contrast_records(
    build_dir: Path, path: Path, index: _ManifestIndex
) -> Iterator[dict[str, Any]]:
    """The exported rows of a contrast set, each image read when its row is yielded."""
    for line, item in contrast_items(path):
        record = _edit_of(index, build_dir, path, line, item)
        if record.composite == "mask":
            # the person's pixels onto the decoded source, stored losslessly: every
            # pixel outside the dilated person mask is the source photo's own
            whole = EditImage(
                build_dir / item.image, source_file(build_dir, Path(item.source_image))
            )
            name = Path(item.image).with_suffix(".webp").name
            image = {"bytes": encode_lossless(whole()), "path": name}
        else:
            image = {"bytes": (build_dir / item.image).read_bytes(), "path": Path(item.image).name}
        yield {
            "source_id": item.source_id,
            "gender": item.gender,
            "image": image,
            "edit_id": item.edit_id,
            "method": item.method,
            "source_label": record.source_label,
            "captions": list(item.captions),
            "neutral_captions": [neutralize(c) for c in item.original_captions],
            "original_captions": list(item.original_captions),
            "box": [float(v) for v in item.box],
            "p_real": item.p_real,
            "p_gender": item.p_gender,
            "instruction": record.instruction,
            "text_guidance_scale": record.text_guidance_scale,
            "image_guidance_scale": record.image_guidance_scale,
            "steps": record.steps,
            "seed": record.seed,
            "donor": record.donor,
        }  # fmt: skip


@dataclass(frozen=True)
class SplitRows:
    """One split to export, produced on demand: ``rows()`` yields its records (plain
    values, images as ``{"bytes": ..., "path": ...}``) one at a time, so that no more
    than a batch of them is ever held in memory. It is called once."""

    features: Features
    rows: Callable[[], Iterable[dict[str, Any]]]


def public_text(text: str) -> str:
    """``text`` with every absolute local path replaced by its last component
    (``open_clip:/home/me/models/tiny-open-clip`` -> ``open_clip:tiny-open-clip``), for
    files meant for publishing: a card or metadata must not leak the exporter's folders."""
    return _LOCAL_PATH.sub(r"\1", text)


def public_metadata(value: Any) -> Any:
    """``value`` (metadata: dicts, lists, strings, numbers) with :func:`public_text`
    applied to every string, keys included."""
    if isinstance(value, Mapping):
        return {public_text(str(key)): public_metadata(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [public_metadata(item) for item in value]
    if isinstance(value, str):
        return public_text(value)
    return value


def build_weights(summary: Mapping[str, Any]) -> dict[str, Any]:
    """Whether a build's editor and image encoder had random weights, from its summary:
    the flags the stages recorded (``editor_random_weights`` / ``encoder_random_weights``)
    or else the models' folders (:mod:`contrastkit.tiny.marker`).

    Returns:
        ``{"random_weights": {"editor": bool, "encoder": bool}, "weights_note": str |
        None}``: the note the card prints at its top when either is random.
    """
    edit = summary.get("edit") or {}
    filtered = summary.get("filter") or {}
    flags = {
        "editor": bool(edit.get("editor_random_weights"))
        or spec_has_random_weights(str(edit.get("editor") or "")),
        "encoder": bool(filtered.get("encoder_random_weights"))
        or spec_has_random_weights(str(filtered.get("encoder") or "")),
    }
    which = " and ".join(
        what for what, flag in (("the editor", flags["editor"]),
                                ("the image encoder", flags["encoder"])) if flag
    )  # fmt: skip
    return {
        "random_weights": flags,
        "weights_note": RANDOM_BUILD_NOTE.format(which=which) if which else None,
    }


def write_export(
    out_dir: Path,
    configs: Mapping[str, Mapping[str, Dataset | SplitRows]],
    metadata: dict[str, Any],
    *,
    card: Callable[[dict[str, Any]], str] = render_card,
) -> ExportResult:
    """Write configs (``save_to_disk`` and parquet), the metadata and the dataset card
    (``card``, :func:`~contrastkit.data_cards.render_card` by default).

    Each split is a :class:`SplitRows` (streamed) or a ``Dataset``. Its rows are encoded
    in batches and written once to the ``save_to_disk`` Arrow files, then read back from
    them batch by batch (not memory-mapped) into the parquet shards, so peak memory does
    not grow with the number of rows or images (:mod:`contrastkit.builders.dataset_files`,
    which says why this is not ``datasets``' public API). ``metadata`` is completed with the
    configs' row counts, features, file list, the contrastkit version and the export
    time, then rendered into ``README.md``. The result's configs are the written
    ``saved/`` copies, loaded memory-mapped from ``out_dir``.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    building = staging_folder(out_dir.parent, f".{out_dir.name}.tmp-")
    try:
        parquet_files: list[Path] = []
        described: dict[str, Any] = {}
        for name, splits in configs.items():
            saved = building / "saved" / name
            saved.mkdir(parents=True)
            described[name] = {"splits": {}, "features": None}
            for split, source in splits.items():
                features = source.features
                batches = (
                    encode_batches(source.rows(), features)
                    if isinstance(source, SplitRows)
                    else dataset_batches(source)
                )
                with progress_bars_off():  # our callers print their own progress
                    rows, files = write_split(
                        batches, features, saved / split, building / "data" / name, split
                    )
                parquet_files += [out_dir / "data" / name / f for f in files]
                described[name]["features"] = features.to_dict()
                described[name]["splits"][split] = {
                    "rows": rows,
                    "files": [f"data/{name}/{f}" for f in files],
                }
            atomic_write_text(saved / "dataset_dict.json", json.dumps({"splits": list(splits)}))
        metadata = public_metadata({
            **metadata,
            "configs": described,
            "total_rows": sum(s["rows"] for c in described.values() for s in c["splits"].values()),
            "contrastkit_version": __version__,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })  # fmt: skip
        atomic_write_text(building / METADATA_FILE, json.dumps(metadata, indent=2) + "\n")
        atomic_write_text(building / "README.md", card(metadata))
        _replace_dir(building, out_dir)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    loaded = {name: load_export(out_dir, name) for name in configs}
    return ExportResult(out_dir, loaded, metadata, parquet_files)


def _replace_dir(new: Path, target: Path) -> None:
    """Put ``new`` at ``target``; an existing ``target`` is removed only after the swap."""
    if target.exists():
        old = target.with_name(f".{target.name}.old-{new.name.rsplit('-', 1)[-1]}")
        target.rename(old)
        new.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    else:
        new.rename(target)


def check_replaceable(out_dir: Path) -> None:
    """Check, before an export starts, that ``out_dir`` may be written: its parent folder
    is writable, and ``out_dir`` is absent, empty, or an earlier export (it holds
    ``build_metadata.json``), since an export replaces the whole folder.

    Raises:
        StateError: ``out_dir`` is a file, or a folder with other content.
        ResourceError: the parent folder cannot be written.
    """
    out_dir = Path(out_dir)
    if out_dir.is_symlink() or (out_dir.exists() and not out_dir.is_dir()):
        raise StateError(f"{out_dir}: the export folder is a file or a link; choose another --out")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / METADATA_FILE).is_file():
        raise StateError(
            f"{out_dir}: the folder holds files that are not a contrastkit export (no "
            f"{METADATA_FILE}); an export replaces the whole folder, so choose another "
            "--out or empty it"
        )
    check_writable(out_dir.parent, "the export folder")


def read_metadata(out_dir: Path) -> dict[str, Any]:
    """The ``build_metadata.json`` of an export folder."""
    path = Path(out_dir) / METADATA_FILE
    if not path.is_file():
        raise DataFormatError(path, None, None, "not an export folder (no build metadata)")
    return read_json_object(path, "the build metadata object")


def load_export(out_dir: Path, config: str, *, source: str = "disk") -> DatasetDict:
    """Load one config of an export folder back, from ``saved/`` (``source="disk"``) or
    from its parquet files (``source="parquet"``)."""
    out_dir = Path(out_dir)
    if source == "disk":
        folder = out_dir / "saved" / config
        loaded = load_from_disk(str(folder))
        if not isinstance(loaded, DatasetDict):
            raise DataFormatError(
                folder, None, None,
                "holds a single Dataset, not a DatasetDict of splits; export it again with "
                "contrastkit (which saves every config as a DatasetDict)",
            )  # fmt: skip
        return loaded
    if source != "parquet":
        raise ConfigError(f"source must be 'disk' or 'parquet', not {source!r}")
    from datasets import load_dataset

    configs = read_metadata(out_dir)["configs"]
    if config not in configs:
        raise ConfigError(f"{out_dir}: no config {config!r}; it has {', '.join(configs)}")
    described = configs[config]["splits"]
    files = {split: [str(out_dir / f) for f in info["files"]] for split, info in described.items()}
    loaded = load_dataset("parquet", data_files=files)
    if not isinstance(loaded, DatasetDict):  # load_dataset without split= gives a dict
        raise DataFormatError(out_dir, None, None, f"config {config} did not load as splits")
    return loaded


# ------------------------------------------------------------------ stereotype probe sets

STEREOTYPE_CONFIG = "stereotype"
"""The config name of an exported stereotype probe set (:mod:`contrastkit.probes`)."""
STEREOSET_LICENCE = "cc-by-sa-4.0"
"""StereoSet's licence (CC BY-SA 4.0), which the captions inherit: the default ``license``
of a stereotype export."""


def stereotype_features(*, with_images: bool) -> Features:
    """Typed features of an exported stereotype probe set: every probe column as text
    (the image reference as written under ``image_ref``), ``category`` and ``label`` as
    ``ClassLabel``; with images, ``image`` (``Image``) and ``image_sha256``."""
    from contrastkit.probes import CATEGORIES, COLUMNS, LABELS

    features: dict[str, Any] = {}
    for name in COLUMNS:
        if name == "image":
            features["image_ref"] = Value("string")
        elif name == "category":
            features[name] = ClassLabel(names=list(CATEGORIES))
        elif name == "label":
            features[name] = ClassLabel(names=list(LABELS))
        else:
            features[name] = Value("string")
    if with_images:
        features |= {"image": Image(), "image_sha256": Value("string")}
    return Features(features)


@dataclass(frozen=True)
class ExportStereotypeConfig:
    """What :func:`export_stereotype` exports (strings are taken as paths).

    Attributes:
        source: A probe file (``.tsv`` / ``.jsonl``) or a ``contrastkit build stereoset``
            folder (its ``probes.tsv``; its ``build.json`` goes in the card).
        out: Export folder (replaced atomically if it exists).
        store: The image store of the rows' URLs (``urls check --store``). Images are
            embedded when every row's image can be: local files are read directly, URLs
            from the store; without a store, a set with URLs is exported URL-only.
        checks: ``urls check --results`` file whose status counts and dates go in the card.
        skip_missing: Leave out rows whose image is not available (listed in the
            metadata) instead of failing.
        split: Split name (an evaluation set: ``test``).
        pretty_name: The card's title.
        license: Licence id of the captions and annotations (StereoSet's CC BY-SA 4.0).
    """

    source: Path
    out: Path
    store: Path | None = None
    checks: Path | None = None
    skip_missing: bool = False
    split: str = "test"
    pretty_name: str = "VLStereoSet-style stereotype probe set"
    license: str = STEREOSET_LICENCE

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", Path(self.source))
        object.__setattr__(self, "out", Path(self.out))
        for name in ("store", "checks"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(bool(self.split.strip()), "split", "must not be empty")
        require(self.out != self.source, "out", f"{self.out} is also the source")


def _probe_source(source: Path) -> tuple[Path, dict[str, Any] | None]:
    """The probe file of ``source`` and the build report beside it (if any)."""
    from contrastkit.builders.stereoset import BUILD_REPORT
    from contrastkit.probes import PROBE_FILE

    path = source / PROBE_FILE if source.is_dir() else source
    if source.is_dir() and not path.is_file():
        raise DataFormatError(source, None, None, f"no {PROBE_FILE} in this folder")
    report = path.parent / BUILD_REPORT
    build = read_json_object(report, "the build report") if report.is_file() else None
    return path, build


def stereotype_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``stereotype`` of a probe-set export (what the
    ``stereotype`` kind declares; :func:`stereotype_features`)."""
    if config_name != STEREOTYPE_CONFIG:
        raise ConfigError(f"config: a probe-set export has stereotype, not {config_name!r}")
    return stereotype_features(with_images=with_images)


def export_stereotype(config: ExportStereotypeConfig) -> ExportResult:
    """Export a stereotype probe set (VLStereoSet, Zhou et al. 2022) as config
    ``stereotype`` of a Hugging Face dataset, with a card: :func:`export` of kind
    ``stereotype``.

    Every row is checked first (:func:`contrastkit.probes.read_probes`) and every image
    found before anything is written. :func:`contrastkit.probes.load_probe_set` reads the
    export back into the same rows.

    Raises:
        DataFormatError: a malformed probe file, a row whose image is not available
            (unless ``skip_missing``), a malformed checks file.
        ResourceError: the export folder cannot be written (checked first).
    """
    return export(ExportConfig(
        source=(config.source,), out=config.out, kind="stereotype", store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        pretty_name=config.pretty_name, license=config.license,
    ))  # fmt: skip


def _export_stereotype(config: ExportStereotypeConfig) -> ExportResult:
    from contrastkit.builders.stereoset import PAPER_TABLE1
    from contrastkit.probes import CATEGORIES, COLUMNS, LABELS, ProbeRow, read_probes

    check_replaceable(config.out)
    path, build = _probe_source(config.source)
    rows = read_probes(path)
    store = ImageStore(config.store) if config.store is not None else None
    local = {row.id: row.local_image() for row in rows}
    with_images = store is not None or all(p is not None for p in local.values())
    kept: list[ProbeRow] = []
    skipped: list[str] = []
    for row in rows:
        if with_images:
            file = local[row.id]
            if file is not None:
                missing = None if file.is_file() else f"image file not found: {file}"
            else:
                assert store is not None
                sha = store.sha_for_url(row.image)
                missing = (
                    None if sha is not None and store.has(sha) else
                    f"the image store {store.root} has no image for this URL; run `contrastkit "
                    f"urls check {path} --store {store.root}` first"
                )  # fmt: skip
            if missing is not None:
                if config.skip_missing:
                    skipped.append(row.id)
                    continue
                reason = f"{missing}, or pass --skip-missing to leave such rows out"
                raise DataFormatError(path, row.line, "image", reason)
        kept.append(row)

    def records() -> Iterator[dict[str, Any]]:
        for row in kept:
            record: dict[str, Any] = {
                ("image_ref" if name == "image" else name): getattr(row, name) for name in COLUMNS
            }
            if with_images:
                file = local[row.id]
                if file is not None:
                    data = file.read_bytes()
                    sha = hashlib.sha256(data).hexdigest()
                else:
                    assert store is not None
                    found = store.sha_for_url(row.image)
                    assert found is not None  # checked above
                    sha, data = found, store.read(found)
                record["image"] = {"bytes": data, "path": sha}
                record["image_sha256"] = sha
            yield record

    counts = {
        category: {label: sum(1 for r in kept if (r.category, r.label) == (category, label))
                   for label in LABELS}
        for category in CATEGORIES
    }  # fmt: skip
    licences = Counter(row.licence or "(not given)" for row in kept)
    metadata: dict[str, Any] = {
        "kind": "stereotype",
        "pretty_name": config.pretty_name,
        "license": config.license,
        "split": config.split,
        "sources": [
            {
                "path": str(path),
                "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
                "rows": len(rows),
            }
        ],
        "with_images": with_images,
        "image_store": str(store.root) if store is not None else None,
        "skipped_missing_images": {STEREOTYPE_CONFIG: skipped} if skipped else {},
        "counts": counts,
        "category_totals": {c: sum(v.values()) for c, v in counts.items()},
        "paper_table1": dict(PAPER_TABLE1),
        "without_neutral": {
            c: sum(1 for r in kept if r.category == c and not r.has_neutral) for c in CATEGORIES
        },
        "targets": len({(r.category, r.target) for r in kept}),
        "statements": len({(r.target, r.context) for r in kept}),
        "annotators": len({r.annotator for r in kept if r.annotator}),
        "image_licences": dict(sorted(licences.items())),
        "build": build,
        "url_check": _url_check_summary(config.checks) if config.checks is not None else None,
    }
    kind = kinds()["stereotype"]
    features = kind.export_features(STEREOTYPE_CONFIG, with_images=with_images)
    configs = {STEREOTYPE_CONFIG: {config.split: SplitRows(features, records)}}
    return write_export(config.out, configs, metadata, card=kind.render_card)


# ------------------------------------------------------------------ the one export job


@dataclass(frozen=True)
class ExportConfig:
    """What :func:`export` exports (strings are taken as paths); ``contrastkit export
    PATH --out OUT``. Options a kind does not take must stay at their defaults.

    Attributes:
        source: What to export: official-format OP/OO TSVs (or a folder of them), a
            GenSynth / GenSwap build folder, or a stereotype probe file or ``build
            stereoset`` folder; one path, or several TSVs of one VisoGender-style set.
        out: Export folder (replaced atomically if it exists).
        kind: A :mod:`contrastkit.kinds` name (``visogender``, ``contrast``,
            ``stereotype`` or a plugin's); ``None``: detected from ``source``.
        store: VisoGender-style and stereotype sets: the image store of the rows' URLs.
        checks: VisoGender-style and stereotype sets: a ``urls check --results`` file.
        skip_missing: VisoGender-style and stereotype sets: leave out rows whose image
            is not available instead of failing.
        split: Split name of every config (evaluation sets: ``test``).
        pretty_name: The card's title (``None``: the kind's own).
        license: Licence id for the card (``None``: the kind's own).
        source_description: Contrast sets: what the source photos are (``None``:
            :data:`COCO_SOURCES`).
        source_licence: Contrast sets: the source photos' licence sentence (``None``:
            :data:`COCO_LICENCE`).
        originals: Contrast sets: export the original photos instead of the edits.
        balanced: Contrast sets, with ``originals``: as many masculine as feminine.
        seed: Contrast sets: the seed of the ``balanced`` draw.
    """

    source: tuple[Path, ...]
    out: Path
    kind: str | None = None
    store: Path | None = None
    checks: Path | None = None
    skip_missing: bool = False
    split: str = "test"
    pretty_name: str | None = None
    license: str | None = None
    source_description: str | None = None
    source_licence: str | None = None
    originals: bool = False
    balanced: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        source: object = self.source
        if isinstance(source, str | Path):  # one path
            source = [source]
        if not isinstance(source, Iterable):
            raise ConfigError(f"source: expected paths, not {source!r}")
        object.__setattr__(self, "source", tuple(Path(p) for p in source))
        object.__setattr__(self, "out", Path(self.out))
        for name in ("store", "checks"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(bool(self.source), "source", "needs a path to export")
        require(self.out not in self.source, "out", f"{self.out} is also the source")
        require(bool(self.split.strip()), "split", "must not be empty")


#: Options that only contrast sets take, and options that only sets of image URLs take.
_CONTRAST_OPTIONS = ("source_description", "source_licence", "originals", "balanced", "seed")
_URL_OPTIONS = ("store", "checks", "skip_missing")


def export(config: ExportConfig) -> ExportResult:
    """Export a dataset as a Hugging Face dataset with its card, whatever its kind.

    The kind is ``config.kind`` or else detected from the source
    (:func:`contrastkit.kinds.detect_source`: a recorded or sniffed kind; a GenSynth /
    GenSwap build folder is a contrast set); that kind's ``export`` function writes the
    folder, with the features and the card the kind declares (:func:`export_visogender`,
    :func:`export_contrast_set`, :func:`export_stereotype` for the built-in kinds).

    Raises:
        ConfigError: an unknown kind, sources of different kinds, a source that is
            already an export, a kind that is not exported (Visual Genome / COCO
            folders), or an option the kind does not take.
        DataFormatError: what the kind's export raises for malformed data.
        ResourceError: the export folder cannot be written (checked first).
    """
    for path in config.source:
        if path.is_dir() and (path / METADATA_FILE).is_file():
            raise ConfigError(
                f"source: {path} is already a contrastkit export (it holds {METADATA_FILE}); "
                "export the TSVs, build folder or probe set it was made from"
            )
    kind = _source_kind(config)
    if kind.export is None:
        exported = [k.plural for k in kinds().values() if k.export is not None]
        raise ConfigError(
            f"source: {', '.join(map(str, config.source))} is {kind.title}, which is not "
            f"exported; contrastkit export takes {', '.join(exported)}"
        )
    result = kind.run_export(config)
    if not isinstance(result, ExportResult):
        raise ConfigError(
            f"dataset kind {kind.name!r} ({kind.source}): its export returned "
            f"{type(result).__name__}, not an ExportResult"
        )
    return result


def _source_kind(config: ExportConfig) -> DatasetKind:
    """``config.kind``, or the one kind of all of ``config.source``."""
    registered = kinds()
    if config.kind is not None:
        if config.kind not in registered:
            raise ConfigError(
                f"kind: {config.kind!r} is not a dataset kind; one of {', '.join(registered)}"
            )
        return registered[config.kind]
    found: dict[str, tuple[DatasetKind, list[str]]] = {}
    for path in config.source:
        kind = detect_source(path)
        found.setdefault(kind.name, (kind, []))[1].append(str(path))
    if len(found) > 1:
        groups = [f"{kind.plural} ({', '.join(where)})" for kind, where in found.values()]
        raise ConfigError(f"source: mixes {' with '.join(groups)}; export them separately")
    return next(iter(found.values()))[0]


def _refuse_options(config: ExportConfig, kind: str, names: tuple[str, ...]) -> None:
    """Refuse any of ``names`` set away from its default: kind ``kind`` does not take it."""
    defaults = ExportConfig(source=config.source, out=config.out)
    for name in names:
        if getattr(config, name) != getattr(defaults, name):
            raise ConfigError(f"{name}: {kinds()[kind].plural} do not take this option")


def _one_source(config: ExportConfig, kind: str) -> Path:
    if len(config.source) != 1:
        raise ConfigError(f"source: {kinds()[kind].title} is one path, not {len(config.source)}")
    return config.source[0]


def _given(config: ExportConfig, *names: str) -> dict[str, Any]:
    """The options among ``names`` that ``config`` gives (not ``None``): the kind's own
    defaults stand for the rest."""
    return {name: getattr(config, name) for name in names if getattr(config, name) is not None}


def export_visogender_kind(config: ExportConfig) -> ExportResult:
    """The ``visogender`` kind's export: the TSVs of ``config.source`` (a folder gives
    its ``*.tsv`` files) through :class:`ExportVisoGenderConfig`."""
    _refuse_options(config, "visogender", _CONTRAST_OPTIONS)
    files: list[Path] = []
    for path in config.source:
        if path.is_dir():
            found = sorted(path.glob("*.tsv"))
            if not found:
                raise DataFormatError(path, None, None, "no .tsv files in this folder")
            files += found
        else:
            files.append(path)
    return _export_visogender(ExportVisoGenderConfig(
        files=tuple(files), out=config.out, store=config.store, checks=config.checks,
        skip_missing=config.skip_missing, split=config.split,
        **_given(config, "pretty_name", "license"),
    ))  # fmt: skip


def export_contrast_kind(config: ExportConfig) -> ExportResult:
    """The ``contrast`` kind's export: a GenSynth / GenSwap build folder through
    :class:`ExportContrastConfig` (its edits, or with ``originals`` its source photos)."""
    _refuse_options(config, "contrast", _URL_OPTIONS)
    return _export_contrast_locked(ExportContrastConfig(
        build=_one_source(config, "contrast"), out=config.out, split=config.split,
        originals=config.originals, balanced=config.balanced, seed=config.seed,
        **_given(config, "pretty_name", "license", "source_description", "source_licence"),
    ))  # fmt: skip


def export_stereotype_kind(config: ExportConfig) -> ExportResult:
    """The ``stereotype`` kind's export: a probe file or ``build stereoset`` folder
    through :class:`ExportStereotypeConfig`."""
    _refuse_options(config, "stereotype", _CONTRAST_OPTIONS)
    return _export_stereotype(ExportStereotypeConfig(
        source=_one_source(config, "stereotype"), out=config.out, store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        **_given(config, "pretty_name", "license"),
    ))  # fmt: skip
