"""Export contrastkit datasets as Hugging Face ``datasets``, with build metadata for the card.

An export folder holds everything a person or the Hub needs::

    OUT/README.md                       dataset card: Hub YAML + datasheet (data_cards)
    OUT/build_metadata.json             every number the card states, and where it came from
    OUT/data/<config>/<split>-00000-of-0000N.parquet   the Hub's data files (images inside)
    OUT/saved/<config>/                 the same DatasetDict, ``save_to_disk`` format

One *config* per table shape: ``OP`` and ``OO`` for VisoGender-style sets (their columns
differ), ``contrast`` for GenSynth / GenSwap contrast sets. Perceived genders and contexts
are ``ClassLabel`` features, images ``Image`` features (bytes embedded), the rest plain
values. Loading either copy back gives the same rows and the same image bytes.

The folder is built under a temporary name beside ``OUT`` and renamed into place, so an
interrupted export never leaves a half-written one, and a previous export is replaced only
once the new one is complete.
"""

from __future__ import annotations

import hashlib
import json
import math
import shutil
import tempfile
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

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
from datasets.utils.tqdm import (
    are_progress_bars_disabled,
    disable_progress_bars,
    enable_progress_bars,
)

from contrastkit import __version__
from contrastkit.builders.manifest import CONTRAST_SET, SUMMARY, Manifest, read_contrast_set
from contrastkit.config import require
from contrastkit.curation.gender_words import neutralize
from contrastkit.data_cards import render_card
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.records import read_json_object, read_records
from contrastkit.schema import Context, Gender, VisoGenderRow, VisoGenderTable
from contrastkit.store import ImageStore
from contrastkit.tsv import read_visogender_tsv

__all__ = [
    "CONTEXT_LABELS",
    "GENDER_LABELS",
    "METADATA_FILE",
    "ExportContrastConfig",
    "ExportResult",
    "ExportVisoGenderConfig",
    "check_replaceable",
    "contrast_features",
    "export_contrast_set",
    "export_visogender",
    "load_export",
    "read_metadata",
    "visogender_features",
    "write_export",
]

METADATA_FILE = "build_metadata.json"
GENDER_LABELS = [Gender.MASCULINE.value, Gender.FEMININE.value]
"""ClassLabel names of perceived gender: 0 masculine, 1 feminine."""
CONTEXT_LABELS = [Context.OP.value, Context.OO.value]
"""ClassLabel names of the scene context: 0 OP (occupation-participant), 1 OO."""
MAX_SHARD_BYTES = 256 * 1024 * 1024
"""Parquet shards are cut so that none holds much more than this (images included)."""


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


def _table_dataset(
    table: VisoGenderTable, store: ImageStore | None, skip_missing: bool
) -> tuple[Dataset, list[str]]:
    """One table as a Dataset; rows whose image the store lacks are an error or skipped."""
    records: list[dict[str, Any]] = []
    skipped: list[str] = []
    for row in table.rows:
        record = _row_record(row)
        if store is not None:
            sha = store.sha_for_url(row.url)
            if sha is None or not store.has(sha):
                if skip_missing:
                    skipped.append(row.idx)
                    continue
                raise DataFormatError(
                    table.path,
                    row.line,
                    "URL",
                    f"the image store {store.root} has no image for this URL; run "
                    f"`contrastkit urls check {table.path} --store {store.root}` first, or "
                    "pass --skip-missing to leave such rows out",
                )
            record["image"] = {"bytes": store.read(sha), "path": f"{sha}"}
            record["image_sha256"] = sha
        records.append(record)
    features = visogender_features(table.context, with_images=store is not None)
    columns = {name: [r[name] for r in records] for name in features}
    return Dataset.from_dict(columns, features=features), skipped


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
        store: Embed the images from this image store (``urls check --store``);
            URL-only without.
        checks: ``urls check --results`` file whose status counts and dates go in the
            card.
        skip_missing: Leave out rows whose image the store lacks (listed in the
            metadata) instead of failing.
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
    """Export official-format OP/OO TSVs (configs ``OP`` and ``OO``) to ``config.out``.

    Raises:
        DataFormatError: a malformed TSV, two files of one context, a row whose image
            the store lacks (unless ``skip_missing``), a malformed checks file.
        ResourceError: the export folder cannot be written (checked first).
    """
    check_replaceable(config.out)
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
    configs: dict[str, DatasetDict] = {}
    counts: dict[str, dict[str, dict[str, int]]] = {}
    sources = []
    skipped: dict[str, list[str]] = {}
    for table in sorted(tables, key=lambda t: CONTEXT_LABELS.index(t.context.value)):
        dataset, missing = _table_dataset(table, store, skip_missing)
        name = table.context.value
        configs[name] = DatasetDict({split: dataset})
        left_out = set(missing)
        kept = [row for row in table.rows if row.idx not in left_out]
        cells: dict[str, Counter[str]] = defaultdict(Counter)
        for row in kept:
            cells[row.occupation][row.cell] += 1
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
        "with_images": store is not None,
        "image_store": str(store.root) if store is not None else None,
        "skipped_missing_images": skipped,
        "counts": counts,
        "cells": {name: list(Context(name).cells) for name in configs},
        "sectors": {
            name: dict(sorted(Counter(configs[name][split]["sector"]).items())) for name in configs
        },
        "url_check": _url_check_summary(config.checks) if config.checks is not None else None,
    }
    return write_export(config.out, configs, metadata)


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
    """

    build: Path
    out: Path
    split: str = "test"
    pretty_name: str | None = None
    license: str = "other"

    def __post_init__(self) -> None:
        object.__setattr__(self, "build", Path(self.build))
        object.__setattr__(self, "out", Path(self.out))
        require(bool(self.split.strip()), "split", "must not be empty")
        require(self.out != self.build, "out", "must not be the build folder")


def export_contrast_set(config: ExportContrastConfig) -> ExportResult:
    """Export a GenSynth or GenSwap build folder's contrast set (config ``contrast``).

    Each row is one edited image (bytes as written by the build, PNG) with its target
    ``gender``, its gender-adjusted ``captions`` (GenSynth Sec. 4.3), the same captions
    made gender-neutral (for retrieval queries), the source's own captions and label, the
    person box, the filter scores ``p_real`` / ``p_gender`` (Eq. 4; GenSynth only) and
    what made the edit (instruction, guidance scales, steps, seed; the donor face for
    GenSwap). The build summary (editor, settings, filter thresholds, acceptance rates,
    quality checks) goes into the metadata and the card.

    Raises:
        DataFormatError: the build is not finished (no contrast set or build summary),
            or its contrast set names an edit the manifest or the folder lacks.
        ResourceError: the export folder cannot be written (checked first).
    """
    build_dir, split = config.build, config.split
    check_replaceable(config.out)
    items = read_contrast_set(build_dir / CONTRAST_SET)
    summary_path = build_dir / SUMMARY
    try:
        summary: dict[str, Any] = json.loads(summary_path.read_text(encoding="utf-8"))
    except FileNotFoundError as error:
        raise DataFormatError(
            summary_path, None, None, "no build summary (run the build)"
        ) from error
    kind = "genswap" if "genswap" in summary else "gensynth"
    records = {r.edit_id: r for r in Manifest(build_dir).read()}
    rows: list[dict[str, Any]] = []
    for line, item in enumerate(items, start=1):
        record = records.get(item.edit_id)
        image_path = build_dir / item.image
        if record is None or not image_path.is_file():
            raise DataFormatError(
                build_dir / CONTRAST_SET, line, "edit_id",
                f"edit {item.edit_id} is not in the manifest or its image {item.image} is missing",
            )  # fmt: skip
        rows.append({
            "source_id": item.source_id,
            "gender": item.gender,
            "image": {"bytes": image_path.read_bytes(), "path": Path(item.image).name},
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
        })  # fmt: skip
    features = contrast_features()
    dataset = Dataset.from_dict({name: [r[name] for r in rows] for name in features}, features)
    genders = Counter(item.gender for item in items)
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
        "build_dir": str(build_dir),
        "sources_kept": len({item.source_id for item in items}),
        "counts": {"contrast": {g: genders.get(g, 0) for g in GENDER_LABELS}},
        "source_labels": dict(sorted(Counter(r["source_label"] for r in rows).items())),
        "build_summary": summary,
    }
    return write_export(config.out, {"contrast": DatasetDict({split: dataset})}, metadata)


def write_export(
    out_dir: Path, configs: dict[str, DatasetDict], metadata: dict[str, Any]
) -> ExportResult:
    """Write configs (``save_to_disk`` and parquet), the metadata and the dataset card.

    ``metadata`` is completed with the configs' row counts, features, file list, the
    contrastkit version and the export time, then rendered into ``README.md``.
    """
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    building = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.tmp-", dir=out_dir.parent))
    bars_were_on = not are_progress_bars_disabled()
    disable_progress_bars()  # our callers print their own progress
    try:
        parquet_files: list[Path] = []
        described: dict[str, Any] = {}
        for name, splits in configs.items():
            splits.save_to_disk(str(building / "saved" / name))
            described[name] = {
                "splits": {},
                "features": splits[next(iter(splits))].features.to_dict(),
            }
            for split, dataset in splits.items():
                size = dataset.data.nbytes
                shards = max(1, math.ceil(size / MAX_SHARD_BYTES))
                files = []
                for index in range(shards):
                    path = building / "data" / name / f"{split}-{index:05d}-of-{shards:05d}.parquet"
                    path.parent.mkdir(parents=True, exist_ok=True)
                    dataset.shard(shards, index, contiguous=True).to_parquet(str(path))
                    parquet_files.append(out_dir / path.relative_to(building))
                    files.append(str(path.relative_to(building)))
                described[name]["splits"][split] = {"rows": dataset.num_rows, "files": files}
        metadata = {
            **metadata,
            "configs": described,
            "total_rows": sum(s["rows"] for c in described.values() for s in c["splits"].values()),
            "contrastkit_version": __version__,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        atomic_write_text(building / METADATA_FILE, json.dumps(metadata, indent=2) + "\n")
        atomic_write_text(building / "README.md", render_card(metadata))
        _replace_dir(building, out_dir)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    finally:
        if bars_were_on:
            enable_progress_bars()
    return ExportResult(out_dir, configs, metadata, parquet_files)


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
