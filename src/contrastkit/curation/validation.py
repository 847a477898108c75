"""Check VisoGender-style TSVs the way a careful curator would.

:func:`validate_files` reads any number of official-format OP and OO files and checks:

* ``schema`` (error): header, field counts, empty required values, gender labels, each
  located by file, line and field; every bad line is reported, not just the first;
* ``ids`` (error): an IDX used twice, in one file or across the files given;
* ``balance`` (error): per occupation, every gender cell of the context (OO: M, F; OP:
  MM, MF, FM, FF) holds the same number of images, and exactly ``per_cell`` when given
  (VisoGender Sec. 3.2, Tab. 1: 5 per cell);
* ``duplicate_url`` (error): the same URL on several rows, across all files;
* ``canonical_duplicate`` (error): one image resource reached through different URLs
  (:func:`contrastkit.curation.dedup.canonical_url`), across all files;
* ``spelling`` (error): a noun spelled two ways within one occupation ("counsellor" /
  "counselor", "stock chart" / "stock-chart", "client" / "clients"), or an occupation
  name spelled two ways across the files;
* ``nouns`` (warning): one occupation using several different participant or object
  nouns, which splits its captions;
* ``taxonomy`` (warning): an occupation missing from the taxonomy, or a sector,
  specialisation or noun that differs from the taxonomy's;
* ``licence`` (warning): a licence column that does not confirm the licence;
* ``error_codes`` (warning): rows whose ``Error codes`` column is filled in.

Errors make the dataset unfit as a benchmark; warnings are for a person to look at. A
file that cannot be used at all (missing, a folder, empty, binary, not UTF-8 text) is an
``unusable`` error and its rows are left out of the checks across files.

The validator is bounded: files are streamed line by line, at most ``max_findings``
findings of each check are kept (default :data:`DEFAULT_MAX_FINDINGS`; 0 keeps all) and
the others are only counted (:attr:`ValidationReport.omitted`), and a message quotes at
most :data:`MAX_MESSAGE_CHARS` characters of the data.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, TypedDict

from typing_extensions import NotRequired

from contrastkit.config import require
from contrastkit.curation.dedup import find_duplicates
from contrastkit.errors import DataFormatError
from contrastkit.schema import Context, VisoGenderRow
from contrastkit.taxonomy import Taxonomy
from contrastkit.text import count
from contrastkit.tsv import is_unusable, parse_visogender_tsv, resolve_data

__all__ = [
    "DEFAULT_MAX_FINDINGS",
    "MAX_MESSAGE_CHARS",
    "FileRecord",
    "Finding",
    "FindingRecord",
    "ReportRecord",
    "RowRecord",
    "RowRef",
    "ValidationReport",
    "normalize_noun",
    "validate_files",
]

DEFAULT_MAX_FINDINGS = 100
"""Findings of each check kept by default; the others are counted, not kept."""
MAX_MESSAGE_CHARS = 1000
"""Longest message kept in a finding: longer ones (a huge field quoted) are cut."""

Severity = Literal["error", "warning"]
AFFIRMATIVE_LICENCE = frozenset({"yes", "y", "true", "1", "ok"})


@dataclass(frozen=True)
class RowRef:
    """Where a row is: file, line and IDX."""

    path: str
    line: int | None
    idx: str

    def __str__(self) -> str:
        return f"{self.idx} ({self.path}:{self.line})"


class RowRecord(TypedDict):
    """A :class:`RowRef` as JSON."""

    path: str
    line: int | None
    idx: str


class FindingRecord(TypedDict):
    """A :class:`Finding` as JSON (:meth:`Finding.to_dict`); in a report, ``more_rows``
    counts the rows left out of a finding that names more than ``max_findings``."""

    severity: Severity
    check: str
    message: str
    path: str | None
    line: int | None
    field: str | None
    rows: list[RowRecord]
    more_rows: NotRequired[int]


class FileRecord(TypedDict):
    """A :class:`FileSummary` as JSON."""

    path: str
    context: str | None
    rows: int
    occupations: int
    unusable: bool


class ReportRecord(TypedDict):
    """A :class:`ValidationReport` as JSON (:meth:`ValidationReport.to_dict`)."""

    ok: bool
    errors: int
    warnings: int
    by_check: dict[str, int]
    max_findings: int
    omitted: dict[str, int]
    unusable: list[str]
    files: list[FileRecord]
    findings: list[FindingRecord]


@dataclass(frozen=True)
class Finding:
    """One problem found by the validator."""

    severity: Severity
    check: str
    message: str
    path: str | None = None
    line: int | None = None
    field: str | None = None
    rows: tuple[RowRef, ...] = ()

    def to_dict(self) -> FindingRecord:
        """JSON-ready form."""
        return {
            "severity": self.severity,
            "check": self.check,
            "message": self.message,
            "path": self.path,
            "line": self.line,
            "field": self.field,
            "rows": [{"path": r.path, "line": r.line, "idx": r.idx} for r in self.rows],
        }

    def location(self) -> str:
        """``path:line: field 'x'`` as far as known."""
        where = self.path or ""
        if self.line is not None:
            where += f":{self.line}"
        if self.field:
            where += f" field {self.field!r}"
        return where


@dataclass(frozen=True)
class FileSummary:
    """What one file holds; ``unusable``: the file could not be used at all."""

    path: str
    context: str | None
    rows: int
    occupations: int
    unusable: bool = False


def _clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    if len(text) <= limit:
        return text
    return f"{text[: limit - 40]}... ({len(text) - limit + 40} more characters)"


@dataclass
class ValidationReport:
    """All findings for a set of files.

    Attributes:
        files: What each file holds.
        findings: The findings kept: at most ``max_findings`` of each check.
        max_findings: Findings kept per check (0: all).
        counts: Findings of each (severity, check), kept or not.
    """

    files: list[FileSummary] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    max_findings: int = DEFAULT_MAX_FINDINGS
    counts: Counter[tuple[str, str]] = field(default_factory=Counter)

    def add(self, finding: Finding) -> None:
        """Count ``finding``; keep it unless its check already has ``max_findings``."""
        key = (finding.severity, finding.check)
        self.counts[key] += 1
        if self.max_findings and self.counts[key] > self.max_findings:
            return
        if len(finding.message) > MAX_MESSAGE_CHARS:
            finding = replace(finding, message=_clip(finding.message))
        self.findings.append(finding)

    def extend(self, findings: Iterable[Finding]) -> None:
        """:meth:`add` each of ``findings``."""
        for finding in findings:
            self.add(finding)

    @property
    def errors(self) -> list[Finding]:
        """Findings of severity ``error`` (those kept)."""
        return [f for f in self.findings if f.severity == "error"]

    @property
    def warnings(self) -> list[Finding]:
        """Findings of severity ``warning`` (those kept)."""
        return [f for f in self.findings if f.severity == "warning"]

    @property
    def error_count(self) -> int:
        """Errors found, kept or not."""
        return sum(n for (severity, _), n in self.counts.items() if severity == "error")

    @property
    def warning_count(self) -> int:
        """Warnings found, kept or not."""
        return sum(n for (severity, _), n in self.counts.items() if severity == "warning")

    @property
    def omitted(self) -> dict[str, int]:
        """Findings of each check found beyond ``max_findings`` (counted, not kept)."""
        if not self.max_findings:
            return {}
        omitted: Counter[str] = Counter()
        for (_, check), n in self.counts.items():
            omitted[check] += max(0, n - self.max_findings)
        return {check: n for check, n in omitted.items() if n}

    @property
    def unusable(self) -> list[str]:
        """Files that could not be used at all (missing, a folder, empty, binary, not
        UTF-8): the command line exits 2 for them."""
        return [summary.path for summary in self.files if summary.unusable]

    @property
    def ok(self) -> bool:
        """Whether no error was found (warnings allowed)."""
        return self.error_count == 0

    def by_check(self) -> dict[str, int]:
        """Number of findings per check, kept or not."""
        totals: Counter[str] = Counter()
        for (_, check), n in self.counts.items():
            totals[check] += n
        return dict(totals)

    def to_dict(self) -> ReportRecord:
        """JSON-ready form of the report (a finding lists at most ``max_findings`` rows)."""
        findings = []
        for finding in self.findings:
            data = finding.to_dict()
            if self.max_findings and len(finding.rows) > self.max_findings:
                data["rows"] = data["rows"][: self.max_findings]
                data["more_rows"] = len(finding.rows) - self.max_findings
            findings.append(data)
        return {
            "ok": self.ok,
            "errors": self.error_count,
            "warnings": self.warning_count,
            "by_check": self.by_check(),
            "max_findings": self.max_findings,
            "omitted": self.omitted,
            "unusable": self.unusable,
            "files": [
                {
                    "path": f.path,
                    "context": f.context,
                    "rows": f.rows,
                    "occupations": f.occupations,
                    "unusable": f.unusable,
                }
                for f in self.files
            ],
            "findings": findings,
        }

    def to_text(self, *, max_rows: int = 8) -> str:
        """Human-readable report: a summary line, the files, then findings by severity."""
        out = []
        for summary in self.files:
            context = summary.context or ("unusable" if summary.unusable else "unreadable")
            out.append(
                f"{summary.path}: {context}, {count(summary.rows, 'row')}, "
                f"{count(summary.occupations, 'occupation')}"
            )
        omitted = self.omitted
        for severity in ("error", "warning"):
            found = [f for f in self.findings if f.severity == severity]
            total = sum(n for (s, _), n in self.counts.items() if s == severity)
            if not total:
                continue
            out.append("")
            out.append(f"{severity.upper()}S ({total})")
            for finding in found:
                location = finding.location()
                prefix = f"{location}: " if location else ""
                out.append(f"  [{finding.check}] {prefix}{finding.message}")
                for ref in finding.rows[:max_rows]:
                    out.append(f"      {_clip(str(ref), 200)}")
                if len(finding.rows) > max_rows:
                    out.append(f"      ... and {len(finding.rows) - max_rows} more")
            checks = sorted({check for (s, check) in self.counts if s == severity})
            for check in checks:
                if omitted.get(check):
                    out.append(
                        f"  [{check}] ... and {omitted[check]} more {check} findings "
                        f"(only the first {self.max_findings} are listed; --max-findings 0 "
                        "lists all)"
                    )
        out.append("")
        verdict = "OK" if self.ok else "FAILED"
        unusable = f", {len(self.unusable)} unusable" if self.unusable else ""
        out.append(
            f"{verdict}: {count(self.error_count, 'error')}, "
            f"{count(self.warning_count, 'warning')} in {count(len(self.files), 'file')}{unusable}"
        )
        return "\n".join(out)


_NON_ALNUM = re.compile(r"[^a-z0-9]+")
_DOUBLED = re.compile(r"([a-z])\1")


def normalize_noun(noun: str) -> str:
    """A spelling-insensitive key for a noun.

    Lower-cases; drops spaces, hyphens and other punctuation; reduces a plural to its
    singular (``-sses``/``-ches``/``-shes``/``-xes``/``-zes`` lose ``es``, ``-ies`` becomes
    ``-y``, any other final ``s`` but ``-ss``/``-us``/``-is`` goes); maps British ``-our`` /
    ``-ise`` to ``-or`` / ``-ize``; collapses doubled letters (counsellor / counselor).
    Two nouns with the same key are taken as one word spelled two ways; the last rule
    also merges pairs such as diner / dinner, which within one occupation's nouns are
    almost always a typo.
    """
    key = _NON_ALNUM.sub("", noun.lower())
    if key.endswith(("sses", "ches", "shes", "xes", "zes")):
        key = key[:-2]
    elif key.endswith("ies") and len(key) > 4:
        key = key[:-3] + "y"
    elif key.endswith("s") and not key.endswith(("ss", "us", "is")) and len(key) > 3:
        key = key[:-1]
    key = key.replace("our", "or").replace("ise", "ize")
    return _DOUBLED.sub(r"\1", key)


def _spelling_findings(
    kind: str, scope: str, spellings: dict[str, list[RowRef]]
) -> Iterable[Finding]:
    by_key: dict[str, list[str]] = defaultdict(list)
    for spelling in spellings:
        by_key[normalize_noun(spelling)].append(spelling)
    for variants in by_key.values():
        if len(variants) > 1:
            # The rarer spellings first: they are usually the ones to fix.
            variants.sort(key=lambda v: len(spellings[v]))
            described = ", ".join(f"{v!r} ({len(spellings[v])} rows)" for v in variants)
            yield Finding(
                "error",
                "spelling",
                f"{kind} spelled {len(variants)} ways{scope}: {described}",
                rows=tuple(ref for v in variants for ref in spellings[v]),
            )


def _balance_findings(
    path: str, context: Context, rows: Sequence[VisoGenderRow], per_cell: int | None
) -> Iterable[Finding]:
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for row in rows:
        counts[row.occupation][row.cell] += 1
    for occupation, cells in counts.items():
        filled = {cell: cells.get(cell, 0) for cell in context.cells}
        target = per_cell if per_cell is not None else max(filled.values())
        off = {cell: n for cell, n in filled.items() if n != target}
        if not off:
            continue
        shown = ", ".join(f"{cell} {n}" for cell, n in filled.items())
        expectation = f"expected {per_cell} per cell" if per_cell is not None else "cells differ"
        yield Finding(
            "error",
            "balance",
            f"occupation {occupation!r} ({context.value}) is unbalanced: {shown} ({expectation})",
            path=path,
        )


def validate_files(
    paths: Sequence[str | Path],
    taxonomy: Taxonomy | None = None,
    *,
    per_cell: int | None = None,
    max_findings: int = DEFAULT_MAX_FINDINGS,
) -> ValidationReport:
    """Validate official-format VisoGender TSVs together.

    Args:
        paths: OP and/or OO files; duplicate and ID checks span all of them.
            ``visogender`` is the official sets bundled with contrastkit, by the rule
            ``evaluate --data`` follows (:func:`contrastkit.tsv.resolve_data`).
        taxonomy: when given, occupations, sectors, specialisations and nouns are
            compared with it (``taxonomy`` warnings).
        per_cell: when given, each gender cell of each occupation must hold exactly this
            many images; otherwise cells need only be equal.
        max_findings: findings of each check kept in the report; the others are counted
            (``report.omitted``). 0 keeps every finding.

    Returns:
        The report; ``report.ok`` is false when any error was found, and
        ``report.unusable`` lists the files that could not be used at all.

    Raises:
        ConfigError: a negative ``max_findings`` or a ``per_cell`` below 1.
    """
    require(max_findings >= 0, "max_findings", f"must be 0 (all) or more, not {max_findings}")
    require(per_cell is None or per_cell >= 1, "per_cell", f"must be at least 1, not {per_cell}")
    report = ValidationReport(max_findings=max_findings)
    all_rows: list[tuple[str, VisoGenderRow]] = []
    for raw_path in resolve_data(paths):
        read = _read_file(raw_path, report)
        if read is not None:
            path, (context, rows) = str(raw_path), read
            all_rows.extend((path, row) for row in rows)
            report.extend(_balance_findings(path, context, rows, per_cell))
    report.extend(_id_findings(all_rows))
    report.extend(_url_duplicate_findings(all_rows))
    report.extend(_noun_findings(all_rows))
    report.extend(_row_warnings(all_rows))
    if taxonomy is not None:
        report.extend(_taxonomy_findings(all_rows, taxonomy))
    return report


def _read_file(
    raw_path: Path, report: ValidationReport
) -> tuple[Context, list[VisoGenderRow]] | None:
    """Parse one TSV, adding its summary and its schema findings to ``report``; its context
    and well-formed rows, or None when the file could not be used."""
    path = str(raw_path)
    try:
        stream = parse_visogender_tsv(raw_path)
        rows: list[VisoGenderRow] = []
        for item in stream.rows:
            if isinstance(item, DataFormatError):
                report.add(Finding("error", "schema", item.reason, path, item.line, item.field))
            else:
                rows.append(item)
    except DataFormatError as error:
        unusable = is_unusable(error)
        report.files.append(FileSummary(path, None, 0, 0, unusable=unusable))
        check = "unusable" if unusable else "schema"
        report.add(Finding("error", check, error.reason, path, error.line, error.field))
        return None
    except OSError as error:  # unreadable: a permission, a device error
        report.files.append(FileSummary(path, None, 0, 0, unusable=True))
        report.add(Finding("error", "unusable", error.strerror or str(error), path))
        return None
    context = stream.context
    report.files.append(
        FileSummary(path, context.value, len(rows), len({r.occupation for r in rows}))
    )
    return context, rows


def _ref(path: str, row: VisoGenderRow) -> RowRef:
    return RowRef(path, row.line, row.idx)


def _id_findings(all_rows: Sequence[tuple[str, VisoGenderRow]]) -> Iterable[Finding]:
    """An IDX used on more than one row, across all files."""
    ids: dict[str, list[RowRef]] = defaultdict(list)
    for path, row in all_rows:
        ids[row.idx].append(_ref(path, row))
    for idx, refs in ids.items():
        if len(refs) > 1:
            yield Finding(
                "error", "ids", f"IDX {idx!r} is used {len(refs)} times", rows=tuple(refs)
            )


def _url_duplicate_findings(all_rows: Sequence[tuple[str, VisoGenderRow]]) -> Iterable[Finding]:
    """Rows that share a URL, or reach one image through different URLs."""
    for group in find_duplicates((_ref(path, row), row.url) for path, row in all_rows):
        if group.kind == "exact":
            message = f"the same URL is on {len(group.items)} rows: {group.key}"
            check = "duplicate_url"
        else:
            message = (
                f"{len(group.items)} rows reach one image through different URLs "
                f"(canonical {group.key})"
            )
            check = "canonical_duplicate"
        yield Finding("error", check, message, rows=group.items)


def _noun_findings(all_rows: Sequence[tuple[str, VisoGenderRow]]) -> Iterable[Finding]:
    """Occupations and nouns spelled several ways, and occupations with several nouns."""
    occupation_spellings: dict[str, list[RowRef]] = defaultdict(list)
    nouns: dict[tuple[str, str], dict[str, list[RowRef]]] = defaultdict(lambda: defaultdict(list))
    for path, row in all_rows:
        occupation_spellings[row.occupation].append(_ref(path, row))
        nouns[(row.occupation, row.context.noun_kind)][row.noun].append(_ref(path, row))
    yield from _spelling_findings("occupation", "", occupation_spellings)
    for (occupation, kind), spellings in nouns.items():
        scoped = list(_spelling_findings(kind, f" for occupation {occupation!r}", spellings))
        yield from scoped
        if not scoped and len(spellings) > 1:
            described = ", ".join(f"{n!r} ({len(r)} rows)" for n, r in spellings.items())
            yield Finding(
                "warning",
                "nouns",
                f"occupation {occupation!r} uses {len(spellings)} {kind} nouns: {described}",
            )


def _row_warnings(all_rows: Sequence[tuple[str, VisoGenderRow]]) -> Iterable[Finding]:
    """Rows whose licence is not confirmed, or that carry error codes."""
    for path, row in all_rows:
        licence_field = "Licence" if row.context is Context.OP else "LICENSE OK?"
        if row.licence.strip().lower() not in AFFIRMATIVE_LICENCE:
            yield Finding(
                "warning",
                "licence",
                f"row {row.idx!r}: licence not confirmed ({row.licence!r})",
                path,
                row.line,
                licence_field,
            )
        if row.error_codes.strip():
            yield Finding(
                "warning",
                "error_codes",
                f"row {row.idx!r} carries error codes {row.error_codes.strip()!r}",
                path,
                row.line,
                "Error codes",
            )


def _taxonomy_findings(
    all_rows: Sequence[tuple[str, VisoGenderRow]], taxonomy: Taxonomy
) -> Iterable[Finding]:
    reported: set[tuple[str, ...]] = set()
    for path, row in all_rows:
        occupation = taxonomy.get(row.occupation)
        if occupation is None:
            key: tuple[str, ...] = ("unknown", path, row.occupation)
            if key not in reported:
                reported.add(key)
                yield Finding(
                    "warning",
                    "taxonomy",
                    f"occupation {row.occupation!r} is not in the taxonomy "
                    "(pass --taxonomy FILE to define it)",
                    path,
                    row.line,
                    "Occupation",
                )
            continue
        expected = {
            "Sector": occupation.sector,
            "Specialisation": occupation.specialisation,
            "Participant" if row.context is Context.OP else "Object": occupation.noun(row.context),
        }
        actual = {"Sector": row.sector, "Specialisation": row.specialisation}
        actual["Participant" if row.context is Context.OP else "Object"] = row.noun
        for column, want in expected.items():
            have = actual[column]
            key = ("mismatch", path, row.occupation, column, have)
            if have != want and key not in reported:
                reported.add(key)
                yield Finding(
                    "warning",
                    "taxonomy",
                    f"occupation {row.occupation!r}: {column} {have!r} differs from the "
                    f"taxonomy's {want!r} (first seen here)",
                    path,
                    row.line,
                    column,
                )
