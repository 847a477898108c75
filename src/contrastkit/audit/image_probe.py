"""Spurious-correlation probe on images (GenSynth Sec. 3.3, after Schwemmer et al. 2020):
can the gender label be predicted from an image whose people are blacked out?

Every labelled image (Sec. 3.2) that has person boxes (COCO ``instances``) is embedded
twice by a frozen registry dual encoder, once as it is and once with every person box
filled with black pixels (:class:`MaskedImage`). A linear probe (the L2-regularised
logistic regression of :func:`contrastkit.audit.classifier.fit_logistic`) is trained on
each kind of embedding with the same seeded, stratified split as the caption classifier,
and its held-out ROC AUC is reported with a percentile bootstrap interval (no AUC, and
no embedding, when the held-out set has fewer than
:data:`~contrastkit.audit.classifier.MIN_TEST_PER_LABEL` images of a label). The paper
(ResNet-50 trained on COCO) finds 63.4% AUC on person-masked images and 71.9% on
unmasked ones: the scene alone predicts gender well above chance (0.5).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np
from typing_extensions import NotRequired

from contrastkit.audit.classifier import (
    MIN_TEST_PER_LABEL,
    ProbeSettings,
    auc,
    auc_bootstrap,
    fit_logistic,
    stratified_split,
    too_small,
)

if TYPE_CHECKING:
    from PIL import Image

    from contrastkit.audit.data import AuditImage

__all__ = [
    "ImageProbeSection",
    "MaskedImage",
    "ProbeFigures",
    "ProbeSettings",
    "SkippedProbe",
    "image_probe",
]


class MaskedImage:
    """An image file with the given ``[x, y, w, h]`` boxes filled black; called (in
    the image pipeline's worker) it returns the decoded, masked RGB image."""

    def __init__(self, path: Path, boxes: Sequence[Sequence[float]]):
        self.path = Path(path)
        self.boxes = [tuple(float(v) for v in box) for box in boxes]

    def __call__(self) -> Image.Image:
        from PIL import ImageDraw

        from contrastkit.pipeline.sources import decode

        image = decode(self.path)
        draw = ImageDraw.Draw(image)
        for x, y, w, h in self.boxes:
            draw.rectangle([x, y, x + w, y + h], fill=(0, 0, 0))
        return image


def _probe(
    features: np.ndarray,
    target: np.ndarray,
    train: np.ndarray,
    test: np.ndarray,
    settings: ProbeSettings,
) -> ProbeFigures:
    weights, intercept = fit_logistic(features[train], target[train])
    scores = features[test] @ weights + intercept
    positive = target[test] > 0.5
    low, high = auc_bootstrap(scores, positive, resamples=settings.resamples,
                              level=settings.level, seed=settings.seed + 1)  # fmt: skip
    return {"auc": auc(scores, positive), "interval": [low, high]}


class ProbeFigures(TypedDict):
    """A probe's held-out AUC and its bootstrap interval ``[low, high]``."""

    auc: float
    interval: list[float]


class ImageProbeSection(TypedDict):
    """The ``image_probe`` section of an audit (:func:`image_probe`): ``too_small`` only
    when the held-out set is (``masked`` and ``unmasked`` are then ``None``);
    ``weights_note`` as the audit job adds it."""

    model: str
    images: dict[str, int]
    train: dict[str, int]
    test: dict[str, int]
    masked: ProbeFigures | None
    unmasked: ProbeFigures | None
    level: float
    resamples: int
    min_test_per_label: int
    too_small: NotRequired[str]
    weights_note: NotRequired[str | None]


class SkippedProbe(TypedDict):
    """The probe skipped, and why (``weights_note`` as the audit job adds it)."""

    skipped: str
    weights_note: NotRequired[str | None]


def image_probe(
    images: Sequence[AuditImage],
    scorer: Any,
    settings: ProbeSettings | None = None,
) -> ImageProbeSection | SkippedProbe:
    """Linear probes on person-masked and on unmasked image embeddings (module
    docstring).

    Args:
        images: the data's images; those labelled masculine or feminine with an image
            file and at least one person box are used.
        scorer: a loaded dual encoder (:func:`contrastkit.models.load_scorer`).
        settings: the split and the bootstrap interval (default: :class:`ProbeSettings`).

    Returns:
        ``model``, ``images`` (per gender), ``train`` / ``test`` counts, ``masked`` and
        ``unmasked`` (each ``auc`` and ``interval``), ``level``; with too few held-out
        images (:func:`~contrastkit.audit.classifier.too_small`), ``masked`` and
        ``unmasked`` are ``None`` and ``too_small`` says why; or ``{"skipped": reason}``.
    """
    from contrastkit.pipeline import embed_images

    settings = settings or ProbeSettings()
    usable = [
        image
        for image in images
        if image.label in ("masculine", "feminine")
        and image.person_boxes
        and image.path is not None
        and image.path.is_file()
    ]
    counts = {g: sum(image.label == g for image in usable) for g in ("masculine", "feminine")}
    if min(counts.values()) < 2:
        return {
            "skipped": "needs at least 2 images of each gender with a file and person boxes, "
            f"found {counts}"
        }
    labels = [image.label for image in usable]
    target = np.array([label == "masculine" for label in labels], dtype=np.float64)
    train, test = stratified_split(
        labels,
        settings.test_fraction,
        np.random.default_rng(settings.seed),
        [image.group_key for image in usable],
    )
    names = np.asarray(labels, dtype=object)
    result: ImageProbeSection = {
        "model": str(getattr(scorer, "spec", "")),
        "images": counts,
        "train": {g: int((names[train] == g).sum()) for g in ("masculine", "feminine")},
        "test": {g: int((names[test] == g).sum()) for g in ("masculine", "feminine")},
        "masked": None,
        "unmasked": None,
        "level": settings.level,
        "resamples": settings.resamples,
        "min_test_per_label": MIN_TEST_PER_LABEL,
    }
    unreadable = too_small(result["test"])
    if unreadable is not None:
        result["too_small"] = unreadable
        return result
    plain = embed_images(scorer, [image.path for image in usable])
    masked = embed_images(
        scorer,
        [MaskedImage(image.path, image.person_boxes) for image in usable if image.path],
    )
    result["masked"] = _probe(np.asarray(masked, np.float64), target, train, test, settings)
    result["unmasked"] = _probe(np.asarray(plain, np.float64), target, train, test, settings)
    return result
