"""Official VisoGender TSV reading and writing, and the error for each malformed input."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.schema import OO_COLUMNS, OP_COLUMNS, Context, Gender, VisoGenderRow
from contrastkit.tsv import (
    FileFingerprint,
    TSVStyle,
    parse_visogender_tsv,
    read_tsv_document,
    read_visogender_tsv,
    render_visogender_tsv,
    write_visogender_tsv,
)
from factories import make_row

OP_HEADER = "\t".join(OP_COLUMNS)
OO_HEADER = "\t".join(OO_COLUMNS)
OP_LINE = (
    "OP_1\teducation\tinstitutional\tteacher\tstudent\thttps://example.org/a.jpg\tYes"
    "\tmasculine\tfeminine\t\tSiobhan"
)
OO_LINE = "OO_1\tmedical\thospital_worker\tdoctor\tclipboard\thttps://example.org/b.jpg\tYes\tfeminine\t\tThomas"


def write(tmp_path: Path, text: str, name: str = "data.tsv") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8"))
    return path


@pytest.mark.parametrize("fixture", ["official_op", "official_oo"])
def test_official_file_round_trips_byte_for_byte(
    fixture: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    source: Path = request.getfixturevalue(fixture)
    table = read_visogender_tsv(source)
    out = write_visogender_tsv(
        tmp_path / "copy.tsv",
        table.rows,
        table.context,
        style=TSVStyle(table.newline, table.final_newline),
    )
    assert out.read_bytes() == source.read_bytes()
    again = read_visogender_tsv(out)
    assert again.rows == table.rows
    assert again.columns == table.columns


def test_official_files_have_the_papers_counts(official_op: Path, official_oo: Path) -> None:
    op = read_visogender_tsv(official_op)
    oo = read_visogender_tsv(official_oo)
    assert (op.context, len(op)) == (Context.OP, 460)
    assert (oo.context, len(oo)) == (Context.OO, 230)
    assert op.newline == "\r\n" and not op.final_newline
    first = op.rows[0]
    assert first.idx == "OP_1"
    assert (first.occupation, first.participant, first.cell) == ("teacher", "student", "MM")
    assert first.annotator == "Siobhan"
    assert first.error_codes == ""
    assert first.line == 2
    assert oo.rows[0].object is not None and oo.rows[0].participant is None
    assert {row.cell for row in op} == {"MM", "MF", "FM", "FF"}


def test_writing_with_default_style_gives_lf_and_same_rows(
    official_oo: Path, tmp_path: Path
) -> None:
    table = read_visogender_tsv(official_oo)
    out = write_visogender_tsv(tmp_path / "lf.tsv", table.rows, table.context)
    data = out.read_bytes()
    assert b"\r" not in data and data.endswith(b"\n")
    assert data.splitlines()[0].decode() == OO_HEADER
    assert read_visogender_tsv(out).rows == table.rows


def test_reads_bom_blank_lines_and_crlf(tmp_path: Path) -> None:
    path = write(tmp_path, "\ufeff" + OP_HEADER + "\r\n" + OP_LINE + "\r\n\r\n")
    table = read_visogender_tsv(path)
    assert len(table) == 1
    row = table.rows[0]
    assert row.occupation_gender is Gender.MASCULINE
    assert row.participant_gender is Gender.FEMININE
    assert row.cell == "MF"


@pytest.mark.parametrize(
    ("text", "line", "field", "words"),
    [
        (OP_HEADER.replace("\tAnnotator", "") + "\n", 1, "Annotator", "missing column"),
        (
            OP_HEADER.replace("Sector\tSpecialisation", "Specialisation\tSector") + "\n",
            1,
            "Sector",
            "out of place",
        ),
        (OP_HEADER + "\tNotes\n", 1, "Notes", "unexpected column"),
        ("IDX\tfoo\tbar\n", 1, None, "neither"),
        ("", 1, None, "empty file"),
        (OP_HEADER + "\n" + OP_LINE.rsplit("\t", 1)[0] + "\n", 2, "Annotator", "11"),
        (OP_HEADER + "\n" + OP_LINE + "\textra\n", 2, None, "found 12"),
        (OP_HEADER + "\n" + OP_LINE.replace("\tmasculine\t", "\tmale\t") + "\n", 2,
         "Occupation_perceived_gender", "masculine/feminine"),
        (OP_HEADER + "\n" + OP_LINE.replace("\tfeminine\t", "\tnonbinary\t") + "\n", 2,
         "Participant_perceived_gender", "unknown gender label"),
        (OP_HEADER + "\n" + OP_LINE.replace("\tmasculine\t", "\tMasculine\t") + "\n", 2,
         "Occupation_perceived_gender", "official spelling"),
        (OP_HEADER + "\n" + OP_LINE.replace("https://example.org/a.jpg", "") + "\n", 2,
         "URL type (Type NA if can't find)", "empty"),
        (OP_HEADER + "\n" + OP_LINE.replace("\tstudent\t", "\t \t") + "\n", 2,
         "Participant", "empty"),
        (OO_HEADER + "\n\n" + OO_LINE.replace("OO_1", "") + "\n", 3, "IDX", "empty"),
    ],
)  # fmt: skip
def test_malformed_input_names_file_line_and_field(
    tmp_path: Path, text: str, line: int, field: str | None, words: str
) -> None:
    path = write(tmp_path, text)
    with pytest.raises(DataFormatError) as caught:
        read_visogender_tsv(path)
    error = caught.value
    assert error.path == str(path)
    assert error.line == line
    assert error.field == field
    assert words in str(error)
    assert str(error).startswith(f"{path}:{line}:")


def test_older_official_headers_and_label_typos_get_a_hint(tmp_path: Path) -> None:
    # Earlier VisoGender releases (August 2023) named the column 'Occupation_Gender' and
    # spelled one label 'maculine'.
    old_header = OO_HEADER.replace("Occupation_perceived_gender", "Occupation_Gender")
    with pytest.raises(DataFormatError, match="found 'Occupation_Gender': rename it"):
        read_visogender_tsv(write(tmp_path, old_header + "\n" + OO_LINE + "\n"))
    typo = OO_LINE.replace("\tfeminine\t", "\tmaculine\t")
    with pytest.raises(DataFormatError, match="did you mean 'masculine'") as caught:
        read_visogender_tsv(write(tmp_path, OO_HEADER + "\n" + typo + "\n"))
    assert (caught.value.line, caught.value.field) == (2, "Occupation_perceived_gender")


def test_missing_and_non_utf8_files(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="no such file"):
        read_visogender_tsv(tmp_path / "absent.tsv")
    path = tmp_path / "latin1.tsv"
    path.write_bytes(
        (OP_HEADER + "\n").encode() + OP_LINE.replace("Siobhan", "José").encode("latin-1")
    )
    with pytest.raises(DataFormatError) as caught:
        read_visogender_tsv(path)
    assert caught.value.line == 2
    assert "UTF-8" in str(caught.value)


def test_failed_write_leaves_previous_file_untouched(official_oo: Path, tmp_path: Path) -> None:
    target = tmp_path / "OO.tsv"
    target.write_bytes(official_oo.read_bytes())
    good = read_visogender_tsv(target)
    bad = make_row("doctor", Gender.FEMININE, idx="OO_x", object="clip\tboard")
    with pytest.raises(ValueError, match="tabs and line breaks"):
        write_visogender_tsv(target, [*good.rows, bad], Context.OO)
    assert target.read_bytes() == official_oo.read_bytes()
    assert [p.name for p in tmp_path.iterdir()] == ["OO.tsv"]  # no temporary file left


def test_rows_of_the_other_context_are_refused(official_op: Path) -> None:
    table = read_visogender_tsv(official_op)
    with pytest.raises(ValueError, match="is OP, not OO"):
        render_visogender_tsv(table.rows[:1], Context.OO)


def test_row_invariants() -> None:
    common = dict(
        idx="x", sector="s", specialisation="p", occupation="doctor", url="u", licence="Yes"
    )
    with pytest.raises(ValueError, match="needs a participant"):
        VisoGenderRow(context=Context.OP, occupation_gender=Gender.MASCULINE, **common)
    with pytest.raises(ValueError, match="cannot have a participant"):
        VisoGenderRow(
            context=Context.OO,
            object="desk",
            participant="client",
            occupation_gender=Gender.MASCULINE,
            **common,
        )
    with pytest.raises(ValueError, match="masculine or feminine"):
        VisoGenderRow(context=Context.OO, object="desk", occupation_gender=Gender.NEUTRAL, **common)


@pytest.mark.parametrize(
    ("label", "expected"),
    [("masculine", Gender.MASCULINE), (" Feminine ", Gender.FEMININE), ("M", Gender.MASCULINE),
     ("f", Gender.FEMININE)],
)  # fmt: skip
def test_gender_labels(label: str, expected: Gender) -> None:
    assert Gender.parse_label(label) is expected


@pytest.mark.parametrize("label", ["male", "woman", "neutral", "", "x"])
def test_gender_labels_refused(label: str) -> None:
    with pytest.raises(ValueError, match="unknown gender label"):
        Gender.parse_label(label)


def test_context_cells() -> None:
    assert Context.OO.cells == ("M", "F")
    assert Context.OP.cells == ("MM", "MF", "FM", "FF")
    assert Context.parse(" op ") is Context.OP
    with pytest.raises(ValueError, match="expected OP or OO"):
        Context.parse("OX")


def test_atomic_write_keeps_the_permissions_of_the_file_it_replaces(tmp_path: Path) -> None:
    target = tmp_path / "data.tsv"
    atomic_write_text(target, "first")
    assert stat.S_IMODE(target.stat().st_mode) == 0o666 & ~_umask()
    target.chmod(0o640)
    atomic_write_text(target, "second")
    assert target.read_text() == "second"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def _umask() -> int:
    current = os.umask(0)
    os.umask(current)
    return current


# encoding details, byte-exact edits, hostile bytes


def test_render_and_write_keep_a_bom_when_asked(official_oo: Path, tmp_path: Path) -> None:
    source = tmp_path / "bom.tsv"
    source.write_bytes(b"\xef\xbb\xbf" + official_oo.read_bytes())
    stream = parse_visogender_tsv(source)
    assert stream.bom and stream.newline == "\r\n"
    table = read_visogender_tsv(source)
    style = TSVStyle(table.newline, table.final_newline, stream.bom)
    out = write_visogender_tsv(tmp_path / "copy.tsv", table.rows, table.context, style=style)
    assert out.read_bytes() == source.read_bytes()
    assert render_visogender_tsv([], Context.OO, bom=True).startswith("\ufeffIDX\t")


def test_a_document_renders_every_untouched_byte_as_read(tmp_path: Path) -> None:
    text = "\ufeff" + OP_HEADER + "\r\n" + OP_LINE + "\n\r\n" + OP_LINE.replace("OP_1", "OP_2")
    path = write(tmp_path, text)
    document = read_tsv_document(path)
    assert document.to_bytes() == path.read_bytes() and document.bom
    assert [row.line for row in document.table.rows] == [2, 4]
    fields = list(document.fields(4))
    fields[9] = "retired"
    edited = document.render({4: fields}).decode("utf-8")
    head, tail = text.rsplit("\n", 1)
    assert edited == head + "\n" + tail.replace("\t\tSiobhan", "\tretired\tSiobhan")
    dropped = document.render({4: None}).decode("utf-8")
    assert dropped == "\ufeff" + OP_HEADER + "\r\n" + OP_LINE + "\n"  # no newline added
    with pytest.raises(ValueError, match="tabs, line breaks"):
        document.render({2: ["a\tb"]})


def test_a_document_fingerprint_sees_a_change_that_keeps_size_and_time(tmp_path: Path) -> None:
    path = write(tmp_path, OP_HEADER + "\n" + OP_LINE + "\n")
    document = read_tsv_document(path)
    status = path.stat()
    path.write_bytes(path.read_bytes().replace(b"Siobhan", b"Siobhen"))
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns))
    now = FileFingerprint.of(path)
    assert (now.size, now.mtime_ns) == (document.fingerprint.size, document.fingerprint.mtime_ns)
    assert now != document.fingerprint


@pytest.mark.parametrize(
    ("data", "line", "words"),
    [
        ((OP_HEADER + "\n" + OP_LINE + "\n").encode().replace(b"Siobhan", b"Sio\0bhan"), 2, "NUL"),
        (b"\x00\x01\x02\x03", 1, "NUL"),
        (b"\xff\xfe" + OP_HEADER.encode("utf-16-le"), 1, "UTF-16 text"),
        (b"\xef\xbb\xbf" + OP_HEADER.encode() + b"\n\xc3\x28\n", 2, "not UTF-8"),
        (b"\n\n", 1, "empty file"),
    ],
)
def test_binary_and_blank_files_are_located_errors(
    tmp_path: Path, data: bytes, line: int, words: str
) -> None:
    path = tmp_path / "x.tsv"
    path.write_bytes(data)
    for reader in (read_visogender_tsv, read_tsv_document):
        with pytest.raises(DataFormatError) as caught:
            reader(path)
        assert caught.value.line == line and words in str(caught.value)


def test_a_folder_is_not_a_tsv(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="is a folder"):
        read_visogender_tsv(tmp_path)


def test_an_overlong_line_is_an_error_of_that_line_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contrastkit.tsv as tsv_module

    monkeypatch.setattr(tsv_module, "MAX_LINE_BYTES", 1024)
    path = write(tmp_path, OP_HEADER + "\n" + "x" * 5000 + "\n" + OP_LINE + "\n")
    items = list(parse_visogender_tsv(path).rows)
    assert isinstance(items[0], DataFormatError) and items[0].line == 2
    assert "longer than 1024 bytes" in items[0].reason
    assert isinstance(items[1], VisoGenderRow) and items[1].line == 3
    with pytest.raises(DataFormatError, match="longer than"):
        read_visogender_tsv(path)


def test_parse_streams_and_reports_the_line_style_at_the_end(tmp_path: Path) -> None:
    path = write(tmp_path, OP_HEADER + "\n" + OP_LINE + "\r\n" + OP_LINE.replace("OP_1", "OP_2"))
    stream = parse_visogender_tsv(path)
    rows = list(stream.rows)
    assert [r.idx for r in rows if isinstance(r, VisoGenderRow)] == ["OP_1", "OP_2"]
    assert (stream.newline, stream.final_newline, stream.bom) == ("\r\n", False, False)
