"""The export of a GenSynth / GenSwap build's edits (config ``contrast``):
:func:`export_edits`, which :func:`contrastkit.builders.export.export_contrast_set`
runs. A contrast set's manifest is looked up through a scratch SQLite index, never held
whole, and each image is read when its row is written.
"""

from __future__ import annotations

import functools
import json
import sqlite3
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

from PIL import Image as PILImage
from typing_extensions import NotRequired

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.contrast_export import ContrastRow, ExportContrastConfig
from contrastkit.builders.edit_facts import EditFacts, edit_facts, stored_format
from contrastkit.builders.export_folder import (
    GENDER_LABELS,
    ExportResult,
    ImageCell,
    RandomWeights,
    SplitRows,
    build_weights,
    write_export,
)
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    ContrastItem,
    EditImage,
    EditRecord,
    Manifest,
    contrast_items,
    encode_lossless,
    read_sources,
    source_file,
)
from contrastkit.builders.portable_specs import portable_summary
from contrastkit.builders.source_photos import check_photo
from contrastkit.errors import DataFormatError
from contrastkit.gender_words import neutralize
from contrastkit.kinds import kinds
from contrastkit.records import data_file, json_lines

__all__ = ["ContrastMetadata", "export_edits"]


class ContrastMetadata(TypedDict):
    """What the metadata of a contrast-set export of edits says (``build_metadata.json``,
    to which :func:`~contrastkit.builders.export_folder.write_export` adds the configs'
    files, the row count, the version and the time): ``edit_facts`` for a GenSynth
    build."""

    kind: str
    pretty_name: str
    license: str
    split: str
    build_dir: str
    source_description: str
    source_licence: str
    random_weights: RandomWeights
    weights_note: str | None
    sources_kept: int
    counts: dict[str, dict[str, int]]
    source_labels: dict[str, int]
    build_summary: dict[str, Any]  # the build's summary, its model specs made portable
    paths_relative_to: str
    build_fingerprint: dict[str, str]
    edit_facts: NotRequired[EditFacts]


def export_edits(config: ExportContrastConfig, summary: dict[str, Any], kind: str) -> ExportResult:
    """Export the edits of the contrast set of ``config.build`` (a finished build whose
    ``summary`` and ``kind`` :func:`~contrastkit.builders.contrast_export.read_build_summary`
    read): one row per edited image, as
    :func:`contrastkit.builders.export.export_contrast_set` describes.

    Raises:
        DataFormatError: the contrast set names an edit the manifest or the folder lacks.
    """
    from contrastkit.builders.gensynth.export_context import build_fingerprint

    build_dir, split = config.build, config.split
    contrast_path = build_dir / CONTRAST_SET
    with tempfile.TemporaryDirectory(prefix="contrastkit-export-") as scratch:
        index = _ManifestIndex(Manifest(build_dir).path, Path(scratch) / "manifest.sqlite")
        try:
            # Every item is checked (and counted) before anything is written; the rows,
            # images included, are then produced one at a time while they are written.
            genders: Counter[str] = Counter()
            labels: Counter[str] = Counter()
            sources: set[str] = set()
            recorded = {s.source_id: s for s in read_sources(build_dir)}
            composites: Counter[str] = Counter()
            formats: Counter[str] = Counter()
            for line, item in contrast_items(contrast_path):
                record = _edit_of(index, build_dir, contrast_path, line, item)
                if record.composite == "mask" and item.source_id not in sources:
                    _check_source(build_dir, item, recorded)  # its pixels go out
                composites[record.composite or "box"] += 1
                formats[stored_format(item.image)] += 1
                genders[item.gender] += 1
                labels[record.source_label] += 1
                sources.add(item.source_id)
            del recorded
            rows = SplitRows(
                kinds()["contrast"].export_features("contrast"),
                functools.partial(_contrast_records, build_dir, contrast_path, index),
            )
            weights = build_weights(summary)
            metadata: ContrastMetadata = {
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
                "random_weights": weights["random_weights"],
                "weights_note": weights["weights_note"],
                "sources_kept": len(sources),
                "counts": {"contrast": {g: genders.get(g, 0) for g in GENDER_LABELS}},
                "source_labels": dict(sorted(labels.items())),
                "build_summary": portable_summary(summary, build_dir),
                "paths_relative_to": "the build folder",
                # what `contrastkit audit EXPORT --build BUILD` checks the build against
                "build_fingerprint": build_fingerprint(build_dir),
            }
            if kind == "gensynth":  # what the card states about the images
                metadata["edit_facts"] = edit_facts(summary, composites, formats)
            del sources
            card = kinds()["contrast"].render_card
            return write_export(config.out, {"contrast": {split: rows}}, metadata, card=card)
        finally:
            index.close()


class _Where(TypedDict):
    """The manifest line being read, and its edit."""

    line: int
    edit_id: str


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
        where: _Where = {"line": 0, "edit_id": ""}

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
                self.manifest, where["line"], "edit_id",
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


def _edit_of(
    index: _ManifestIndex, build_dir: Path, path: Path, line: int, item: ContrastItem
) -> EditRecord:
    """The manifest record of a contrast-set item whose image is an image file inside the
    build folder, or a clear error (checked for every item before anything is written)."""
    data_file(path, line, "image", item.image, folder=build_dir)  # SECURITY.md: in the folder
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


def _check_source(build_dir: Path, item: ContrastItem, recorded: dict[str, SourceImage]) -> None:
    """The photo a mask edit is put onto is the one the build recorded (its SHA-256)."""
    source = recorded.get(item.source_id)
    if source is not None:
        check_photo(source_file(build_dir, Path(item.source_image)), source)


def _contrast_records(build_dir: Path, path: Path, index: _ManifestIndex) -> Iterator[ContrastRow]:
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
            image: ImageCell = {"bytes": encode_lossless(whole()), "path": name}
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
