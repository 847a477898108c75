"""The validator's report: a clean dataset, the report's forms, the keys of spelling
findings and the bounds on huge or broken files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from contrastkit.curation.validation import normalize_noun, validate_files
from contrastkit.schema import OO_COLUMNS
from factories import pexels_url
from validation_files import (
    TAXONOMY,
    F,
    M,
    balanced_op,
    only,
    oo_row,
    write_oo,
    write_op,
    write_raw,
)

# a clean dataset and the report's forms


def _clean_files(tmp_path: Path) -> list[Path]:
    op = write_op(tmp_path / "op.tsv", [*balanced_op("teacher", 1), *balanced_op("baker", 5)])
    oo = write_oo(
        tmp_path / "oo.tsv",
        [oo_row(n, occ, g) for n, (occ, g) in enumerate([("teacher", M), ("teacher", F)], 1)],
    )
    return [op, oo]


def test_clean_balanced_files_pass(tmp_path: Path) -> None:
    report = validate_files(_clean_files(tmp_path), TAXONOMY, per_cell=1)
    assert report.findings == []
    assert report.ok is True
    assert [(s.context, s.rows, s.occupations) for s in report.files] == [
        ("OP", 8, 2),
        ("OO", 2, 1),
    ]
    text = report.to_text()
    assert text.splitlines()[-1] == "OK: 0 errors, 0 warnings in 2 files"
    assert "ERRORS" not in text


def test_report_dict_is_json(tmp_path: Path) -> None:
    paths = _clean_files(tmp_path)
    clean = json.loads(json.dumps(validate_files(paths, TAXONOMY).to_dict()))
    assert clean["ok"] is True
    assert (clean["errors"], clean["warnings"], clean["by_check"]) == (0, 0, {})
    assert clean["findings"] == []
    assert clean["files"] == [
        {"path": str(paths[0]), "context": "OP", "rows": 8, "occupations": 2, "unusable": False},
        {"path": str(paths[1]), "context": "OO", "rows": 2, "occupations": 1, "unusable": False},
    ]
    assert (clean["unusable"], clean["omitted"], clean["max_findings"]) == ([], {}, 100)

    rows = [
        oo_row(1, "teacher", M, url=pexels_url(7), licence="No"),
        oo_row(2, "teacher", F, url=pexels_url(7)),
    ]
    broken = validate_files([write_oo(tmp_path / "dup.tsv", rows), tmp_path / "gone.tsv"])
    data = json.loads(json.dumps(broken.to_dict()))
    assert data["ok"] is False
    assert (data["errors"], data["warnings"]) == (2, 1)
    assert data["by_check"] == {"unusable": 1, "duplicate_url": 1, "licence": 1}
    assert data["unusable"] == [str(tmp_path / "gone.tsv")]
    assert data["files"][1]["context"] is None
    duplicate = next(f for f in data["findings"] if f["check"] == "duplicate_url")
    assert duplicate["severity"] == "error"
    assert [r["idx"] for r in duplicate["rows"]] == ["OO_1", "OO_2"]
    assert [r["line"] for r in duplicate["rows"]] == [2, 3]
    assert broken.to_text().splitlines()[-1] == (
        "FAILED: 2 errors, 1 warning in 2 files, 1 unusable"
    )


def test_warnings_alone_still_ok_in_text(tmp_path: Path) -> None:
    rows = [oo_row(1, "teacher", M, licence="No"), oo_row(2, "teacher", F)]
    report = validate_files([write_oo(tmp_path / "oo.tsv", rows)])
    lines = report.to_text().splitlines()
    assert lines[-1].startswith("OK:")
    assert "WARNINGS (1)" in lines


# normalize_noun


@pytest.mark.parametrize(
    "variants",
    [
        ("Stock chart", "stock-chart", "stockchart", "stock chart"),
        ("counsellor", "counselor"),
        ("client", "clients"),
        ("colour", "color"),
        ("mixing spoon", "mixing_spoon"),
        ("glass", "glasses"),
        ("body", "bodies"),
        ("brush", "brushes"),
    ],
)
def test_spelling_variants_share_a_key(variants: tuple[str, ...]) -> None:
    assert len({normalize_noun(v) for v in variants}) == 1


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("patient", "nurse"),
        ("client", "customer"),
        ("desk", "computer"),
        ("board", "boat"),
        ("bus", "bu"),
    ],
)
def test_different_nouns_keep_different_keys(first: str, second: str) -> None:
    assert normalize_noun(first) != normalize_noun(second)


# bounded reports and unusable files


def _malformed_file(path: Path, target_bytes: int) -> tuple[int, int]:
    """An OO header then alternating malformed lines (a sex term, a wrong field count)
    until the file reaches ``target_bytes``; returns (schema errors, other errors)."""
    good = "\t".join(["medical", "hospital_worker", "doctor", "clipboard"])
    bad_label = "OO_{n}\t" + good + "\thttps://x.org/{n}.jpg\tYes\tmale\t\ttester\n"
    short = "OO_{n}\tjust [bold]two fields\n"
    size, n = 0, 0
    with path.open("w", encoding="utf-8") as handle:
        handle.write("\t".join(OO_COLUMNS) + "\n")
        while size < target_bytes:
            line = (bad_label if n % 2 else short).format(n=n)
            handle.write(line)
            size += len(line)
            n += 1
    return n, 0


@pytest.mark.slow
def test_a_huge_malformed_file_gives_a_bounded_report(tmp_path: Path) -> None:
    path = tmp_path / "big.tsv"
    lines, _ = _malformed_file(path, 5_000_000)
    report = validate_files([path])
    assert report.error_count == lines and report.ok is False
    schema = only(report, "schema")
    assert len(schema) == 100 and report.omitted == {"schema": lines - 100}
    text = report.to_text()
    assert f"... and {lines - 100} more schema findings" in text
    assert len(text) < 30_000
    data = report.to_dict()
    assert len(data["findings"]) == 100 and data["omitted"] == {"schema": lines - 100}
    assert len(json.dumps(data)) < 60_000


def test_max_findings_is_per_check_and_zero_keeps_all(tmp_path: Path) -> None:
    path = tmp_path / "small.tsv"
    lines, _ = _malformed_file(path, 3_000)
    rows = [oo_row(n, "teacher", M, licence="No") for n in range(1, 8)]
    unlicensed = write_oo(tmp_path / "oo.tsv", rows)
    report = validate_files([path, unlicensed], max_findings=3)
    assert len(only(report, "schema")) == 3 and len(only(report, "licence")) == 3
    assert report.omitted == {"schema": lines - 3, "licence": 4}
    assert report.by_check()["schema"] == lines
    text = report.to_text()
    assert f"[schema] ... and {lines - 3} more schema findings" in text
    assert "[licence] ... and 4 more licence findings" in text
    assert f"ERRORS ({lines + 1})" in text  # + the balance error of the OO file
    everything = validate_files([path, unlicensed], max_findings=0)
    assert len(only(everything, "schema")) == lines and everything.omitted == {}
    with pytest.raises(ValueError, match="max_findings"):
        validate_files([path], max_findings=-1)


def test_a_huge_field_is_quoted_in_part(tmp_path: Path) -> None:
    label = "m" * 200_000
    path = write_raw(tmp_path / "oo.tsv", [list(OO_COLUMNS),
        ["OO_1", "medical", "hospital_worker", "doctor", "clipboard", pexels_url(1), "Yes",
         label, "", "a"]])  # fmt: skip
    [finding] = only(validate_files([path]), "schema")
    assert len(finding.message) <= 1000 and "more characters" in finding.message


@pytest.mark.parametrize(
    ("name", "make", "words"),
    [
        ("missing.tsv", None, "no such file"),
        ("folder.tsv", lambda p: p.mkdir(), "folder"),
        ("empty.tsv", lambda p: p.write_bytes(b""), "empty file"),
        ("blank.tsv", lambda p: p.write_bytes(b"\n\r\n  \n"), "empty file"),
        ("image.tsv", lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"),
         "not UTF-8"),
        ("binary.tsv", lambda p: p.write_bytes(b"IDX\x00\x00\x01\x02\n"), "NUL byte"),
        ("latin1.tsv", lambda p: p.write_bytes("\t".join(OO_COLUMNS).encode() + b"\nJos\xe9\n"),
         "not UTF-8"),
    ],
)  # fmt: skip
def test_files_that_cannot_be_used_are_unusable(
    tmp_path: Path, name: str, make: Any, words: str
) -> None:
    path = tmp_path / name
    if make is not None:
        make(path)
    fine = write_oo(tmp_path / "fine.tsv", [oo_row(1, "teacher", M), oo_row(2, "teacher", F)])
    report = validate_files([path, fine])
    assert report.unusable == [str(path)]
    [finding] = only(report, "unusable")
    assert words in finding.message and finding.path == str(path)
    assert report.files[1].rows == 2  # the usable file is still checked
