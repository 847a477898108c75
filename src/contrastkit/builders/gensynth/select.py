"""GenSynth stage 3: one accepted edit per gender and source (Sec. 4.2), the contrast set
with gender-adjusted captions (Sec. 4.3), and the image sets its quality checks score."""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import TypedDict

from typing_extensions import NotRequired

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.gensynth.merging import clean_after_kill
from contrastkit.builders.gensynth.summary import update_summary
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    MANIFEST,
    EditImage,
    EditRecord,
    Manifest,
    edit_image,
    holds_build_lock,
    read_contrast_set,
    read_sources,
    source_file,
    write_contrast_set,
)
from contrastkit.curation.knn_filter import select_edits
from contrastkit.errors import DataFormatError, StateError
from contrastkit.gender_words import to_gender
from contrastkit.schema import Gender

__all__ = ["LabeledImages", "SelectEntry", "quality_sets", "run_select_stage"]


class SelectEntry(TypedDict):
    """What the select stage did (the ``select`` entry of the build summary):
    ``left_out_empty_mask`` only for a build with edits confined to the person mask."""

    seed: int
    sources_with_edits: int
    sources_kept: int
    images: int
    source_keep_rate: float
    kept_by_source_label: dict[str, int]
    left_out_empty_mask: NotRequired[int]


@holds_build_lock("contrastkit build gensynth")
def run_select_stage(out: str | Path, *, seed: int = 0) -> SelectEntry:
    """Keep the sources with an accepted edit of each gender, draw one per gender (seeded
    per source) and write ``contrast_set.jsonl`` with gender-adjusted captions. A source
    whose edits are confined to a person mask that covers no pixel is left out (counted
    as ``left_out_empty_mask``): those edits are the photo itself.

    The quality checks of an earlier selection (``quality`` in the build summary) are
    dropped: they described another contrast set.

    Returns:
        The select summary (also stored under ``select`` in ``build_summary.json``).

    Raises:
        StateError: the build has no finished edits, or edits without a filter decision
            (run the edit and filter stages first).
    """
    out = Path(out)
    clean_after_kill(out, "run the select stage")
    manifest = Manifest(out)
    # pass 1: only what the draw needs, so memory does not grow with whole records
    source_ids: list[str] = []
    targets: list[str] = []
    accepted: list[bool] = []
    unscored: list[str] = []
    masked: set[str] = set()  # sources with edits confined to the person mask
    for record in manifest.records():
        if record.accepted is None:
            unscored.append(record.edit_id)
        source_ids.append(record.source_id)
        targets.append(record.target)
        accepted.append(bool(record.accepted))
        if record.composite == "mask":
            masked.add(record.source_id)
    if not source_ids:
        raise StateError(f"{out / MANIFEST}: no finished edits (run the edit stage first)")
    if unscored:
        raise StateError(
            f"{out / MANIFEST}: {len(unscored)} edits have no filter decision (e.g. "
            f"{unscored[0]}): run the filter stage first"
        )
    sources = {s.source_id: s for s in read_sources(out)}
    empty = _empty_masks(out, masked, sources)  # their edits are the photo itself
    if empty:
        accepted = [ok and s not in empty for ok, s in zip(accepted, source_ids, strict=True)]
    picks = select_edits(source_ids, targets, accepted, seed=seed)
    # pass 2: the chosen records themselves (two per kept source)
    wanted = {i: (s, g) for s, per in picks.items() for g, i in per.items()}
    chosen: dict[str, dict[Gender, EditRecord]] = {s: {} for s in picks}
    for index, record in enumerate(manifest.records()):
        if index in wanted:
            source_id, gender = wanted[index]
            chosen[source_id][gender] = record
    items = write_contrast_set(out, chosen, sources)
    sources_with_edits = len(set(source_ids))
    summary: SelectEntry = {
        "seed": seed,
        "sources_with_edits": sources_with_edits,
        "sources_kept": len(chosen),
        "images": len(items),
        "source_keep_rate": len(chosen) / sources_with_edits,
        "kept_by_source_label": dict(Counter(sources[s].label.value for s in chosen)),
    }
    if masked:
        summary["left_out_empty_mask"] = len(empty)
    update_summary(out, "select", summary, stale=("quality", "context"))
    return summary


def _empty_masks(out: Path, masked: set[str], sources: dict[str, SourceImage]) -> set[str]:
    """The sources among ``masked`` whose recorded person segmentation covers no pixel
    (:func:`~contrastkit.curation.masks.segmentation_area`): an edit confined to it is
    the photo itself, so they are left out of the selection (the edit stage no longer
    edits them; a folder edited before that may hold some)."""
    from contrastkit.curation.masks import segmentation_area

    empty = set()
    for source_id in sorted(masked):
        source = sources.get(source_id)
        if source is None or source.segmentation is None:
            continue
        try:
            area = segmentation_area(source.segmentation, source.width, source.height)
        except ValueError as error:
            path = out / "sources.jsonl"
            raise DataFormatError(path, None, "segmentation", f"{source_id}: {error}") from error
        if area == 0:
            empty.add(source_id)
    return empty


@dataclass(frozen=True)
class LabeledImages:
    """Images with a perceived-gender label and captions each: what the Sec. 4.3 quality
    checks score (the evaluators' ``quality_report`` reads these three
    fields).

    Attributes:
        images: image files, or :class:`~contrastkit.builders.manifest.EditImage` for
            edits confined to the person mask (put onto their source photo when read).
        genders: the label of each image (a source's caption label, an edit's target).
        captions: the captions describing each image.
    """

    images: tuple[Path | EditImage, ...]
    genders: tuple[Gender, ...]
    captions: tuple[tuple[str, ...], ...]
    population: int | None = None
    """How many images the set has before sampling (``None``: these are all of them)."""

    @property
    def total(self) -> int:
        """The size of the whole set these images were drawn from."""
        return len(self.images) if self.population is None else self.population

    def sample(self, size: int | None, seed: int = 0) -> LabeledImages:
        """At most ``size`` of the images, drawn without replacement with ``seed`` and
        kept in their order (``self`` when ``size`` is ``None`` or not smaller): bounds
        the work of the checks on a paper-scale build (184k edits)."""
        keep = sample_rows(len(self.images), size, seed)
        if keep is None:
            return self
        return LabeledImages(
            tuple(self.images[i] for i in keep),
            tuple(self.genders[i] for i in keep),
            tuple(self.captions[i] for i in keep),
            self.total,
        )


def sample_rows(count: int, size: int | None, seed: int) -> list[int] | None:
    """The rows :meth:`LabeledImages.sample` keeps of ``count``: ``size`` of them drawn
    without replacement with ``seed``, in order (``None``: all rows)."""
    if size is None or size >= count:
        return None
    return sorted(random.Random(seed).sample(range(count), size))


def quality_sets(
    out: str | Path, *, sample: int | None = None, seed: int = 0
) -> dict[str, LabeledImages]:
    """The image sets of a GenSynth or GenSwap build folder that Tab. 2 scores:

    * ``contrast_set``: the selected edits with their gender-adjusted captions (Tab. 2's
      GenSynth / GenSwap rows), once ``contrast_set.jsonl`` exists;
    * ``original``: the source images of all edited sources with their own captions and
      caption labels ("Original");
    * ``all_edits``: every edit in the manifest before selection ("unfilt.").

    With ``sample``, each set holds at most ``sample`` images drawn with ``seed``
    (:meth:`LabeledImages.sample`; its ``total`` is the size before sampling). The
    manifest is streamed twice and only the sampled edits are materialized, so memory
    stays bounded by ``sample`` and the number of sources, not by the 184k edits of a
    paper-scale build.

    Raises:
        DataFormatError: the manifest names a source that ``sources.jsonl`` lacks.
    """
    out = Path(out)
    manifest = Manifest(out)
    sources = {s.source_id: s for s in read_sources(out)}
    edited: dict[str, None] = {}
    masked: set[str] = set()  # edits confined to the person mask: read onto their source
    count = 0
    for record in manifest.records():
        if record.source_id not in sources:
            message = f"no source {record.source_id!r}"
            raise DataFormatError(out / "sources.jsonl", None, None, message)
        edited[record.source_id] = None
        if record.composite == "mask":
            masked.add(record.edit_id)
        count += 1
    sets: dict[str, LabeledImages] = {}
    contrast = out / CONTRAST_SET
    items = read_contrast_set(contrast) if contrast.exists() else []
    if items:
        sets["contrast_set"] = LabeledImages(
            tuple(
                EditImage(out / i.image, source_file(out, sources[i.source_id].path))
                if i.edit_id in masked
                else out / i.image
                for i in items
            ),
            tuple(Gender(i.gender) for i in items),
            tuple(tuple(i.captions) for i in items),
        ).sample(sample, seed)
    if edited:
        sets["original"] = LabeledImages(
            tuple(sources[s].path for s in edited),
            tuple(sources[s].label for s in edited),
            tuple(tuple(sources[s].captions) for s in edited),
        ).sample(sample, seed)
        keep = sample_rows(count, sample, seed)
        rows = None if keep is None else set(keep)
        picked = [r for i, r in enumerate(manifest.records()) if rows is None or i in rows]
        sets["all_edits"] = LabeledImages(
            tuple(edit_image(out, r, sources[r.source_id]) for r in picked),
            tuple(Gender(r.target) for r in picked),
            tuple(
                tuple(to_gender(c, Gender(r.target)) for c in sources[r.source_id].captions)
                for r in picked
            ),
            count,
        )
    return sets
