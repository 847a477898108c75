"""Dataset kinds: what a path holds, told in one place.

contrastkit reads four kinds of data: VisoGender-style URL sets (official-format TSVs,
folders of them, their exports), GenSynth / GenSwap contrast sets (and the originals
exports beside them), VLStereoSet-style stereotype probe sets, and the Visual Genome /
COCO folders of the zero-shot disparity analysis. Each is a :class:`DatasetKind` record:
how it is recognised, which evaluation task reads it, and which reader gives the rows
whose image URLs ``urls check`` and ``urls maintain`` look after, and how it is exported
(``contrastkit export PATH``): the export job, the Hugging Face features of each config
and the dataset card rendered from the export's metadata.

:func:`detect_kind` reads the kind an export recorded in its ``build_metadata.json``
first and sniffs the path (cheaply: headers and folder layout) only when nothing is
recorded. Other packages add kinds through the ``contrastkit.kinds`` entry point group
(an entry point gives a :class:`DatasetKind` or an iterable of them); they are tried
before the built-in kinds.

Example:
    >>> from contrastkit.kinds import detect_kind
    >>> detect_kind("visogender_OP.tsv").name  # doctest: +SKIP
    'visogender'
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.plugins import is_import_path, resolve
from contrastkit.probes import is_probe_set
from contrastkit.registry import Registry
from contrastkit.tsv import read_visogender_tsv

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "METADATA_FILE",
    "REGISTRY",
    "DatasetKind",
    "detect_kind",
    "detect_kinds",
    "detect_source",
    "kinds",
    "recorded_kind",
    "register_kind",
]

#: The entry point group third-party packages add dataset kinds through.
ENTRY_POINT_GROUP = "contrastkit.kinds"

#: What an export records about itself, its ``kind`` among it.
METADATA_FILE = "build_metadata.json"


@dataclass(frozen=True)
class DatasetKind:
    """One kind of data.

    Attributes:
        name: ``visogender``, ``contrast``, ``stereotype``, ``zero-shot`` or a plugin's.
        title: how messages name one ("a stereotype probe set").
        plural: how messages name several ("stereotype probe sets").
        detect: ``"module:function"`` called as ``function(path) -> bool``: whether the
            path (a file or folder) holds this kind, from its header or layout alone.
        recorded: the ``kind`` values of ``build_metadata.json`` that mean this kind.
        task: the evaluation task that reads it (``contrastkit evaluate``), if any.
        url_table: ``"module:function"`` called as ``function(path)``: the file's rows
            with their image URLs (``row.idx``, ``row.url``), for ``urls check`` and
            ``urls maintain``; ``None``: the kind holds no URLs to look after.
        rewrites_urls: whether ``urls maintain`` may rewrite the file (record error
            codes, fix moved URLs); otherwise its rows are checked and recorded only.
        export: ``"module:function"`` called as ``function(config)`` with a
            :class:`contrastkit.builders.export.ExportConfig`: writes the export folder and
            returns its ``ExportResult`` (:func:`contrastkit.builders.export.export`
            dispatches here); ``None``: the kind is not exported.
        features: ``"module:function"`` called as ``function(config_name, *,
            with_images)``: the ``datasets.Features`` of one config of its export
            (VisoGender's ``OP`` and ``OO`` differ).
        card: ``"module:function"`` called as ``function(metadata)``: the dataset card
            (``README.md``) of an export, from its ``build_metadata.json``.
        builds: ``"module:function"`` called as ``function(path) -> bool``: whether
            ``path`` is a build folder of this kind that the export reads (a GenSynth
            build before its export), tried before :attr:`detect` by
            :func:`detect_source`.
        source: the distribution that registered it.

    Every function is the function itself or its import path, ``"module:function"``
    (imported when first called: what the built-in kinds use for functions in modules
    above this one, or heavy to import).
    """

    name: str
    title: str
    plural: str
    detect: str | Callable[..., Any]
    recorded: tuple[str, ...] = ()
    task: str | None = None
    url_table: str | Callable[..., Any] | None = None
    rewrites_urls: bool = False
    export: str | Callable[..., Any] | None = None
    features: str | Callable[..., Any] | None = None
    card: str | Callable[..., Any] | None = None
    builds: str | Callable[..., Any] | None = None
    source: str = "contrastkit"

    def __post_init__(self) -> None:
        if not self.name or self.name != self.name.strip():
            raise ConfigError(f"dataset kind name {self.name!r}: a word")
        for field_name in ("detect", "url_table", "export", "features", "card", "builds"):
            path = getattr(self, field_name)
            usable = callable(path) or (isinstance(path, str) and is_import_path(path))
            if path is not None and not usable:
                raise ConfigError(
                    f"dataset kind {self.name!r}: {field_name} must be a function or "
                    f"'module:function', not {path!r}"
                )

    def _function(self, path: str | Callable[..., Any]) -> Callable[..., Any]:
        if callable(path):
            return path
        return resolve(path, f"dataset kind {self.name!r} ({self.source})")

    def matches(self, path: Path) -> bool:
        """Whether ``path`` holds this kind (its :attr:`detect` function)."""
        return bool(self._function(self.detect)(Path(path)))

    def read_url_table(self, path: Path) -> Any:
        """The rows of ``path`` with their URLs (:attr:`url_table`).

        Raises:
            ConfigError: the kind holds no URLs.
        """
        if self.url_table is None:
            raise ConfigError(f"{path}: {self.title} holds no image URLs to check")
        return self._function(self.url_table)(Path(path))

    def run_export(self, config: Any) -> Any:
        """Export with :attr:`export` (an ``ExportConfig`` in, an ``ExportResult`` out).

        Raises:
            ConfigError: the kind is not exported.
        """
        if self.export is None:
            raise ConfigError(f"{self.title} is not exported (no export for this kind)")
        return self._function(self.export)(config)

    def export_features(self, config_name: str, *, with_images: bool = True) -> Any:
        """The ``datasets.Features`` of config ``config_name`` of its export."""
        if self.features is None:
            raise ConfigError(f"{self.title} declares no exported features")
        return self._function(self.features)(config_name, with_images=with_images)

    def render_card(self, metadata: dict[str, Any]) -> str:
        """The dataset card of an export of this kind, from its metadata."""
        if self.card is None:
            raise ConfigError(f"{self.title} declares no dataset card")
        return str(self._function(self.card)(metadata))

    def holds_build(self, path: Path) -> bool:
        """Whether ``path`` is a build folder of this kind (:attr:`builds`)."""
        return self.builds is not None and bool(self._function(self.builds)(Path(path)))


def is_contrast_export(path: Path) -> bool:
    """A ``contrastkit export contrast`` folder: its dataset is ``saved/contrast``."""
    return (Path(path) / "saved" / "contrast").is_dir()


def is_contrast_build(path: Path) -> bool:
    """A finished ``contrastkit build gensynth`` / ``build genswap`` folder: it holds
    ``contrast_set.jsonl`` (its select stage's output) and ``build_summary.json``."""
    path = Path(path)
    return (path / "contrast_set.jsonl").is_file() and (path / "build_summary.json").is_file()


def is_grouped_folder(path: Path) -> bool:
    """A Visual Genome folder (``objects.json``) or a COCO folder
    (``annotations/instances_*.json``), as the zero-shot analysis reads them."""
    path = Path(path)
    if not path.is_dir():
        return False
    return (path / "objects.json").is_file() or any((path / "annotations").glob("instances_*.json"))


def is_visogender(path: Path) -> bool:
    """The fallback: a file (official-format TSV), a folder of TSVs, or any export."""
    return True


#: The built-in kinds, in the order they are sniffed (VisoGender last: anything else is
#: read as official-format TSVs, whose reader says precisely what is wrong).
BUILT_IN: tuple[DatasetKind, ...] = (
    DatasetKind(
        "stereotype", "a stereotype probe set",
        "stereotype probe sets (a probe TSV / JSONL, a `contrastkit build stereoset` folder "
        "or its export)", is_probe_set,
        recorded=("stereotype",), task="stereotype",
        url_table="contrastkit.curation.integrity:ProbeTable.read",
        export="contrastkit.builders.export:export_stereotype_kind",
        features="contrastkit.builders.export:stereotype_config_features",
        card="contrastkit.data_cards:render_card",
    ),
    DatasetKind(
        "contrast", "a contrast set", "contrast sets", is_contrast_export,
        recorded=("gensynth", "genswap", "originals"), task="contrast",
        export="contrastkit.builders.export:export_contrast_kind",
        features="contrastkit.builders.export:contrast_config_features",
        card="contrastkit.builders.export:contrast_card",
        builds=is_contrast_build,
    ),
    DatasetKind(
        "zero-shot", "a Visual Genome or COCO folder", "Visual Genome or COCO folders",
        is_grouped_folder,
        task="zero-shot",
    ),
    DatasetKind(
        "visogender", "a VisoGender-style set", "VisoGender-style data",
        is_visogender,
        recorded=("visogender",), task="visogender",
        url_table=read_visogender_tsv, rewrites_urls=True,
        export="contrastkit.builders.export:export_visogender_kind",
        features="contrastkit.builders.export:visogender_config_features",
        card="contrastkit.data_cards:render_card",
    ),
)  # fmt: skip

#: The registry of dataset kinds (:class:`~contrastkit.registry.Registry`): the built-in
#: ones, then those of installed plugins, then those of :func:`register_kind`.
#: :func:`kinds` gives them in the order they are sniffed.
REGISTRY: Registry[DatasetKind] = Registry(
    "dataset kind", ENTRY_POINT_GROUP, DatasetKind, lambda one: one.name, BUILT_IN
)


def register_kind(kind: DatasetKind, *, replace_existing: bool = False) -> DatasetKind:
    """Add a dataset kind (what the ``contrastkit.kinds`` entry points do); it is sniffed
    before the built-in kinds.

    Raises:
        ConfigError: its name is taken and ``replace_existing`` is false.
    """
    return REGISTRY.register(kind, replace_existing=replace_existing)


def _usable(kind: DatasetKind) -> DatasetKind:
    """``kind``, unless a plugin claimed its name too (:meth:`Registry.check`)."""
    REGISTRY.check(kind.name)
    return kind


def kinds() -> dict[str, DatasetKind]:
    """Every registered kind by name, in the order they are sniffed: those not built in
    first (a plugin's or a script's kind is more specific than the built-in ones, in the
    registry's order), then the built-in ones in theirs (a built-in kind replaced keeps
    its place; VisoGender, the fallback that takes anything, last)."""
    registered = REGISTRY.all()
    built_in = {kind.name for kind in BUILT_IN}
    ordered = {name: kind for name, kind in registered.items() if name not in built_in}
    ordered.update((name, kind) for name, kind in registered.items() if name in built_in)
    return ordered


def recorded_kind(path: str | Path) -> DatasetKind | None:
    """The kind ``path``'s ``build_metadata.json`` records, or ``None`` when there is no
    such file (or it records a kind no registered one claims).

    Raises:
        DataFormatError: the file exists but is not a JSON object.
    """
    from contrastkit.records import read_json_object

    file = Path(path) / METADATA_FILE
    if not file.is_file():
        return None
    recorded = read_json_object(file).get("kind")
    for kind in kinds().values():
        if isinstance(recorded, str) and recorded in kind.recorded:
            return _usable(kind)
    return None


def detect_kind(path: str | Path) -> DatasetKind:
    """The kind of data at ``path``: the recorded kind, else the first kind whose
    :attr:`~DatasetKind.detect` recognises it (VisoGender, the fallback, last)."""
    path = Path(path)
    recorded = recorded_kind(path) if path.is_dir() else None
    if recorded is not None:
        return recorded
    for kind in kinds().values():
        if kind.matches(path):
            return _usable(kind)
    raise DataFormatError(path, None, None, "not a dataset contrastkit reads")  # unreachable


def detect_source(path: str | Path) -> DatasetKind:
    """The kind an export of ``path`` writes (``contrastkit export PATH``): the kind an
    export folder records, else the first kind with a build folder there
    (:attr:`~DatasetKind.builds`) or whose :attr:`~DatasetKind.detect` recognises it."""
    path = Path(path)
    recorded = recorded_kind(path) if path.is_dir() else None
    if recorded is not None:
        return recorded
    for kind in kinds().values():
        if kind.holds_build(path) or kind.matches(path):
            return _usable(kind)
    raise DataFormatError(path, None, None, "not a dataset contrastkit reads")  # unreachable


def detect_kinds(paths: Sequence[str | Path]) -> DatasetKind:
    """The one kind all of ``paths`` hold.

    Raises:
        ConfigError: they hold different kinds (evaluate them in separate runs).
    """
    found: dict[str, tuple[DatasetKind, list[str]]] = {}
    for path in paths:
        kind = detect_kind(path)
        found.setdefault(kind.name, (kind, []))[1].append(str(path))
    if len(found) > 1:
        groups = [f"{kind.plural} ({', '.join(where)})" for kind, where in found.values()]
        raise ConfigError(f"data: mixes {' with '.join(groups)}; evaluate them in separate runs")
    return next(iter(found.values()))[0]
