"""The GenSynth build as one job: edit, filter, select, quality checks (seeds/001, Sec. 4).

:func:`build_gensynth` loads the editor (InstructPix2Pix) and the CLIP-like embedder, runs
the builder's stages on a build folder (:mod:`contrastkit.builders.gensynth`: edit
Sec. 4.1, KNN filter Sec. 4.2, selection) and then the Sec. 4.3 / Tab. 2 quality checks
(:mod:`contrastkit.evaluators.quality`), and returns the build summary. Every stage
resumes: a rerun skips finished edits and reuses cached embeddings.

Example::

    from contrastkit.apps.gensynth import GenSynthConfig, build_gensynth
    from contrastkit.config import ModelConfig
    from contrastkit.curation.editing import EditSettings

    result = build_gensynth(GenSynthConfig(
        out="build/gensynth", coco="coco", limit=100,
        edit=EditSettings(steps=100), model=ModelConfig(device="cuda", batch_size=8),
    ))
    print(result.sources_kept, result.quality["contrast_set"]["recall@5"])
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.apps.quality import run_quality_checks
from contrastkit.apps.stages import DEFAULT_EMBEDDER, Stage
from contrastkit.builders.gensynth.shards import Shard
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_IMAGE_QUALITY,
    IMAGE_FORMATS,
    MANIFEST,
    SUMMARY,
)
from contrastkit.config import ModelConfig, require
from contrastkit.curation.editing import DEFAULT_EDITOR, EditSettings
from contrastkit.curation.knn_filter import (
    BACKENDS,
    DEFAULT_K,
    DEFAULT_TAU_GENDER,
    DEFAULT_TAU_REAL,
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
    from contrastkit.apps.gensynth_ray import RayCropEmbedder, RayWindowEditor

__all__ = ["DEFAULT_EMBEDDER", "GenSynthConfig", "GenSynthResult", "Stage", "build_gensynth"]


def _path(value: Any) -> Path | None:
    return None if value is None else Path(value)


@dataclass(frozen=True)
class GenSynthConfig:
    """What :func:`build_gensynth` does (strings are taken as paths).

    Attributes:
        out: The build folder (created; reruns resume).
        stage: ``all`` (default), or one of ``edit``, ``filter``, ``select``.
        coco: COCO folder with ``annotations/`` and images (the edit stage needs it).
        split: COCO split (default: the only one).
        limit: Edit the first ``limit`` selected sources only.
        min_box_side: Smallest person box side, in pixels.
        editor: InstructPix2Pix: a saved pipeline folder or a Hub id.
        embedder: CLIP-like model spec for the filter and the quality checks.
        edit: Instructions, guidance scales, steps, resolution, margin, seed of the edits
            (the seed also seeds the selection).
        instructions: A table (``gender``, ``instruction``) whose instructions replace
            ``edit.instructions``.
        k, tau_real, tau_gender: The KNN filter's ``K``, ``τ_R``, ``τ_G`` (Eq. 4-5).
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
            cluster has GPUs; :mod:`contrastkit.apps.gensynth_ray`). This
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
    min_box_side: float = 0.0
    editor: str = DEFAULT_EDITOR
    embedder: str = DEFAULT_EMBEDDER
    edit: EditSettings = field(default_factory=EditSettings)
    instructions: Path | None = None
    k: int = DEFAULT_K
    tau_real: float = DEFAULT_TAU_REAL
    tau_gender: float = DEFAULT_TAU_GENDER
    backend: Backend = "auto"
    knn_device: Device = "auto"
    quality: bool = True
    pool: Path | None = None
    pool_limit: int | None = None
    quality_sample: int | None = None
    model: ModelConfig = field(default_factory=lambda: ModelConfig(batch_size=8))
    shard: Shard | None = None
    image_format: str = DEFAULT_IMAGE_FORMAT
    image_quality: int = DEFAULT_IMAGE_QUALITY
    engine: Engine = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        set_field = object.__setattr__
        require(
            self.image_format in IMAGE_FORMATS,
            "image_format",
            f"must be one of {', '.join(IMAGE_FORMATS)}, not {self.image_format!r}",
        )
        require(
            0 <= self.image_quality <= 100,
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
        require(isinstance(self.edit, EditSettings), "edit", "must be an EditSettings")
        require(isinstance(self.model, ModelConfig), "model", "must be a ModelConfig")
        if self.stage.runs(Stage.EDIT):
            require(
                self.coco is not None,
                "coco",
                "the edit stage needs --coco DIR, a COCO folder with annotations/ and images",
            )
            require(bool(self.editor.strip()), "editor", "names no editor model")
        require(self.limit is None or self.limit >= 1, "limit", f"must be >= 1, not {self.limit}")
        require(self.min_box_side >= 0, "min_box_side", f"must be >= 0, not {self.min_box_side}")
        require(self.k >= 1, "k", f"must be >= 1, not {self.k}")
        require(self.backend in BACKENDS, "backend", f"must be one of {', '.join(BACKENDS)}")
        require(
            self.knn_device in DEVICES,
            "knn_device",
            f"must be one of {', '.join(DEVICES)}, not {self.knn_device!r}",
        )
        if self.knn_device == "cuda" and self.stage.runs(Stage.FILTER):
            try:  # before any editing: a missing GPU fails now, not hours later
                resolve_backend(self.backend, "cuda", k=self.k)
            except ConfigError as error:
                raise ConfigError(f"knn_device (--knn-device): {error}") from error
        for name in ("pool_limit", "quality_sample"):
            value = getattr(self, name)
            require(value is None or value >= 1, name, f"must be >= 1, not {value}")
        check_engine(self.engine, self.ray_address)
        if self.needs_embedder:
            from contrastkit.evaluators.models import check_dual

            check_dual(self.embedder)

    @property
    def needs_embedder(self) -> bool:
        """Whether the run loads the embedder (filter stage, or quality checks)."""
        return self.stage.runs(Stage.FILTER) or (self.runs_select and self.quality)

    @property
    def runs_select(self) -> bool:
        """Whether the run selects (never in a shard: that runs after the merge)."""
        return self.stage.runs(Stage.SELECT) and self.shard is None


@dataclass(frozen=True)
class GenSynthResult:
    """What :func:`build_gensynth` did.

    Attributes:
        out: The build folder.
        stages: The stages that ran, in order (``edit``, ``filter``, ``select``).
        summary: ``build_summary.json`` after the run: ``edit``, ``filter``, ``select``
            and ``quality`` entries, those of earlier runs included.
        summary_path, manifest, contrast_set: Where the summary, the edit manifest and
            the contrast set are (``contrast_set`` is ``None`` before any selection).
        sources_kept: Sources with one accepted edit of each gender, when the select
            stage ran (``None`` otherwise); 0 means an empty contrast set.
        quality: The Sec. 4.3 checks of this run (``None`` when they did not run).
        shard: ``"K/N"`` for a shard worker's run (then ``summary``, ``summary_path``
            and ``manifest`` are those of the shard folder ``out/shards/K-of-N``).
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


def build_gensynth(
    config: GenSynthConfig, *, progress: ProgressFactory | None = None
) -> GenSynthResult:
    """Build (or resume) a GenSynth contrast set: edit COCO people with InstructPix2Pix,
    filter the edits with the KNN test, keep one masculine and one feminine edit per
    image, and check the result (GenSynth Sec. 4.1-4.3).

    Args:
        config: What to build (:class:`GenSynthConfig`).
        progress: ``progress(label)`` -> a context manager yielding ``update(done,
            total)``, one per stage (:mod:`contrastkit.apps.progress`).

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
            return _build(config, progress)
    return _build(config, progress)


def _build(config: GenSynthConfig, progress: ProgressFactory | None) -> GenSynthResult:
    """The stages of :func:`build_gensynth` (in the Ray session with ``engine="ray"``)."""
    from contrastkit.builders import gensynth as builder
    from contrastkit.curation.editing import load_editor, read_instructions
    from contrastkit.evaluators.quality import list_pool_images

    out = config.out
    check_writable(out, "the GenSynth build folder")
    settings = config.edit
    if config.instructions is not None:
        settings = replace(settings, instructions=read_instructions(config.instructions))
    checks = config.quality and config.runs_select
    pool = list_pool_images(config.pool, config.pool_limit) if checks and config.pool else None
    stages: list[str] = []
    if config.stage.runs(Stage.EDIT):
        assert config.coco is not None  # the config checked it
        # The inputs first: a malformed COCO folder (a box that is not finite or not in
        # its image, a file name outside the folder) fails before any model loads. The
        # parsed split is kept where the edit stage reads it again.
        from contrastkit.builders.coco import read_coco_cached

        cache = out if config.shard is None else config.shard.folder(out)
        read_coco_cached(config.coco, cache, config.split)
        editor = _editor(config) if config.engine == "ray" else load_editor(
            config.editor, config.model
        )  # fmt: skip
        with progress_stage(progress, "editing") as update:
            builder.run_edit_stage(
                config.coco, out, editor, settings, split=config.split, limit=config.limit,
                min_box_side=config.min_box_side, progress=update,
                edits_per_call=config.model.batch_size * len(settings.text_guidance_scales),
                shard=config.shard, image_format=config.image_format,
                image_quality=config.image_quality,
            )  # fmt: skip
        del editor  # free its memory before the embedder loads
        stages.append("edit")
    local = config.needs_embedder and (config.engine == "local" or checks)
    scorer = _load_scorer(config.embedder, config.model) if local else None
    encoder = _embedder(config) if config.engine == "ray" else scorer  # embeds the crops
    if config.stage.runs(Stage.FILTER) and config.shard is not None:
        assert encoder is not None
        with progress_stage(progress, "embedding") as update:
            builder.embed_build(
                config.shard.folder(out), encoder, batch_size=config.model.batch_size,
                progress=update,
            )  # fmt: skip
        stages.append("embed")
    elif config.stage.runs(Stage.FILTER):
        assert encoder is not None
        with progress_stage(progress, "embedding") as update:
            builder.run_filter_stage(
                out, encoder, k=config.k, tau_real=config.tau_real,
                tau_gender=config.tau_gender, backend=config.backend,
                device=config.knn_device, progress=update,
            )  # fmt: skip
        stages.append("filter")
    quality: dict[str, Any] | None = None
    sources_kept: int | None = None
    if config.runs_select:
        sources_kept = builder.run_select_stage(out, seed=settings.seed)["sources_kept"]
        stages.append("select")
        if checks:
            assert scorer is not None
            quality = run_quality_checks(
                out, scorer, pool, sample=config.quality_sample, seed=config.edit.seed
            )
    contrast = out / CONTRAST_SET
    work = out if config.shard is None else config.shard.folder(out)
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
    )


def _editor(config: GenSynthConfig) -> RayWindowEditor:
    from contrastkit.apps.gensynth_ray import RayWindowEditor

    return RayWindowEditor(config.editor, config.model)


def _embedder(config: GenSynthConfig) -> RayCropEmbedder | None:
    from contrastkit.apps.gensynth_ray import RayCropEmbedder

    return RayCropEmbedder(config.embedder, config.model) if config.needs_embedder else None


def _load_scorer(spec: str, model: ModelConfig) -> ImageTextScorer:
    from contrastkit.evaluators.models import load_scorer

    return load_scorer(spec, model)
