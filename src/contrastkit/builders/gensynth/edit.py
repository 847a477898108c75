"""GenSynth stage 1: edit the person of every selected COCO source (Sec. 4.1, App. A.2)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from PIL import Image

from contrastkit.builders.coco import SourceImage, read_coco_cached, select_sources
from contrastkit.builders.coco_files import check_image_sizes
from contrastkit.builders.gensynth.consistency import (
    EditMaking,
    check_edit_settings,
    recorded_making,
)
from contrastkit.builders.gensynth.shards import SHARDS, Shard, ShardInfo, write_shard_info
from contrastkit.builders.gensynth.summary import (
    SETTINGS,
    Progress,
    load_image,
    update_summary,
)
from contrastkit.builders.manifest import (
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_IMAGE_QUALITY,
    IMAGE_FORMATS,
    EditRecord,
    Manifest,
    encode_image,
    holds_build_lock,
    read_sources,
    remove_stale_temp_files,
    write_sources,
)
from contrastkit.builders.source_photos import with_hashes
from contrastkit.curation.editing import (
    CropPlacement,
    Editor,
    EditSettings,
    EditSettingsJSON,
    EditSpec,
    crop_for_editing,
    paste_back,
    paste_back_mask,
    plan_edits,
)
from contrastkit.curation.editor_families import (
    DEFAULT_FAMILY,
    EditorFamily,
    editor_family,
    parse_editor_spec,
)
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.io import atomic_write_bytes

__all__ = [
    "EditStageConfig",
    "EditStageReport",
    "Window",
    "WindowEditor",
    "edit_window",
    "edit_windows",
    "person_alpha",
    "run_edit_stage",
]

#: Pending edits that go to the editor together: (source, edit) pairs, in plan order.
Window = Sequence[tuple[SourceImage, EditSpec]]

#: How edits are stored: image format (``webp``, ``png``, ``jpeg``) and quality (0-100).
Storage = tuple[str, int]

#: Each source's image, editor input, placement and (``composite="mask"``) blend
#: weights, kept while its edits are made.
CropCache = dict[str, tuple[Image.Image, Image.Image, CropPlacement, np.ndarray | None]]


def person_alpha(
    source: SourceImage, placement: CropPlacement, settings: EditSettings
) -> np.ndarray:
    """The blend weights of ``source``'s edits with ``composite="mask"``: its COCO
    segmentation, dilated by ``settings.mask_dilation`` of the box's shorter side and
    feathered, inside the crop (:func:`~contrastkit.curation.masks.mask_alpha`).

    Raises:
        DataFormatError: the source has no segmentation, or an unreadable one.
    """
    from contrastkit.curation.masks import decode_segmentation, dilation_pixels, mask_alpha

    if source.segmentation is None:
        raise DataFormatError(
            source.path, None, "segmentation",
            f"source {source.source_id} has no person segmentation in its COCO "
            "annotations: --composite mask needs one (use --composite box)",
        )  # fmt: skip
    try:
        mask = decode_segmentation(source.segmentation, source.width, source.height)
    except ValueError as error:
        raise DataFormatError(source.path, None, "segmentation", str(error)) from error
    pixels = dilation_pixels(placement.box, settings.mask_dilation)
    return mask_alpha(mask, placement.crop, pixels)


def edit_window(
    editor: Editor, window: Window, settings: EditSettings, cache: CropCache | None = None
) -> list[Image.Image]:
    """Make one window of edits (GenSynth Sec. 4.1, App. A.2): crop each source's person
    box with its margin (:func:`crop_for_editing`), edit every crop with its spec in one
    ``editor.edit`` call, and paste each edit back into its source image: inside the
    person box (:func:`paste_back`, ``settings.composite == "box"``, an RGB image) or
    onto the dilated person mask (:func:`paste_back_mask`, ``"mask"``, an RGBA image
    whose alpha marks the pixels the edit reached).

    Every engine makes its edits with this function (the local loop below and each Ray
    actor of :mod:`contrastkit.builders.gensynth.ray`), so a window gives the
    same images wherever it runs.

    Args:
        editor: the loaded editor.
        window: the (source, edit) pairs.
        settings: resolution, margin and feather of the crops.
        cache: crops of the previous window, reused for sources it shares with this one
            (updated in place: afterwards it holds this window's sources only).

    Returns:
        The pasted-back images, one per pair, in order.
    """
    cache = {} if cache is None else cache
    in_window = {source.source_id for source, _ in window}
    for key in [key for key in cache if key not in in_window]:
        del cache[key]
    for source, _ in window:
        if source.source_id not in cache:
            original = load_image(source.path)
            _check_size(source, original)
            crop, placement = crop_for_editing(
                original,
                source.box.xyxy(original.width, original.height),
                settings.resolution,
                settings.margin,
            )
            alpha = (
                person_alpha(source, placement, settings) if settings.composite == "mask" else None
            )
            cache[source.source_id] = (original, crop, placement, alpha)
    inputs = [cache[source.source_id][1] for source, _ in window]
    edited = editor.edit(inputs, [spec for _, spec in window])
    pasted = []
    for (source, _), result in zip(window, edited, strict=True):
        original, _, placement, alpha = cache[source.source_id]
        if alpha is None:
            pasted.append(paste_back(original, result, placement, settings.feather))
        else:
            pasted.append(paste_back_mask(original, result, placement, alpha))
    return pasted


def _check_size(source: SourceImage, image: Image.Image) -> None:
    """The photo, as shown (EXIF orientation applied), has its annotation's size: the
    person box and mask are in its pixels."""
    if image.size != (source.width, source.height):
        raise DataFormatError(
            source.path, None, None,
            f"the photo is {image.width}x{image.height} as shown (its EXIF orientation "
            f"applied), its COCO annotation says {source.width}x{source.height}: the "
            "person's box and mask would not fall on the person",
        )  # fmt: skip


def edit_windows(
    editor: Editor, windows: Iterable[Window], settings: EditSettings
) -> Iterator[list[Image.Image]]:
    """:func:`edit_window` over ``windows`` in this process, one list of images per
    window, in order (crops shared by consecutive windows are cut once)."""
    cache: CropCache = {}
    for window in windows:
        yield edit_window(editor, window, settings, cache)


@runtime_checkable
class WindowEditor(Protocol):
    """An editor that makes whole windows elsewhere, e.g. on a Ray actor pool
    (:class:`contrastkit.builders.gensynth.ray.RayWindowEditor`).
    :func:`run_edit_stage` hands it every pending window and writes what comes back."""

    @property
    def name(self) -> str:
        """What to record as the editor in the manifest."""
        ...

    def edit_windows(
        self, windows: Sequence[Window], settings: EditSettings, storage: Storage
    ) -> Iterator[list[bytes]]:
        """:func:`edit_window` of each window, each image encoded as ``storage`` asks
        (:func:`~contrastkit.builders.manifest.encode_image`, where the edit was made, so
        the writing process only writes bytes): one list per window, in order."""
        ...


@dataclass(frozen=True)
class EditStageReport:
    """What an edit run did: sources, planned edits, skipped (already finished), edited."""

    sources: int
    planned: int
    skipped_finished: int
    edited: int
    removed_temp_files: int
    selection: dict[str, int]
    settings: EditSettingsJSON
    editor: str
    shard: str | None = None
    image_format: str = DEFAULT_IMAGE_FORMAT
    image_quality: int = DEFAULT_IMAGE_QUALITY
    #: The editor's weights are random (a tiny test editor): the build is a pipeline
    #: check, and its dataset card says so.
    editor_random_weights: bool = False
    #: The editor family (:mod:`~contrastkit.curation.editor_families`; ``ip2p`` for
    #: builds made before families), the diffusers pipeline it loads and its dtype
    #: (``None`` where the editor does not say, e.g. a Ray pool's before it ran).
    editor_family: str = DEFAULT_FAMILY
    editor_pipeline: str | None = None
    editor_dtype: str | None = None


@dataclass(frozen=True)
class EditStageConfig:
    """What :func:`run_edit_stage` edits, and how it stores the edits (strings are taken
    as paths).

    Attributes:
        coco, split, limit, min_box_side: the sources (:func:`select_sources`): the COCO
            folder, its split (default: the only one), the first ``limit`` selected
            sources only, the smallest person box side in pixels.
        out: the build folder.
        settings: instructions, scales, steps, resolution, seed ...
        edits_per_call: how many planned edits go to the editor at once (the editor
            batches those that share guidance settings).
        shard: edit only this shard's sources (:class:`~.shards.Shard`, or ``"K/N"``),
            in the shard's own build folder ``out/shards/K-of-N`` (which it locks,
            instead of ``out``; its COCO table cache is kept there too), recording
            ``shard.json`` for :func:`~.shards.merge_shards`.
        image_format, image_quality: how edits are stored (``webp``, ``png`` or
            ``jpeg``; quality 0-100 for the lossy ones), encoded by
            :func:`~contrastkit.builders.manifest.encode_image` where the edit is made (a
            Ray actor encodes its own, so this process only writes bytes). ``None``:
            those of the edits the folder holds, else WebP at quality 90. Like every
            setting that decides an edit's pixels, they are those of the edits the
            folder holds, or the run is refused
            (:func:`~.consistency.check_edit_settings`).
        record: the run's options, stored as the ``settings`` entry of the build summary
            before the first edit (:func:`~.summary.recorded_settings`), so that a rerun
            of a killed build, or of one stage, reuses them.
    """

    coco: Path
    out: Path
    settings: EditSettings
    split: str | None = None
    limit: int | None = None
    min_box_side: float = 0.0
    edits_per_call: int = 16
    shard: Shard | None = None
    image_format: str | None = None
    image_quality: int | None = None
    record: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "coco", Path(self.coco))
        object.__setattr__(self, "out", Path(self.out))
        if self.shard is not None:
            object.__setattr__(self, "shard", Shard.parse(self.shard))

    @property
    def work_folder(self) -> Path:
        """The folder the run works in (and locks): ``out``, or its shard's folder."""
        return self.out if self.shard is None else self.shard.folder(self.out)

    @property
    def storage(self) -> Storage:
        """How the edits are stored: ``(image_format, image_quality)`` (the defaults
        for those not set)."""
        quality = DEFAULT_IMAGE_QUALITY if self.image_quality is None else self.image_quality
        return (self.image_format or DEFAULT_IMAGE_FORMAT, quality)


def _with_storage(config: EditStageConfig) -> EditStageConfig:
    """``config`` with the storage it leaves unset taken from the edits its folder
    holds (so a rerun keeps their format), else the defaults."""
    if config.image_format is not None and config.image_quality is not None:
        return config
    recorded = recorded_making(config.work_folder)
    made = recorded[0] if recorded is not None else None
    image_format = config.image_format or (made.image_format if made else DEFAULT_IMAGE_FORMAT)
    quality = config.image_quality
    if quality is None:
        quality = made.image_quality if made else DEFAULT_IMAGE_QUALITY
    return replace(config, image_format=image_format, image_quality=quality)


def _work_folder(arguments: dict[str, Any]) -> Path:
    """The folder an edit run locks, from its arguments."""
    config: EditStageConfig = arguments["config"]
    return config.work_folder


def _check_options(config: EditStageConfig) -> None:
    """Refuse batching and storage options that are not valid, or that the compositing
    cannot use."""
    if config.edits_per_call < 1:
        raise ConfigError(f"edits_per_call must be >= 1, not {config.edits_per_call}")
    image_format, image_quality = config.storage
    if image_format not in IMAGE_FORMATS:
        choices = ", ".join(IMAGE_FORMATS)
        raise ConfigError(f"image_format: {image_format!r} is not one of {choices}")
    if not 0 <= image_quality <= 100:
        raise ConfigError(f"image_quality: must be in 0-100, not {image_quality}")
    if config.settings.composite == "mask" and image_format == "jpeg":
        raise ConfigError(
            "image_format: jpeg has no alpha channel, which --composite mask stores the "
            "person's pixels in: use webp or png"
        )


def _check_layout(out: Path, shard: Shard | None) -> None:
    """Refuse to mix a sharded and an unsharded edit run on one build folder."""
    if shard is None and (out / SHARDS).is_dir():
        raise StateError(
            f"{out}: this build is sharded ({out / SHARDS}): edit with --shard K/N, merge "
            f"with `contrastkit build merge {out}`, then run the filter and select stages"
        )
    if shard is not None:
        own = [r for r in Manifest(out).read() if not r.path.startswith(f"{SHARDS}/")]
        if own:
            raise StateError(
                f"{out}: already holds {len(own)} edits of an unsharded run; shard a new "
                f"build folder instead"
            )


def _check_segmentations(root: Path, sources: Sequence[SourceImage]) -> None:
    """With ``composite="mask"``: every selected source needs a person segmentation."""
    unmasked = [s.source_id for s in sources if s.segmentation is None]
    if unmasked:
        raise DataFormatError(
            root, None, "segmentation",
            f"{len(unmasked)} selected sources (e.g. {unmasked[0]}) have no person "
            "segmentation in the COCO annotations: --composite mask needs one for "
            "each; use --composite box (the paper's method)",
        )  # fmt: skip


def _shard_sources(
    config: EditStageConfig, sources: list[SourceImage], editor: str, split: str
) -> list[SourceImage]:
    """The sources of ``config.shard`` (all of them without a shard); a shard records
    them, with what decides its edits, in its ``shard.json``."""
    if config.shard is None:
        return sources
    position = {s.source_id: n for n, s in enumerate(sources)}
    mine = [s for s in sources if config.shard.owns(s.source_id)]
    write_shard_info(
        config.work_folder,
        ShardInfo(
            config.shard, settings=config.settings, editor=editor,
            selection={"split": split, "limit": config.limit,
                       "min_box_side": config.min_box_side},
            positions={s.source_id: position[s.source_id] for s in mine},
            storage={"image_format": config.storage[0],
                     "image_quality": config.storage[1]},
        ),
    )  # fmt: skip
    return mine


def _windows(planned: Window, done: set[str], size: int) -> list[Window]:
    """The windows of ``size`` consecutive planned edits that hold an edit not ``done``.

    Windows are cut from the plan, not from what is pending, so that a resumed run gives
    every edit the batch it had in an uninterrupted run with the same settings: on the
    CPU a batched forward pass is not bit-identical across batch compositions
    (docs/pipeline.md, "What is bit-identical"). A window is appended to the manifest in
    one write, so a kill leaves whole windows; one found cut in half all the same is
    made again whole, and only its missing edits are written.
    """
    return [
        window
        for window in (planned[i : i + size] for i in range(0, len(planned), size))
        if any(spec.edit_id not in done for _, spec in window)
    ]


def _encoded_windows(
    editor: Editor | WindowEditor, windows: Sequence[Window], config: EditStageConfig
) -> Iterator[list[bytes]]:
    """The edits of each window, encoded for storage: made here, or by a
    :class:`WindowEditor` elsewhere (e.g. a Ray actor pool)."""
    if isinstance(editor, WindowEditor):
        return editor.edit_windows(windows, config.settings, config.storage)
    return (
        [encode_image(image, config.storage[0], quality=config.storage[1]) for image in images]
        for images in edit_windows(editor, windows, config.settings)
    )


@holds_build_lock("contrastkit build gensynth", create=True, folder=_work_folder)
def run_edit_stage(
    config: EditStageConfig,
    editor: Editor | WindowEditor,
    *,
    progress: Progress | None = None,
) -> EditStageReport:
    """Edit the person of every selected COCO source (GenSynth Sec. 4.1, App. A.2).

    Edits go to the editor in windows of ``config.edits_per_call`` consecutive planned
    edits. Each finished edit is written (``edits/<source>/<edit>.webp`` by default,
    temporary file and rename; with ``settings.composite == "mask"`` only the pixels the
    edit reached, marked by the alpha channel, which reading puts back onto the decoded
    source: :func:`~contrastkit.builders.manifest.edit_image`), and then the window's
    edits are appended to the manifest in one write with an fsync; edits already in the
    manifest with their image on disk are skipped, so a killed run resumes where it
    stopped and never rewrites a finished edit.
    Windows are cut from the plan, not from the pending edits, so a resumed run makes
    each missing edit in the same batch as an uninterrupted run with the same settings,
    and gets the same pixels (docs/pipeline.md, "What is bit-identical").

    Args:
        config: the sources, the build folder, the edit settings and the storage
            (:class:`EditStageConfig`).
        editor: an :class:`~contrastkit.curation.editing.Editor` (InstructPix2Pix), run
            here; or a :class:`WindowEditor` (a Ray actor pool) that edits the pending
            windows elsewhere. Either way this process writes every image and manifest
            line, so the build folder is the same and either can resume the other's run.
        progress: called with (finished, total) after each window is written.
    """
    settings = config.settings
    config = _with_storage(config)
    _check_options(config)
    _check_layout(config.out, config.shard)
    making = EditMaking(str(getattr(editor, "name", "")), settings, *config.storage)
    check_edit_settings(config.work_folder, making)  # never mix edits made otherwise
    family = _family_of(editor)
    if settings.resolution % family.multiple:
        raise ConfigError(
            f"resolution: the {family.prefix} editor needs a multiple of {family.multiple}, "
            f"not {settings.resolution}"
        )
    out = config.work_folder
    coco = read_coco_cached(config.coco, out, config.split)  # parsed once, kept in the build
    selection = select_sources(
        coco, min_box_side=config.min_box_side, limit=config.limit,
        needs_mask=settings.composite == "mask",  # an empty mask: left out, counted
    )  # fmt: skip
    check_image_sizes(selection.sources)  # before any edit: annotations fit the files
    if settings.composite == "mask":
        _check_segmentations(coco.root, selection.sources)
    out.mkdir(parents=True, exist_ok=True)
    sources = _shard_sources(config, selection.sources, editor.name, coco.split)
    sources = with_hashes(  # each photo's content, checked against the finished edits'
        sources, {s.source_id: s for s in read_sources(out)},
        {r.source_id for r in Manifest(out).records()},
    )  # fmt: skip
    if config.record is not None:
        update_summary(out, SETTINGS, dict(config.record))
    removed = remove_stale_temp_files(out)
    write_sources(out, sources)
    manifest = Manifest(out)
    records = manifest.read()
    kept = [r for r in records if (out / r.path).is_file()]
    if len(kept) != len(records):
        manifest.rewrite(kept)  # an image went missing: that edit is to be redone
    done = {r.edit_id for r in kept}
    planned = [(s, spec) for s in sources for spec in plan_edits(s.source_id, settings)]
    pending = [(s, spec) for s, spec in planned if spec.edit_id not in done]
    total, finished = len(planned), len(planned) - len(pending)
    if progress:
        progress(finished, total)
    windows = _windows(planned, done, config.edits_per_call)
    origin = _EditOrigin(editor.name, family.method, settings.composite)
    suffix = IMAGE_FORMATS[config.storage[0]]
    for window, edited in zip(windows, _encoded_windows(editor, windows, config), strict=True):
        made = []  # written here only
        for (source, spec), encoded in zip(window, edited, strict=True):
            if spec.edit_id in done:
                continue  # finished by an earlier run: kept byte for byte
            relative = f"edits/{source.source_id}/{spec.edit_id}{suffix}"
            atomic_write_bytes(out / relative, encoded)
            made.append(origin.record(source, spec, relative))
        manifest.append(*made)
        finished += len(made)
        if progress:
            progress(finished, total)
    report = EditStageReport(
        sources=len(sources),
        planned=total,
        skipped_finished=total - len(pending),
        edited=len(pending),
        removed_temp_files=removed,
        selection=selection.counts,
        settings=settings.to_json(),
        editor=editor.name,
        shard=None if config.shard is None else str(config.shard),
        image_format=config.storage[0],
        image_quality=config.storage[1],
        editor_random_weights=bool(getattr(editor, "random_weights", False)),
        editor_family=family.prefix,
        editor_pipeline=family.pipeline,
        editor_dtype=getattr(editor, "dtype", None),
    )
    why = f"made before the edit stage added {len(pending)} edits"
    outdated = dict.fromkeys(("filter", "select", "quality", "context"), why) if pending else None
    update_summary(out, "edit", asdict(report), outdated=outdated)
    return report


def _family_of(editor: Editor | WindowEditor) -> EditorFamily:
    """The editor family of ``editor``: its ``family`` attribute, else its name's
    (a test double without one is an InstructPix2Pix editor)."""
    family = getattr(editor, "family", None)
    if isinstance(family, EditorFamily):
        return family
    try:
        return parse_editor_spec(str(getattr(editor, "name", "")) or DEFAULT_FAMILY)[0]
    except ConfigError:
        found = editor_family(DEFAULT_FAMILY)
        assert found is not None
        return found


@dataclass(frozen=True)
class _EditOrigin:
    """What every edit of one run records about how it was made: the editor's name, its
    family's method and the compositing."""

    editor: str
    method: str
    composite: str

    def record(self, source: SourceImage, spec: EditSpec, path: str) -> EditRecord:
        """The manifest line of the edit ``spec`` of ``source``, stored at ``path``."""
        return EditRecord(
            edit_id=spec.edit_id,
            source_id=source.source_id,
            method=self.method,
            target=spec.target.value,
            source_label=source.label.value,
            box=source.box.as_list(),
            seed=spec.seed,
            path=path,
            editor=self.editor,
            instruction=spec.instruction,
            text_guidance_scale=spec.text_guidance_scale,
            image_guidance_scale=spec.image_guidance_scale,
            steps=spec.steps,
            composite="mask" if self.composite == "mask" else None,
        )
