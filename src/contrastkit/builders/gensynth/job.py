"""The GenSynth build as one job: edit, filter, select, quality checks (seeds/001, Sec. 4).

:func:`build_gensynth` loads the editor (InstructPix2Pix, or another editor family) and
the CLIP-like embedder, runs the builder's stages on a build folder
(:mod:`contrastkit.builders.gensynth`: edit Sec. 4.1, KNN filter Sec. 4.2, selection) and
then the Sec. 4.3 / Tab. 2 quality checks
(:mod:`contrastkit.builders.quality`), and returns the build summary. Every stage
resumes: a rerun skips finished edits and reuses cached embeddings.

Example::

    from contrastkit.builders.gensynth.job import GenSynthConfig, build_gensynth
    from contrastkit.config import ModelConfig
    from contrastkit.curation.editing import EditSettings

    result = build_gensynth(GenSynthConfig(
        out="build/gensynth", coco="coco", limit=100,
        edit=EditSettings(steps=100), model=ModelConfig(device="cuda", batch_size=8),
    ))
    print(result.sources_kept, result.quality["contrast_set"]["recall@5"])
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.builders.gensynth.consistency import EditMaking, check_edit_settings
from contrastkit.builders.gensynth.notes import filter_notes, start_notes
from contrastkit.builders.gensynth.quality import run_quality_checks
from contrastkit.builders.gensynth.settings import (
    DEFAULTS,
    RECORDED,
    GenSynthSettings,
    command_for,
    resolve_settings,
)
from contrastkit.builders.gensynth.shards import Shard
from contrastkit.builders.manifest import CONTRAST_SET, IMAGE_FORMATS, MANIFEST, SUMMARY
from contrastkit.builders.stages import DEFAULT_EMBEDDER, Stage
from contrastkit.config import ModelConfig, require
from contrastkit.curation.editing import EditSettings
from contrastkit.curation.editor_families import parse_editor_spec
from contrastkit.curation.knn_filter import (
    BACKENDS,
    DEFAULT_K,
    DEVICES,
    Backend,
    Device,
    resolve_backend,
)
from contrastkit.distributed import Engine, check_engine
from contrastkit.errors import ConfigError
from contrastkit.interfaces import ImageTextScorer, ProgressFactory, progress_stage
from contrastkit.io import check_writable

if TYPE_CHECKING:
    from contrastkit.builders.gensynth.ray import RayCropEmbedder, RayWindowEditor

__all__ = [
    "DEFAULTS",
    "DEFAULT_EMBEDDER",
    "RECORDED",
    "GenSynthConfig",
    "GenSynthResult",
    "GenSynthSettings",
    "Stage",
    "build_gensynth",
    "stage_command",
]


def _path(value: Any) -> Path | None:
    return None if value is None else Path(value)


@dataclass(frozen=True)
class GenSynthConfig:
    """What :func:`build_gensynth` does (strings are taken as paths).

    A rerun on a build folder (one stage again, a resumed build) uses the settings the
    build recorded (``settings`` in ``build_summary.json``; :data:`RECORDED`) for every
    field of those left ``None``; a field that is set wins, and is recorded in turn. A
    field neither set nor recorded takes the paper's default (:data:`DEFAULTS`).

    Attributes:
        out: The build folder (created; reruns resume).
        stage: ``all`` (default), or one of ``edit``, ``filter``, ``select``.
        coco: COCO folder with ``annotations/`` and images (the edit stage needs it).
        split: COCO split (default: the only one).
        limit: Edit the first ``limit`` selected sources only.
        min_box_side: Smallest person box side, in pixels (default 0).
        editor: The editor spec: ``PREFIX:TARGET`` of an editor family (``ip2p``,
            ``sdxl-ip2p``, ``flux-kontext``, ``qwen-image-edit``;
            :mod:`~contrastkit.curation.editor_families`), ``PREFIX:`` alone for its
            default model, or an InstructPix2Pix folder / Hub id (default
            ``timbrooks/instruct-pix2pix``). Edit settings neither given nor recorded
            take the family's defaults (the paper's for ``ip2p``); settings recorded
            with another family are not reused.
        embedder: CLIP-like model spec for the filter and the quality checks (default
            CLIP ViT-B/32).
        edit: Instructions, guidance scales, steps, resolution, margin, seed of the edits
            (the seed also seeds the selection): an :class:`EditSettings` (all of them),
            or a mapping of some of its fields (the others as recorded, else default).
        instructions: A table (``gender``, ``instruction``) whose instructions replace
            ``edit.instructions``.
        k, tau_real, tau_gender: The KNN filter's ``K``, ``τ_R``, ``τ_G`` (Eq. 4-5;
            default 50, 0.08, 0.5).
        backend: Nearest-neighbour search: ``auto`` (FAISS when installed, else NumPy on
            the CPU, torch on CUDA), ``faiss``, ``numpy`` or ``torch``.
        knn_device: Where the search runs: ``auto`` (CUDA when a GPU is visible),
            ``cpu`` or ``cuda`` (every visible GPU: FAISS with ``faiss-gpu``, else an
            exact torch GEMM + top-k search). The build summary's ``filter`` entry
            records the backend, device and GPU count that ran.
        quality: Run the Sec. 4.3 quality checks after the select stage.
        pool: Folder of images to retrieve among in the checks (e.g. COCO val2017).
        pool_limit: Use the first ``pool_limit`` images of ``pool``.
        quality_sample: Score at most this many images of each set in the checks,
            drawn with the edit seed (default: all; the paper-scale ``all_edits`` set
            holds 184k edits).
        model: Device, dtype, batch size (edits per forward pass; also the embedder's)
            and download permission of both models.
        shard: ``(K, N)``, ``"K/N"`` or a :class:`~contrastkit.builders.gensynth.Shard`:
            this worker edits only shard ``K`` of ``N`` (sources by SHA-256 of their id),
            in ``out/shards/K-of-N``, and with the filter stage only embeds its crops
            there; the KNN decisions and the selection run on ``out`` after
            :func:`~contrastkit.builders.gensynth.merge_shards`. ``select`` is refused.
        image_format: How edits are stored: ``webp`` (default), ``png`` or ``jpeg``.
        image_quality: WebP / JPEG quality, 0-100 (default 90; PNG ignores it).
        engine: Where the editing and the embedding run: ``local`` (this process, the
            default) or ``ray`` (Ray Data actor pools, one GPU per actor when the
            cluster has GPUs; :mod:`contrastkit.builders.gensynth.ray`). This
            process writes every file either way: same build folder, and a run of one
            engine can be resumed by the other. Needs ``pip install "contrastkit[ray]"``.
        ray_address: With ``engine="ray"``: the cluster (``auto``, ``ray://head:10001``);
            None starts a local Ray instance for the run and stops it afterwards.
    """

    out: Path
    stage: Stage = Stage.ALL
    coco: Path | None = None
    split: str | None = None
    limit: int | None = None
    min_box_side: float | None = None
    editor: str | None = None
    embedder: str | None = None
    edit: EditSettings | Mapping[str, Any] | None = None
    instructions: Path | None = None
    k: int | None = None
    tau_real: float | None = None
    tau_gender: float | None = None
    backend: Backend = "auto"
    knn_device: Device = "auto"
    quality: bool = True
    pool: Path | None = None
    pool_limit: int | None = None
    quality_sample: int | None = None
    model: ModelConfig = field(default_factory=lambda: ModelConfig(batch_size=8))
    shard: Shard | None = None
    image_format: str | None = None
    image_quality: int | None = None
    engine: Engine = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        require(
            self.image_format is None or self.image_format in IMAGE_FORMATS,
            "image_format",
            f"must be one of {', '.join(IMAGE_FORMATS)}, not {self.image_format!r}",
        )
        require(
            self.image_quality is None or 0 <= self.image_quality <= 100,
            "image_quality",
            f"must be in 0-100, not {self.image_quality}",
        )
        set_field(self, "out", Path(self.out))
        for name in ("coco", "instructions", "pool"):
            set_field(self, name, _path(getattr(self, name)))
        try:
            set_field(self, "stage", Stage(self.stage))
        except ValueError as error:
            choices = ", ".join(s.value for s in Stage)
            raise ConfigError(f"stage: {self.stage!r} is not one of {choices}") from error
        if self.shard is not None:
            set_field(self, "shard", Shard.parse(self.shard))
            require(
                self.stage is not Stage.SELECT,
                "shard",
                "a shard runs the edit stage and embeds its edits; the filter decisions "
                "and the selection need every edit: run them on the build folder after "
                "`contrastkit build merge`",
            )
        if isinstance(self.edit, Mapping):
            unknown = sorted(set(self.edit) - {f.name for f in fields(EditSettings)})
            require(not unknown, "edit", f"not edit settings: {', '.join(unknown)}")
            set_field(self, "edit", dict(self.edit))
        else:
            require(
                self.edit is None or isinstance(self.edit, EditSettings),
                "edit",
                "must be an EditSettings, a mapping of some of its fields, or None",
            )
        require(isinstance(self.model, ModelConfig), "model", "must be a ModelConfig")
        if self.editor is not None:
            require(bool(self.editor.strip()), "editor", "names no editor model")
            parse_editor_spec(self.editor)  # an unknown family prefix fails here
        require(self.limit is None or self.limit >= 1, "limit", f"must be >= 1, not {self.limit}")
        require(
            self.min_box_side is None or self.min_box_side >= 0,
            "min_box_side",
            f"must be >= 0, not {self.min_box_side}",
        )
        require(self.k is None or self.k >= 1, "k", f"must be >= 1, not {self.k}")
        require(self.backend in BACKENDS, "backend", f"must be one of {', '.join(BACKENDS)}")
        require(
            self.knn_device in DEVICES,
            "knn_device",
            f"must be one of {', '.join(DEVICES)}, not {self.knn_device!r}",
        )
        if self.knn_device == "cuda" and self.stage.runs(Stage.FILTER):
            try:  # before any editing: a missing GPU fails now, not hours later
                resolve_backend(self.backend, "cuda", k=self.k or DEFAULT_K)
            except ConfigError as error:
                raise ConfigError(f"knn_device (--knn-device): {error}") from error
        for name in ("pool_limit", "quality_sample"):
            value = getattr(self, name)
            require(value is None or value >= 1, name, f"must be >= 1, not {value}")
        check_engine(self.engine, self.ray_address)
        if self.needs_embedder and self.embedder is not None:
            from contrastkit.models import check_dual

            check_dual(self.embedder)

    @property
    def needs_embedder(self) -> bool:
        """Whether the run loads the embedder (filter stage, or quality checks)."""
        return self.stage.runs(Stage.FILTER) or (self.runs_select and self.quality)

    @property
    def runs_select(self) -> bool:
        """Whether the run selects (never in a shard: that runs after the merge)."""
        return self.stage.runs(Stage.SELECT) and self.shard is None

    @property
    def work_folder(self) -> Path:
        """The folder this run works in: ``out``, or its shard's folder."""
        return self.out if self.shard is None else self.shard.folder(self.out)

    def chosen(self) -> tuple[str, ...]:
        """The recorded options this config sets (:data:`RECORDED` fields, and
        ``edit.<field>`` for the edit settings it sets), in that order."""
        names = [name for name in RECORDED if getattr(self, name) is not None]
        if isinstance(self.edit, EditSettings):
            names += [f"edit.{f.name}" for f in fields(EditSettings)]
        elif isinstance(self.edit, Mapping):
            names += [f"edit.{name}" for name in self.edit]
        if self.instructions is not None and "edit.instructions" not in names:
            names.append("edit.instructions")
        return tuple(names)

    def settings(self) -> GenSynthSettings:
        """The settings this run uses: each option as set here, else as the build folder
        recorded (:func:`~contrastkit.builders.gensynth.recorded_settings`), else the
        default. Reads the build summary and the instructions table; loads nothing
        (:func:`~contrastkit.builders.gensynth.settings.resolve_settings`).

        Raises:
            ConfigError: the edit stage without a COCO folder (neither ``coco`` nor a
                recorded one); a recorded option that is not valid.
            DataFormatError: a malformed build summary or instructions table.
        """
        return resolve_settings(self)


def stage_command(out: Path, stage: Stage | str, settings: GenSynthSettings | None = None) -> str:
    """The command that runs ``stage`` on the build folder ``out``, with the options it
    needs that are not the defaults (the embedder, the filter's thresholds, the pool of
    the checks), from ``settings`` or else from what the folder recorded."""
    stage = Stage(stage)
    if settings is None:
        settings = GenSynthConfig(out=out, stage=Stage.SELECT, quality=False).settings()
    return command_for(out, stage, settings)


@dataclass(frozen=True)
class GenSynthResult:
    """What :func:`build_gensynth` did.

    Attributes:
        out: The build folder.
        stages: The stages that ran, in order (``edit``, ``filter``, ``select``).
        summary: ``build_summary.json`` after the run: ``edit``, ``filter``, ``select``
            and ``quality`` entries, those of earlier runs included (an entry made
            before a later stage changed its inputs carries ``stale``: why).
        summary_path, manifest, contrast_set: Where the summary, the edit manifest and
            the contrast set are (``contrast_set`` is ``None`` before any selection).
        sources_kept: Sources with one accepted edit of each gender, when the select
            stage ran (``None`` otherwise); 0 means an empty contrast set.
        quality: The Sec. 4.3 checks of this run (``None`` when they did not run).
        shard: ``"K/N"`` for a shard worker's run (then ``summary``, ``summary_path``
            and ``manifest`` are those of the shard folder ``out/shards/K-of-N``).
        settings: The settings the run used (recorded ones included).
        notes: What the run told its ``notify`` callback (warnings and hints).
    """

    out: Path
    stages: tuple[str, ...]
    summary: dict[str, Any]
    summary_path: Path
    manifest: Path
    contrast_set: Path | None
    sources_kept: int | None
    quality: dict[str, Any] | None
    shard: str | None = None
    settings: GenSynthSettings | None = None
    notes: tuple[str, ...] = ()


def build_gensynth(
    config: GenSynthConfig,
    *,
    progress: ProgressFactory | None = None,
    notify: Callable[[str], None] | None = None,
) -> GenSynthResult:
    """Build (or resume) a GenSynth contrast set: edit COCO people with the editor
    (InstructPix2Pix by default, or another editor family), filter the edits with the
    KNN test, keep one masculine and one feminine edit per
    image, and check the result (GenSynth Sec. 4.1-4.3).

    Everything that fails fast runs before the slow work: the build folder is writable,
    the settings resolve (:meth:`GenSynthConfig.settings`), the editor and the embedder
    are found on this machine (not loaded), and only then is COCO parsed and is anything
    edited or embedded.

    Args:
        config: What to build (:class:`GenSynthConfig`).
        progress: ``progress(label)`` -> a context manager yielding ``update(done,
            total)``, one per stage (:class:`contrastkit.interfaces.ProgressFactory`).
        notify: Called with each warning or hint as it arises: the options taken from
            the build's record, a random-weight editor or embedder (at the start), few
            accepted edits (after the filter). Also kept in ``notes`` of the result.

    Raises:
        ResourceError: the build folder cannot be written (checked before anything runs).
        ConfigError: a bad pool folder, or a model spec of the wrong kind.
        DataFormatError: a malformed COCO folder, instructions table or build file.
        ModelNotFoundError: the editor or the embedder is not on this machine.
        StateError: a stage that needs an earlier one's output (filter before edit).
    """
    if config.engine == "ray":
        from contrastkit.distributed import ray_session

        with ray_session(config.ray_address):  # one Ray session for every stage
            return _build(config, progress, notify)
    return _build(config, progress, notify)


def _build(
    config: GenSynthConfig,
    progress: ProgressFactory | None,
    notify: Callable[[str], None] | None,
) -> GenSynthResult:
    """The stages of :func:`build_gensynth` (in the Ray session with ``engine="ray"``)."""
    from contrastkit.builders import gensynth as builder
    from contrastkit.builders.quality import list_pool_images
    from contrastkit.curation.editing import load_editor, locate_editor
    from contrastkit.models import locate_model

    out = config.out
    work = config.work_folder
    check_writable(out, "the GenSynth build folder")
    run = config.settings()
    # Settings that would make other edits than those the folder holds: refused now
    check_edit_settings(work, EditMaking(run.editor, run.edit, run.image_format, run.image_quality))
    notes: list[str] = []

    def note(text: str) -> None:
        notes.append(text)
        if notify is not None:
            notify(text)

    # Fail fast: the models are found (not loaded) before COCO is parsed or anything runs.
    if config.stage.runs(Stage.EDIT):
        locate_editor(run.editor, download=config.model.download)
    if config.needs_embedder:
        locate_model(run.embedder, config.model)
    for text in start_notes(config, run):
        note(text)
    checks = config.quality and config.runs_select
    pool = list_pool_images(run.pool, run.pool_limit) if checks and run.pool else None
    record = run.to_json()
    stages: list[str] = []
    if config.stage.runs(Stage.EDIT):
        assert run.coco is not None  # settings() checked it
        # The inputs next: a malformed COCO folder (a box that is not finite or not in
        # its image, a file name outside the folder) fails before any model loads. The
        # parsed split is kept where the edit stage reads it again.
        from contrastkit.builders.coco import read_coco_cached

        read_coco_cached(run.coco, work, run.split)
        editor = _editor(run, config) if config.engine == "ray" else load_editor(
            run.editor, config.model
        )  # fmt: skip
        with progress_stage(progress, "editing") as update:
            builder.run_edit_stage(
                builder.EditStageConfig(
                    run.coco, out, run.edit, split=run.split, limit=run.limit,
                    min_box_side=run.min_box_side,
                    edits_per_call=config.model.batch_size * len(run.edit.text_guidance_scales),
                    shard=config.shard, image_format=run.image_format,
                    image_quality=run.image_quality, record=record,
                ),
                editor, progress=update,
            )  # fmt: skip
        del editor  # free its memory before the embedder loads
        stages.append("edit")
    else:
        builder.record_settings(work, record)
    local = config.needs_embedder and (config.engine == "local" or checks)
    scorer = _load_scorer(run.embedder, config.model) if local else None
    encoder = _embedder(run, config) if config.engine == "ray" else scorer  # embeds the crops
    if config.stage.runs(Stage.FILTER) and config.shard is not None:
        assert encoder is not None
        with progress_stage(progress, "embedding") as update:
            builder.embed_build(
                work, encoder, batch_size=config.model.batch_size, progress=update,
            )  # fmt: skip
        stages.append("embed")
    elif config.stage.runs(Stage.FILTER):
        assert encoder is not None
        with progress_stage(progress, "embedding") as update:
            filtered = builder.run_filter_stage(
                out, encoder, builder.FilterSettings(
                    k=run.k, tau_real=run.tau_real, tau_gender=run.tau_gender,
                    backend=config.backend, device=config.knn_device,
                ),
                progress=update,
            )  # fmt: skip
        stages.append("filter")
        editor_spec = (builder.read_summary(out).get("edit") or {}).get("editor", run.editor)
        for text in filter_notes(out, run, {**filtered, "editor_spec": editor_spec}):
            note(text)
    quality: dict[str, Any] | None = None
    sources_kept: int | None = None
    if config.runs_select:
        sources_kept = builder.run_select_stage(out, seed=run.edit.seed)["sources_kept"]
        stages.append("select")
        if checks:
            assert scorer is not None
            quality = run_quality_checks(
                out, scorer, pool, sample=run.quality_sample, seed=run.edit.seed
            )
    contrast = out / CONTRAST_SET
    return GenSynthResult(
        out=out,
        stages=tuple(stages),
        summary=builder.read_summary(work),
        summary_path=work / SUMMARY,
        manifest=work / MANIFEST,
        contrast_set=contrast if contrast.exists() and config.shard is None else None,
        sources_kept=sources_kept,
        quality=quality,
        shard=None if config.shard is None else str(config.shard),
        settings=run,
        notes=tuple(notes),
    )


def _editor(run: GenSynthSettings, config: GenSynthConfig) -> RayWindowEditor:
    from contrastkit.builders.gensynth.ray import RayWindowEditor

    return RayWindowEditor(run.editor, config.model)


def _embedder(run: GenSynthSettings, config: GenSynthConfig) -> RayCropEmbedder | None:
    from contrastkit.builders.gensynth.ray import RayCropEmbedder

    return RayCropEmbedder(run.embedder, config.model) if config.needs_embedder else None


def _load_scorer(spec: str, model: ModelConfig) -> ImageTextScorer:
    from contrastkit.models import load_scorer

    return load_scorer(spec, model)
