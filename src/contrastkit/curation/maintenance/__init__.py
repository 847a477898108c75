"""The maintenance job: check a dataset's URLs on a schedule and keep its TSVs honest.

``contrastkit urls maintain FILE... --db state.sqlite`` (meant for cron) runs
:func:`maintain` with a :class:`MaintainConfig`; per run it:

1. Checks every row's URL (:mod:`contrastkit.curation.urls`) and records every check in
   SQLite: row ID, URL, time, status, detail, HTTP status, sha256 and perceptual hash.
   Each URL's checks are committed together with the row states they change, so the
   database is consistent whenever the process stops, even under SIGKILL.
2. Flags rows whose content changed: an ``ok`` image whose bytes differ from the row's
   reference image (its first good check) and whose perceptual hash is further than
   :data:`~contrastkit.curation.dedup.NEAR_DUPLICATE_MAX_DISTANCE` bits from it: the
   link now serves another picture. A re-encoded copy of the same picture is not a change.
   ``accept_changes`` makes the current images the new references.
3. Retires rows that failed in at least ``policy.failures`` consecutive checks spanning at
   least ``policy.days`` days (so one bad night never retires anything). A retired row that
   serves its image again is un-retired.
4. Writes each TSV back atomically (temporary file + rename) with its ``Error codes``
   column filled: the failing status (``http_error:404``, ``timeout`` ...),
   ``content_changed`` and ``retired``; codes not written by contrastkit are kept. Only
   the lines whose codes change are rewritten (byte-order mark, line endings, final
   newline kept; an unchanged file is not touched). Rows are never deleted unless
   ``drop_retired`` is set, and then the original file is first copied to
   ``FILE.bak-<UTC time>``. A TSV a person edited during the run gets the run's codes
   merged into its current text (rows added or changed meanwhile are kept as written), or
   is left alone when that cannot be done safely (``result.unwritten``, exit code 2); see
   :mod:`~contrastkit.curation.maintenance.rewrite`.
5. Reports which occupation cells (OO: M, F; OP: MM, MF, FM, FF) have fewer than
   ``per_cell`` healthy rows, and writes a markdown report.

The run is *healthy* when every row is ok, unchanged and not retired, no rows share an
image and every cell is at balance; otherwise *degraded*.

Before any URL is fetched the files are read and every output is checked for
writability (store, database, report, the TSVs' folders). Once the database's lock is held,
temporary files a killed run left beside the TSVs (``.NAME.xxxxxxxx.tmp.tsv``) are removed.

The modules: :mod:`~contrastkit.curation.maintenance.config` (:class:`MaintainConfig`,
:class:`RetirementPolicy`), :mod:`~contrastkit.curation.maintenance.state` (the SQLite
state database), :mod:`~contrastkit.curation.maintenance.rewrite` (the TSV rewrite and
backups), :mod:`~contrastkit.curation.maintenance.report` (the markdown report),
:mod:`~contrastkit.curation.maintenance.results` (what a run returns) and
:mod:`~contrastkit.curation.maintenance.job` (:func:`maintain`).
"""

from __future__ import annotations

from contrastkit.curation.maintenance.config import (
    DEFAULT_REPORT_NAME,
    MaintainConfig,
    RetirementPolicy,
)
from contrastkit.curation.maintenance.job import maintain
from contrastkit.curation.maintenance.report import render_markdown
from contrastkit.curation.maintenance.results import (
    BelowBalance,
    MaintenanceResult,
    RowHealth,
    UnwrittenFile,
)
from contrastkit.curation.maintenance.rewrite import error_codes_for
from contrastkit.curation.maintenance.state import SCHEMA_VERSION

__all__ = [
    "DEFAULT_REPORT_NAME",
    "SCHEMA_VERSION",
    "BelowBalance",
    "MaintainConfig",
    "MaintenanceResult",
    "RetirementPolicy",
    "RowHealth",
    "UnwrittenFile",
    "error_codes_for",
    "maintain",
    "render_markdown",
]
