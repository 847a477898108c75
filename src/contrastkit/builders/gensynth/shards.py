"""Sharded GenSynth builds: split the edit work over workers, then merge (issue 16).

``contrastkit build gensynth --out OUT --shard K/N`` makes worker ``K`` of ``N`` edit only
the sources whose stable hash (SHA-256 of the source id, modulo ``N``) is ``K - 1``. Each
shard works in its own complete build folder ``OUT/shards/K-of-N/`` (own lock,
``manifest.jsonl``, ``sources.jsonl``, ``edits/``, ``embeddings/``, ``build_summary.json``,
its parsed COCO table ``coco_table.parquet``) plus a ``shard.json`` recording ``K``, ``N``,
the settings and their fingerprint, and each of its sources' position in the full
selection. Workers never write outside their shard folder, so any number of them (on one
machine or several sharing the folder) run at once; two workers of the same shard are
refused by the shard folder's lock (:func:`contrastkit.builders.manifest.holds_build_lock`).
With a shard, the edit stage runs and, when asked for, the embedding half of the filter
stage (:func:`contrastkit.builders.gensynth.filter.embed_build`); the KNN decisions and the
selection need every edit, so they run on ``OUT`` after :func:`merge_shards`.

:func:`merge_shards` (``contrastkit build merge OUT``) combines every ``OUT/shards/*-of-N``
into ``OUT``'s ``manifest.jsonl`` and ``sources.jsonl`` (a record's ``path`` becomes
``shards/K-of-N/edits/...``: no image is copied), in the order a single worker would have
written them (source position in the selection, then :func:`plan_edits` order), and links
the shards' embedding checkpoints into ``OUT/embeddings/<encoder hash>/`` so that the
filter stage on ``OUT`` embeds nothing again. Inconsistent shards are refused with an
error naming the shard folder and what differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, cast

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.gensynth.merging import (
    begin_merge,
    end_merge,
    manifest_before_merge,
    merged_edit_entry,
)
from contrastkit.builders.gensynth.summary import (
    SETTINGS,
    EditEntry,
    ShardFile,
    ShardSelection,
    ShardStorage,
    read_summary,
    update_summary,
)
from contrastkit.builders.manifest import (
    BUILD_LOCK,
    MANIFEST,
    SOURCES,
    EditRecord,
    Manifest,
    read_sources,
    remove_stale_temp_files,
)
from contrastkit.config import require
from contrastkit.curation.editing import EditSettings, plan_edits
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.io import atomic_write_text, exclusive_lock
from contrastkit.records import read_json_object

__all__ = [
    "SHARDS",
    "SHARD_INFO",
    "MergeConfig",
    "MergeReport",
    "Shard",
    "ShardInfo",
    "merge_shards",
    "read_shard_info",
    "write_shard_info",
]

#: The folder of a build folder that holds its shards (``shards/K-of-N``).
SHARDS = "shards"
#: What a shard folder records about itself.
SHARD_INFO = "shard.json"

_NAME = re.compile(r"^(\d+)-of-(\d+)$")


@dataclass(frozen=True)
class Shard:
    """Worker ``index`` of ``count`` (1-based: ``Shard(2, 4)`` is ``--shard 2/4``).

    A source belongs to the shard whose zero-based number is the SHA-256 of its id
    modulo ``count`` (:meth:`owns`): stable across machines, Python versions and runs,
    unlike :func:`hash`.
    """

    index: int
    count: int

    def __post_init__(self) -> None:
        ok = (
            isinstance(self.index, int)
            and isinstance(self.count, int)
            and 1 <= self.index <= self.count
        )
        require(ok, "shard", f"must be K/N with 1 <= K <= N, not {self.index}/{self.count}")

    @classmethod
    def parse(cls, text: str | Shard | tuple[int, int]) -> Shard:
        """``"2/4"`` (or ``(2, 4)``, or a :class:`Shard`) as a shard.

        Raises:
            ConfigError: naming ``shard``, for anything but ``K/N`` with 1 <= K <= N.
        """
        if isinstance(text, Shard):
            return text
        if isinstance(text, tuple) and len(text) == 2:
            return cls(*text)
        match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", str(text))
        if not match:
            raise ConfigError(f"shard: must be K/N (e.g. 2/4), not {text!r}")
        return cls(int(match[1]), int(match[2]))

    @property
    def name(self) -> str:
        """The shard folder's name, ``K-of-N``."""
        return f"{self.index}-of-{self.count}"

    def folder(self, out: str | Path) -> Path:
        """This shard's build folder inside the build folder ``out``."""
        return Path(out) / SHARDS / self.name

    def owns(self, source_id: str) -> bool:
        """Whether ``source_id`` is this shard's to edit."""
        return shard_number(source_id, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_number(source_id: str, count: int) -> int:
    """The 1-based shard of ``count`` that ``source_id`` belongs to (SHA-256 based)."""
    digest = hashlib.sha256(source_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def fingerprint(info: Mapping[str, Any]) -> str:
    """SHA-256 of what must agree between shards (``edit``, ``editor``, ``selection``)."""
    data = {key: info[key] for key in ("edit", "editor", "selection")}
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ShardInfo:
    """What a shard worker records in its ``shard.json`` before it edits anything
    (:func:`write_shard_info`).

    Attributes:
        shard, settings, editor: which shard it is, and what decides its edits.
        selection: the sources' selection (positions compare only where it agrees).
        positions: source id -> position in the full selection, for this shard's sources.
        storage: image format and quality of the edits (recorded, not compared).
    """

    shard: Shard
    settings: EditSettings
    editor: str
    selection: ShardSelection
    positions: Mapping[str, int]
    storage: ShardStorage

    def to_json(self) -> ShardFile:
        """The content of ``shard.json``, with the :func:`fingerprint` of the settings."""
        edit, selection = self.settings.to_json(), self.selection.copy()
        agreed = fingerprint({"edit": edit, "editor": self.editor, "selection": selection})
        return {
            "shard": self.shard.index,
            "shards": self.shard.count,
            "edit": edit,
            "editor": self.editor,
            "selection": selection,
            "storage": self.storage.copy(),
            "fingerprint": agreed,
            "positions": dict(self.positions),
        }


def write_shard_info(folder: Path, shard_info: ShardInfo) -> ShardFile:
    """Write (or check) ``shard.json`` of the shard folder ``folder`` before it edits
    anything; return what it holds.

    Raises:
        StateError: the folder already holds a shard made with other settings (naming
            the setting), or another shard.
    """
    info = shard_info.to_json()
    path = folder / SHARD_INFO
    if path.exists():
        what = _difference(read_shard_info(folder), info)
        if what:
            raise StateError(
                f"{folder}: this shard was started with other settings ({what}); use "
                f"the same settings, or another build folder"
            )
    atomic_write_text(path, json.dumps(info, indent=1, ensure_ascii=False) + "\n")
    return info


def read_shard_info(folder: Path) -> ShardFile:
    """``shard.json`` of a shard folder.

    Raises:
        DataFormatError: missing, not JSON, or without the fields a merge needs.
    """
    path = Path(folder) / SHARD_INFO
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such file (not a shard folder?)")
    info = read_json_object(path)
    for key, kind in (("shard", int), ("shards", int), ("edit", dict), ("editor", str),
                      ("selection", dict), ("positions", dict), ("fingerprint", str)):  # fmt: skip
        if not isinstance(info.get(key), kind):
            raise DataFormatError(path, None, key, f"missing or not a {kind.__name__}")
    return cast(ShardFile, info)  # its keys checked above


def _difference(a: Mapping[str, Any], b: Mapping[str, Any]) -> str:
    """The first of shard / edit settings / editor / selection that differs, as text."""
    for key in ("shard", "shards", "editor"):
        if a.get(key) != b.get(key):
            return f"{key}: {a.get(key)!r} vs {b.get(key)!r}"
    for key in ("edit", "selection"):
        left, right = a.get(key) or {}, b.get(key) or {}
        for name in sorted(set(left) | set(right)):
            if left.get(name) != right.get(name):
                return f"{key} {name}: {left.get(name)!r} vs {right.get(name)!r}"
    return ""


def _settings(info: Mapping[str, Any], path: Path) -> EditSettings:
    try:
        return EditSettings.from_json(info["edit"])
    except ValueError as error:
        raise DataFormatError(path, None, "edit", f"not edit settings ({error})") from error


@dataclass(frozen=True)
class MergeConfig:
    """What :func:`merge_shards` does.

    Attributes:
        out: The build folder whose ``shards/K-of-N`` folders are merged.
        partial: Merge the shards that exist even when some of the ``N`` are missing
            (the report lists them); otherwise a missing shard is an error.
    """

    out: Path
    partial: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "out", Path(self.out))


@dataclass(frozen=True)
class MergeReport:
    """What :func:`merge_shards` did.

    Attributes:
        out: The build folder.
        shards: ``N``.
        merged: The merged shards' numbers ``K``.
        missing: The shards of ``1..N`` not found or never begun (only with ``partial``).
        unfinished: Merged shards with edits still to make (only with ``partial``).
        sources: Sources in ``OUT/sources.jsonl`` with edits from the shards.
        edits: Edits in ``OUT/manifest.jsonl``.
        new_edits: Of those, edits that the manifest did not hold before this merge
            (0 on a rerun with no new shard work: the manifest, filter scores included,
            is left as it was).
        embedding_files: Embedding checkpoints linked into ``OUT/embeddings`` by this run.
        unfiltered: Edits of the merged manifest without a filter decision (the filter
            stage must run when there are any).
    """

    out: Path
    shards: int
    merged: tuple[int, ...]
    missing: tuple[int, ...]
    unfinished: tuple[int, ...]
    sources: int
    edits: int
    new_edits: int
    embedding_files: int
    unfiltered: int = 0

    def to_json(self) -> dict[str, Any]:
        """JSON-ready (stored under ``merge`` in ``build_summary.json``)."""
        return {**asdict(self), "out": str(self.out), "merged": list(self.merged),
                "missing": list(self.missing), "unfinished": list(self.unfinished)}  # fmt: skip


def _shard_folders(out: Path) -> tuple[int, dict[int, Path]]:
    root = out / SHARDS
    if not root.is_dir():
        raise StateError(f"{out}: no shards to merge (no {root}; run `build gensynth --shard`)")
    found: dict[int, Path] = {}
    count: int | None = None
    first: Path | None = None
    for folder in sorted(root.iterdir()):
        if not folder.is_dir():
            continue
        match = _NAME.match(folder.name)
        if not match:
            raise DataFormatError(folder, None, None, "not a shard folder (expected K-of-N)")
        index, n = int(match[1]), int(match[2])
        if count is not None and n != count:
            raise StateError(
                f"{folder}: a shard of {n}, but {first} is a shard of {count}: shards of "
                f"one build must use the same N (remove the folders of the other split)"
            )
        if not 1 <= index <= n:
            raise DataFormatError(folder, None, None, f"shard {index} of {n} does not exist")
        count, first = n, first or folder
        found[index] = folder
    if count is None:
        raise StateError(f"{root}: no shard folders to merge")
    return count, found


@contextlib.contextmanager
def _locked(folders: Mapping[int, Path]) -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for folder in folders.values():
            try:
                stack.enter_context(
                    exclusive_lock(folder / BUILD_LOCK, str(folder), "contrastkit build gensynth")
                )
            except StateError as error:
                raise StateError(
                    f"{error}: that shard is still running; merge when it ends"
                ) from error
        yield


@contextlib.contextmanager
def _out_lock(out: Path) -> Iterator[None]:
    with exclusive_lock(out / BUILD_LOCK, str(out), "contrastkit build"):
        yield


def merge_shards(config: MergeConfig) -> MergeReport:
    """Combine the shard folders ``OUT/shards/K-of-N`` into the build folder ``OUT``.

    Holds ``OUT``'s build lock and every shard folder's lock for the whole merge (a shard
    still running is refused). The merged ``manifest.jsonl`` lists the edits in the order
    a single worker writes them: by source position in the selection (``shard.json``),
    then in :func:`~contrastkit.curation.editing.plan_edits` order; each record's
    ``path`` points into its shard folder (``shards/K-of-N/edits/...``). The shards'
    embedding checkpoints are hard-linked (copied where links are not possible) into
    ``OUT/embeddings/<encoder hash>/`` as ``shard-K-of-N-*.npz``, where
    :func:`~contrastkit.builders.gensynth.read_embeddings` finds them. A rerun after more
    shard work adds the new edits (the filter stage must then run again); a rerun with
    nothing new leaves the manifest, filter scores included, as it is. The build summary
    gets the merged set's ``edit`` entry and the ``merge`` report. The merge is journaled
    (:mod:`~contrastkit.builders.gensynth.merging`): a rerun after a kill at any point
    ends in the state an uninterrupted merge leaves, and until then the filter and select
    stages and the export refuse the folder.

    Raises:
        StateError: no shards; shards of different ``N``; a missing shard (without
            ``partial``); a shard still running; shards made with different edit
            settings, editor or selection; ``OUT``'s manifest holding edits that are not
            from these shards.
        DataFormatError: a malformed ``shard.json`` or shard manifest; a source in the
            wrong shard; an edit id in two shards.
    """
    out = config.out
    if not out.is_dir():
        raise StateError(f"{out}: no such build folder")
    with _out_lock(out):
        count, found = _shard_folders(out)
        with _locked(found):
            # a folder without shard.json: its worker stopped before it began editing
            folders = {k: f for k, f in found.items() if (f / SHARD_INFO).is_file()}
            missing = tuple(k for k in range(1, count + 1) if k not in folders)
            if missing and not config.partial:
                names = ", ".join(Shard(k, count).name for k in missing)
                raise StateError(
                    f"{out / SHARDS}: shards {names} of {count} are missing or never began "
                    f"editing (run them, or merge what exists with --partial)"
                )
            if not folders:
                raise StateError(f"{out / SHARDS}: no shard has begun editing")
            remove_stale_temp_files(out)  # a killed merge's links (not the shards' files)
            return _merge(out, count, folders, missing, config.partial)


def _merge(out: Path, count: int, folders: Mapping[int, Path], missing: tuple[int, ...],
           partial: bool) -> MergeReport:  # fmt: skip
    infos = {k: read_shard_info(folder) for k, folder in folders.items()}
    first_k = min(infos)
    reference = infos[first_k]
    _check_agreement(infos, folders, count)
    settings = _settings(reference, folders[first_k] / SHARD_INFO)
    positions: dict[str, int] = {}
    sources: dict[str, SourceImage] = {}
    records: list[EditRecord] = []
    owner: dict[str, int] = {}
    for k, folder in sorted(folders.items()):
        shard = Shard(k, count)
        positions.update({s: int(p) for s, p in infos[k]["positions"].items()})
        shard_sources = {s.source_id: s for s in read_sources(folder)}
        for record in Manifest(folder).read():
            where = folder / MANIFEST
            if record.edit_id in owner:
                other = Shard(owner[record.edit_id], count).name
                raise DataFormatError(
                    where, None, "edit_id", f"edit {record.edit_id!r} is also in {other}"
                )
            if not shard.owns(record.source_id):
                right = Shard(shard_number(record.source_id, count), count).name
                raise DataFormatError(
                    where, None, "source_id",
                    f"source {record.source_id!r} belongs to shard {right}, not {shard.name}",
                )  # fmt: skip
            if record.source_id not in shard_sources or record.source_id not in positions:
                raise DataFormatError(
                    where, None, "source_id",
                    f"source {record.source_id!r} is not in the shard's {SOURCES} / {SHARD_INFO}",
                )  # fmt: skip
            if not (folder / record.path).is_file():
                continue  # its image went missing: the shard's rerun redoes it
            owner[record.edit_id] = k
            sources[record.source_id] = shard_sources[record.source_id]
            path = f"{SHARDS}/{shard.name}/{record.path}"
            records.append(replace(record, path=path, p_real=None, p_gender=None, accepted=None))
    order: dict[str, int] = {}
    incomplete: dict[int, tuple[int, int]] = {}
    for k in sorted(folders):
        planned = [spec.edit_id for s in infos[k]["positions"] for spec in plan_edits(s, settings)]
        order.update({edit_id: n for n, edit_id in enumerate(planned)})
        done = sum(1 for edit_id in planned if owner.get(edit_id) == k)
        if done < len(planned):
            incomplete[k] = (done, len(planned))
    if incomplete and not partial:
        k, (done, planned_count) = next(iter(incomplete.items()))
        raise StateError(
            f"{folders[k]}: unfinished ({done} of {planned_count} edits; "
            f"{len(incomplete)} unfinished shards in all): rerun it with the same "
            f"`contrastkit build gensynth ... --shard {k}/{count}`, or merge what exists "
            f"with --partial"
        )
    last = len(order)
    records.sort(key=lambda r: (positions[r.source_id], order.get(r.edit_id, last), r.edit_id))
    edit_entry = merged_edit_entry(
        infos, folders, {"sources": len(_planned_sources(infos)), "planned": len(order),
                         "edited": len(records)},
    )  # fmt: skip
    written = _write_merged(out, folders, count, records, [*sorted(
        sources.values(), key=lambda s: positions[s.source_id])])  # fmt: skip
    report = MergeReport(
        out=out,
        shards=count,
        merged=tuple(sorted(folders)),
        missing=missing,
        unfinished=tuple(sorted(incomplete)),
        sources=len(sources),
        edits=len(records),
        new_edits=written.new_edits,
        embedding_files=written.linked,
        unfiltered=written.unfiltered,
    )
    _record_merge(out, report, edit_entry, _shard_settings(reference, folders[first_k]))
    end_merge(out)  # every write done: a rerun starts from this state
    return report


def _planned_sources(infos: Mapping[int, Mapping[str, Any]]) -> set[str]:
    """The sources the merged shards planned edits for (their ``shard.json`` positions)."""
    return {source for info in infos.values() for source in info["positions"]}


@dataclass(frozen=True)
class _Written:
    new_edits: int
    unfiltered: int
    linked: int


def _write_merged(
    out: Path, folders: Mapping[int, Path], count: int, records: list[EditRecord],
    ordered: list[SourceImage],
) -> _Written:  # fmt: skip
    """Write the merged manifest and sources and link the embeddings, journaled
    (:mod:`.merging`): compared with the manifest before the first merge that did not
    finish, so a rerun after a kill counts the same new edits; when that manifest lists
    the same edits in the same order it is kept (filter decisions included)."""
    manifest = Manifest(out)
    existing = manifest_before_merge(out)
    prefixes = tuple(f"{SHARDS}/{Shard(k, count).name}/" for k in folders)
    foreign = [r for r in existing if not r.path.startswith(prefixes)]
    if foreign:
        raise StateError(
            f"{manifest.path}: holds {len(foreign)} edits that are not from these shards "
            f"(e.g. {foreign[0].edit_id} at {foreign[0].path}); merge into a new build "
            f"folder, or remove {MANIFEST} to start the merge over"
        )
    new_edits = len({r.edit_id for r in records} - {r.edit_id for r in existing})
    same = [r.edit_id for r in existing] == [r.edit_id for r in records]
    target = existing if same else records  # new edits: the filter decisions are redone
    begin_merge(out)
    if [r.to_line() for r in manifest.read()] != [r.to_line() for r in target]:
        manifest.rewrite(target)
    merged_ids = {s.source_id for s in ordered}
    kept = [s for s in read_sources(out) if s.source_id not in merged_ids]
    text = "".join(json.dumps(s.to_json(), ensure_ascii=False) + "\n" for s in [*ordered, *kept])
    atomic_write_text(out / SOURCES, text)
    linked = sum(_link_embeddings(out, Shard(k, count), folder) for k, folder in folders.items())
    unfiltered = sum(1 for r in target if r.accepted is None)
    return _Written(new_edits, unfiltered, linked)


def _record_merge(
    out: Path, report: MergeReport, edit_entry: EditEntry, settings: dict[str, Any]
) -> None:
    """The merge's entries of the build summary: the report, the merged set's ``edit``
    entry, the shards' settings (when none are recorded), and the stages made before
    edits without a filter decision marked outdated."""
    if report.new_edits:
        why = f"made before `contrastkit build merge` added {report.new_edits} edits"
    else:
        why = f"{report.unfiltered} edits of the merged manifest have no filter decision"
    outdated = (
        dict.fromkeys(("filter", "select", "quality", "context"), why)
        if report.unfiltered
        else None
    )
    update_summary(out, "edit", edit_entry)
    update_summary(out, "merge", report.to_json(), outdated=outdated)
    if SETTINGS not in read_summary(out):  # the filter and select stages on OUT reuse them
        update_summary(out, SETTINGS, settings)


def _check_agreement(
    infos: Mapping[int, Mapping[str, Any]], folders: Mapping[int, Path], count: int
) -> None:
    """Check that each shard's ``shard.json`` records its own number (``K`` of ``count``)
    and the same edit settings, editor and selection as the first shard's."""
    first_k = min(infos)
    reference = infos[first_k]
    for k, info in infos.items():
        folder = folders[k]
        if (info["shard"], info["shards"]) != (k, count):
            raise DataFormatError(
                folder / SHARD_INFO, None, "shard",
                f"records shard {info['shard']}/{info['shards']}, not {k}/{count}",
            )  # fmt: skip
        what = _difference({**reference, "shard": k}, info)
        if what:
            raise StateError(
                f"{folder}: made with other settings than {folders[first_k]} ({what}); "
                f"every shard of a build must use the same edit settings, editor and selection"
            )


def _shard_settings(info: Mapping[str, Any], folder: Path) -> dict[str, Any]:
    """The options a shard's worker ran with: its ``settings`` entry, completed from
    ``shard.json`` (edit settings, editor, selection, storage) and the encoder it embedded
    with, without the shard itself."""
    selection, storage = info.get("selection") or {}, info.get("storage") or {}
    found: dict[str, Any] = {"edit": info["edit"], "editor": info["editor"]}
    found |= {k: selection[k] for k in ("split", "min_box_side") if k in selection}
    found |= {k: storage[k] for k in ("image_format", "image_quality") if k in storage}
    summary = read_summary(folder)
    embed = summary.get("embed")
    if isinstance(embed, dict) and isinstance(embed.get("encoder"), str):
        found["embedder"] = embed["encoder"]
    recorded = summary.get(SETTINGS)
    if isinstance(recorded, dict):
        found |= recorded
    return found


def _link_embeddings(out: Path, shard: Shard, folder: Path) -> int:
    """Link the shard's ``embeddings/<hash>/shard-*.npz`` into ``out``; return how many
    were new. Checkpoint files are written once and never changed, so a link that
    exists is up to date."""
    linked = 0
    for path in sorted((folder / "embeddings").glob("*/shard-*.npz")):
        target = out / "embeddings" / path.parent.name / f"shard-{shard.name}-{path.name}"
        if target.exists():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        try:
            os.link(path, tmp)
        except OSError:
            shutil.copyfile(path, tmp)
        tmp.replace(target)
        linked += 1
    return linked
