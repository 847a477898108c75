"""How much context a build's edits repaint: measured on its contrast set, never assumed.

For every image of the contrast set, against its decoded source photo and the source's
COCO person segmentation dilated as the build's ``mask_dilation`` says
(:mod:`contrastkit.curation.masks`):

* ``changed_outside_mask``: the share of the pixels outside the dilated person mask that
  differ from the source's (any channel). 0 by construction with ``--composite mask``;
  with ``--composite box`` (the paper's method) it counts the person box's context that
  the editor repainted, plus whatever lossy storage changed across the whole image.
* ``box_context_change``: the mean absolute change (0-255, over channels) of the pixels
  inside the person box but outside the dilated mask: the desk, the wall, the patient.

The images are read as the exported dataset returns them (a mask edit is put onto its
decoded source; a box edit is the stored file). The build's quality checks store the
summary under ``context`` in ``build_summary.json`` and one line per edit in
``context_change.jsonl`` (:func:`write_context`); ``contrastkit audit --build`` reports
the same for any existing build. A source recorded without its segmentation (a build
made before segmentations were recorded) takes it from the COCO folder the build
recorded, or ``coco``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contrastkit.builders.coco import SourceImage, read_coco
from contrastkit.builders.gensynth.select import sample_rows
from contrastkit.builders.gensynth.summary import load_image, read_summary
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    EditRecord,
    Manifest,
    edit_image,
    read_contrast_set,
    read_sources,
)
from contrastkit.curation.editing import DEFAULT_MASK_DILATION
from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text

__all__ = ["CONTEXT", "CONTEXT_FILE", "ContextReport", "measure_context", "write_context"]

#: The build summary's entry with the context measure.
CONTEXT = "context"
#: One line per measured edit.
CONTEXT_FILE = "context_change.jsonl"


@dataclass(frozen=True)
class ContextReport:
    """The context measure of a build: ``summary`` (JSON-ready) and one row per edit."""

    summary: dict[str, Any]
    rows: list[dict[str, Any]]


def _stats(values: list[float]) -> dict[str, float] | None:
    if not values:
        return None
    array = np.asarray(values, dtype=np.float64)
    return {"mean": float(array.mean()), "max": float(array.max())}


def _coco_segmentations(
    build: Path, sources: Mapping[str, SourceImage], coco: Path | None
) -> dict[str, Any]:
    """Segmentations of the sources that lack one, from the COCO folder given or the one
    the build recorded (``{}`` when neither is there)."""
    missing = [s for s in sources.values() if s.segmentation is None]
    if not missing:
        return {}
    settings = read_summary(build).get("settings") or {}
    folder = coco if coco is not None else settings.get("coco")
    if folder is None or not Path(folder).is_dir():
        return {}
    found = read_coco(folder, settings.get("split") if coco is None else None)
    result: dict[str, Any] = {}
    for source in missing:
        image = found.images.get(int(source.source_id)) if source.source_id.isdigit() else None
        if image is not None and len(image.person_segmentations) == 1:
            result[source.source_id] = image.person_segmentations[0]
    return result


def measure_context(
    build: str | Path,
    *,
    sample: int | None = None,
    seed: int = 0,
    coco: str | Path | None = None,
) -> ContextReport:
    """Measure the context each contrast-set image of ``build`` changed (module
    docstring); with ``sample``, at most that many images drawn with ``seed`` (the rows
    the quality checks sample).

    Raises:
        DataFormatError: no contrast set; an image or source photo that is missing or
            unreadable, or of another size than its source.
    """
    from contrastkit.curation.masks import (
        context_change,
        decode_segmentation,
        dilate,
        dilation_pixels,
    )

    build = Path(build)
    items = read_contrast_set(build / CONTRAST_SET)
    keep = sample_rows(len(items), sample, seed)
    chosen = items if keep is None else [items[i] for i in keep]
    wanted = {item.edit_id for item in chosen}
    records: dict[str, EditRecord] = {
        r.edit_id: r for r in Manifest(build).records() if r.edit_id in wanted
    }
    sources = {s.source_id: s for s in read_sources(build)}
    edit_settings = (read_summary(build).get("edit") or {}).get("settings") or {}
    dilation = float(edit_settings.get("mask_dilation", DEFAULT_MASK_DILATION))
    from_coco = _coco_segmentations(build, sources, None if coco is None else Path(coco))
    rows: list[dict[str, Any]] = []
    masks: dict[str, tuple[np.ndarray, np.ndarray] | None] = {}
    decoded: dict[str, np.ndarray] = {}
    for item in chosen:
        record, source = records.get(item.edit_id), sources.get(item.source_id)
        if record is None or source is None:
            raise DataFormatError(
                build / CONTRAST_SET, None, "edit_id",
                f"edit {item.edit_id} or its source {item.source_id} is not in the build",
            )  # fmt: skip
        if source.source_id not in decoded:
            decoded = {source.source_id: np.asarray(load_image(source.path), dtype=np.uint8)}
        original = decoded[source.source_id]
        height, width = original.shape[:2]
        if source.source_id not in masks:
            segmentation = source.segmentation or from_coco.get(source.source_id)
            if segmentation is None:
                masks[source.source_id] = None
            else:
                try:
                    person = decode_segmentation(segmentation, width, height)
                except ValueError as error:
                    raise DataFormatError(source.path, None, "segmentation", str(error)) from error
                box = source.box.xyxy(width, height)
                grown = dilate(person, dilation_pixels(box, dilation))
                in_box = np.zeros_like(grown)
                in_box[box[1] : box[3], box[0] : box[2]] = True
                masks[source.source_id] = (~grown, in_box & ~grown)
        image = edit_image(build, record, source)
        loaded = image() if not isinstance(image, Path) else load_image(image)
        row: dict[str, Any] = {
            "edit_id": item.edit_id,
            "source_id": item.source_id,
            "gender": item.gender,
            "composite": record.composite or "box",
        }
        regions = masks[source.source_id]
        if regions is None:
            row |= {"changed_outside_mask": None, "box_context_change": None}
        else:
            try:
                row |= context_change(original, np.asarray(loaded, np.uint8), *regions)
            except ValueError as error:
                raise DataFormatError(build / record.path, None, None, str(error)) from error
        rows.append(row)
    measured = [r for r in rows if r["changed_outside_mask"] is not None]
    summary: dict[str, Any] = {
        "images": len(rows),
        "sampled_from": len(items),
        "composite": dict(sorted(Counter(r["composite"] for r in rows).items())),
        "mask_dilation": dilation,
        "without_mask": len(rows) - len(measured),
        "changed_outside_mask": _stats([r["changed_outside_mask"] for r in measured]),
        "box_context_change": _stats(
            [r["box_context_change"] for r in measured if r["box_context_change"] is not None]
        ),
    }
    return ContextReport(summary, rows)


def write_context(folder: Path, report: ContextReport) -> Path:
    """Write the per-edit rows of ``report`` as ``folder/context_change.jsonl``."""
    path = folder / CONTEXT_FILE
    atomic_write_text(path, "".join(json.dumps(row) + "\n" for row in report.rows))
    return path
