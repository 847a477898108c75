"""GenSwap: the face-swap baseline of GenSynth (seeds/001, Sec. 4.3, Appendix A.2).

For each COCO source (:func:`contrastkit.builders.coco.select_sources`; optionally the
same source ids as a GenSynth build, as in the paper), the face inside the person box is
found with MTCNN and replaced, once per target gender, by a face of that gender drawn at
random (seeded per source and gender) from the user's labelled face bank, adults only
(:func:`contrastkit.curation.faces.read_face_bank`). The build folder has the same shape
as a GenSynth build (:mod:`contrastkit.builders.manifest`): ``manifest.jsonl`` (method
``genswap``, the donor face in ``donor``; no filter, every swap is accepted),
``edits/``, ``contrast_set.jsonl`` and ``build_summary.json``. Reruns skip finished
swaps.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from PIL import Image

from contrastkit.builders.coco import SourceImage, read_coco_cached, select_sources
from contrastkit.builders.gensynth import Progress, load_image, update_summary
from contrastkit.builders.manifest import (
    EditRecord,
    Manifest,
    holds_build_lock,
    read_contrast_set,
    remove_stale_temp_files,
    write_contrast_set,
    write_image,
    write_sources,
)
from contrastkit.curation.faces import (
    DEFAULT_MIN_AGE,
    BankFace,
    Face,
    FaceDetector,
    face_in_box,
    read_face_bank,
    swap_face,
)
from contrastkit.schema import Gender

__all__ = ["swap_faces", "swap_id"]


def swap_id(source_id: str, gender: Gender) -> str:
    """The edit id of a swap: ``{source_id}-{M|F}swap``."""
    return f"{source_id}-{gender.short}swap"


@holds_build_lock("contrastkit build genswap", create=True)
def swap_faces(
    coco_dir: str | Path,
    faces: str | Path,
    out: str | Path,
    *,
    split: str | None = None,
    limit: int | None = None,
    min_box_side: float = 0.0,
    seed: int = 0,
    same_sources: str | Path | None = None,
    min_age: int = DEFAULT_MIN_AGE,
    feather: float = 0.3,
    detector: FaceDetector | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Build a GenSwap contrast set: swap faces, then write the contrast set.

    The job that also runs the Sec. 4.3 quality checks is
    :func:`contrastkit.builders.genswap_job.build_genswap`.

    Args:
        coco_dir, split, limit, min_box_side: the sources (:func:`select_sources`).
        faces: the face bank table (``file``, ``gender``, ``age``).
        out: the build folder.
        seed: seeds the donor draw, per source and gender.
        same_sources: a GenSynth build folder (or its ``contrast_set.jsonl``): use only
            its source ids (the paper's GenSwap uses the GenSynth sources).
        min_age: youngest age a bank face may have (the paper: older than 19).
        feather: blend ramp of the ellipse, as a fraction of its radius.
        detector: an MTCNN :class:`FaceDetector` (made on first use otherwise).
        progress: called with (finished sources, total).

    Returns:
        The summary, also stored under ``genswap`` in ``build_summary.json`` (the quality
        checks of an earlier run, ``quality``, are dropped: they described another set).
    """
    out = Path(out)
    ids = None
    if same_sources is not None:
        ids = sorted({int(item.source_id) for item in read_contrast_set(same_sources)})
    selection = select_sources(
        read_coco_cached(coco_dir, out, split),  # parsed once, kept in the build folder
        min_box_side=min_box_side,
        limit=limit,
        image_ids=ids,
    )
    bank = read_face_bank(faces, min_age=min_age)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(out)
    write_sources(out, selection.sources)
    manifest = Manifest(out)
    records = {r.edit_id: r for r in manifest.read() if (out / r.path).is_file()}
    if len(records) != len(manifest.read()):
        manifest.rewrite(records.values())
    skipped = sum(swap_id(s.source_id, g) in records for s in selection.sources
                  for g in Gender.binary())  # fmt: skip
    donors: dict[Path, Image.Image] = {}
    no_face: list[str] = []
    for number, source in enumerate(selection.sources, start=1):
        todo = [g for g in Gender.binary() if swap_id(source.source_id, g) not in records]
        if todo:
            detector = detector or FaceDetector()
            face = _swap_source(out, source, todo, bank.faces, detector, donors, seed, feather,
                                manifest, records, bank.path)  # fmt: skip
            if face is None:
                no_face.append(source.source_id)
        if progress:
            progress(number, len(selection.sources))
    chosen = {
        s.source_id: {g: records[swap_id(s.source_id, g)] for g in Gender.binary()}
        for s in selection.sources
        if all(swap_id(s.source_id, g) in records for g in Gender.binary())
    }
    items = write_contrast_set(out, chosen, {s.source_id: s for s in selection.sources})
    summary = {
        "sources": len(selection.sources),
        "selection": selection.counts,
        "no_face": len(no_face),
        "no_face_sources": no_face,
        "skipped_finished": skipped,
        "swapped": len(records) - skipped,
        "sources_kept": len(chosen),
        "images": len(items),
        "face_bank": str(bank.path),
        "face_bank_counts": bank.counts(),
        "min_age": min_age,
        "seed": seed,
    }
    update_summary(out, "genswap", summary, stale=("quality", "context"))
    return summary


def _donor_face(path: Path, detector: FaceDetector, donors: dict[Path, Image.Image]) -> Image.Image:
    """The bank image cut to its most probable face (the whole image if none is found)."""
    if path not in donors:
        image = load_image(path)
        faces = detector.detect(image)
        donors[path] = image.crop(faces[0].int_box(image.width, image.height)) if faces else image
    return donors[path]


def _swap_source(
    out: Path,
    source: SourceImage,
    todo: Sequence[Gender],
    bank: dict[Gender, list[BankFace]],
    detector: FaceDetector,
    donors: dict[Path, Image.Image],
    seed: int,
    feather: float,
    manifest: Manifest,
    records: dict[str, EditRecord],
    bank_path: Path,
) -> Face | None:
    image = load_image(source.path)
    face = face_in_box(detector.detect(image), source.box.xyxy(image.width, image.height))
    if face is None:
        return None
    box = face.int_box(image.width, image.height)
    for gender in todo:
        donor = random.Random(f"{seed}:{source.source_id}:{gender.value}").choice(bank[gender])
        swapped = swap_face(image, box, _donor_face(donor.path, detector, donors), feather=feather)
        relative = f"edits/{source.source_id}/{swap_id(source.source_id, gender)}.png"
        write_image(out / relative, swapped)
        record = EditRecord(
            edit_id=swap_id(source.source_id, gender),
            source_id=source.source_id,
            method="genswap",
            target=gender.value,
            source_label=source.label.value,
            box=source.box.as_list(),
            seed=seed,
            path=relative,
            editor=f"facenet-pytorch MTCNN + face bank {bank_path}",
            donor=str(donor.path),
            accepted=True,
        )
        manifest.append(record)
        records[record.edit_id] = record
    return face
