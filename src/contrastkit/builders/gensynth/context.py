"""How much context a build's edits repaint: measured on its contrast set, never assumed.

For every image of the contrast set, against its decoded source photo (checked against
the hash the build recorded) and the source's COCO person segmentation dilated as the
build's ``mask_dilation`` says (:mod:`contrastkit.curation.masks`):

* ``changed_outside_mask``: the share of the pixels outside the dilated person mask that
  differ from the source's (any channel, by any amount). With a lossy codec this counts
  the codec's own noise too: a default box build (lossy WebP) is near 1 whatever the
  editor did, so it is kept for comparison only;
* ``changed_beyond_noise``: the share of those pixels that differ by more than the
  image's codec noise (:mod:`contrastkit.curation.codec_noise`: the source photo encoded
  with the image's codec at the build's quality; 0 for lossless images, where every
  difference counts): with ``--composite box`` (the paper's method) the person box's
  context the editor repainted, with ``--composite mask`` 0 by construction;
* ``changed_kept_pixels``: how many pixels the composite keeps from the source (outside
  the person box for ``box``, outside the dilated mask for ``mask``; a lossy image from a
  macroblock beyond) differ beyond that noise: 0 when the build keeps its promise, and a
  real change there (a leak, an export altered afterwards) is counted pixel by pixel;
* ``box_context_change``: the mean absolute change (0-255, over channels) of the pixels
  inside the person box but outside the dilated mask: the desk, the wall, the patient.

:func:`measure_context` reads the build's own files (a mask edit is put onto its decoded
source, as exported; a box edit is the stored file): the build's quality checks store
the summary under ``context`` in ``build_summary.json`` and one line per edit in
``context_change.jsonl`` (:func:`write_context`). ``contrastkit audit EXPORT --build``
measures the export's images instead, after checking that the export is this build's
(:mod:`contrastkit.builders.gensynth.export_context`). A source recorded without its
segmentation (a build made before segmentations were recorded) takes it from the COCO
folder the build recorded, or ``coco``.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

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
    source_file,
)
from contrastkit.builders.source_photos import check_photo
from contrastkit.curation.codec_noise import Codec
from contrastkit.curation.editing import DEFAULT_MASK_DILATION
from contrastkit.curation.masks import ContextChange
from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text

__all__ = [
    "CONTEXT",
    "CONTEXT_FILE",
    "NOISE_MEASURE",
    "ContextReport",
    "ContextRow",
    "ContextSummary",
    "context_line",
    "measure_context",
    "write_context",
]

#: The build summary's entry with the context measure.
CONTEXT = "context"
#: One line per measured edit.
CONTEXT_FILE = "context_change.jsonl"


class ContextRow(TypedDict):
    """One measured image, a line of ``context_change.jsonl`` (module docstring); the
    figures are ``None`` for a source without a segmentation."""

    edit_id: str
    source_id: str
    gender: str
    composite: str
    #: the codecs whose noise the image carries, ``"<codec> read from <codec>"``
    codec: str
    changed_outside_mask: float | None
    changed_beyond_noise: float | None
    changed_kept_pixels: int | None
    box_context_change: float | None
    noise_threshold: int | None


class ContextStats(TypedDict):
    """The mean and the largest value of a figure over the measured images."""

    mean: float
    max: float


class KeptPixels(TypedDict):
    """The kept pixels that changed beyond the codec's noise, and in how many images."""

    pixels: int
    images: int


class NoiseSummary(TypedDict):
    """How the codec's noise was told from a change, and what it came to."""

    measure: str
    codecs: dict[str, int]
    threshold_max: int | None
    margin: float
    block: int
    without_threshold: int


class ContextSummary(TypedDict):
    """The summary of a context measure, stored under ``context`` in the build summary."""

    images: int
    sampled_from: int
    composite: dict[str, int]
    mask_dilation: float
    without_mask: int
    changed_outside_mask: ContextStats | None
    changed_beyond_noise: ContextStats | None
    changed_kept_pixels: KeptPixels | None
    box_context_change: ContextStats | None
    noise: NoiseSummary


@dataclass(frozen=True)
class ContextReport:
    """The context measure of a build: ``summary`` (JSON-ready) and one row per edit."""

    summary: ContextSummary
    rows: list[ContextRow]


def _stats(values: list[float]) -> ContextStats | None:
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


class ContextMeasurer:
    """Measures images one after another against the sources of a build: its photos
    (the last one decoded is kept), their dilated person masks and the codec noise of
    each photo (cached)."""

    def __init__(self, build: Path, coco: Path | None) -> None:
        from contrastkit.builders.manifest import DEFAULT_IMAGE_QUALITY

        self.build = build
        self.sources = {s.source_id: s for s in read_sources(build)}
        summary = read_summary(build)
        edit_settings = (summary.get("edit") or {}).get("settings") or {}
        self.dilation = float(edit_settings.get("mask_dilation", DEFAULT_MASK_DILATION))
        settings = summary.get("settings") or {}
        quality = settings.get("image_quality")
        self.quality = int(quality) if isinstance(quality, int) else DEFAULT_IMAGE_QUALITY
        stored = str(settings.get("image_format") or "webp")
        #: how the build stored its box edits: their pixels carry this codec's noise in
        #: whatever container they are read from later
        self.stored = Codec(stored, lossless=stored == "png", quality=self.quality)
        self.from_coco = _coco_segmentations(build, self.sources, coco)
        self._photo: tuple[str, np.ndarray] | None = None
        self._masks: dict[str, tuple[np.ndarray, tuple[int, int, int, int]] | None] = {}
        self._noise: dict[tuple[str, Codec], int | None] = {}

    def source(self, source_id: str, where: Path, edit_id: str) -> SourceImage:
        found = self.sources.get(source_id)
        if found is None:
            raise DataFormatError(
                where, None, "source_id", f"the source {source_id} of edit {edit_id} is not "
                f"in the build's sources ({self.build})",
            )  # fmt: skip
        return found

    def photo(self, source: SourceImage) -> np.ndarray:
        """The decoded photo of ``source``, checked against the hash the build recorded."""
        if self._photo is None or self._photo[0] != source.source_id:
            file = source_file(self.build, source.path)
            check_photo(file, source)
            self._photo = (source.source_id, np.asarray(load_image(file), dtype=np.uint8))
        return self._photo[1]

    def mask(
        self, source: SourceImage, width: int, height: int
    ) -> tuple[np.ndarray, tuple[int, int, int, int]] | None:
        """The dilated person mask of ``source`` and its box, ``None`` without a
        segmentation."""
        from contrastkit.curation.masks import decode_segmentation, dilate, dilation_pixels

        if source.source_id not in self._masks:
            segmentation = source.segmentation or self.from_coco.get(source.source_id)
            if segmentation is None:
                self._masks[source.source_id] = None
            else:
                try:
                    person = decode_segmentation(segmentation, width, height)
                except ValueError as error:
                    raise DataFormatError(source.path, None, "segmentation", str(error)) from error
                box = source.box.xyxy(width, height)
                grown = dilate(person, dilation_pixels(box, self.dilation))
                self._masks[source.source_id] = (grown, box)
        return self._masks[source.source_id]

    def codecs(self, item: MeasuredItem, codec: Codec) -> list[Codec]:
        """The codecs whose noise an image read in ``codec`` carries: a box edit's
        pixels went through the build's storage first (a lossy edit read back from a
        lossless file keeps that noise), a mask edit's pixels outside the person are
        the source's own."""
        if item.composite == "mask" or codec == self.stored:
            return [codec]
        return [self.stored, codec]

    def threshold(self, source: SourceImage, codecs: list[Codec], region: np.ndarray) -> int | None:
        """The largest codec noise among ``codecs`` on ``source`` (cached)."""
        from contrastkit.curation.codec_noise import noise_threshold

        found: list[int] = []
        for codec in codecs:
            key = (source.source_id, codec)
            if key not in self._noise:
                self._noise[key] = noise_threshold(self.photo(source), codec, region)
            value = self._noise[key]
            if value is None:
                return None
            found.append(value)
        return max(found)

    def measure(self, item: MeasuredItem, image: np.ndarray, codec: Codec) -> ContextRow:
        """The row of one image (:func:`measure_context`)."""
        from contrastkit.curation.codec_noise import BLOCK
        from contrastkit.curation.masks import ContextRegions, context_change, dilate

        source = self.source(item.source_id, item.where, item.edit_id)
        original = self.photo(source)
        height, width = original.shape[:2]
        codecs = self.codecs(item, codec)
        found = self.mask(source, width, height)
        if found is None:
            return _row(item, codecs, _NO_MEASURES)
        grown, box = found
        band = 0 if all(c.lossless for c in codecs) else BLOCK
        if item.composite == "mask":
            kept = ~(dilate(grown, band) if band else grown)
        else:
            kept = np.ones_like(grown)
            left, top = max(box[0] - band, 0), max(box[1] - band, 0)
            kept[top : box[3] + band, left : box[2] + band] = False
        in_box = np.zeros_like(grown)
        in_box[box[1] : box[3], box[0] : box[2]] = True
        threshold = self.threshold(source, codecs, ~grown)
        regions = ContextRegions(outside=~grown, box_context=in_box & ~grown, kept=kept)
        try:
            return _row(item, codecs, context_change(original, image, regions, threshold))
        except ValueError as error:
            raise DataFormatError(item.where, None, None, str(error)) from error


class _Measures(TypedDict):
    """The figures of a row that need the person's segmentation."""

    changed_outside_mask: float | None
    changed_beyond_noise: float | None
    changed_kept_pixels: int | None
    box_context_change: float | None
    noise_threshold: int | None


_NO_MEASURES: _Measures = {
    "changed_outside_mask": None,
    "changed_beyond_noise": None,
    "changed_kept_pixels": None,
    "box_context_change": None,
    "noise_threshold": None,
}


def _row(
    item: MeasuredItem, codecs: list[Codec], measures: _Measures | ContextChange
) -> ContextRow:
    """The row of ``item`` read in ``codecs`` with its ``measures``."""
    return {
        "edit_id": item.edit_id,
        "source_id": item.source_id,
        "gender": item.gender,
        "composite": item.composite,
        "codec": " read from ".join(c.describe() for c in codecs),
        **measures,
    }


@dataclass(frozen=True)
class MeasuredItem:
    """What a row of the measure is about, and where it was read."""

    edit_id: str
    source_id: str
    gender: str
    composite: str
    where: Path


def measure_context(
    build: str | Path,
    *,
    sample: int | None = None,
    seed: int = 0,
    coco: str | Path | None = None,
) -> ContextReport:
    """Measure the context each contrast-set image of ``build`` changed (module
    docstring), on the build's own files; with ``sample``, at most that many images
    drawn with ``seed`` (the rows the quality checks sample).

    Raises:
        DataFormatError: no contrast set; an image or source photo that is missing or
            unreadable, or of another size than its source.
    """
    from contrastkit.curation.codec_noise import Codec, stored_codec

    build = Path(build)
    items = read_contrast_set(build / CONTRAST_SET)
    keep = sample_rows(len(items), sample, seed)
    chosen = items if keep is None else [items[i] for i in keep]
    wanted = {item.edit_id for item in chosen}
    records: dict[str, EditRecord] = {
        r.edit_id: r for r in Manifest(build).records() if r.edit_id in wanted
    }
    measurer = ContextMeasurer(build, None if coco is None else Path(coco))
    rows: list[ContextRow] = []
    for item in chosen:
        record = records.get(item.edit_id)
        if record is None or item.source_id not in measurer.sources:
            raise DataFormatError(
                build / CONTRAST_SET, None, "edit_id",
                f"edit {item.edit_id} or its source {item.source_id} is not in the build",
            )  # fmt: skip
        source = measurer.sources[item.source_id]
        image = edit_image(build, record, source)
        if isinstance(image, Path):  # a box edit: the stored file, as exported
            data = image.read_bytes()
            codec = stored_codec(data, measurer.quality)
            loaded = np.asarray(load_image(image), dtype=np.uint8)
        else:  # a mask edit: put onto its decoded source, exported as lossless WebP
            codec = Codec("webp", lossless=True)
            loaded = np.asarray(image(), dtype=np.uint8)
        where = build / record.path
        composite = record.composite or "box"
        measured = MeasuredItem(item.edit_id, item.source_id, item.gender, composite, where)
        rows.append(measurer.measure(measured, loaded, codec))
    return ContextReport(context_summary(rows, len(items), measurer.dilation), rows)


#: How the context measure separates a codec's own noise from a change (the reports
#: state it beside the figures).
NOISE_MEASURE = (
    "a pixel counts as changed beyond the codec's noise when a channel differs from the "
    "source photo's by more than {margin:g} x the largest difference that encoding the "
    "source photo itself with the image's codec (the build's format and quality) makes; "
    "for a lossless image (PNG, lossless WebP) every difference counts"
)


def context_summary(rows: list[ContextRow], sampled_from: int, dilation: float) -> ContextSummary:
    """The summary of the rows of :func:`measure_context` or :func:`measure_export`."""
    from contrastkit.curation.codec_noise import BLOCK, NOISE_MARGIN

    measured = [r for r in rows if r["changed_outside_mask"] is not None]
    known = [r for r in measured if r["noise_threshold"] is not None]
    # a row with a noise threshold has every figure (masks.context_change)
    thresholds = [t for r in known if (t := r["noise_threshold"]) is not None]
    outside = [f for r in measured if (f := r["changed_outside_mask"]) is not None]
    beyond = [f for r in known if (f := r["changed_beyond_noise"]) is not None]
    kept = [n for r in known if (n := r["changed_kept_pixels"]) is not None]
    kept_pixels: KeptPixels | None = (
        {"pixels": sum(kept), "images": sum(1 for v in kept if v)} if known else None
    )
    return {
        "images": len(rows),
        "sampled_from": sampled_from,
        "composite": dict(sorted(Counter(r["composite"] for r in rows).items())),
        "mask_dilation": dilation,
        "without_mask": len(rows) - len(measured),
        "changed_outside_mask": _stats(outside),
        "changed_beyond_noise": _stats(beyond),
        "changed_kept_pixels": kept_pixels,
        "box_context_change": _stats(
            [f for r in measured if (f := r["box_context_change"]) is not None]
        ),
        "noise": {
            "measure": NOISE_MEASURE.format(margin=NOISE_MARGIN),
            "codecs": dict(sorted(Counter(str(r["codec"]) for r in measured).items())),
            "threshold_max": max(thresholds) if thresholds else None,
            "margin": NOISE_MARGIN,
            "block": BLOCK,
            "without_threshold": len(measured) - len(known),
        },
    }  # fmt: skip


def context_line(context: Mapping[str, Any], stale: str = "") -> str:
    """The context measure's summary in one console line: the share beyond the codec's
    noise first, the pixels the composite keeps that changed, then the share that
    differs at all (codec noise included)."""
    from contrastkit.text import UNDEFINED

    def share(name: str) -> str:
        value = context.get(name)
        return f"{100 * value['mean']:.2f}%" if value else UNDEFINED

    composites = ", ".join(f"{n} {name}" for name, n in context.get("composite", {}).items())
    kept = context.get("changed_kept_pixels")
    in_box = context.get("box_context_change")
    on = context.get("measured_on")
    where = f" (measured on the {on})" if on else ""
    return (
        f"context{stale}{where}: {share('changed_beyond_noise')} of the pixels outside the "
        f"person mask changed beyond the codec's noise (mean; "
        f"{share('changed_outside_mask')} differ at all, codec noise included); "
        + (f"{kept['pixels']} pixels the composite keeps from the source changed; "
           if kept else f"kept pixels: {UNDEFINED} (no codec noise measured); ")
        + f"mean change inside the box, outside the person: "
        f"{UNDEFINED if not in_box else format(in_box['mean'], '.2f')} (0-255); "
        f"{context['images']} images ({composites})"
    )  # fmt: skip


def write_context(folder: Path, report: ContextReport) -> Path:
    """Write the per-edit rows of ``report`` as ``folder/context_change.jsonl``."""
    path = folder / CONTEXT_FILE
    atomic_write_text(path, "".join(json.dumps(row) + "\n" for row in report.rows))
    return path
