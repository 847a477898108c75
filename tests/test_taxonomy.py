"""The built-in VisoGender taxonomy and user extensions from files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.schema import Context
from contrastkit.taxonomy import load_taxonomy
from contrastkit.tsv import read_visogender_tsv


def test_builtin_has_the_23_occupations_of_the_paper() -> None:
    taxonomy = load_taxonomy()
    assert len(taxonomy) == 23
    assert {o.sector for o in taxonomy} == {"education", "medical", "office", "retail", "service"}
    assert len({o.specialisation for o in taxonomy}) == 13  # VisoGender Tab. 1
    doctor = taxonomy["doctor"]
    assert (doctor.sector, doctor.specialisation) == ("medical", "hospital_worker")
    assert (doctor.noun(Context.OP), doctor.noun(Context.OO)) == ("patient", "clipboard")
    assert taxonomy["broker"].object == "stock chart"
    assert taxonomy["waiter"].participant == "patron"
    assert taxonomy.names[0] == "instructor"


def test_builtin_agrees_with_the_official_files(official_op: Path, official_oo: Path) -> None:
    taxonomy = load_taxonomy()
    for path in (official_op, official_oo):
        for row in read_visogender_tsv(path):
            occupation = taxonomy[row.occupation]
            assert (row.sector, row.specialisation) == (
                occupation.sector,
                occupation.specialisation,
            )
            if row.idx != "OO_180":  # the official file spells it 'mixing_spoon' once
                assert row.noun == occupation.noun(row.context)


def test_unknown_occupation_error_says_how_to_add_one() -> None:
    with pytest.raises(KeyError, match="--taxonomy"):
        load_taxonomy()["astronaut"]


@pytest.mark.parametrize("suffix", [".csv", ".tsv", ".jsonl", ".json"])
def test_extension_from_each_file_type(tmp_path: Path, suffix: str) -> None:
    entries = [
        {
            "occupation": "nurse",
            "sector": "medical",
            "specialisation": "hospital_worker",
            "participant": "patient",
            "object": "thermometer",
        },
        # repeating a built-in with the same definition is allowed
        {
            "occupation": "doctor",
            "sector": "medical",
            "specialisation": "hospital_worker",
            "participant": "patient",
            "object": "clipboard",
        },
    ]
    path = tmp_path / f"extra{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps({"occupations": entries}))
    elif suffix == ".jsonl":
        path.write_text("\n".join(json.dumps(e) for e in entries) + "\n")
    else:
        sep = "," if suffix == ".csv" else "\t"
        lines = [sep.join(entries[0])] + [sep.join(e.values()) for e in entries]
        path.write_text("\n".join(lines) + "\n")
    taxonomy = load_taxonomy(path)
    assert len(taxonomy) == 24
    assert taxonomy.names[-1] == "nurse"
    assert taxonomy["nurse"].object == "thermometer"
    assert taxonomy["nurse"].source == str(path)
    assert taxonomy.sources[-1] == str(path)


def test_extension_errors_name_file_line_and_field(tmp_path: Path) -> None:
    conflict = tmp_path / "conflict.csv"
    conflict.write_text(
        "occupation,sector,specialisation,participant,object\n"
        "nurse,medical,hospital_worker,patient,thermometer\n"
        "doctor,medical,hospital_worker,nurse,clipboard\n"
    )
    with pytest.raises(DataFormatError) as caught:
        load_taxonomy(conflict)
    assert (caught.value.line, caught.value.field) == (3, "occupation")
    assert "conflicts" in str(caught.value)

    missing = tmp_path / "missing.csv"
    missing.write_text(
        "occupation,sector,specialisation,participant,object\nnurse,medical,,patient,x\n"
    )
    with pytest.raises(DataFormatError) as caught:
        load_taxonomy(missing)
    assert (caught.value.line, caught.value.field) == (2, "specialisation")

    twice = tmp_path / "twice.tsv"
    twice.write_text(
        "occupation\tsector\tspecialisation\tparticipant\tobject\n"
        "nurse\tmedical\thospital_worker\tpatient\tx\n"
        "nurse\tmedical\thospital_worker\tpatient\tx\n"
    )
    with pytest.raises(DataFormatError, match="defined twice") as caught:
        load_taxonomy(twice)
    assert caught.value.line == 3
