"""The settings of a GenSynth run: the options a build records and how a run resolves them.

A build records the options of its latest run (``settings`` in ``build_summary.json``:
the :data:`RECORDED` fields and the :class:`~contrastkit.curation.editing.EditSettings`);
a later run on the same folder takes every option it is not given from that record, else
the paper's default (:data:`DEFAULTS`, the editor family's for the edit settings).
:func:`resolve_settings` does that for a
:class:`~contrastkit.builders.gensynth.job.GenSynthConfig` (its ``settings()``) and gives
a :class:`GenSynthSettings`; :func:`command_for` spells the command of one stage with them.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol, TypedDict

from contrastkit.builders.manifest import (
    DEFAULT_IMAGE_FORMAT,
    DEFAULT_IMAGE_QUALITY,
    IMAGE_FORMATS,
    SUMMARY,
)
from contrastkit.builders.stages import DEFAULT_EMBEDDER, Stage
from contrastkit.config import require
from contrastkit.curation.editing import DEFAULT_EDITOR, EditSettings, EditSettingsJSON
from contrastkit.curation.editor_families import EditorFamily, parse_editor_spec
from contrastkit.curation.knn_filter import DEFAULT_K, DEFAULT_TAU_GENDER, DEFAULT_TAU_REAL
from contrastkit.errors import ConfigError
from contrastkit.schema import Gender

__all__ = [
    "DEFAULTS",
    "EDIT_FLAGS",
    "RECORDED",
    "BuildRequest",
    "GenSynthSettings",
    "GenSynthSettingsJSON",
    "command_for",
    "resolve_settings",
]


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


class BuildRequest(Protocol):
    """What resolving a run's settings, and the notes about them, read of the run's
    config: a :class:`~contrastkit.builders.gensynth.job.GenSynthConfig` (described here
    rather than imported, as the job imports this module), and each option of
    :data:`RECORDED` by name."""

    @property
    def out(self) -> Path: ...
    @property
    def stage(self) -> Stage: ...
    @property
    def shard(self) -> object | None: ...
    @property
    def edit(self) -> EditSettings | Mapping[str, Any] | None: ...
    @property
    def instructions(self) -> Path | None: ...
    @property
    def embedder(self) -> str | None: ...
    @property
    def quality(self) -> bool: ...
    @property
    def limit(self) -> int | None: ...
    @property
    def work_folder(self) -> Path: ...
    @property
    def needs_embedder(self) -> bool: ...
    @property
    def runs_select(self) -> bool: ...
    def chosen(self) -> tuple[str, ...]: ...


def resolve_settings(config: BuildRequest) -> GenSynthSettings:
    """The settings ``config`` runs with: each option as set there, else as its build
    folder recorded (:func:`~contrastkit.builders.gensynth.recorded_settings`; a shard
    without a record of its own takes the build folder's), else the default.

    Raises:
        ConfigError: the edit stage without a COCO folder (neither ``coco`` nor a
            recorded one); a recorded option that is not valid.
        DataFormatError: a malformed build summary or instructions table.
    """
    from contrastkit.builders.gensynth import recorded_settings

    recorded = recorded_settings(config.work_folder)
    if config.shard is not None and not recorded:
        recorded = recorded_settings(config.out)
    values, from_build = _given_or_recorded(config, recorded)
    family = parse_editor_spec(values["editor"])[0]
    edit, edit_from_build = _resolve_edit(config, recorded, family)
    from_build += edit_from_build
    require(
        edit.resolution % family.multiple == 0,
        "resolution (--resolution)",
        f"the {family.prefix} editor needs a multiple of {family.multiple}, not {edit.resolution}",
    )
    if config.stage.runs(Stage.EDIT):
        require(
            values["coco"] is not None,
            "coco",
            "the edit stage needs --coco DIR, a COCO folder with annotations/ and "
            "images (none given, and the build folder recorded none)",
        )
    resolved = _checked_settings(values, edit, from_build, config.work_folder)
    if config.needs_embedder and config.embedder is None:
        from contrastkit.models import check_dual

        check_dual(resolved.embedder)
    return replace(resolved, from_build=tuple(from_build), chosen=config.chosen())


def _given_or_recorded(
    config: BuildRequest, recorded: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The :data:`RECORDED` options (and ``limit``) as given, else recorded, else default;
    and the names of those taken from the record."""
    values: dict[str, Any] = {"limit": config.limit}
    from_build: list[str] = []
    for name in RECORDED:
        given = getattr(config, name)
        if given is not None:
            values[name] = given
        elif recorded.get(name) is not None:
            values[name] = recorded[name]
            from_build.append(name)
        else:
            values[name] = DEFAULTS[name]
    for name in ("coco", "pool"):
        values[name] = None if values[name] is None else Path(values[name])
    return values, from_build


def _resolve_edit(
    config: BuildRequest, recorded: Mapping[str, Any], family: EditorFamily
) -> tuple[EditSettings, list[str]]:
    """The edit settings: given, else recorded (with the same editor family), else the
    family's defaults, field by field; and the ``edit.<field>`` names taken from the
    record. An instructions table (``config.instructions``) replaces the instructions."""
    from contrastkit.curation.editing import read_instructions

    edit = _recorded_edit(recorded.get("edit"), config.work_folder)
    if recorded.get("editor") is not None and _family_prefix(recorded["editor"]) != family.prefix:
        edit = {}  # another editor family's settings: this one starts from its own
    defaults = EditSettings.for_family(family)
    from_build: list[str] = []
    if isinstance(config.edit, EditSettings):
        settings = config.edit
    else:
        given_edit = _given_edit(config.edit)
        from_build = [f"edit.{name}" for name in edit if name not in given_edit]
        try:
            settings = _edit_settings({**edit, **given_edit}, config.work_folder, defaults)
        except ConfigError as error:  # the same error, its option named as on the CLI
            raise _named_with_flag(error) from error.__cause__
    if config.instructions is not None:
        settings = replace(settings, instructions=read_instructions(config.instructions))
        from_build = [name for name in from_build if name != "edit.instructions"]
    return settings, from_build


def _given_edit(edit: Mapping[str, Any] | None) -> dict[str, Any]:
    """The edit settings a config gives, in the JSON form the record has."""
    given = dict(edit or {})
    if "instructions" in given and isinstance(given["instructions"], Mapping):
        given["instructions"] = {Gender(g).value: list(v) for g, v in given["instructions"].items()}
    if "text_guidance_scales" in given:
        given["text_guidance_scales"] = list(given["text_guidance_scales"])
    return given


def _checked_settings(
    values: Mapping[str, Any], edit: EditSettings, from_build: Sequence[str], folder: Path
) -> GenSynthSettings:
    """:class:`GenSynthSettings` of ``values``; an invalid value names its flag, and the
    build summary when some options came from it."""
    try:
        return GenSynthSettings(edit=edit, **values)
    except ConfigError as error:
        named = _named_with_flag(error)
        if not from_build:
            raise named from error.__cause__
        raise ConfigError(
            f"{named} (options from {folder / SUMMARY}: {', '.join(from_build)})"
        ) from error


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


class GenSynthSettingsJSON(TypedDict):
    """The ``settings`` entry of a GenSynth build summary
    (:meth:`GenSynthSettings.to_json`): the :data:`RECORDED` options (folders as
    absolute paths), this run's ``limit``, the edit settings and the options given."""

    coco: str | None
    split: str | None
    min_box_side: float
    editor: str
    embedder: str
    k: int
    tau_real: float
    tau_gender: float
    image_format: str
    image_quality: int
    pool: str | None
    pool_limit: int | None
    quality_sample: int | None
    limit: int | None
    edit: EditSettingsJSON
    chosen: list[str]


@dataclass(frozen=True)
class GenSynthSettings:
    """The settings a GenSynth run uses
    (:meth:`~contrastkit.builders.gensynth.job.GenSynthConfig.settings`): every
    recorded option resolved, as stored under ``settings`` in ``build_summary.json``.

    Attributes:
        coco, split, limit, min_box_side, editor, embedder, k, tau_real, tau_gender,
            image_format, image_quality, pool, pool_limit, quality_sample: as in
            :class:`~contrastkit.builders.gensynth.job.GenSynthConfig`.
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

    def to_json(self) -> GenSynthSettingsJSON:
        """JSON-ready (the ``settings`` entry of the build summary): the :data:`RECORDED`
        options in that order, then ``limit`` (what this run did, not reused), ``edit``
        and ``chosen``."""
        return {
            "coco": None if self.coco is None else str(Path(self.coco).absolute()),
            "split": self.split,
            "min_box_side": self.min_box_side,
            "editor": self.editor,
            "embedder": self.embedder,
            "k": self.k,
            "tau_real": self.tau_real,
            "tau_gender": self.tau_gender,
            "image_format": self.image_format,
            "image_quality": self.image_quality,
            "pool": None if self.pool is None else str(Path(self.pool).absolute()),
            "pool_limit": self.pool_limit,
            "quality_sample": self.quality_sample,
            "limit": self.limit,
            "edit": self.edit.to_json(),
            "chosen": list(self.chosen),
        }

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


def command_for(out: Path, stage: Stage | str, settings: GenSynthSettings) -> str:
    """The command that runs ``stage`` on the build folder ``out``, with the options it
    needs whose values in ``settings`` are not the defaults (the embedder, the filter's
    thresholds, the pool of the checks)."""
    stage = Stage(stage)
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
