"""The dataset validator (contrastkit.curation.validation) on the official VisoGender files
and on small files written for each check."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from contrastkit.curation.validation import validate_files
from contrastkit.schema import OO_COLUMNS, OP_COLUMNS
from contrastkit.tsv import read_visogender_tsv
from factories import pexels_url
from validation_files import (
    TAXONOMY,
    URL_COLUMN,
    F,
    M,
    balanced_op,
    idx_set,
    only,
    oo_row,
    op_row,
    write_oo,
    write_op,
    write_raw,
)

# the official VisoGender files


CANONICAL_DUPLICATES = {
    frozenset(pair)
    for pair in [
        ("OP_129", "OP_193"),
        ("OP_133", "OP_295"),
        ("OP_200", "OP_219"),
        ("OP_212", "OP_332"),
        ("OP_283", "OP_325"),
        ("OO_68", "OO_80"),
        ("OO_86", "OO_148"),
    ]
}


def test_official_files_only_canonical_duplicates_and_one_spelling_error(
    official_op: Path, official_oo: Path
) -> None:
    report = validate_files([official_op, official_oo], TAXONOMY)

    for check in ("schema", "ids", "balance", "duplicate_url"):
        assert only(report, check) == [], check
    canonical = only(report, "canonical_duplicate")
    assert {idx_set(f) for f in canonical} == CANONICAL_DUPLICATES
    assert len(canonical) == len(CANONICAL_DUPLICATES)

    spelling = only(report, "spelling")
    assert len(spelling) == 1
    assert "'mixing_spoon'" in spelling[0].message
    assert "'mixing spoon'" in spelling[0].message
    assert "baker" in spelling[0].message
    assert "OO_180" in idx_set(spelling[0])
    assert idx_set(spelling[0]) == {f"OO_{n}" for n in range(171, 181)}

    taxonomy = only(report, "taxonomy")
    assert len(taxonomy) == 1
    assert taxonomy[0].field == "Object"
    assert taxonomy[0].line == 181  # OO_180, the header being line 1
    assert "mixing_spoon" in taxonomy[0].message

    assert report.by_check() == {"canonical_duplicate": 7, "spelling": 1, "taxonomy": 1}
    assert report.ok is False
    assert [(s.context, s.rows, s.occupations) for s in report.files] == [
        ("OP", 460, 23),
        ("OO", 230, 23),
    ]
    assert report.to_text().splitlines()[-1].startswith("FAILED:")


def test_official_files_locate_duplicates_by_file_and_line(
    official_op: Path, official_oo: Path
) -> None:
    report = validate_files([official_op, official_oo])
    refs = {
        ref.idx: (ref.path, ref.line)
        for finding in only(report, "canonical_duplicate")
        for ref in finding.rows
    }
    assert refs["OP_129"] == (str(official_op), 130)
    assert refs["OO_148"] == (str(official_oo), 149)
    assert only(report, "taxonomy") == []


def test_official_files_hold_five_per_cell(official_op: Path, official_oo: Path) -> None:
    report = validate_files([official_op, official_oo], per_cell=5)
    assert only(report, "balance") == []


def test_per_cell_four_flags_every_occupation_of_both_files(
    official_op: Path, official_oo: Path
) -> None:
    report = validate_files([official_op, official_oo], per_cell=4)
    balance = only(report, "balance")
    assert len(balance) == 46
    for path in (official_op, official_oo):
        occupations = {row.occupation for row in read_visogender_tsv(path)}
        assert len(occupations) == 23
        in_file = [f for f in balance if f.path == str(path)]
        assert len(in_file) == 23
        for occupation in occupations:
            assert sum(f"occupation {occupation!r}" in f.message for f in in_file) == 1
        assert all("expected 4 per cell" in f.message for f in in_file)
    assert all(f.severity == "error" for f in balance)


# schema


def test_every_malformed_line_is_reported_and_valid_rows_still_checked(tmp_path: Path) -> None:
    good = ["education", "institutional", "teacher", "board"]
    shared_url = pexels_url(1)
    path = write_raw(
        tmp_path / "oo.tsv",
        [
            list(OO_COLUMNS),
            ["OO_1", *good, shared_url, "Yes", "masculine", "", "a"],  # line 2: valid
            ["OO_2", *good, pexels_url(2), "Yes", "feminine"],  # line 3: 8 of 10 fields
            ["OO_3", *good, pexels_url(3), "Yes", "male", "", "a"],  # line 4: sex term
            ["OO_4", *good, "  ", "Yes", "feminine", "", "a"],  # line 5: empty URL
            ["OO_5", *good, shared_url, "Yes", "feminine", "", "a"],  # line 6: valid
        ],
    )
    report = validate_files([path])

    schema = sorted(only(report, "schema"), key=lambda f: f.line)
    assert [(f.line, f.field) for f in schema] == [
        (3, "Error codes"),
        (4, "Occupation_perceived_gender"),
        (5, URL_COLUMN),
    ]
    assert all(f.path == str(path) and f.severity == "error" for f in schema)
    assert "expected 10 tab-separated fields, found 8" in schema[0].message
    assert "'male'" in schema[1].message
    assert "masculine" in schema[1].message
    assert "empty" in schema[2].message

    # the two valid rows were read and checked: they share a URL
    assert [(s.context, s.rows, s.occupations) for s in report.files] == [("OO", 2, 1)]
    [duplicate] = only(report, "duplicate_url")
    assert [(r.idx, r.line) for r in duplicate.rows] == [("OO_1", 2), ("OO_5", 6)]
    assert only(report, "balance") == []
    assert report.ok is False


def test_too_many_fields_and_a_bad_participant_label(tmp_path: Path) -> None:
    fields = ["office", "legal", "lawyer", "client", pexels_url(1), "Yes"]
    path = write_raw(
        tmp_path / "op.tsv",
        [
            list(OP_COLUMNS),
            ["OP_1", *fields, "masculine", "masculine", "", "a", "extra"],
            ["OP_2", *fields, "masculine", "woman", "", "a"],
        ],
    )
    report = validate_files([path])
    assert [(f.line, f.field) for f in report.findings] == [
        (2, None),
        (3, "Participant_perceived_gender"),
    ]
    assert "found 12" in report.findings[0].message


def test_unicode_line_separator_inside_a_field_is_not_a_line_break(tmp_path: Path) -> None:
    """A TSV line ends at LF or CRLF only. Text pasted from a web page can carry U+2028
    (LINE SEPARATOR) inside a cell; the writer accepts it, so the validator must read the
    row whole and keep counting physical lines."""
    rows = [
        replace(oo_row(1, "teacher", M), annotator="Siobhan\u2028Murphy"),
        oo_row(2, "teacher", F),
    ]
    path = write_oo(tmp_path / "oo.tsv", rows)
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\t".join(["OO_3", "education", "institutional", "teacher", "board"]))
        handle.write("\t\tYes\tfeminine\t\ta\n")  # line 4: empty URL
    report = validate_files([path])

    assert [(f.check, f.line, f.field) for f in report.findings] == [("schema", 4, URL_COLUMN)]
    assert report.files[0].rows == 2


def test_unreadable_header_is_one_schema_error(tmp_path: Path) -> None:
    broken = write_raw(
        tmp_path / "broken.tsv",
        [list(OO_COLUMNS[:-1]), ["OO_1", "education", "institutional", "teacher", "board"]],
    )
    fine = write_oo(tmp_path / "fine.tsv", [oo_row(1, "teacher", M), oo_row(2, "teacher", F)])
    report = validate_files([broken, fine], TAXONOMY)

    assert len(report.findings) == 1
    [finding] = report.findings
    assert (finding.check, finding.severity) == ("schema", "error")
    assert (finding.path, finding.line, finding.field) == (str(broken), 1, "Annotator")
    summaries = {s.path: s for s in report.files}
    assert summaries[str(broken)].context is None
    assert summaries[str(broken)].rows == 0
    assert summaries[str(fine)].context == "OO"
    assert summaries[str(fine)].rows == 2
    assert f"{broken}: unreadable" in report.to_text()


def test_missing_file_is_an_unusable_file(tmp_path: Path) -> None:
    report = validate_files([tmp_path / "nope.tsv"])
    assert [f.check for f in report.errors] == ["unusable"]
    assert report.files[0].context is None
    assert report.unusable == [str(tmp_path / "nope.tsv")]


# ids, balance, duplicates


def test_duplicate_idx_across_two_files(tmp_path: Path) -> None:
    first = write_oo(tmp_path / "a.tsv", [oo_row(1, "teacher", M), oo_row(2, "teacher", F)])
    second = write_oo(
        tmp_path / "b.tsv", [oo_row(3, "doctor", M, idx="OO_1"), oo_row(4, "doctor", F)]
    )
    report = validate_files([first, second])

    [finding] = only(report, "ids")
    assert finding.severity == "error"
    assert "'OO_1'" in finding.message
    assert [(r.path, r.line, r.idx) for r in finding.rows] == [
        (str(first), 2, "OO_1"),
        (str(second), 2, "OO_1"),
    ]
    assert report.by_check() == {"ids": 1}


def test_unbalanced_occupation(tmp_path: Path) -> None:
    rows = [
        oo_row(1, "doctor", M),
        oo_row(2, "doctor", M),
        oo_row(3, "doctor", F),
        oo_row(4, "teacher", M),
        oo_row(5, "teacher", F),
    ]
    path = write_oo(tmp_path / "oo.tsv", rows)

    [finding] = only(validate_files([path]), "balance")
    assert finding.severity == "error"
    assert finding.path == str(path)
    assert "'doctor'" in finding.message
    assert "M 2, F 1" in finding.message
    assert "teacher" not in finding.message

    exact = only(validate_files([path], per_cell=1), "balance")
    assert len(exact) == 1
    assert "'doctor'" in exact[0].message
    assert "expected 1 per cell" in exact[0].message


def test_missing_op_cell_is_unbalanced(tmp_path: Path) -> None:
    rows = balanced_op("lawyer", 1)[:3]  # no FF image
    path = write_op(tmp_path / "op.tsv", rows)
    [finding] = only(validate_files([path]), "balance")
    assert "MM 1, MF 1, FM 1, FF 0" in finding.message


def test_same_url_in_op_and_oo_files(tmp_path: Path) -> None:
    url = "https://example.com/photos/shared.jpg"
    op_rows = balanced_op("lawyer", 1)
    op_rows[2] = op_row(3, "lawyer", F, M, url=url)
    op = write_op(tmp_path / "op.tsv", op_rows)
    oo = write_oo(tmp_path / "oo.tsv", [oo_row(1, "lawyer", M, url=url), oo_row(2, "lawyer", F)])
    report = validate_files([op, oo], TAXONOMY)

    [finding] = only(report, "duplicate_url")
    assert finding.severity == "error"
    assert url in finding.message
    assert {(r.path, r.idx) for r in finding.rows} == {(str(op), "OP_3"), (str(oo), "OO_1")}
    assert report.by_check() == {"duplicate_url": 1}


def test_two_sizes_of_one_pexels_photo(tmp_path: Path) -> None:
    base = "https://images.pexels.com/photos/5668844/pexels-photo-5668844.jpeg"
    rows = [
        oo_row(1, "teacher", M, url=f"{base}?auto=compress&cs=tinysrgb&w=600&lazy=load"),
        oo_row(2, "teacher", F, url=f"{base}?auto=compress&cs=tinysrgb&dpr=2&h=750&w=1260"),
    ]
    report = validate_files([write_oo(tmp_path / "oo.tsv", rows)])

    [finding] = only(report, "canonical_duplicate")
    assert finding.severity == "error"
    assert idx_set(finding) == {"OO_1", "OO_2"}
    assert "images.pexels.com/photos/5668844/pexels-photo-5668844.jpeg" in finding.message
    assert only(report, "duplicate_url") == []
    assert report.ok is False


# spelling and nouns


@pytest.mark.parametrize(
    ("common", "rare"),
    [("counsellor", "counselor"), ("client", "clients"), ("stock chart", "stock-chart")],
)
def test_one_noun_spelled_two_ways_is_a_spelling_error(
    tmp_path: Path, common: str, rare: str
) -> None:
    rows = balanced_op("supervisor", 1, MM=common, MF=common, FM=common, FF=rare)
    report = validate_files([write_op(tmp_path / "op.tsv", rows)])

    [finding] = report.findings
    assert (finding.check, finding.severity) == ("spelling", "error")
    assert f"{rare!r} (1 rows), {common!r} (3 rows)" in finding.message
    assert "'supervisor'" in finding.message
    assert finding.rows[0].idx == "OP_4"  # the rarer spelling first
    assert idx_set(finding) == {"OP_1", "OP_2", "OP_3", "OP_4"}


def test_object_spelled_two_ways_is_a_spelling_error(tmp_path: Path) -> None:
    rows = [oo_row(1, "baker", M, obj="mixing spoon"), oo_row(2, "baker", F, obj="mixing_spoon")]
    report = validate_files([write_oo(tmp_path / "oo.tsv", rows)], TAXONOMY)
    assert [f.check for f in report.errors] == ["spelling"]
    assert [(f.check, f.line, f.field) for f in report.warnings] == [("taxonomy", 3, "Object")]


def test_same_noun_in_two_occupations_is_not_a_spelling_error(tmp_path: Path) -> None:
    rows = [
        *balanced_op("lawyer", 1, MM="client", MF="client", FM="client", FF="client"),
        *balanced_op("auditor", 5, MM="clients", MF="clients", FM="clients", FF="clients"),
    ]
    report = validate_files([write_op(tmp_path / "op.tsv", rows)])
    assert report.findings == []


def test_occupation_spelled_two_ways_across_files(tmp_path: Path) -> None:
    op = write_op(tmp_path / "op.tsv", balanced_op("counsellor", 1))
    oo = write_oo(
        tmp_path / "oo.tsv",
        [
            oo_row(1, "counselor", M, obj="notepad"),
            oo_row(2, "counselor", F, obj="notepad"),
        ],
    )
    report = validate_files([op, oo])
    [finding] = report.findings
    assert finding.check == "spelling"
    assert "occupation spelled 2 ways" in finding.message
    assert "'counselor'" in finding.message
    assert "'counsellor'" in finding.message


def test_different_nouns_for_one_occupation_are_a_warning(tmp_path: Path) -> None:
    rows = balanced_op("doctor", 1, MM="patient", MF="patient", FM="nurse", FF="nurse")
    report = validate_files([write_op(tmp_path / "op.tsv", rows)])

    assert only(report, "spelling") == []
    [finding] = report.findings
    assert (finding.check, finding.severity) == ("nouns", "warning")
    assert "'doctor'" in finding.message
    assert "'patient' (2 rows)" in finding.message
    assert "'nurse' (2 rows)" in finding.message
    assert report.ok is True


# taxonomy, licence, error codes


def test_occupation_outside_the_taxonomy(tmp_path: Path) -> None:
    rows = [oo_row(1, "astronaut", M, obj="helmet"), oo_row(2, "astronaut", F, obj="helmet")]
    path = write_oo(tmp_path / "oo.tsv", rows)

    with_taxonomy = validate_files([path], TAXONOMY)
    [finding] = with_taxonomy.findings
    assert (finding.check, finding.severity) == ("taxonomy", "warning")
    assert "'astronaut'" in finding.message
    assert (finding.path, finding.line, finding.field) == (str(path), 2, "Occupation")
    assert with_taxonomy.ok is True

    assert validate_files([path], taxonomy=None).findings == []


def test_taxonomy_mismatch_in_sector(tmp_path: Path) -> None:
    rows = balanced_op("teacher", 1)
    rows[1] = replace(rows[1], sector="schooling")
    report = validate_files([write_op(tmp_path / "op.tsv", rows)], TAXONOMY)
    [finding] = report.findings
    assert (finding.check, finding.field, finding.line) == ("taxonomy", "Sector", 3)
    assert "'schooling'" in finding.message
    assert "'education'" in finding.message


def test_unconfirmed_licence(tmp_path: Path) -> None:
    oo = write_oo(
        tmp_path / "oo.tsv", [oo_row(1, "teacher", M, licence="No"), oo_row(2, "teacher", F)]
    )
    op_rows = balanced_op("teacher", 1)
    op_rows[3] = op_row(4, "teacher", F, F, licence="")
    op = write_op(tmp_path / "op.tsv", op_rows)
    report = validate_files([op, oo])

    assert report.ok is True
    licence = only(report, "licence")
    assert {(f.path, f.line, f.field) for f in licence} == {
        (str(oo), 2, "LICENSE OK?"),
        (str(op), 5, "Licence"),
    }
    assert all(f.severity == "warning" for f in licence)
    assert any("'No'" in f.message and "'OO_1'" in f.message for f in licence)
    assert report.by_check() == {"licence": 2}


def test_filled_error_codes(tmp_path: Path) -> None:
    rows = [oo_row(1, "teacher", M), oo_row(2, "teacher", F, error_codes=" E2 ")]
    path = write_oo(tmp_path / "oo.tsv", rows)
    report = validate_files([path])

    [finding] = report.findings
    assert (finding.check, finding.severity) == ("error_codes", "warning")
    assert (finding.path, finding.line, finding.field) == (str(path), 3, "Error codes")
    assert "'OO_2'" in finding.message
    assert "'E2'" in finding.message
    assert report.ok is True
