"""The ``stereotype`` kind's export: a stereotype probe set (VLStereoSet, Zhou et al.
2022; :mod:`contrastkit.probes`) as config ``stereotype`` of a Hugging Face dataset
(:func:`contrastkit.builders.export.export_stereotype`, which runs
:func:`write_stereotype_export` through the one export job).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from datasets import ClassLabel, Features, Image, Value
from PIL import Image as PILImage

from contrastkit.builders.export_folder import (
    ExportResult,
    ImageCell,
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
from contrastkit.records import read_json_object
from contrastkit.store import ImageStore

__all__ = [
    "STEREOSET_LICENCE",
    "STEREOTYPE_CONFIG",
    "ExportStereotypeConfig",
    "StereotypeMetadata",
    "stereotype_config_features",
    "stereotype_features",
    "write_stereotype_export",
]

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

    features: dict[str, Value | ClassLabel | Image] = {}
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


class StereotypeMetadata(TableMetadata):
    """What the metadata of a stereotype probe-set export says (the configs' files, the
    row count, the version and the time are added by
    :func:`~contrastkit.builders.export_folder.write_export`): ``build`` is the report of
    the ``contrastkit build stereoset`` folder it came from, if any."""

    counts: dict[str, dict[str, int]]
    category_totals: dict[str, int]
    paper_table1: dict[str, int]
    without_neutral: dict[str, int]
    targets: int
    statements: int
    annotators: int
    image_licences: dict[str, int]
    build: dict[str, Any] | None
    url_check: UrlCheckSummary | None


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


def _unreadable(file: Path) -> str | None:
    """Why a local file cannot be embedded (missing, or not an image: an export embeds
    only files that open as one), or ``None``. Reads the header only."""
    if not file.is_file():
        return f"image file not found: {file}"
    try:
        with PILImage.open(file):
            pass
    except (OSError, SyntaxError, ValueError, PILImage.DecompressionBombError) as error:
        return f"{file} is not a readable image ({error})"
    return None


def stereotype_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``stereotype`` of a probe-set export (what the
    ``stereotype`` kind declares; :func:`stereotype_features`)."""
    if config_name != STEREOTYPE_CONFIG:
        raise ConfigError(f"config: a probe-set export has stereotype, not {config_name!r}")
    return stereotype_features(with_images=with_images)


def write_stereotype_export(config: ExportStereotypeConfig) -> ExportResult:
    """Write the export of ``config`` (the work of
    :func:`contrastkit.builders.export.export_stereotype`, which documents it): every
    row checked and every image found first, then the folder written."""
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
                missing = _unreadable(file)
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

    def records() -> Iterator[dict[str, str | ImageCell]]:
        for row in kept:
            record: dict[str, str | ImageCell] = {
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
    metadata: StereotypeMetadata = {
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
        "url_check": url_check_summary(config.checks) if config.checks is not None else None,
    }
    kind = kinds()["stereotype"]
    features = kind.export_features(STEREOTYPE_CONFIG, with_images=with_images)
    configs = {STEREOTYPE_CONFIG: {config.split: SplitRows(features, records)}}
    return write_export(config.out, configs, metadata, card=kind.render_card)


# ------------------------------------------------------------------ the one export job
