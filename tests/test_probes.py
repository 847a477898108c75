"""The stereotype probe-set format (contrastkit.probes): reading, located errors, writing,
and the neutralised captions of VLStereoSet Sec. 3.5 / Fig. 2."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.gender_words import WORD_TABLE
from contrastkit.probes import (
    COLUMNS,
    NEUTRAL_TERMS,
    is_probe_set,
    load_probe_set,
    neutralise,
    read_neutral_terms,
    read_probes,
    write_probes,
)
from stereoset_data import expected_rows, make_probe_fixture


@pytest.fixture(scope="module")
def fixture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    return make_probe_fixture(tmp_path_factory.mktemp("probes"))


def _lines(path: Path) -> list[list[str]]:
    return [line.split("\t") for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[list[str]]) -> Path:
    path.write_text("".join("\t".join(fields) + "\n" for fields in lines), encoding="utf-8")
    return path


def test_a_probe_file_reads_back_as_written(fixture: tuple[Path, Path, Path]) -> None:
    probes = fixture[2]
    rows = read_probes(probes)
    assert rows == expected_rows() and len(rows) == 16
    first = rows[0]
    assert first.captions() == ("My sister is caring.", "My sister is rude.", "My sister is hi.")
    assert first.neutral_captions() == ("My sibling is caring.", "My sibling is rude.")
    assert first.line == 2 and first.is_anti_stereotypical
    local = first.local_image()
    assert local is not None and local.is_file()  # relative to the file's folder
    assert _lines(probes)[0] == list(COLUMNS)


def test_jsonl_round_trip_gives_the_same_rows(
    fixture: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    rows = read_probes(fixture[2])
    write_probes(rows, tmp_path / "probes.jsonl")
    assert read_probes(tmp_path / "probes.jsonl") == rows
    record = json.loads((tmp_path / "probes.jsonl").read_text().splitlines()[0])
    assert list(record) == list(COLUMNS)


# column, new value, expected field, words of the reason
MALFORMED = [
    ("stereotype_caption", "", "stereotype_caption", "empty value"),
    ("unrelated_caption", "  ", "unrelated_caption", "empty value"),
    ("category", "age", "category", "unknown category 'age'"),
    ("label", "unrelated", "label", "not one of stereotype, anti-stereotype"),
    ("image", "ftp://example.org/a.jpg", "image", "bad URL"),
    ("image", "https:///a.jpg", "image", "no host"),
    ("anti_stereotype_caption", "My sister is kind.", "anti_stereotype_caption",
     "does not contain its attribute term 'rude'"),
    ("context", "My sister is ___.", "context", "no BLANK"),
    ("neutral_anti_stereotype_caption", "", "neutral_anti_stereotype_caption",
     "together or not at all"),
]  # fmt: skip


@pytest.mark.parametrize(("column", "value", "field", "reason"), MALFORMED)
def test_a_malformed_row_is_located(
    fixture: tuple[Path, Path, Path], tmp_path: Path, column: str, value: str, field: str,
    reason: str,
) -> None:  # fmt: skip
    lines = _lines(fixture[2])
    lines[3][COLUMNS.index(column)] = value
    bad = _write(tmp_path / "bad.tsv", lines)
    with pytest.raises(DataFormatError) as caught:
        read_probes(bad)
    error = caught.value
    assert (error.path, error.line, error.field) == (str(bad), 4, field)
    assert reason in error.reason


def test_file_level_problems_are_located(fixture: tuple[Path, Path, Path], tmp_path: Path) -> None:
    lines = _lines(fixture[2])
    duplicate = _write(tmp_path / "dup.tsv", [*lines, lines[2]])
    with pytest.raises(
        DataFormatError, match="duplicate id 'g-sister-2' \\(first on line 3\\)"
    ) as e:
        read_probes(duplicate)
    assert (e.value.line, e.value.field) == (len(lines) + 1, "id")

    no_label = [[f for n, f in enumerate(line) if n != COLUMNS.index("label")] for line in lines]
    with pytest.raises(DataFormatError, match="missing column") as e:
        read_probes(_write(tmp_path / "nolabel.tsv", no_label))
    assert (e.value.line, e.value.field) == (1, "label")

    short = [*lines[:5], lines[5][:-2]]
    with pytest.raises(DataFormatError, match="expected 16 tab-separated fields, found 14") as e:
        read_probes(_write(tmp_path / "short.tsv", short))
    assert (e.value.line, e.value.field) == (6, "annotator")

    jsonl = tmp_path / "bad.jsonl"
    record = dict(zip(COLUMNS, lines[1], strict=True))
    del record["unrelated_caption"]
    jsonl.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="missing key") as e:
        read_probes(jsonl)
    assert (e.value.line, e.value.field) == (1, "unrelated_caption")


def test_optional_columns_may_be_left_out(fixture: tuple[Path, Path, Path], tmp_path: Path) -> None:
    lines = [line[:-2] for line in _lines(fixture[2])]
    rows = read_probes(_write(tmp_path / "short.tsv", lines))
    assert [(r.annotator, r.licence) for r in rows] == [("", "")] * 16


def test_write_refuses_a_bad_row_and_writes_nothing(tmp_path: Path) -> None:
    rows = expected_rows()
    rows[2] = dataclasses.replace(rows[2], category="nationality")
    with pytest.raises(DataFormatError, match="unknown category"):
        write_probes(rows, tmp_path / "out.tsv")
    assert not (tmp_path / "out.tsv").exists()


def test_sets_are_recognised_by_their_header(
    fixture: tuple[Path, Path, Path], official_oo: Path, tmp_path: Path
) -> None:
    json_path, images_tsv, probes = fixture
    assert is_probe_set(probes) and is_probe_set(probes.parent)
    assert not is_probe_set(official_oo) and not is_probe_set(images_tsv)
    assert not is_probe_set(json_path) and not is_probe_set(tmp_path / "absent.tsv")
    folder = tmp_path / "one"
    folder.mkdir()
    (folder / "set.tsv").write_bytes(probes.read_bytes())
    assert load_probe_set(folder) == read_probes(probes)
    write_probes(read_probes(probes)[:2], folder / "copy.jsonl")
    with pytest.raises(DataFormatError, match="2 probe files"):
        load_probe_set(folder)


# ------------------------------------------------------------------------- neutralisation


def test_the_target_becomes_its_neutral_term_in_its_case() -> None:
    assert neutralise("My sister is rude.", "sister", "gender") == "My sibling is rude."
    assert neutralise("Sister, SISTER and sister.", "sister", "gender") == (
        "Sibling, SIBLING and sibling."
    )
    # whole words only: "sisterhood" is kept, and no whole-word target means no neutral form
    assert neutralise("My sisterhood and my sister.", "sister", "gender") == (
        "My sisterhood and my sibling."
    )
    assert neutralise("The sisterhood is strong.", "sister", "gender") == ""
    # only the target: other gendered words stay, as in the paper
    assert neutralise("My sister said she was tired.", "sister", "gender") == (
        "My sibling said she was tired."
    )


def test_gender_terms_come_from_the_table_4_words() -> None:
    for masculine, feminine, neutral in WORD_TABLE[:-3]:  # nouns (pronouns below)
        for word in (masculine, feminine):
            assert NEUTRAL_TERMS[word] == neutral
            assert neutralise(f"The {word} is kind.", word, "gender") == f"The {neutral} is kind."
    assert neutralise("She is kind.", "she", "gender") == "They is kind."
    assert neutralise("I met her mother.", "her", "gender") == "I met their mother."
    assert neutralise("I met her.", "her", "gender") == "I met them."
    assert neutralise("Mommy is kind.", "mommy", "gender") == "Parent is kind."


def test_a_user_mapping_extends_and_overrides(tmp_path: Path) -> None:
    terms = tmp_path / "neutral.tsv"
    terms.write_text(
        "target\tneutral\n# professions\nchess player\tplayer\nSister\tsib\n\n", encoding="utf-8"
    )
    mapping = read_neutral_terms(terms)
    assert mapping == {"chess player": "player", "Sister": "sib"}
    assert neutralise("The Chess  Player won.", "chess player", "profession", mapping) == (
        "The Player won."
    )
    assert neutralise("My sister is rude.", "sister", "gender", mapping) == "My sib is rude."
    # no default for the other categories
    assert neutralise("The chess player won.", "chess player", "profession") == ""
    assert neutralise("The people of Iceland.", "Iceland", "race", mapping) == ""


def test_a_malformed_neutral_terms_file_is_located(tmp_path: Path) -> None:
    terms = tmp_path / "neutral.tsv"
    terms.write_text("sister\tsibling\nnurse\tcarer\textra\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="expected 2 tab-separated fields") as e:
        read_neutral_terms(terms)
    assert e.value.line == 2
    terms.write_text("sister\tsibling\nSISTER\tsib\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="also given on line 1") as e:
        read_neutral_terms(terms)
    assert (e.value.line, e.value.field) == (2, "target")
