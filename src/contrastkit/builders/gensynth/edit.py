"""GenSynth stage 1: edit the person of every selected COCO source (Sec. 4.1, App. A.2)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from PIL import Image

from contrastkit.builders.coco import SourceImage, read_coco_cached, select_sources
from contrastkit.builders.gensynth.summary import Progress, load_image, update_summary
from contrastkit.builders.manifest import (
    EditRecord,
    Manifest,
    holds_build_lock,
    remove_stale_temp_files,
    write_image,
    write_sources,
)
from contrastkit.curation.editing import (
    CropPlacement,
    Editor,
    EditSettings,
    EditSpec,
    crop_for_editing,
    paste_back,
    plan_edits,
)
from contrastkit.errors import ConfigError

__all__ = ["EditStageReport", "run_edit_stage"]


@dataclass(frozen=True)
class EditStageReport:
    """What an edit run did: sources, planned edits, skipped (already finished), edited."""

    sources: int
    planned: int
    skipped_finished: int
    edited: int
    removed_temp_files: int
    selection: dict[str, int]
    settings: dict[str, Any]
    editor: str


@holds_build_lock("contrastkit build gensynth", create=True)
def run_edit_stage(
    coco_dir: str | Path,
    out: str | Path,
    editor: Editor,
    settings: EditSettings,
    *,
    split: str | None = None,
    limit: int | None = None,
    min_box_side: float = 0.0,
    edits_per_call: int = 16,
    progress: Progress | None = None,
) -> EditStageReport:
    """Edit the person of every selected COCO source (GenSynth Sec. 4.1, App. A.2).

    Each finished edit is written (``edits/<source>/<edit>.png``, temporary file and
    rename) and then appended to the manifest with an fsync; edits already in the
    manifest with their image on disk are skipped, so a killed run resumes where it
    stopped and never repeats a finished edit.

    Args:
        coco_dir, split, limit, min_box_side: the sources (:func:`select_sources`).
        out: the build folder.
        editor: an :class:`~contrastkit.curation.editing.Editor` (InstructPix2Pix).
        settings: instructions, scales, steps, resolution, seed ...
        edits_per_call: how many pending edits go to the editor at once (the editor
            batches those that share guidance settings).
        progress: called with (finished, total) after each edit.
    """
    if edits_per_call < 1:
        raise ConfigError(f"edits_per_call must be >= 1, not {edits_per_call}")
    out = Path(out)
    coco = read_coco_cached(coco_dir, out, split)  # parsed once, kept in the build folder
    selection = select_sources(coco, min_box_side=min_box_side, limit=limit)
    out.mkdir(parents=True, exist_ok=True)
    removed = remove_stale_temp_files(out)
    write_sources(out, selection.sources)
    manifest = Manifest(out)
    records = manifest.read()
    kept = [r for r in records if (out / r.path).is_file()]
    if len(kept) != len(records):
        manifest.rewrite(kept)  # an image went missing: that edit is to be redone
    done = {r.edit_id for r in kept}
    planned = [(s, spec) for s in selection.sources for spec in plan_edits(s.source_id, settings)]
    pending = [(s, spec) for s, spec in planned if spec.edit_id not in done]
    total, finished = len(planned), len(planned) - len(pending)
    if progress:
        progress(finished, total)
    cache: dict[str, tuple[Image.Image, Image.Image, CropPlacement]] = {}
    for start in range(0, len(pending), edits_per_call):
        window = pending[start : start + edits_per_call]
        in_window = {source.source_id for source, _ in window}
        cache = {key: value for key, value in cache.items() if key in in_window}
        for source, _ in window:
            if source.source_id not in cache:
                original = load_image(source.path)
                crop, placement = crop_for_editing(
                    original,
                    source.box.xyxy(original.width, original.height),
                    settings.resolution,
                    settings.margin,
                )
                cache[source.source_id] = (original, crop, placement)
        inputs = [cache[source.source_id][1] for source, _ in window]
        edited = editor.edit(inputs, [spec for _, spec in window])
        for (source, spec), result in zip(window, edited, strict=True):
            original, _, placement = cache[source.source_id]
            relative = f"edits/{source.source_id}/{spec.edit_id}.png"
            write_image(out / relative, paste_back(original, result, placement, settings.feather))
            manifest.append(_record(source, spec, relative, editor.name))
            finished += 1
            if progress:
                progress(finished, total)
    report = EditStageReport(
        sources=len(selection.sources),
        planned=total,
        skipped_finished=total - len(pending),
        edited=len(pending),
        removed_temp_files=removed,
        selection=selection.counts,
        settings=settings.to_json(),
        editor=editor.name,
    )
    update_summary(out, "edit", asdict(report))
    return report


def _record(source: SourceImage, spec: EditSpec, path: str, editor: str) -> EditRecord:
    return EditRecord(
        edit_id=spec.edit_id,
        source_id=source.source_id,
        method="instruct-pix2pix",
        target=spec.target.value,
        source_label=source.label.value,
        box=source.box.as_list(),
        seed=spec.seed,
        path=path,
        editor=editor,
        instruction=spec.instruction,
        text_guidance_scale=spec.text_guidance_scale,
        image_guidance_scale=spec.image_guidance_scale,
        steps=spec.steps,
    )
