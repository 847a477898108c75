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
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

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
    Face,
    FaceBank,
    FaceDetector,
    face_in_box,
    read_face_bank,
    swap_face,
)
from contrastkit.schema import Gender

if TYPE_CHECKING:
    from contrastkit.builders.genswap_config import GenSwapConfig

__all__ = ["SwapEntry", "swap_faces", "swap_id"]


class SwapEntry(TypedDict):
    """What a swap run did (the ``genswap`` entry of the build summary): the sources and
    their selection counts, those without a face in the person box, the swaps skipped
    (finished before) and made, the contrast set kept, the face bank and its counts,
    the youngest age a donor may have, the donor draw's seed."""

    sources: int
    selection: dict[str, int]
    no_face: int
    no_face_sources: list[str]
    skipped_finished: int
    swapped: int
    sources_kept: int
    images: int
    face_bank: str
    face_bank_counts: dict[str, int]
    min_age: int
    seed: int


def swap_id(source_id: str, gender: Gender) -> str:
    """The edit id of a swap: ``{source_id}-{M|F}swap``."""
    return f"{source_id}-{gender.short}swap"


def _build_folder(arguments: dict[str, Any]) -> Path:
    """The folder a swap run locks, from its arguments: the config's ``out``."""
    config: GenSwapConfig = arguments["config"]
    return config.out


@holds_build_lock("contrastkit build genswap", create=True, folder=_build_folder)
def swap_faces(
    config: GenSwapConfig,
    *,
    detector: FaceDetector | None = None,
    progress: Progress | None = None,
) -> SwapEntry:
    """Build a GenSwap contrast set: swap faces, then write the contrast set.

    The job that also runs the Sec. 4.3 quality checks is
    :func:`contrastkit.builders.genswap_job.build_genswap`.

    Args:
        config: the sources (``coco``, ``split``, ``limit``, ``min_box_side``:
            :func:`select_sources`; ``same_sources``: only the source ids of a GenSynth
            build, as the paper's GenSwap), the face bank (``faces``, ``min_age``), the
            build folder ``out``, the donor draw's ``seed`` and the blend ``feather``
            (:class:`~contrastkit.builders.genswap_job.GenSwapConfig`; its embedder,
            pool and model are not used here).
        detector: an MTCNN :class:`FaceDetector` (made on first use otherwise).
        progress: called with (finished sources, total).

    Returns:
        The summary, also stored under ``genswap`` in ``build_summary.json`` (the quality
        checks of an earlier run, ``quality``, are dropped: they described another set).
    """
    out = config.out
    ids = None
    if config.same_sources is not None:
        ids = sorted({int(item.source_id) for item in read_contrast_set(config.same_sources)})
    selection = select_sources(
        read_coco_cached(config.coco, out, config.split),  # parsed once, kept in the build
        min_box_side=config.min_box_side,
        limit=config.limit,
        image_ids=ids,
    )
    bank = read_face_bank(config.faces, min_age=config.min_age)
    out.mkdir(parents=True, exist_ok=True)
    remove_stale_temp_files(out)
    write_sources(out, selection.sources)
    manifest = Manifest(out)
    records = {r.edit_id: r for r in manifest.read() if (out / r.path).is_file()}
    if len(records) != len(manifest.read()):
        manifest.rewrite(records.values())
    skipped = sum(swap_id(s.source_id, g) in records for s in selection.sources
                  for g in Gender.binary())  # fmt: skip
    swapper = _FaceSwapper(config, bank, manifest, records, detector)
    no_face: list[str] = []
    for number, source in enumerate(selection.sources, start=1):
        todo = [g for g in Gender.binary() if swap_id(source.source_id, g) not in records]
        if todo and swapper.swap(source, todo) is None:
            no_face.append(source.source_id)
        if progress:
            progress(number, len(selection.sources))
    chosen = {
        s.source_id: {g: records[swap_id(s.source_id, g)] for g in Gender.binary()}
        for s in selection.sources
        if all(swap_id(s.source_id, g) in records for g in Gender.binary())
    }
    items = write_contrast_set(out, chosen, {s.source_id: s for s in selection.sources})
    summary: SwapEntry = {
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
        "min_age": config.min_age,
        "seed": config.seed,
    }
    update_summary(out, "genswap", summary, stale=("quality", "context"))
    return summary


@dataclass
class _FaceSwapper:
    """The swaps of one run: the config's seed and feather, the face bank, the manifest
    and its finished records (both added to as swaps are made), the face detector (made
    on first use) and the donor faces cut so far."""

    config: GenSwapConfig
    bank: FaceBank
    manifest: Manifest
    records: dict[str, EditRecord]
    detector: FaceDetector | None = None
    donors: dict[Path, Image.Image] = field(default_factory=dict)

    def _detect(self, image: Image.Image) -> list[Face]:
        if self.detector is None:
            self.detector = FaceDetector()
        return self.detector.detect(image)

    def _donor_face(self, path: Path) -> Image.Image:
        """The bank image cut to its most probable face (the whole image if none is found)."""
        if path not in self.donors:
            image = load_image(path)
            faces = self._detect(image)
            self.donors[path] = (
                image.crop(faces[0].int_box(image.width, image.height)) if faces else image
            )
        return self.donors[path]

    def swap(self, source: SourceImage, todo: Sequence[Gender]) -> Face | None:
        """Swap the face in ``source``'s person box for a donor of each gender of
        ``todo``, writing each swap and its manifest line; the face swapped, or ``None``
        when the box holds none."""
        seed, out = self.config.seed, self.config.out
        image = load_image(source.path)
        face = face_in_box(self._detect(image), source.box.xyxy(image.width, image.height))
        if face is None:
            return None
        box = face.int_box(image.width, image.height)
        for gender in todo:
            faces = self.bank.faces[gender]
            donor = random.Random(f"{seed}:{source.source_id}:{gender.value}").choice(faces)
            swapped = swap_face(
                image, box, self._donor_face(donor.path), feather=self.config.feather
            )
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
                editor=f"facenet-pytorch MTCNN + face bank {self.bank.path}",
                donor=str(donor.path),
                accepted=True,
            )
            self.manifest.append(record)
            self.records[record.edit_id] = record
        return face
