"""What a ``contrastkit build merge`` leaves in the build folder: a crash-safe journal,
and the build summary of the merged set (issue 44, items 3 and 4).

A merge rewrites three files of the build folder one after the other (``manifest.jsonl``,
``sources.jsonl``, ``build_summary.json``); each write is atomic, but a kill between them
would leave a manifest whose filter decisions are gone under a summary that still calls
the filter and the selection up to date. So before it changes anything the merge keeps
the manifest as it was in a journal (:data:`JOURNAL`: a hard link of the old file, then a
marker written last), and removes the journal only after the summary is written. While
the journal is there:

* a rerun of the merge compares with the manifest of the journal, not with the one the
  killed run left, so it counts the same new edits and marks the same stages outdated
  (and puts the old manifest back, decisions included, when nothing changed);
* the filter and select stages and ``export contrast`` refuse the folder
  (:func:`require_no_pending_merge`), naming the command that finishes the merge.

The summary gets an ``edit`` entry for the merged set (:func:`merged_edit_entry`), made
from the shards' own: the dataset card, the context measure and the settings checks read
a merged build like one a single worker made.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.builders.gensynth.summary import EditEntry, ShardFile, read_summary
from contrastkit.builders.manifest import (
    MANIFEST,
    EditRecord,
    Manifest,
    remove_stale_temp_files,
)
from contrastkit.errors import DataFormatError, StateError
from contrastkit.io import atomic_write_text
from contrastkit.records import read_json_object

__all__ = [
    "JOURNAL",
    "begin_merge",
    "clean_after_kill",
    "end_merge",
    "manifest_before_merge",
    "merged_edit_entry",
    "pending_merge",
    "require_no_pending_merge",
]

#: The folder of a build folder that holds the journal of a merge in progress.
JOURNAL = ".merge-journal"
#: The journal's marker, written last: without it the journal was never complete.
_MARKER = "journal.json"


def pending_merge(out: str | Path) -> bool:
    """Whether a merge on ``out`` began and never finished (its journal is there)."""
    return (Path(out) / JOURNAL / _MARKER).is_file()


def require_no_pending_merge(out: str | Path, what: str) -> None:
    """Refuse to ``what`` (e.g. "run the filter stage") on a build folder whose last
    merge was cut short.

    Raises:
        StateError: naming the journal and the command that finishes the merge.
    """
    if pending_merge(out):
        raise StateError(
            f"{Path(out) / JOURNAL}: a `contrastkit build merge` on this folder was cut "
            f"short; run `contrastkit build merge {out}` again before you {what}"
        )


def clean_after_kill(out: str | Path, what: str) -> None:
    """Before a stage that holds ``out``'s build lock runs (``what``: e.g. "run the
    filter stage"): refuse a folder whose last merge was cut short
    (:func:`require_no_pending_merge`), else remove what a killed run left: the temporary
    files (:func:`~contrastkit.builders.manifest.remove_stale_temp_files`) and a journal
    never completed (a merge killed before it changed anything)."""
    require_no_pending_merge(out, what)
    shutil.rmtree(Path(out) / JOURNAL, ignore_errors=True)
    remove_stale_temp_files(Path(out))


def manifest_before_merge(out: Path) -> list[EditRecord]:
    """The manifest as it was before the merge in progress: the journal's copy when an
    earlier merge was cut short, else ``out``'s manifest now. An incomplete journal (cut
    short before its marker, so before the manifest changed) is removed."""
    journal = out / JOURNAL
    if not pending_merge(out):
        shutil.rmtree(journal, ignore_errors=True)
        return Manifest(out).read()
    marker = read_json_object(journal / _MARKER)
    if not isinstance(marker.get("manifest"), bool):
        raise DataFormatError(journal / _MARKER, None, "manifest", "missing or not a boolean")
    return Manifest(journal).read() if marker["manifest"] else []


def begin_merge(out: Path) -> None:
    """Keep ``out``'s manifest as it is now in the journal, unless an earlier merge's
    journal is there (that one holds the state before any merge changed the folder)."""
    if pending_merge(out):
        return
    journal = out / JOURNAL
    journal.mkdir(exist_ok=True)
    manifest = out / MANIFEST
    kept = journal / MANIFEST
    kept.unlink(missing_ok=True)
    if manifest.exists():
        try:  # the manifest is only ever replaced, never changed in place: a link will do
            os.link(manifest, kept)
        except OSError:
            shutil.copyfile(manifest, kept)
    atomic_write_text(journal / _MARKER, json.dumps({"manifest": manifest.exists()}) + "\n")


def end_merge(out: Path) -> None:
    """Remove the journal: the merge's every write is done (the marker goes first)."""
    with contextlib.suppress(FileNotFoundError):
        (out / JOURNAL / _MARKER).unlink()
    shutil.rmtree(out / JOURNAL, ignore_errors=True)


def merged_edit_entry(
    infos: Mapping[int, ShardFile],
    folders: Mapping[int, Path],
    counts: Mapping[str, int],
) -> EditEntry:
    """The ``edit`` entry of a merged build's summary, as a single worker's edit stage
    writes it (:class:`~contrastkit.builders.gensynth.edit.EditStageReport`): the edit
    settings, editor and storage of the shards (which agree), what their own edit
    entries say of the selection and the editor, and ``counts`` (``sources``,
    ``planned``, ``edited``: the merged set's).

    Args:
        infos: each merged shard's ``shard.json``, by ``K``.
        folders: each merged shard's folder, by ``K``.
        counts: the merged set's sources, planned edits and edits.
    """
    first = min(infos)
    reference = infos[first]
    storage: Mapping[str, Any] = reference.get("storage") or {}
    entries = [read_summary(folders[k]).get("edit") for k in sorted(folders)]
    edits = [e for e in entries if isinstance(e, dict)]
    own: Mapping[str, Any] = edits[0] if edits else {}
    entry: EditEntry = {
        "sources": counts["sources"],
        "planned": counts["planned"],
        "skipped_finished": 0,
        "edited": counts["edited"],
        "removed_temp_files": 0,
        "selection": own.get("selection") or {},
        "settings": reference["edit"],
        "editor": reference["editor"],
        "shard": None,
        "merged_shards": sorted(infos),
        "image_format": storage.get("image_format", own.get("image_format")),
        "image_quality": storage.get("image_quality", own.get("image_quality")),
        "editor_random_weights": any(bool(e.get("editor_random_weights")) for e in edits),
    }
    for key in ("editor_family", "editor_pipeline", "editor_dtype"):
        if key in own:
            entry[key] = own[key]
    return entry
