"""Small VisoGender files for the validator tests: rows, writers and finding filters."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from contrastkit.curation.validation import ValidationReport
from contrastkit.schema import Context, Gender, VisoGenderRow
from contrastkit.taxonomy import load_taxonomy
from contrastkit.tsv import write_visogender_tsv
from factories import make_row

M, F = Gender.MASCULINE, Gender.FEMININE
URL_COLUMN = "URL type (Type NA if can't find)"
TAXONOMY = load_taxonomy()


def op_row(
    n: int, occupation: str, gender: Gender, participant_gender: Gender, **overrides: Any
) -> VisoGenderRow:
    overrides = {k: v for k, v in overrides.items() if v is not None}
    return make_row(occupation, gender, participant_gender, n=n, **overrides)


def oo_row(
    n: int, occupation: str, gender: Gender, *, obj: str | None = None, **overrides: Any
) -> VisoGenderRow:
    if obj is not None:
        overrides["object"] = obj
    return make_row(occupation, gender, n=n, **overrides)


def balanced_op(occupation: str, start: int, **nouns: str) -> list[VisoGenderRow]:
    """One image per OP cell (MM, MF, FM, FF); ``nouns`` maps a cell to its participant."""
    return [
        op_row(start + i, occupation, g, p, participant=nouns.get(g.short + p.short))
        for i, (g, p) in enumerate([(M, M), (M, F), (F, M), (F, F)])
    ]


def write_op(path: Path, rows: list[VisoGenderRow]) -> Path:
    return write_visogender_tsv(path, rows, Context.OP)


def write_oo(path: Path, rows: list[VisoGenderRow]) -> Path:
    return write_visogender_tsv(path, rows, Context.OO)


def write_raw(path: Path, lines: list[list[str]]) -> Path:
    path.write_text("\n".join("\t".join(fields) for fields in lines) + "\n", encoding="utf-8")
    return path


def only(report: ValidationReport, check: str) -> list[Any]:
    return [f for f in report.findings if f.check == check]


def idx_set(finding: Any) -> frozenset[str]:
    return frozenset(ref.idx for ref in finding.rows)
