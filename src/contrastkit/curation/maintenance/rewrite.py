"""Writing the maintained TSVs back: the ``Error codes`` column, dropped rows, backups.

Every file is written atomically (:func:`contrastkit.io.atomic_write_text`) and only when
its bytes change; line endings and permissions are kept. Rows are dropped only on request,
and then the original file is first copied, atomically too, to ``FILE.bak-<UTC time>``.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from contrastkit.curation.maintenance.results import RowHealth
from contrastkit.curation.urls import Status
from contrastkit.io import atomic_path, atomic_write_text, resource_error
from contrastkit.schema import VisoGenderRow, VisoGenderTable
from contrastkit.tsv import render_visogender_tsv

__all__ = ["CONTENT_CHANGED", "RETIRED", "error_codes_for", "rewrite_table"]

CONTENT_CHANGED = "content_changed"
"""Error code of a row whose URL serves another picture."""
RETIRED = "retired"
"""Error code of a retired row."""
_MANAGED = {status.value for status in Status} | {CONTENT_CHANGED, RETIRED}


def error_codes_for(existing: str, health: RowHealth) -> str:
    """The ``Error codes`` value for a row: contrastkit's codes for its current state,
    after any codes a person wrote (kept as they were). Codes are joined with ``"; "``."""
    kept = [
        code
        for code in (part.strip() for part in existing.replace(",", ";").split(";"))
        if code and code.split(":", 1)[0] not in _MANAGED
    ]
    ours: list[str] = []
    if health.status != Status.OK.value:
        code = health.status
        if health.status == Status.HTTP_ERROR.value and health.http_status:
            code += f":{health.http_status}"
        ours.append(code)
    if health.content_changed:
        ours.append(CONTENT_CHANGED)
    if health.retired:
        ours.append(RETIRED)
    return "; ".join(kept + ours)


def rewrite_table(
    table: VisoGenderTable, health: Mapping[str, RowHealth], drop_retired: bool, stamp: str
) -> tuple[bool, list[str], str | None]:
    """Write ``table`` back with its error codes.

    Args:
        table: The parsed file.
        health: Each row's state, by row ID.
        drop_retired: Leave retired rows out (after a backup of the file).
        stamp: UTC time for the backup's name (``20260102T030000Z``).

    Returns:
        Whether the file was rewritten, the IDs of the rows dropped, the backup's path.

    Raises:
        ResourceError: the file or its backup cannot be written.
    """
    rows: list[VisoGenderRow] = []
    dropped: list[str] = []
    for row in table.rows:
        state = health[row.idx]
        if drop_retired and state.retired:
            dropped.append(row.idx)
            continue
        rows.append(replace(row, error_codes=error_codes_for(row.error_codes, state)))
    text = render_visogender_tsv(
        rows, table.context, newline=table.newline, final_newline=table.final_newline
    )
    path = Path(table.path)
    if path.read_bytes() == text.encode("utf-8"):
        return False, [], None
    backup = path.with_name(f"{path.name}.bak-{stamp}") if dropped else None
    try:
        if backup is not None:
            with atomic_path(backup) as tmp:
                shutil.copyfile(path, tmp)
        atomic_write_text(path, text)
    except OSError as error:
        raise resource_error(path, "the maintained TSV or its backup", error) from error
    return True, dropped, None if backup is None else str(backup)
