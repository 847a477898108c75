"""The ``contrast`` kind: a GenSynth / GenSwap contrast-set export's features, config and
card, the build summary it reads, and the export of a build's *original* photos
(GenSynth Sec. 5.1, COCO_g: :func:`export_originals`). The export of its edits is
:func:`contrastkit.builders.contrast_edits.export_edits`; both run through
:func:`contrastkit.builders.export.export_contrast_set`.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from datasets import ClassLabel, Features, Image, Sequence, Value

from contrastkit.builders.export_folder import (
    GENDER_LABELS,
    METADATA_FILE,
    ExportResult,
    ImageCell,
    SplitRows,
    write_export,
)
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    SUMMARY,
    contrast_items,
    missing_contrast_set,
    source_file,
)
from contrastkit.config import require
from contrastkit.data_cards import render_card
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.gender_words import neutralize
from contrastkit.kinds import kinds
from contrastkit.records import read_json_object

__all__ = [
    "COCO_LICENCE",
    "COCO_SOURCES",
    "ORIGINALS_NOTE",
    "ContrastRow",
    "ExportContrastConfig",
    "OriginalsMetadata",
    "contrast_card",
    "contrast_config_features",
    "contrast_features",
    "export_originals",
    "originals_card",
    "read_build_summary",
]

COCO_SOURCES = "COCO images with exactly one person box and a caption gender label"
"""The card's default description of a contrast set's source photos."""
COCO_LICENCE = (
    "Source photos are COCO images (Flickr, each under its own Creative Commons licence); "
    "check the licence of each source before redistributing edits."
)
"""The card's default licence sentence for a contrast set's source photos."""


def contrast_config_features(config_name: str, *, with_images: bool = True) -> Features:
    """The features of config ``contrast`` of a contrast-set export, edits or originals
    (what the ``contrast`` kind declares; :func:`contrast_features`). Its images are
    always embedded, so ``with_images`` changes nothing."""
    if config_name != "contrast":
        raise ConfigError(f"config: a contrast-set export has contrast, not {config_name!r}")
    return contrast_features()


def contrast_features() -> Features:
    """Typed features of an exported GenSynth / GenSwap contrast set."""
    return Features(
        {
            "source_id": Value("string"),
            "gender": ClassLabel(names=GENDER_LABELS),
            "image": Image(),
            "edit_id": Value("string"),
            "method": Value("string"),
            "source_label": ClassLabel(names=GENDER_LABELS),
            "captions": Sequence(Value("string")),
            "neutral_captions": Sequence(Value("string")),
            "original_captions": Sequence(Value("string")),
            "box": Sequence(Value("float32")),
            "p_real": Value("float32"),
            "p_gender": Value("float32"),
            "instruction": Value("string"),
            "text_guidance_scale": Value("float32"),
            "image_guidance_scale": Value("float32"),
            "steps": Value("int32"),
            "seed": Value("int64"),
            "donor": Value("string"),
        }
    )


@dataclass(frozen=True)
class ExportContrastConfig:
    """What :func:`export_contrast_set` exports (strings are taken as paths).

    Attributes:
        build: A GenSynth or GenSwap build folder, after its select stage.
        out: Export folder (replaced atomically if it exists).
        split: Split name (contrast sets are evaluation sets: ``test``).
        pretty_name: The card's title (default from the method).
        license: License id of the edited images and captions; COCO images carry their
            Flickr licenses, so the default is ``other`` (say which in the card).
        source_description: What the source photos are, as the card's "Sources:" line
            (default :data:`COCO_SOURCES`; say what they really are: the card is their
            provenance).
        source_licence: The licence of the source photos, as a sentence for the card's
            licence section (default :data:`COCO_LICENCE`).
        originals: Export the build's *original* photos instead of its edits: one row
            per edited source's unedited photo, ``gender`` its caption label, the
            ``neutral_captions`` its own captions made neutral (GenSynth Sec. 5.1,
            COCO_g: the same source ids as the contrast set). The comparison set of
            GenSynth Tab. 3 (:func:`export_originals`).
        balanced: With ``originals``: keep as many masculine as feminine sources, drawn
            without replacement with ``seed`` (Sec. 5.1, COCO_g Bal).
        seed: The seed of the ``balanced`` draw.
    """

    build: Path
    out: Path
    split: str = "test"
    pretty_name: str | None = None
    license: str = "other"
    source_description: str = COCO_SOURCES
    source_licence: str = COCO_LICENCE
    originals: bool = False
    balanced: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "build", Path(self.build))
        object.__setattr__(self, "out", Path(self.out))
        require(bool(self.split.strip()), "split", "must not be empty")
        require(self.out != self.build, "out", "must not be the build folder")
        require(bool(self.source_description.strip()), "source_description", "must not be empty")
        require(bool(self.source_licence.strip()), "source_licence", "must not be empty")
        require(self.originals or not self.balanced, "balanced", "needs originals (--originals)")
        require(
            isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
            "seed", f"must be a whole number >= 0, not {self.seed!r}",
        )  # fmt: skip


class ContrastRow(TypedDict):
    """A row of a contrast-set export (:func:`contrast_features`): an edit, or an original
    photo (:func:`export_originals`: no edit fields)."""

    source_id: str
    gender: str
    image: ImageCell
    edit_id: str | None
    method: str
    source_label: str
    captions: list[str]
    neutral_captions: list[str]
    original_captions: list[str]
    box: list[float]
    p_real: float | None
    p_gender: float | None
    instruction: str | None
    text_guidance_scale: float | None
    image_guidance_scale: float | None
    steps: int | None
    seed: int | None
    donor: str | None


class OriginalsMetadata(TypedDict):
    """What the metadata of an originals export says (:func:`export_originals`; the
    configs' files, the row count, the version and the time are added by
    :func:`~contrastkit.builders.export_folder.write_export`)."""

    kind: str
    pretty_name: str
    license: str
    split: str
    build_dir: str
    build_kind: str
    description: str
    source_description: str
    source_licence: str
    balanced: bool
    seed: int | None
    sources_in_contrast_set: int
    sources_kept: int
    labels_before_balancing: dict[str, int]
    counts: dict[str, dict[str, int]]
    pair_preference: str


def read_build_summary(build_dir: Path) -> tuple[dict[str, Any], str]:
    """The build summary of a finished build folder and the build's kind (``gensynth``
    or ``genswap``).

    Raises:
        DataFormatError: no contrast set (the select stage has not run), no build
            summary, or a summary that is not a JSON object or holds a NaN or infinity
            (the card prints its figures).
        StateError: the contrast set is out of date (:func:`_current`).
    """
    contrast_path = build_dir / CONTRAST_SET
    if not contrast_path.is_file():
        raise missing_contrast_set(build_dir)
    summary_path = build_dir / SUMMARY
    if not summary_path.is_file():
        raise DataFormatError(summary_path, None, None, "no build summary (run the build)")
    summary: dict[str, Any] = read_json_object(summary_path, "a build summary (a JSON object)")
    _require_finite(summary_path, summary)  # the card prints these figures
    return _current(build_dir, summary), "genswap" if "genswap" in summary else "gensynth"


def _current(build_dir: Path, summary: dict[str, Any]) -> dict[str, Any]:
    """``summary`` of a build whose contrast set is up to date, without the entries a
    later stage outdated (checks of another contrast set).

    Raises:
        StateError: a merge on the folder was cut short, or a later stage changed the
            edits or their filter decisions after the contrast set was drawn.
    """
    from contrastkit.builders.gensynth.merging import require_no_pending_merge
    from contrastkit.builders.gensynth.summary import STALE

    require_no_pending_merge(build_dir, "export it")
    select = summary.get("select")
    if isinstance(select, dict) and select.get(STALE):
        raise StateError(
            f"{build_dir / CONTRAST_SET}: drawn before the edits or their filter decisions "
            f"changed ({select[STALE]}): run `contrastkit build gensynth --out {build_dir} "
            "--stage select` again, then export"
        )
    return {k: v for k, v in summary.items() if not (isinstance(v, dict) and v.get(STALE))}


def _require_finite(path: Path, value: Any, where: str = "") -> None:
    """Refuse a NaN or an infinity anywhere in ``value`` (a build summary): a build never
    writes one, and a card must not state "nan" as a figure."""
    if isinstance(value, float) and not math.isfinite(value):
        raise DataFormatError(path, None, where or None, f"{value} is not a finite number")
    if isinstance(value, dict):
        for key, item in value.items():
            _require_finite(path, item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list):
        for number, item in enumerate(value):
            _require_finite(path, item, f"{where}[{number}]")


ORIGINALS_NOTE = (
    "The unedited source photos of a contrast set (GenSynth Sec. 5.1, COCO_g{bal}): one row "
    "per source photo, labelled by its captions, for comparing a model's retrieval bias "
    "on natural photos with its bias on the contrast set (Tab. 3). Pair preference does "
    "not apply: each photo has one version."
)
"""What the card and the metadata say an originals export is (``{bal}``: `` Bal``)."""


def export_originals(
    config: ExportContrastConfig, summary: Mapping[str, Any], kind: str
) -> ExportResult:
    """Export the original photos of a build's contrast set (GenSynth Sec. 5.1).

    One row per source of ``contrast_set.jsonl`` (the same source ids as the contrast
    set, in its order: the paper's COCO_g), in the contrast export's layout (config
    ``contrast``, :func:`contrast_features`) so that ``contrastkit evaluate`` scores it
    like a contrast set: ``image`` the source photo's bytes unchanged (a photo with an
    EXIF orientation: its pixels as shown, as lossless WebP, the edits' orientation;
    :func:`_photo`), ``gender`` and
    ``source_label`` its caption label, ``captions`` and ``original_captions`` its own
    captions, ``neutral_captions`` those made gender-neutral (GenSynth Tab. 4 words),
    ``method`` ``original``; the edit fields are empty. With ``config.balanced``, as
    many masculine as feminine sources are kept (the smaller count of the two), drawn
    without replacement with ``config.seed`` and kept in order (COCO_g Bal; the paper
    averages 5 seeds: export one set per seed).

    Raises:
        DataFormatError: ``sources.jsonl`` lacks a source of the contrast set, or a
            source photo is missing, or is not the file the build recorded (its SHA-256:
            :func:`~contrastkit.builders.source_photos.check_photo`); a balanced set with
            no source of one gender.
    """
    import random

    from contrastkit.builders.manifest import SOURCES, read_sources
    from contrastkit.builders.source_photos import check_photo

    build_dir, contrast_path = config.build, config.build / CONTRAST_SET
    sources = {s.source_id: s for s in read_sources(build_dir)}
    order: dict[str, None] = {}
    for line, item in contrast_items(contrast_path):
        if item.source_id not in sources:
            raise DataFormatError(
                build_dir / SOURCES, None, None,
                f"no source {item.source_id!r} (named on line {line} of {contrast_path})",
            )  # fmt: skip
        order[item.source_id] = None
    kept = list(order)
    by_label: dict[str, list[str]] = {g: [] for g in GENDER_LABELS}
    for source_id in kept:
        by_label.setdefault(sources[source_id].label.value, []).append(source_id)
    before = {g: len(by_label.get(g, [])) for g in GENDER_LABELS}
    if config.balanced:
        size = min(before.values())
        if size == 0:
            raise DataFormatError(
                contrast_path, None, None,
                f"cannot balance: the sources are {before['masculine']} masculine and "
                f"{before['feminine']} feminine",
            )  # fmt: skip
        rng = random.Random(config.seed)
        chosen = {s for g in GENDER_LABELS for s in rng.sample(by_label[g], size)}
        kept = [s for s in kept if s in chosen]
    for source_id in kept:
        file = source_file(build_dir, sources[source_id].path)
        if not file.is_file():
            raise DataFormatError(
                build_dir / SOURCES, None, "path",
                f"the photo of source {source_id!r} is missing: {file}",
            )  # fmt: skip
        check_photo(file, sources[source_id])  # the photo the edits were made from
    counts = Counter(sources[s].label.value for s in kept)

    def records() -> Iterator[ContrastRow]:
        for source_id in kept:
            source = sources[source_id]
            file = source_file(build_dir, source.path)
            yield {
                "source_id": source_id,
                "gender": source.label.value,
                "image": _photo(file),
                "edit_id": None,
                "method": "original",
                "source_label": source.label.value,
                "captions": list(source.captions),
                "neutral_captions": [neutralize(c) for c in source.captions],
                "original_captions": list(source.captions),
                "box": [float(v) for v in source.box.as_list()],
                "p_real": None, "p_gender": None, "instruction": None,
                "text_guidance_scale": None, "image_guidance_scale": None,
                "steps": None, "seed": None, "donor": None,
            }  # fmt: skip

    bal = " Bal" if config.balanced else ""
    method = "GenSynth" if kind == "gensynth" else "GenSwap"
    metadata: OriginalsMetadata = {
        "kind": "originals",
        "pretty_name": config.pretty_name
        or f"Original photos of a {method} contrast set{' (balanced)' if bal else ''}",
        "license": config.license,
        "split": config.split,
        "build_dir": build_dir.name,
        "build_kind": kind,
        "description": ORIGINALS_NOTE.format(bal=bal),
        "source_description": config.source_description,
        "source_licence": config.source_licence,
        "balanced": config.balanced,
        "seed": config.seed if config.balanced else None,
        "sources_in_contrast_set": len(order),
        "sources_kept": len(kept),
        "labels_before_balancing": before,
        "counts": {"contrast": {g: counts.get(g, 0) for g in GENDER_LABELS}},
        "pair_preference": "not applicable: one version per photo",
    }
    exported = kinds()["contrast"]
    rows = SplitRows(exported.export_features("contrast"), records)
    return write_export(
        config.out, {"contrast": {config.split: rows}}, metadata, card=exported.render_card
    )


def _photo(file: Path) -> ImageCell:
    """A source photo as exported: its bytes unchanged, except a photo with an EXIF
    orientation, whose pixels as shown go out as lossless WebP (the orientation the
    edits were made in, for every reader, EXIF-aware or not)."""
    from contrastkit.builders.manifest import encode_lossless
    from contrastkit.builders.source_photos import is_turned, load_photo

    if is_turned(file):
        return {"bytes": encode_lossless(load_photo(file)), "path": f"{file.stem}.webp"}
    return {"bytes": file.read_bytes(), "path": file.name}


def contrast_card(metadata: dict[str, Any]) -> str:
    """The dataset card of a contrast-set export (what the ``contrast`` kind declares):
    :func:`originals_card` for an originals export, else the datasheet of
    :func:`~contrastkit.data_cards.render_card`."""
    if metadata.get("kind") == "originals":
        return originals_card(metadata)
    return render_card(metadata)


def originals_card(metadata: dict[str, Any]) -> str:
    """The dataset card of an originals export (:func:`export_originals`)."""
    import yaml

    configs = [
        {"config_name": name, "default": True,
         "data_files": [{"split": split, "path": f"data/{name}/{split}-*.parquet"}
                        for split in config["splits"]]}
        for name, config in metadata["configs"].items()
    ]  # fmt: skip
    header = yaml.safe_dump(
        {
            "license": metadata["license"],
            "pretty_name": metadata["pretty_name"],
            "task_categories": ["text-to-image", "zero-shot-image-classification"],
            "language": ["en"],
            "tags": ["gender-bias", "fairness", "evaluation", "contrastkit", "originals"],
            "configs": configs,
        },
        sort_keys=False,
        allow_unicode=True,
    )
    counts = metadata["counts"]["contrast"]
    lines = [f"# {metadata['pretty_name']}", ""]
    if metadata.get("balanced"):
        before = metadata["labels_before_balancing"]
        lines += [
            f"{metadata['description']}", "",
            f"Balanced: {counts['masculine']:,} masculine and {counts['feminine']:,} "
            f"feminine photos, drawn with seed {metadata['seed']} from the "
            f"{metadata['sources_in_contrast_set']:,} sources of the contrast set "
            f"({before['masculine']:,} masculine, {before['feminine']:,} feminine).",
        ]  # fmt: skip
    else:
        lines += [
            f"{metadata['description']}", "",
            f"{metadata['total_rows']:,} photos, every source of the contrast set of build "
            f"`{metadata['build_dir']}`: {counts['masculine']:,} masculine and "
            f"{counts['feminine']:,} feminine by their captions.",
        ]  # fmt: skip
    lines += [
        "",
        "Each row: the unedited source `image` (bytes unchanged; a photo with an EXIF "
        "orientation tag as shown, in lossless WebP), `gender` and "
        "`source_label` (the caption label, ClassLabel masculine = 0, feminine = 1), its "
        "`captions`, the same made gender-neutral (`neutral_captions`, the retrieval "
        "queries; GenSynth Tab. 4 words) and the person `box`; the edit fields are empty "
        "(`method` is `original`).",
        "",
        "## Uses",
        "",
        "Evaluation only: `contrastkit evaluate --data THIS_FOLDER` measures retrieval bias "
        "(Bias@K, MaxSkew@K) on these photos; `contrastkit report` puts it beside the "
        "contrast set's (GenSynth Tab. 3). Labels are perceived gender from the captions, "
        "not anyone's identity. Do not train on it.",
        "",
        "## Sources and licence",
        "",
        f"Sources: {metadata['source_description']}.",
        "",
        f"- Licence of the annotations and metadata: `{metadata['license']}`.",
        f"- {metadata['source_licence']}",
        f"- Exported with contrastkit {metadata['contrastkit_version']} on "
        f"{metadata['exported_at']}; the full metadata is in `{METADATA_FILE}`.",
    ]
    return f"---\n{header}---\n\n" + "\n".join(lines) + "\n"
