"""An export folder: how :func:`write_export` writes one, and how it is read back.

An export folder holds everything a person or the Hub needs::

    OUT/README.md                       dataset card: Hub YAML + datasheet (data_cards)
    OUT/build_metadata.json             every number the card states, and where it came from
    OUT/data/<config>/<split>-00000-of-0000N.parquet   the Hub's data files (images inside)
    OUT/saved/<config>/                 the same DatasetDict, ``save_to_disk`` format

The folder is built under a temporary name beside ``OUT`` and renamed into place, so an
interrupted export never leaves a half-written one, and a previous export is replaced only
once the new one is complete.

Peak memory does not grow with the number of rows or images: each split's rows come
from a generator (:class:`SplitRows`; an image is read when its row is written), are
encoded in batches, written once to the ``saved/`` Arrow files, and read back from those
files batch by batch into the parquet shards (see :func:`write_export`).

Every kind's export (:mod:`contrastkit.builders.export`) writes through this module; it
also holds what several kinds share: the ``ClassLabel`` names, the metadata made public
(:func:`public_metadata`), the random-weights note of a build (:func:`build_weights`)
and the summary of a ``urls check`` results file (:func:`url_check_summary`).
"""

from __future__ import annotations

import json
import re
import shutil
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

from datasets import Dataset, DatasetDict, Features, load_from_disk

from contrastkit import __version__
from contrastkit.builders.dataset_files import (
    dataset_batches,
    encode_batches,
    progress_bars_off,
    write_split,
)
from contrastkit.data_cards import render_card
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.io import atomic_write_text, check_writable, staging_folder
from contrastkit.records import read_json_object, read_records
from contrastkit.schema import Context, Gender
from contrastkit.tiny.marker import spec_has_random_weights

__all__ = [
    "CONTEXT_LABELS",
    "GENDER_LABELS",
    "METADATA_FILE",
    "RANDOM_BUILD_NOTE",
    "BuildWeights",
    "ExportResult",
    "ImageCell",
    "RandomWeights",
    "SourceFile",
    "SplitRows",
    "TableMetadata",
    "UrlCheckSummary",
    "build_weights",
    "check_replaceable",
    "load_export",
    "public_metadata",
    "public_text",
    "read_metadata",
    "url_check_summary",
    "write_export",
]

METADATA_FILE = "build_metadata.json"
GENDER_LABELS = [Gender.MASCULINE.value, Gender.FEMININE.value]
"""ClassLabel names of perceived gender: 0 masculine, 1 feminine."""
CONTEXT_LABELS = [Context.OP.value, Context.OO.value]
"""ClassLabel names of the scene context: 0 OP (occupation-participant), 1 OO."""
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


class ImageCell(TypedDict):
    """An image of an exported row, as the ``Image`` feature takes it: the file's bytes
    and its name."""

    bytes: bytes
    path: str | None


class UrlCheckSummary(TypedDict):
    """What a card says of the check of a set's image URLs (:func:`url_check_summary`):
    the results file, the first and last check time, the count of each status."""

    source: str
    checked_from: str | None
    checked_to: str | None
    status_counts: dict[str, int]


class SourceFile(TypedDict):
    """A file an export was made from: its path, SHA-256 and rows."""

    path: str
    sha256: str
    rows: int


class TableMetadata(TypedDict):
    """What the metadata of an export of annotation tables says in common (VisoGender-style
    and stereotype probe sets; each adds its own counts): the source files, the split,
    and whether and where from the images were embedded."""

    kind: str
    pretty_name: str
    license: str
    split: str
    sources: list[SourceFile]
    with_images: bool
    image_store: str | None
    skipped_missing_images: dict[str, list[str]]


class RandomWeights(TypedDict):
    """Whether a build's editor and image encoder had random weights."""

    editor: bool
    encoder: bool


class BuildWeights(TypedDict):
    """:func:`build_weights`: the flags, and the note a card prints when either is set."""

    random_weights: RandomWeights
    weights_note: str | None


class _SplitFiles(TypedDict):
    rows: int
    files: list[str]


class _ConfigFiles(TypedDict):
    """A config as the metadata describes it: its splits' rows and files, its features."""

    splits: dict[str, _SplitFiles]
    features: dict[str, Any] | None


@dataclass
class ExportResult:
    """What :func:`write_export` wrote."""

    out_dir: Path
    configs: dict[str, DatasetDict]
    metadata: dict[str, Any]
    parquet_files: list[Path] = field(default_factory=list)


@dataclass(frozen=True)
class SplitRows:
    """One split to export, produced on demand: ``rows()`` yields its records (plain
    values, images as ``{"bytes": ..., "path": ...}``) one at a time, so that no more
    than a batch of them is ever held in memory. It is called once."""

    features: Features
    rows: Callable[[], Iterable[Mapping[str, object]]]


def url_check_summary(checks: Path) -> UrlCheckSummary:
    """Status counts and check time from ``urls check --results`` JSON lines: what the
    card of a set of image URLs says about their check."""
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


def build_weights(summary: Mapping[str, Any]) -> BuildWeights:
    """Whether a build's editor and image encoder had random weights, from its summary:
    the flags the stages recorded (``editor_random_weights`` / ``encoder_random_weights``)
    or else the models' folders (:mod:`contrastkit.tiny.marker`).

    Returns:
        ``{"random_weights": {"editor": bool, "encoder": bool}, "weights_note": str |
        None}``: the note the card prints at its top when either is random.
    """
    edit = summary.get("edit") or {}
    filtered = summary.get("filter") or {}
    flags: RandomWeights = {
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
    metadata: Mapping[str, object],
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
        described: dict[str, _ConfigFiles] = {}
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
        published = public_metadata({
            **metadata,
            "configs": described,
            "total_rows": sum(s["rows"] for c in described.values() for s in c["splits"].values()),
            "contrastkit_version": __version__,
            "exported_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        })  # fmt: skip
        atomic_write_text(building / METADATA_FILE, json.dumps(published, indent=2) + "\n")
        atomic_write_text(building / "README.md", card(published))
        _replace_dir(building, out_dir)
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    loaded = {name: load_export(out_dir, name) for name in configs}
    return ExportResult(out_dir, loaded, published, parquet_files)


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
