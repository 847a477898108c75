"""Export contrastkit datasets as Hugging Face ``datasets``, with build metadata for the card.

:func:`export` is the one export job: it finds the kind of its source
(:func:`contrastkit.kinds.detect_source`: VisoGender-style TSVs, a GenSynth / GenSwap
build folder, a stereotype probe set) and runs that kind's export, whose Hugging Face
features and dataset card the kind declares (:class:`contrastkit.kinds.DatasetKind`).
:func:`export_visogender`, :func:`export_contrast_set` and :func:`export_stereotype` are
the same job with the kind named.

One *config* per table shape: ``OP`` and ``OO`` for VisoGender-style sets (their columns
differ), ``contrast`` for GenSynth / GenSwap contrast sets. Perceived genders and contexts
are ``ClassLabel`` features, images ``Image`` features (bytes embedded), the rest plain
values. Loading either copy back gives the same rows and the same image bytes.

What an export folder holds, and how it is written in bounded memory and replaced
atomically: :mod:`contrastkit.builders.export_folder`. Each built-in kind's export lives
beside it (:mod:`~contrastkit.builders.visogender_export`,
:mod:`~contrastkit.builders.contrast_export` and
:mod:`~contrastkit.builders.contrast_edits`,
:mod:`~contrastkit.builders.stereotype_export`); this module keeps every name they
export, so imports from here keep working.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.builders.contrast_edits import export_edits
from contrastkit.builders.contrast_export import (
    COCO_LICENCE,
    COCO_SOURCES,
    ORIGINALS_NOTE,
    ExportContrastConfig,
    contrast_card,
    contrast_config_features,
    contrast_features,
    export_originals,
    originals_card,
    read_build_summary,
)
from contrastkit.builders.export_folder import (
    CONTEXT_LABELS,
    GENDER_LABELS,
    METADATA_FILE,
    RANDOM_BUILD_NOTE,
    ExportResult,
    SplitRows,
    build_weights,
    check_replaceable,
    load_export,
    public_metadata,
    public_text,
    read_metadata,
    write_export,
)
from contrastkit.builders.manifest import BUILD_LOCK
from contrastkit.builders.stereotype_export import (
    STEREOSET_LICENCE,
    STEREOTYPE_CONFIG,
    ExportStereotypeConfig,
    stereotype_config_features,
    stereotype_features,
    write_stereotype_export,
)
from contrastkit.builders.visogender_export import (
    ExportVisoGenderConfig,
    visogender_config_features,
    visogender_features,
    write_visogender_export,
)
from contrastkit.config import require
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.io import shared_lock
from contrastkit.kinds import DatasetKind, detect_source, kinds

__all__ = [
    "COCO_LICENCE",
    "COCO_SOURCES",
    "CONTEXT_LABELS",
    "GENDER_LABELS",
    "METADATA_FILE",
    "ORIGINALS_NOTE",
    "RANDOM_BUILD_NOTE",
    "STEREOSET_LICENCE",
    "STEREOTYPE_CONFIG",
    "ExportConfig",
    "ExportContrastConfig",
    "ExportResult",
    "ExportStereotypeConfig",
    "ExportVisoGenderConfig",
    "SplitRows",
    "build_weights",
    "check_replaceable",
    "contrast_card",
    "contrast_config_features",
    "contrast_features",
    "export",
    "export_contrast_kind",
    "export_contrast_set",
    "export_originals",
    "export_stereotype",
    "export_stereotype_kind",
    "export_visogender",
    "export_visogender_kind",
    "load_export",
    "originals_card",
    "public_metadata",
    "public_text",
    "read_metadata",
    "stereotype_config_features",
    "stereotype_features",
    "visogender_config_features",
    "visogender_features",
    "write_export",
]


@dataclass(frozen=True)
class ExportConfig:
    """What :func:`export` exports (strings are taken as paths); ``contrastkit export
    PATH --out OUT``. Options a kind does not take must stay at their defaults.

    Attributes:
        source: What to export: official-format OP/OO TSVs (or a folder of them), a
            GenSynth / GenSwap build folder, or a stereotype probe file or ``build
            stereoset`` folder; one path, or several TSVs of one VisoGender-style set.
        out: Export folder (replaced atomically if it exists).
        kind: A :mod:`contrastkit.kinds` name (``visogender``, ``contrast``,
            ``stereotype`` or a plugin's); ``None``: detected from ``source``.
        store: VisoGender-style and stereotype sets: the image store of the rows' URLs.
        checks: VisoGender-style and stereotype sets: a ``urls check --results`` file.
        skip_missing: VisoGender-style and stereotype sets: leave out rows whose image
            is not available instead of failing.
        split: Split name of every config (evaluation sets: ``test``).
        pretty_name: The card's title (``None``: the kind's own).
        license: Licence id for the card (``None``: the kind's own).
        source_description: Contrast sets: what the source photos are (``None``:
            :data:`COCO_SOURCES`).
        source_licence: Contrast sets: the source photos' licence sentence (``None``:
            :data:`COCO_LICENCE`).
        originals: Contrast sets: export the original photos instead of the edits.
        balanced: Contrast sets, with ``originals``: as many masculine as feminine.
        seed: Contrast sets: the seed of the ``balanced`` draw.
    """

    source: tuple[Path, ...]
    out: Path
    kind: str | None = None
    store: Path | None = None
    checks: Path | None = None
    skip_missing: bool = False
    split: str = "test"
    pretty_name: str | None = None
    license: str | None = None
    source_description: str | None = None
    source_licence: str | None = None
    originals: bool = False
    balanced: bool = False
    seed: int = 0

    def __post_init__(self) -> None:
        source: object = self.source
        if isinstance(source, str | Path):  # one path
            source = [source]
        if not isinstance(source, Iterable):
            raise ConfigError(f"source: expected paths, not {source!r}")
        object.__setattr__(self, "source", tuple(Path(p) for p in source))
        object.__setattr__(self, "out", Path(self.out))
        for name in ("store", "checks"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(bool(self.source), "source", "needs a path to export")
        require(self.out not in self.source, "out", f"{self.out} is also the source")
        require(bool(self.split.strip()), "split", "must not be empty")


#: Options that only contrast sets take, and options that only sets of image URLs take.
_CONTRAST_OPTIONS = ("source_description", "source_licence", "originals", "balanced", "seed")
_URL_OPTIONS = ("store", "checks", "skip_missing")


def export(config: ExportConfig) -> ExportResult:
    """Export a dataset as a Hugging Face dataset with its card, whatever its kind.

    The kind is ``config.kind`` or else detected from the source
    (:func:`contrastkit.kinds.detect_source`: a recorded or sniffed kind; a GenSynth /
    GenSwap build folder is a contrast set); that kind's ``export`` function writes the
    folder, with the features and the card the kind declares (:func:`export_visogender`,
    :func:`export_contrast_set`, :func:`export_stereotype` for the built-in kinds).

    Raises:
        ConfigError: an unknown kind, sources of different kinds, a source that is
            already an export, a kind that is not exported (Visual Genome / COCO
            folders), or an option the kind does not take.
        DataFormatError: what the kind's export raises for malformed data.
        ResourceError: the export folder cannot be written (checked first).
    """
    for path in config.source:
        if path.is_dir() and (path / METADATA_FILE).is_file():
            raise ConfigError(
                f"source: {path} is already a contrastkit export (it holds {METADATA_FILE}); "
                "export the TSVs, build folder or probe set it was made from"
            )
    kind = _source_kind(config)
    if kind.export is None:
        exported = [k.plural for k in kinds().values() if k.export is not None]
        raise ConfigError(
            f"source: {', '.join(map(str, config.source))} is {kind.title}, which is not "
            f"exported; contrastkit export takes {', '.join(exported)}"
        )
    result = kind.run_export(config)
    if not isinstance(result, ExportResult):
        raise ConfigError(
            f"dataset kind {kind.name!r} ({kind.source}): its export returned "
            f"{type(result).__name__}, not an ExportResult"
        )
    return result


def _source_kind(config: ExportConfig) -> DatasetKind:
    """``config.kind``, or the one kind of all of ``config.source``."""
    registered = kinds()
    if config.kind is not None:
        if config.kind not in registered:
            raise ConfigError(
                f"kind: {config.kind!r} is not a dataset kind; one of {', '.join(registered)}"
            )
        return registered[config.kind]
    found: dict[str, tuple[DatasetKind, list[str]]] = {}
    for path in config.source:
        kind = detect_source(path)
        found.setdefault(kind.name, (kind, []))[1].append(str(path))
    if len(found) > 1:
        groups = [f"{kind.plural} ({', '.join(where)})" for kind, where in found.values()]
        raise ConfigError(f"source: mixes {' with '.join(groups)}; export them separately")
    return next(iter(found.values()))[0]


def _refuse_options(config: ExportConfig, kind: str, names: tuple[str, ...]) -> None:
    """Refuse any of ``names`` set away from its default: kind ``kind`` does not take it."""
    defaults = ExportConfig(source=config.source, out=config.out)
    for name in names:
        if getattr(config, name) != getattr(defaults, name):
            raise ConfigError(f"{name}: {kinds()[kind].plural} do not take this option")


def _one_source(config: ExportConfig, kind: str) -> Path:
    if len(config.source) != 1:
        raise ConfigError(f"source: {kinds()[kind].title} is one path, not {len(config.source)}")
    return config.source[0]


def _given(config: ExportConfig, *names: str) -> dict[str, Any]:
    """The options among ``names`` that ``config`` gives (not ``None``): the kind's own
    defaults stand for the rest."""
    return {name: getattr(config, name) for name in names if getattr(config, name) is not None}


def export_visogender_kind(config: ExportConfig) -> ExportResult:
    """The ``visogender`` kind's export: the TSVs of ``config.source`` (a folder gives
    its ``*.tsv`` files) through :class:`ExportVisoGenderConfig`."""
    _refuse_options(config, "visogender", _CONTRAST_OPTIONS)
    files: list[Path] = []
    for path in config.source:
        if path.is_dir():
            found = sorted(path.glob("*.tsv"))
            if not found:
                raise DataFormatError(path, None, None, "no .tsv files in this folder")
            files += found
        else:
            files.append(path)
    return write_visogender_export(ExportVisoGenderConfig(
        files=tuple(files), out=config.out, store=config.store, checks=config.checks,
        skip_missing=config.skip_missing, split=config.split,
        **_given(config, "pretty_name", "license"),
    ))  # fmt: skip


def export_contrast_kind(config: ExportConfig) -> ExportResult:
    """The ``contrast`` kind's export: a GenSynth / GenSwap build folder through
    :class:`ExportContrastConfig` (its edits, or with ``originals`` its source photos)."""
    _refuse_options(config, "contrast", _URL_OPTIONS)
    return _export_contrast_locked(ExportContrastConfig(
        build=_one_source(config, "contrast"), out=config.out, split=config.split,
        originals=config.originals, balanced=config.balanced, seed=config.seed,
        **_given(config, "pretty_name", "license", "source_description", "source_licence"),
    ))  # fmt: skip


def export_stereotype_kind(config: ExportConfig) -> ExportResult:
    """The ``stereotype`` kind's export: a probe file or ``build stereoset`` folder
    through :class:`ExportStereotypeConfig`."""
    _refuse_options(config, "stereotype", _CONTRAST_OPTIONS)
    return write_stereotype_export(ExportStereotypeConfig(
        source=_one_source(config, "stereotype"), out=config.out, store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        **_given(config, "pretty_name", "license"),
    ))  # fmt: skip


# ------------------------------------------------------------------ each kind named


def export_visogender(config: ExportVisoGenderConfig) -> ExportResult:
    """Export official-format OP/OO TSVs (configs ``OP`` and ``OO``) to ``config.out``:
    :func:`export` of kind ``visogender``.

    A row's image is a URL (read from ``config.store``) or a local file inside the TSV's
    folder: a relative name, or an absolute path or ``file://`` URL inside that folder.
    Local files are embedded as they are, and the row's ``url`` becomes the file's name
    relative to the TSV's folder, so no path of the exporter's machine is published.

    Raises:
        DataFormatError: a malformed TSV, two files of one context, a local image
            outside the TSV's folder, local images beside URLs without a store, a row
            whose image is not available (unless ``skip_missing``), a malformed checks
            file.
        ResourceError: the export folder cannot be written (checked first).
    """
    return export(ExportConfig(
        source=config.files, out=config.out, kind="visogender", store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        pretty_name=config.pretty_name, license=config.license,
    ))  # fmt: skip


def export_contrast_set(config: ExportContrastConfig) -> ExportResult:
    """Export a GenSynth or GenSwap build folder's contrast set (config ``contrast``).

    Each row is one edited image (the bytes the build wrote; for an edit confined to the
    person mask, its pixels put onto the decoded source photo and stored as lossless
    WebP, so that every pixel outside the dilated mask is the source's own) with its target
    ``gender``, its gender-adjusted ``captions`` (GenSynth Sec. 4.3), the same captions
    made gender-neutral (for retrieval queries), the source's own captions and label, the
    person box, the filter scores ``p_real`` / ``p_gender`` (Eq. 4; GenSynth only) and
    what made the edit (instruction, guidance scales, steps, seed; the donor face for
    GenSwap). The build summary (editor, settings, filter thresholds, acceptance rates,
    quality checks) goes into the metadata and the card. With ``config.originals`` the
    build's original photos are exported instead (:func:`export_originals`). This is
    :func:`export` of kind ``contrast``.

    Raises:
        DataFormatError: the build is not finished (no contrast set or build summary),
            or its contrast set names an edit the manifest or the folder lacks.
        ResourceError: the export folder cannot be written (checked first).
        StateError: a build stage is running on the folder now (it holds the folder's
            lock); while the export reads the folder, a new stage there is refused.
    """
    return export(ExportConfig(
        source=(config.build,), out=config.out, kind="contrast", split=config.split,
        pretty_name=config.pretty_name, license=config.license,
        source_description=config.source_description, source_licence=config.source_licence,
        originals=config.originals, balanced=config.balanced, seed=config.seed,
    ))  # fmt: skip


def _export_contrast_locked(config: ExportContrastConfig) -> ExportResult:
    check_replaceable(config.out)
    # A build that runs a stage now rewrites the summary, the manifest and the contrast
    # set: export a finished state only, and keep new stages out while reading it.
    with shared_lock(config.build / BUILD_LOCK, str(config.build), "export it"):
        return _export_contrast_set(config)


def _export_contrast_set(config: ExportContrastConfig) -> ExportResult:
    """What an export of a build folder does while it holds the folder's lock: read the
    finished build's summary, then export its edits or its original photos."""
    summary, kind = read_build_summary(config.build)
    if config.originals:
        return export_originals(config, summary, kind)
    return export_edits(config, summary, kind)


def export_stereotype(config: ExportStereotypeConfig) -> ExportResult:
    """Export a stereotype probe set (VLStereoSet, Zhou et al. 2022) as config
    ``stereotype`` of a Hugging Face dataset, with a card: :func:`export` of kind
    ``stereotype``.

    Every row is checked first (:func:`contrastkit.probes.read_probes`) and every image
    found before anything is written. :func:`contrastkit.probes.load_probe_set` reads the
    export back into the same rows.

    Raises:
        DataFormatError: a malformed probe file, a row whose image is not available
            (unless ``skip_missing``), a malformed checks file.
        ResourceError: the export folder cannot be written (checked first).
    """
    return export(ExportConfig(
        source=(config.source,), out=config.out, kind="stereotype", store=config.store,
        checks=config.checks, skip_missing=config.skip_missing, split=config.split,
        pretty_name=config.pretty_name, license=config.license,
    ))  # fmt: skip
