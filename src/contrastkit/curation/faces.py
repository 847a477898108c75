"""Faces for the GenSwap baseline: MTCNN detection, a labelled face bank, blended swaps.

GenSynth (seeds/001) Sec. 4.3 and Appendix A.2, GENSWAP: "We use the MTCNN face detector
(Zhang et al., 2016) to detect faces in the COCO images ... and replace them with faces
from the FairFace repository ... We only use images whose age attribute is greater than
19 and randomly sample a face crop from the target gender."

* :class:`FaceDetector` wraps facenet-pytorch's MTCNN (its weights ship in the wheel).
* :func:`read_face_bank` reads the user's labelled bank (FairFace's label CSV works
  as is) and keeps adults only.
* :func:`swap_face` puts a bank face into a detected face box: scaled to the box, its
  colours matched to the face it replaces (per-channel mean and standard deviation) and
  blended with a feathered ellipse; pixels outside the box are untouched.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from contrastkit.errors import DataFormatError
from contrastkit.records import Record, read_records
from contrastkit.schema import Gender

__all__ = [
    "DEFAULT_MIN_AGE",
    "BankFace",
    "Face",
    "FaceBank",
    "FaceDetector",
    "face_in_box",
    "parse_age",
    "read_face_bank",
    "swap_face",
]

#: Appendix A.2: ages "greater than 19".
DEFAULT_MIN_AGE = 20


@dataclass(frozen=True)
class Face:
    """A detected face: (left, top, right, bottom) in pixels and MTCNN's probability."""

    box: tuple[float, float, float, float]
    probability: float

    def int_box(self, width: int, height: int) -> tuple[int, int, int, int]:
        """The box rounded outwards and clipped to a ``width`` x ``height`` image."""
        left, top, right, bottom = self.box
        return (max(0, int(np.floor(left))), max(0, int(np.floor(top))),
                min(width, int(np.ceil(right))), min(height, int(np.ceil(bottom))))  # fmt: skip


class FaceDetector:
    """facenet-pytorch MTCNN (Zhang et al., 2016), all faces of an image, best first.

    Args:
        device: ``cpu`` / ``cuda``; default CUDA when available.
        min_probability: faces below this MTCNN probability are dropped.
        min_face_size: smallest face side MTCNN looks for, in pixels.
    """

    def __init__(
        self, device: str | None = None, *, min_probability: float = 0.9, min_face_size: int = 20
    ) -> None:
        import torch
        from facenet_pytorch import MTCNN

        chosen = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.min_probability = min_probability
        self._mtcnn: Any = MTCNN(keep_all=True, min_face_size=min_face_size, device=chosen)

    def detect(self, image: Image.Image) -> list[Face]:
        """The faces in ``image``, most probable first."""
        boxes, probs = self._mtcnn.detect(image.convert("RGB"))
        if boxes is None:
            return []
        faces = [
            Face(tuple(float(v) for v in box), float(p))  # type: ignore[arg-type]
            for box, p in zip(boxes, probs, strict=True)
            if p is not None and p >= self.min_probability
        ]
        return sorted(faces, key=lambda f: -f.probability)


def face_in_box(faces: Sequence[Face], box: tuple[int, int, int, int]) -> Face | None:
    """The most probable face whose centre lies inside the person ``box``."""
    left, top, right, bottom = box
    for face in faces:
        cx = (face.box[0] + face.box[2]) / 2
        cy = (face.box[1] + face.box[3]) / 2
        if left <= cx <= right and top <= cy <= bottom:
            return face
    return None


_RANGE = re.compile(r"^\s*(\d+)\s*(?:-|–|to)\s*(\d+)\s*$")
_MORE_THAN = re.compile(r"^\s*(?:more than|over|>)\s*(\d+)\s*$|^\s*(\d+)\s*\+\s*$", re.IGNORECASE)


def parse_age(text: str) -> int:
    """The youngest age an age label allows: ``34`` -> 34, FairFace's ``20-29`` -> 20,
    ``more than 70`` -> 71, ``70+`` -> 70.

    Raises:
        ValueError: for anything else.
    """
    value = text.strip()
    if value.isdigit():
        return int(value)
    match = _RANGE.match(value)
    if match:
        return int(match.group(1))
    match = _MORE_THAN.match(value)
    if match:
        return int(match.group(1)) + 1 if match.group(1) else int(match.group(2))
    raise ValueError(f"unreadable age {text!r} (expected 34, 20-29, more than 70 or 70+)")


def _bank_gender(record: Record, name: str) -> Gender:
    value = record.get(name).strip().lower()
    # FairFace labels perceived gender as Male / Female: read them as masculine / feminine.
    if value in ("male", "man"):
        return Gender.MASCULINE
    if value in ("female", "woman"):
        return Gender.FEMININE
    try:
        return Gender.parse_label(value)
    except ValueError as error:
        raise record.error(name, str(error)) from error


@dataclass(frozen=True)
class BankFace:
    """One usable face of the bank."""

    path: Path
    gender: Gender
    min_age: int
    line: int | None


@dataclass(frozen=True)
class FaceBank:
    """The adult faces of a bank by gender, and how many rows were left out as minors."""

    path: Path
    faces: dict[Gender, list[BankFace]]
    minors_skipped: int

    def counts(self) -> dict[str, int]:
        """Faces per gender and minors skipped."""
        return {
            **{g.value: len(self.faces.get(g, [])) for g in Gender.binary()},
            "minors_skipped": self.minors_skipped,
        }


def read_face_bank(path: str | Path, *, min_age: int = DEFAULT_MIN_AGE) -> FaceBank:
    """Read a labelled face bank: a CSV/TSV/JSONL/JSON table with ``file`` (image path,
    relative to the table's folder), ``gender`` (masculine/feminine, or FairFace's
    Male/Female) and ``age`` (a number or a range such as FairFace's ``20-29``).

    Only faces whose age label is at least ``min_age`` over its whole range are kept
    (the paper: older than 19).

    Raises:
        DataFormatError: naming the line and field of a missing file, an unknown gender
            or an unreadable age; or when a gender has no adult face at all.
    """
    path = Path(path)
    faces: dict[Gender, list[BankFace]] = {g: [] for g in Gender.binary()}
    minors = 0
    for record in read_records(path):
        name = "file" if "file" in record.values else "path"
        if not record.get(name):
            raise record.error("file", "missing image file name")
        gender = _bank_gender(record, "gender")
        try:
            age = parse_age(record.get("age"))
        except ValueError as error:
            raise record.error("age", str(error)) from error
        if age < min_age:
            minors += 1
            continue
        image = path.parent / record.get(name)
        if not image.is_file():
            raise record.error(name, f"no such image: {image}")
        faces[gender].append(BankFace(image, gender, age, record.line))
    for gender in Gender.binary():
        if not faces[gender]:
            raise DataFormatError(
                path, None, "gender", f"no {gender.value} face aged {min_age} or more in the bank"
            )
    return FaceBank(path=path, faces=faces, minors_skipped=minors)


def _ellipse_mask(width: int, height: int, feather: float) -> np.ndarray:
    ys = (np.arange(height) + 0.5) / height * 2 - 1
    xs = (np.arange(width) + 0.5) / width * 2 - 1
    radius = np.sqrt(xs[None, :] ** 2 + ys[:, None] ** 2)
    t = np.clip((1.0 - radius) / max(feather, 1e-6), 0.0, 1.0)
    mask: np.ndarray = (t * t * (3.0 - 2.0 * t)).astype(np.float32)
    return mask


def swap_face(
    image: Image.Image,
    face_box: tuple[int, int, int, int],
    donor: Image.Image,
    *,
    feather: float = 0.3,
) -> Image.Image:
    """Replace the face in ``face_box`` (left, top, right, bottom) by ``donor`` (a face
    crop): the donor is resized to the box, its colours moved to the mean and standard
    deviation of the face it replaces, and alpha-blended through an ellipse inscribed in
    the box whose edge ramps over ``feather`` of its radius. Outside the box nothing
    changes."""
    left, top, right, bottom = face_box
    if not (0 <= left < right <= image.width and 0 <= top < bottom <= image.height):
        raise ValueError(f"face box {face_box} is empty or outside the image")
    result = np.array(image.convert("RGB"), dtype=np.uint8)
    target = result[top:bottom, left:right].astype(np.float32)
    face = np.asarray(
        donor.convert("RGB").resize((right - left, bottom - top), Image.Resampling.BICUBIC),
        dtype=np.float32,
    )
    alpha = _ellipse_mask(right - left, bottom - top, feather)[..., None]
    weights = alpha / max(float(alpha.sum()), 1e-6)
    for channel in range(3):
        src, dst = face[..., channel], target[..., channel]
        src_mean = float((src * weights[..., 0]).sum())
        dst_mean = float((dst * weights[..., 0]).sum())
        src_std = float(np.sqrt(((src - src_mean) ** 2 * weights[..., 0]).sum()))
        dst_std = float(np.sqrt(((dst - dst_mean) ** 2 * weights[..., 0]).sum()))
        face[..., channel] = (src - src_mean) * (dst_std / max(src_std, 1e-3)) + dst_mean
    blended = alpha * np.clip(face, 0, 255) + (1.0 - alpha) * target
    result[top:bottom, left:right] = np.clip(np.rint(blended), 0, 255).astype(np.uint8)
    return Image.fromarray(result)
