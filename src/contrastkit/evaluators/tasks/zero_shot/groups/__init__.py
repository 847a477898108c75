"""Images grouped by perceived gender, and the concepts each group shows (zero-shot
disparities, Sec. 2.2 and Appendix A.1).

Two layouts are read, each from a folder:

* **Visual Genome** (``layout="vg"``): ``image_data.json`` (a list of ``{"image_id",
  "url", "width", "height", ...}``) and ``objects.json`` (a list of ``{"image_id",
  "objects": [{"names": [...], "synsets": [...]}, ...]}``); images as
  ``VG_100K/<image_id>.jpg``, ``VG_100K_2/<image_id>.jpg`` or ``images/<image_id>.jpg``.
  An image's perceived-gender group comes from its object synsets: the man-related and
  woman-related WordNet synsets of the paper's Table 1 (:data:`VG_MAN_SYNSETS`,
  :data:`VG_WOMAN_SYNSETS`). Its concepts are all its other synsets. Both JSON files
  are read one entry at a time (:mod:`.jsonstream`): the full ``objects.json`` is
  several GB.
* **COCO** (``layout="coco"``): ``annotations/instances_<split>.json`` (``images``,
  ``annotations`` with ``image_id`` and ``category_id``, ``categories``) and
  ``annotations/captions_<split>.json``; images as ``images/<file_name>``,
  ``images/<split>/<file_name>`` or ``<split>/<file_name>``. The group comes from the
  words of the image's captions: the paper's caption terms (:data:`COCO_MAN_TERMS`,
  :data:`COCO_WOMAN_TERMS`; captions are lower-cased, apostrophes dropped — "man's" is
  "mans" — and split into runs of letters). Its concepts are its object categories,
  mapped to Visual Genome synsets through :data:`COCO_TO_VG` (extended or overridden
  by a two-column TSV, :func:`read_concept_map`), so the two datasets can be compared
  concept by concept (Fig. 3-4). A category without an entry keeps its COCO name.

Then, as in the paper: an image is kept only when all its gendered labels (synsets or
caption terms) belong to one group (images with both groups, or none, are counted and
left out), and a concept is kept only when it occurs in at least ``min_images`` images of
*each* group (the paper: 50 on Visual Genome, 100 on COCO train;
:data:`DEFAULT_MIN_IMAGES`). The group-defining synsets are never concepts. The paper
reports 25,215 images and 408 concepts for Visual Genome, 1,412 images and 76 classes for
COCO (:data:`PAPER_COUNTS`).

The concept filter removes concepts, not images (Sec. 2.1-2.2: every image with a single
perceived-gender label is in the analysis, with the set of classes it shows): a kept image
that shows no kept concept stays, as a negative of every concept
(``images_without_concepts="keep"``, the default). ``"drop"`` leaves such images out
instead (what contrastkit did before issue 31). docs/zero_shot.md shows both readings
on an example.

These labels are annotators' perceptions, binary and reductive (the paper's
Limitations): they approximate nobody's gender identity.

The package: :mod:`.tables` (the groups, synsets, terms, thresholds and the concept map),
:mod:`.data` (the records and the steps both layouts share), :mod:`.vg` and :mod:`.coco`
(each layout's reader); every public name is importable from here.
"""

from __future__ import annotations

from pathlib import Path

from contrastkit.errors import ConfigError
from contrastkit.evaluators.tasks.zero_shot.groups.coco import (
    caption_group,
    load_coco,
    read_concept_map,
)
from contrastkit.evaluators.tasks.zero_shot.groups.data import (
    GroupedData,
    GroupingOptions,
    ImageRecord,
    concept_words,
)
from contrastkit.evaluators.tasks.zero_shot.groups.tables import (
    COCO_MAN_TERMS,
    COCO_TO_VG,
    COCO_WOMAN_TERMS,
    DEFAULT_MIN_IMAGES,
    GROUPS,
    IMAGES_WITHOUT_CONCEPTS,
    LAYOUTS,
    PAPER_COUNTS,
    VG_MAN_SYNSETS,
    VG_WOMAN_SYNSETS,
)
from contrastkit.evaluators.tasks.zero_shot.groups.vg import load_vg

__all__ = [
    "COCO_MAN_TERMS",
    "COCO_TO_VG",
    "COCO_WOMAN_TERMS",
    "DEFAULT_MIN_IMAGES",
    "GROUPS",
    "IMAGES_WITHOUT_CONCEPTS",
    "LAYOUTS",
    "PAPER_COUNTS",
    "VG_MAN_SYNSETS",
    "VG_WOMAN_SYNSETS",
    "GroupedData",
    "GroupingOptions",
    "ImageRecord",
    "caption_group",
    "concept_words",
    "detect_layout",
    "load_grouped",
    "read_concept_map",
]


def detect_layout(root: Path) -> str:
    """``vg`` when ``root`` holds ``objects.json``, ``coco`` when it holds
    ``annotations/instances_*.json``.

    Raises:
        ConfigError: neither, or both (then pass ``layout``).
    """
    vg = (root / "objects.json").is_file()
    coco = bool(sorted((root / "annotations").glob("instances_*.json")))
    if vg and coco:
        raise ConfigError(f"layout: {root} holds both Visual Genome and COCO files; pass it")
    if vg:
        return "vg"
    if coco:
        return "coco"
    raise ConfigError(
        f"data: {root} is neither a Visual Genome folder (objects.json and image_data.json) "
        "nor a COCO folder (annotations/instances_<split>.json and captions_<split>.json)"
    )


def load_grouped(root: Path, options: GroupingOptions | None = None) -> GroupedData:
    """Read a Visual Genome or COCO folder, assign each image its perceived-gender group
    and keep the concepts seen in at least ``min_images`` images of each group (see the
    module docstring for both layouts).

    Args:
        root: the data folder.
        options: the layout, ``min_images``, the COCO splits, the concept map and what
            becomes of images without a kept concept (:class:`GroupingOptions`; default:
            the layout detected, the paper's thresholds and reading).

    Returns:
        The kept images (those with a single group; with ``drop``, only those showing at
        least one kept concept) and concepts, with the counts of everything read and
        dropped.

    Raises:
        ConfigError: an unknown layout or ``images_without_concepts``, a folder of
            neither layout, a missing split, ``min_images`` below 1, a Visual Genome
            option given with COCO-only options.
        DataFormatError: a missing or malformed annotation file, a kept image whose
            file is missing.
    """
    root = Path(root)
    options = options or GroupingOptions()
    layout, without = options.layout, options.images_without_concepts
    if not root.is_dir():
        raise ConfigError(f"data: {root} is not a folder")
    if layout not in LAYOUTS:
        raise ConfigError(f"layout: unknown layout {layout!r}; choose from {', '.join(LAYOUTS)}")
    if without not in IMAGES_WITHOUT_CONCEPTS:
        raise ConfigError(
            f"images_without_concepts: unknown value {without!r}; choose "
            f"from {', '.join(IMAGES_WITHOUT_CONCEPTS)}"
        )
    resolved = detect_layout(root) if layout == "auto" else layout
    threshold = DEFAULT_MIN_IMAGES[resolved] if options.min_images is None else options.min_images
    if threshold < 1:
        raise ConfigError(f"min_images: must be at least 1, not {threshold}")
    if resolved == "vg":
        if options.split is not None or options.filter_split is not None:
            raise ConfigError("split: Visual Genome has no splits; give split only for COCO")
        return load_vg(root, threshold, without)
    return load_coco(root, threshold, options)
