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

import shlex
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit.builders.gensynth.quality import run_quality_checks
from contrastkit.builders.gensynth.shards import Shard
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_IMAGE_QUALITY,
    IMAGE_FORMATS,
    MANIFEST,
    SUMMARY,
)
from contrastkit.builders.stages import DEFAULT_EMBEDDER, Stage
from contrastkit.config import ModelConfig, require
from contrastkit.curation.editing import DEFAULT_EDITOR, EditSettings
from contrastkit.curation.editor_families import parse_editor_spec
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
from contrastkit.schema import Gender

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


#: The options a build records (``settings`` in its summary) and a later run on the same
#: folder reuses unless it is given them: config field -> command-line flag. The edit
#: settings (:class:`EditSettings`) are recorded as a whole and reused field by field.
#: ``limit`` is not: it says how much of the build to do now (a trial on a few sources,
#: then the rest), like ``stage``; nor are the device, batch size and engine.
RECORDED: dict[str, str] = {
    "coco": "--coco",
    "split": "--split",
    "min_box_side": "--min-box-side",
    "editor": "--editor",
    "embedder": "--embedder",
    "k": "--k",
    "tau_real": "--tau-real",
    "tau_gender": "--tau-gender",
    "image_format": "--image-format",
    "image_quality": "--image-quality",
    "pool": "--pool",
    "pool_limit": "--pool-limit",
    "quality_sample": "--quality-sample",
}

#: The command-line flag of each :class:`EditSettings` field (``feather`` has none).
EDIT_FLAGS: dict[str, str] = {
    "instructions": "--instructions",
    "text_guidance_scales": "--scales",
    "image_guidance_scale": "--image-guidance",
    "steps": "--steps",
    "resolution": "--resolution",
    "margin": "--margin",
    "seed": "--seed",
    "composite": "--composite",
    "mask_dilation": "--mask-dilation",
}

#: What a recorded option is when neither given nor recorded (the paper's settings).
DEFAULTS: dict[str, Any] = {
    "coco": None,
    "split": None,
    "min_box_side": 0.0,
    "editor": DEFAULT_EDITOR,
    "embedder": DEFAULT_EMBEDDER,
    "k": DEFAULT_K,
    "tau_real": DEFAULT_TAU_REAL,
    "tau_gender": DEFAULT_TAU_GENDER,
    "image_format": DEFAULT_IMAGE_FORMAT,
    "image_quality": DEFAULT_IMAGE_QUALITY,
    "pool": None,
    "pool_limit": None,
    "quality_sample": None,
}


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
        default. Reads the build summary and the instructions table; loads nothing.

        Raises:
            ConfigError: the edit stage without a COCO folder (neither ``coco`` nor a
                recorded one); a recorded option that is not valid.
            DataFormatError: a malformed build summary or instructions table.
        """
        from contrastkit.builders.gensynth import recorded_settings
        from contrastkit.curation.editing import read_instructions

        recorded = recorded_settings(self.work_folder)
        if self.shard is not None and not recorded:
            recorded = recorded_settings(self.out)
        values: dict[str, Any] = {"limit": self.limit}
        from_build: list[str] = []
        for name in RECORDED:
            given = getattr(self, name)
            if given is not None:
                values[name] = given
            elif recorded.get(name) is not None:
                values[name] = recorded[name]
                from_build.append(name)
            else:
                values[name] = DEFAULTS[name]
        for name in ("coco", "pool"):
            values[name] = _path(values[name])
        family = parse_editor_spec(values["editor"])[0]
        edit = _recorded_edit(recorded.get("edit"), self.work_folder)
        if (
            recorded.get("editor") is not None
            and _family_prefix(recorded["editor"]) != family.prefix
        ):
            edit = {}  # another editor family's settings: this one starts from its own
        defaults = EditSettings.for_family(family)
        if isinstance(self.edit, EditSettings):
            settings = self.edit
        else:
            given_edit = dict(self.edit or {})
            if "instructions" in given_edit and isinstance(given_edit["instructions"], Mapping):
                given_edit["instructions"] = {
                    Gender(g).value: list(v) for g, v in given_edit["instructions"].items()
                }
            if "text_guidance_scales" in given_edit:
                given_edit["text_guidance_scales"] = list(given_edit["text_guidance_scales"])
            from_build += [f"edit.{name}" for name in edit if name not in given_edit]
            try:
                settings = _edit_settings({**edit, **given_edit}, self.work_folder, defaults)
            except ConfigError as error:  # the same error, its option named as on the CLI
                raise _named_with_flag(error) from error.__cause__
        if self.instructions is not None:
            settings = replace(settings, instructions=read_instructions(self.instructions))
            from_build = [name for name in from_build if name != "edit.instructions"]
        require(
            settings.resolution % family.multiple == 0,
            "resolution (--resolution)",
            f"the {family.prefix} editor needs a multiple of {family.multiple}, not "
            f"{settings.resolution}",
        )
        if self.stage.runs(Stage.EDIT):
            require(
                values["coco"] is not None,
                "coco",
                "the edit stage needs --coco DIR, a COCO folder with annotations/ and "
                "images (none given, and the build folder recorded none)",
            )
        try:
            resolved = GenSynthSettings(edit=settings, **values)
        except ConfigError as error:
            named = _named_with_flag(error)
            if not from_build:
                raise named from error.__cause__
            raise ConfigError(
                f"{named} (options from {self.work_folder / SUMMARY}: {', '.join(from_build)})"
            ) from error
        if self.needs_embedder and self.embedder is None:
            from contrastkit.models import check_dual

            check_dual(resolved.embedder)
        return replace(resolved, from_build=tuple(from_build), chosen=self.chosen())


def _named_with_flag(error: ConfigError) -> ConfigError:
    """``error`` (``field: reason``) with the field's command-line flag beside its name:
    ``text_guidance_scales (--scales): ...``."""
    name, sep, reason = str(error).partition(": ")
    flag = RECORDED.get(name) or EDIT_FLAGS.get(name)
    if not sep or flag is None or flag.lstrip("-").replace("-", "_") == name:
        return error if not sep or flag is None else ConfigError(f"{flag}: {reason}")
    return ConfigError(f"{name} ({flag}): {reason}")


def _recorded_edit(data: Any, folder: Path) -> dict[str, Any]:
    """The recorded edit settings (JSON), checked; ``{}`` when none were recorded.

    Raises:
        DataFormatError: naming the build summary, for a record that is not valid edit
            settings.
    """
    from contrastkit.errors import DataFormatError

    if data is None:
        return {}
    try:
        _edit_settings(data, folder)
    except ConfigError as error:
        raise DataFormatError(folder / SUMMARY, None, "settings.edit", str(error)) from error
    return dict(data)


def _family_prefix(spec: Any) -> str | None:
    """The editor family of a recorded editor spec (``None`` for one that does not parse)."""
    try:
        return parse_editor_spec(str(spec))[0].prefix
    except ConfigError:
        return None


def _edit_settings(data: Any, folder: Path, defaults: EditSettings | None = None) -> EditSettings:
    from contrastkit.errors import DataFormatError

    try:
        if not isinstance(data, Mapping):
            raise ValueError("not a JSON object")
        return EditSettings.from_json(data, defaults)
    except ConfigError:
        raise
    except ValueError as error:
        raise DataFormatError(folder / SUMMARY, None, "settings.edit", str(error)) from error


@dataclass(frozen=True)
class GenSynthSettings:
    """The settings a GenSynth run uses (:meth:`GenSynthConfig.settings`): every
    recorded option resolved, as stored under ``settings`` in ``build_summary.json``.

    Attributes:
        coco, split, limit, min_box_side, editor, embedder, k, tau_real, tau_gender,
            image_format, image_quality, pool, pool_limit, quality_sample: as in
            :class:`GenSynthConfig`.
        edit: The edit settings (instructions included).
        from_build: The options taken from the build folder's record (field names;
            ``edit.<field>`` for edit settings), not given to this run.
        chosen: The options given to this run.
    """

    coco: Path | None
    split: str | None
    limit: int | None
    min_box_side: float
    editor: str
    embedder: str
    edit: EditSettings
    k: int
    tau_real: float
    tau_gender: float
    image_format: str
    image_quality: int
    pool: Path | None
    pool_limit: int | None
    quality_sample: int | None
    from_build: tuple[str, ...] = ()
    chosen: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checks = (
            ("limit", self.limit is None or (isinstance(self.limit, int) and self.limit >= 1)),
            ("min_box_side", isinstance(self.min_box_side, int | float) and self.min_box_side >= 0),
            ("editor", isinstance(self.editor, str) and bool(self.editor.strip())),
            ("embedder", isinstance(self.embedder, str) and bool(self.embedder.strip())),
            ("k", isinstance(self.k, int) and self.k >= 1),
            ("tau_real", isinstance(self.tau_real, int | float)),
            ("tau_gender", isinstance(self.tau_gender, int | float)),
            ("image_format", self.image_format in IMAGE_FORMATS),
            ("image_quality", isinstance(self.image_quality, int)
             and 0 <= self.image_quality <= 100),
            ("pool_limit", self.pool_limit is None or (isinstance(self.pool_limit, int)
                                                        and self.pool_limit >= 1)),
            ("quality_sample", self.quality_sample is None
             or (isinstance(self.quality_sample, int) and self.quality_sample >= 1)),
        )  # fmt: skip
        for name, ok in checks:
            require(ok, name, f"{getattr(self, name)!r} is not a valid value")
        require(
            not (self.edit.composite == "mask" and self.image_format == "jpeg"),
            "image_format",
            "jpeg has no alpha channel, which --composite mask stores the person's pixels "
            "in: use webp or png",
        )

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (the ``settings`` entry of the build summary)."""
        data: dict[str, Any] = {name: getattr(self, name) for name in RECORDED}
        data["limit"] = self.limit  # what this run did (not reused: see RECORDED)
        for name in ("coco", "pool"):
            value = data[name]
            data[name] = None if value is None else str(Path(value).absolute())
        data["edit"] = self.edit.to_json()
        data["chosen"] = list(self.chosen)
        return data

    def flags(self, names: Sequence[str]) -> list[str]:
        """The command-line options that give ``names`` (fields, ``edit.<field>``) their
        values here, e.g. ``["--embedder", "open_clip:...", "--k", "10"]``."""
        args: list[str] = []
        for name in names:
            if name.startswith("edit."):
                key = name.removeprefix("edit.")
                flag = EDIT_FLAGS.get(key)
                value: Any = getattr(self.edit, key)
                if flag is None or key == "instructions":
                    continue  # a table, not a value (and feather has no flag)
                if key == "text_guidance_scales":
                    value = ",".join(f"{v:g}" for v in value)
            else:
                flag, value = RECORDED.get(name, f"--{name.replace('_', '-')}"), getattr(self, name)
            if value is None:
                continue
            args += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
        return args

    def differing(self, names: Sequence[str]) -> list[str]:
        """Those of ``names`` (fields) whose value is not the default."""
        return [name for name in names if getattr(self, name) != DEFAULTS[name]]


def stage_command(out: Path, stage: Stage | str, settings: GenSynthSettings | None = None) -> str:
    """The command that runs ``stage`` on the build folder ``out``, with the options it
    needs that are not the defaults (the embedder, the filter's thresholds, the pool of
    the checks), from ``settings`` or else from what the folder recorded."""
    stage = Stage(stage)
    if settings is None:
        settings = GenSynthConfig(out=out, stage=Stage.SELECT, quality=False).settings()
    names = ["embedder"]
    if stage is Stage.FILTER:
        names += ["k", "tau_real", "tau_gender"]
    elif stage is Stage.SELECT:
        names += ["pool", "pool_limit", "quality_sample"]
    flags = settings.flags(settings.differing(names))
    return " ".join(
        shlex.quote(part)
        for part in ["contrastkit", "build", "gensynth", "--out", str(out), "--stage", stage.value,
                     *flags]
    )  # fmt: skip


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


#: Below this share of accepted edits the run says how to lower the thresholds.
FEW_ACCEPTED = 0.05


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


def _random_weights(spec: str) -> bool:
    from contrastkit.tiny.marker import spec_has_random_weights

    return spec_has_random_weights(spec)


def _start_notes(config: GenSynthConfig, run: GenSynthSettings) -> list[str]:
    """What to say before any work: the recorded options in use, random weights."""
    notes: list[str] = []
    used: set[str] = set()  # the options the stages of this run use
    if config.stage.runs(Stage.EDIT):
        used |= {"coco", "split", "limit", "min_box_side", "editor", "image_format",
                 "image_quality", *(f"edit.{f.name}" for f in fields(EditSettings))}  # fmt: skip
    if config.needs_embedder:
        used.add("embedder")
    if config.stage.runs(Stage.FILTER) and config.shard is None:
        used |= {"k", "tau_real", "tau_gender"}
    if config.runs_select:
        used |= {"edit.seed"} | (
            {"pool", "pool_limit", "quality_sample"} if config.quality else set()
        )
    taken = [n for n in run.from_build if n in used]
    defaults = EditSettings.for_family(parse_editor_spec(run.editor)[0])
    differing = run.differing([n for n in taken if not n.startswith("edit.")]) + [
        n for n in taken
        if n.startswith("edit.") and getattr(run.edit, n[5:]) != getattr(defaults, n[5:])
    ]  # fmt: skip
    if differing:
        shown = " ".join(run.flags(differing)) or ", ".join(differing)
        notes.append(
            f"settings recorded by the build in {config.work_folder} (give an option to "
            f"change it): {shown}"
        )
    thresholds = f"--tau-real {run.tau_real:g} --tau-gender {run.tau_gender:g}"
    if config.stage.runs(Stage.EDIT) and _random_weights(run.editor):
        notes.append(
            f"warning: the editor {run.editor} has random weights (a tiny test model): its "
            f"edits are noise, and the filter will accept few or none of them at "
            f"{thresholds}; for a pipeline check give --tau-real -1 --tau-gender -1 "
            f"(accept every edit) and few --steps at a small --resolution (this run: "
            f"{run.edit.steps} steps at {run.edit.resolution} px per edit)"
        )
    if config.stage.runs(Stage.FILTER) and _random_weights(run.embedder):
        advice = (
            "they accept every edit here (a pipeline check)"
            if run.tau_real < 0 and run.tau_gender < 0
            else "give --tau-real -1 --tau-gender -1 to accept every edit in a pipeline check"
        )
        notes.append(
            f"warning: the embedder {run.embedder} has random weights: its embeddings mean "
            f"nothing, so the filter's thresholds ({thresholds}) are meaningless; {advice}"
        )
    return notes


def _filter_notes(out: Path, run: GenSynthSettings, summary: Mapping[str, Any]) -> list[str]:
    """After the filter: how to accept more edits when (almost) none were accepted."""
    edits, accepted = int(summary["edits"]), int(summary["accepted"])
    if not edits or accepted >= FEW_ACCEPTED * edits:
        return []
    lower = stage_command(out, Stage.FILTER, replace(run, tau_real=-1.0, tau_gender=-1.0))
    note = (
        f"only {accepted} of {edits} edits accepted (P_R > --tau-real {run.tau_real:g} and "
        f"P_G > --tau-gender {run.tau_gender:g}); lower --tau-real / --tau-gender and "
        f"rerun the filter alone (no edit is made again), e.g. `{lower}`"
    )
    randoms = [
        f"the {what} {spec}" for what, spec in (("editor", summary.get("editor_spec")),
                                                ("embedder", run.embedder))
        if spec and _random_weights(str(spec))
    ]  # fmt: skip
    if randoms or summary.get("encoder_random_weights"):
        who = " and ".join(randoms) or f"the embedder {run.embedder}"
        note += (
            f"; {who} {'have' if len(randoms) > 1 else 'has'} random weights, so the "
            "thresholds are meaningless: -1 accepts every edit"
        )
    return [note]


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
    for text in _start_notes(config, run):
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
                run.coco, out, editor, run.edit, split=run.split, limit=run.limit,
                min_box_side=run.min_box_side, progress=update,
                edits_per_call=config.model.batch_size * len(run.edit.text_guidance_scales),
                shard=config.shard, image_format=run.image_format,
                image_quality=run.image_quality, record=record,
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
                out, encoder, k=run.k, tau_real=run.tau_real,
                tau_gender=run.tau_gender, backend=config.backend,
                device=config.knn_device, progress=update,
            )  # fmt: skip
        stages.append("filter")
        editor_spec = (builder.read_summary(out).get("edit") or {}).get("editor", run.editor)
        for text in _filter_notes(out, run, {**filtered, "editor_spec": editor_spec}):
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
