"""The context measure of an exported contrast set (``contrastkit audit EXPORT --build
BUILD``): the export's own images, as ``contrastkit evaluate`` reads them (its saved
dataset), measured against the source photos and person masks of the build it came
from (:mod:`contrastkit.builders.gensynth.context`), so that a change made in the export
after it was written is measured, not the build's files.

Before anything is measured the export is checked to be this build's
(:func:`check_export_of_build`): an export records its build's fingerprint
(:func:`build_fingerprint`: the SHA-256 of the contrast set and of the source photos'
recorded hashes), and every export, old or new, must hold exactly the build's contrast
set (the same edit ids, sources and genders) with the manifest's edit settings, and the
build's edit settings, and its parquet files must hold the images of its saved
dataset; anything else is refused, naming the difference.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from contrastkit.builders.gensynth.context import (
    ContextMeasurer,
    ContextReport,
    ContextRow,
    MeasuredItem,
    context_summary,
)
from contrastkit.builders.gensynth.summary import read_summary
from contrastkit.builders.manifest import CONTRAST_SET, Manifest, read_contrast_set, read_sources
from contrastkit.errors import ConfigError, DataFormatError

__all__ = ["build_fingerprint", "check_export_of_build", "measure_export_context"]

#: The export's columns the check compares with the build's manifest.
_EDIT_FIELDS = ("instruction", "seed", "steps", "text_guidance_scale", "image_guidance_scale")


def build_fingerprint(build: Path) -> dict[str, str]:
    """What identifies a build's contrast set: ``contrast_set_sha256`` (its
    ``contrast_set.jsonl``) and ``sources_sha256`` (each of its sources' id and recorded
    photo hash, sorted), as an export records it in its metadata."""
    contrast = (build / CONTRAST_SET).read_bytes()
    used = {item.source_id for item in read_contrast_set(build / CONTRAST_SET)}
    lines = sorted(
        f"{s.source_id}\t{s.sha256 or ''}" for s in read_sources(build) if s.source_id in used
    )
    return {
        "contrast_set_sha256": hashlib.sha256(contrast).hexdigest(),
        "sources_sha256": hashlib.sha256("\n".join(lines).encode()).hexdigest(),
    }


def _saved_split(export: Path, metadata: Mapping[str, Any]) -> Any:
    """The export's contrast split as saved (what ``contrastkit evaluate`` reads), its
    images undecoded."""
    from datasets import DatasetDict, Image, load_from_disk

    folder = export / "saved" / "contrast"
    try:
        loaded = load_from_disk(str(folder))
    except FileNotFoundError as error:
        raise DataFormatError(folder, None, None, "no saved contrast set here") from error
    if isinstance(loaded, DatasetDict):
        split = str(metadata.get("split") or next(iter(loaded)))
        if split not in loaded:
            raise DataFormatError(folder, None, None, f"no split {split!r}")
        loaded = loaded[split]
    return loaded.cast_column("image", Image(decode=False))


def _differ(recorded: Any, current: Any) -> bool:
    if isinstance(recorded, float | int) and isinstance(current, float | int):
        return not math.isclose(float(recorded), float(current), rel_tol=1e-5, abs_tol=1e-6)
    return bool(recorded != current)


def _refuse(export: Path, build: Path, what: str, metadata: Mapping[str, Any]) -> ConfigError:
    named = metadata.get("build_dir")
    hint = f" (its metadata names the build folder {named!r})" if named else ""
    return ConfigError(
        f"--build {build}: {export} is not the export of this build: {what}. The context "
        f"measure would report another build's figures; give the build folder the export "
        f"was made from{hint}, or export this build again"
    )


def _rows(dataset: Any) -> Iterator[dict[str, Any]]:
    """The export's rows without their images, genders as names."""
    names = dataset.features["gender"].names
    columns = ["edit_id", "source_id", "gender", *_EDIT_FIELDS]
    for row in dataset.select_columns(columns):
        yield row | {"gender": names[row["gender"]] if isinstance(row["gender"], int) else ""}


def check_export_of_build(export: Path, build: Path) -> tuple[dict[str, Any], Any]:
    """Refuse ``export`` unless it is the contrast-set export of ``build`` (module
    docstring); return its metadata and its saved split.

    Raises:
        ConfigError: an originals export, or an export of another build (or of this
            build before its contrast set, sources or edit settings changed), naming
            the first difference.
        DataFormatError: no export metadata or saved contrast set.
    """
    from contrastkit.builders.export_folder import read_metadata

    metadata = read_metadata(export)
    kind = metadata.get("kind")
    if kind == "originals":
        raise ConfigError(
            f"--build {build}: {export} is an export of original photos (--originals): it "
            "holds no edits to measure; audit the edits' export of this build"
        )
    if kind not in ("gensynth", "genswap"):
        raise ConfigError(f"--build {build}: {export} is not a contrast-set export ({kind!r})")
    recorded = metadata.get("build_fingerprint")
    if isinstance(recorded, Mapping):
        current = build_fingerprint(build)
        for key, value in recorded.items():
            if current.get(key) != value:
                what = "contrast set" if key.startswith("contrast") else "source photos"
                raise _refuse(
                    export, build,
                    f"its {what} differ ({key} recorded {str(value)[:16]}..., the build's is "
                    f"{str(current.get(key))[:16]}...)",
                    metadata,
                )  # fmt: skip
    settings = ((metadata.get("build_summary") or {}).get("edit") or {}).get("settings")
    now = (read_summary(build).get("edit") or {}).get("settings")
    if isinstance(settings, Mapping) and isinstance(now, Mapping):
        changed = sorted(k for k in {*settings, *now} if _differ(settings.get(k), now.get(k)))
        if changed:
            raise _refuse(
                export, build, f"its edit settings differ ({', '.join(changed)})", metadata
            )
    dataset = _saved_split(export, metadata)
    _check_rows(export, build, dataset, metadata)
    _check_parquet(export, metadata, dataset)
    return metadata, dataset


def _image_digests(rows: Any) -> dict[str, str]:
    return {
        str(row["edit_id"]): hashlib.sha256((row["image"] or {}).get("bytes") or b"").hexdigest()
        for row in rows
    }


def _check_parquet(export: Path, metadata: Mapping[str, Any], dataset: Any) -> None:
    """The export's parquet files (what the Hub serves) hold the images of its saved
    dataset (what is measured): an export changed in one place only is refused.

    Raises:
        DataFormatError: naming the parquet file and the first edit that differs.
    """
    import pyarrow.parquet as pq

    split = str(metadata.get("split") or "test")
    described = ((metadata.get("configs") or {}).get("contrast") or {}).get("splits") or {}
    files = [export / f for f in (described.get(split) or {}).get("files") or []]
    if not files:
        return
    saved = _image_digests(dataset.select_columns(["edit_id", "image"]))
    for file in files:
        if not file.is_file():
            raise DataFormatError(file, None, None, "a parquet file the export lists is missing")
        table = pq.read_table(file, columns=["edit_id", "image"])
        for edit_id, digest in _image_digests(table.to_pylist()).items():
            if saved.get(edit_id) != digest:
                raise DataFormatError(
                    file, None, "image",
                    f"the image of edit {edit_id} differs from the export's saved dataset "
                    f"({export / 'saved'}): the export was changed in one place after it was "
                    "written; export the build again",
                )  # fmt: skip


def _check_rows(export: Path, build: Path, dataset: Any, metadata: Mapping[str, Any]) -> None:
    """Every row of the export is an item of the build's contrast set with the
    manifest's settings, and every item is in the export."""
    items = {item.edit_id: item for item in read_contrast_set(build / CONTRAST_SET)}
    records = {r.edit_id: r for r in Manifest(build).records() if r.edit_id in items}
    seen: set[str] = set()
    for number, row in enumerate(_rows(dataset)):
        item, record = items.get(row["edit_id"]), records.get(row["edit_id"])
        if item is None or record is None:
            raise _refuse(
                export, build,
                f"row {number} is edit {row['edit_id']!r}, which the build's contrast set lacks",
                metadata,
            )  # fmt: skip
        if (row["source_id"], row["gender"]) != (item.source_id, item.gender):
            raise _refuse(
                export, build,
                f"edit {row['edit_id']!r} is source {row['source_id']} {row['gender']} in the "
                f"export, source {item.source_id} {item.gender} in the build",
                metadata,
            )  # fmt: skip
        for name in _EDIT_FIELDS:
            if _differ(row[name], getattr(record, name)):
                raise _refuse(
                    export, build,
                    f"edit {row['edit_id']!r} has {name} {row[name]!r} in the export, "
                    f"{getattr(record, name)!r} in the build's manifest",
                    metadata,
                )  # fmt: skip
        seen.add(row["edit_id"])
    missing = sorted(set(items) - seen)
    if missing:
        raise _refuse(
            export, build,
            f"the build's contrast set has {len(missing)} edit(s) the export lacks "
            f"({', '.join(missing[:3])}{' ...' if len(missing) > 3 else ''})",
            metadata,
        )  # fmt: skip


def measure_export_context(
    export: str | Path, build: str | Path, *, coco: str | Path | None = None
) -> ContextReport:
    """The context measure (:func:`~contrastkit.builders.gensynth.context.measure_context`'s
    rows and summary) of the images of ``export``, as its saved dataset holds them,
    against the sources of ``build``, after :func:`check_export_of_build`.

    Raises:
        ConfigError: ``export`` is not this build's export.
        DataFormatError: an unreadable image or source photo, a source photo that changed
            since the build, an image of another size than its source.
    """
    from PIL import Image

    from contrastkit.curation.codec_noise import stored_codec

    export, build = Path(export), Path(build)
    _, dataset = check_export_of_build(export, build)
    records = {r.edit_id: r for r in Manifest(build).records()}
    measurer = ContextMeasurer(build, None if coco is None else Path(coco))
    names = dataset.features["gender"].names
    rows: list[ContextRow] = []
    for number, row in enumerate(
        dataset.select_columns(["edit_id", "source_id", "gender", "image"])
    ):
        data = (row["image"] or {}).get("bytes")
        where = export / "saved" / "contrast"
        if not data:
            raise DataFormatError(where, number, "image", f"edit {row['edit_id']} has no image")
        try:
            with Image.open(io.BytesIO(data)) as opened:
                loaded = np.asarray(opened.convert("RGB"), dtype=np.uint8)
        except (OSError, SyntaxError, ValueError) as error:
            raise DataFormatError(
                where, number, "image", f"not a readable image ({error})"
            ) from error
        record = records[row["edit_id"]]
        item = MeasuredItem(
            row["edit_id"], row["source_id"], names[row["gender"]], record.composite or "box",
            where,
        )  # fmt: skip
        rows.append(measurer.measure(item, loaded, stored_codec(data, measurer.quality)))
    return ContextReport(context_summary(rows, len(rows), measurer.dilation), rows)
