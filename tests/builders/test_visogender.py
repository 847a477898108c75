"""Building balanced VisoGender-style sets from candidate pools."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from contrastkit.builders.visogender import BuildVisoGenderConfig, build_visogender, output_name
from contrastkit.curation.validation import validate_files
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.schema import Context
from contrastkit.taxonomy import load_taxonomy
from contrastkit.tsv import read_visogender_tsv

GENDER = {"M": "masculine", "F": "feminine"}
FIELDS = [
    "url",
    "occupation",
    "context",
    "occupation_gender",
    "participant_gender",
    "licence_ok",
    "annotator",
    "source",
]


def pool(
    occupations: dict[str, int], *, skip: tuple[str, str, str] | None = None
) -> list[dict[str, Any]]:
    """``count`` candidates in every cell of both contexts for each occupation."""
    records = []
    for occupation, count in occupations.items():
        for context in Context:
            for cell in context.cells:
                n = count - 1 if skip == (occupation, context.value, cell) else count
                for i in range(n):
                    records.append(
                        {
                            "url": f"https://img.example.org/{occupation}/{context.value}/{cell}/{i}.jpg",
                            "occupation": occupation,
                            "context": context.value,
                            "occupation_gender": GENDER[cell[0]],
                            "participant_gender": GENDER[cell[1]] if len(cell) == 2 else "",
                            "licence_ok": "yes",
                            "annotator": "tester",
                            "source": f"{occupation}-{cell}-{i}",
                        }
                    )
    return records


def write_csv(path: Path, records: list[dict[str, Any]]) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=FIELDS)
        writer.writeheader()
        writer.writerows(records)
    return path


def selected_urls(out: Path) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for context in Context:
        for row in read_visogender_tsv(out / output_name(context)):
            found.setdefault(f"{row.occupation}/{row.context.value}/{row.cell}", set()).add(row.url)
    return found


def test_balanced_selection_matches_the_paper(tmp_path: Path) -> None:
    candidates = write_csv(tmp_path / "pool.csv", pool({"doctor": 8, "teacher": 6}))
    result = build_visogender(BuildVisoGenderConfig(candidates, tmp_path / "out"))
    assert result.complete and result.excluded == []
    op = read_visogender_tsv(tmp_path / "out" / "visogender_OP.tsv")
    oo = read_visogender_tsv(tmp_path / "out" / "visogender_OO.tsv")
    assert (len(op), len(oo)) == (2 * 4 * 5, 2 * 2 * 5)
    # taxonomy order (teacher before doctor), then cell order MM, MF, FM, FF
    assert [r.occupation for r in op.rows[:1] + op.rows[-1:]] == ["teacher", "doctor"]
    assert [r.cell for r in op.rows[:20:5]] == ["MM", "MF", "FM", "FF"]
    doctor = next(r for r in op if r.occupation == "doctor")
    assert (doctor.sector, doctor.specialisation, doctor.participant) == (
        "medical",
        "hospital_worker",
        "patient",
    )
    assert {r.licence for r in op} == {"Yes"}
    assert all(r.idx.startswith("OP_") for r in op) and len({r.idx for r in op}) == 40
    report = validate_files(
        [tmp_path / "out" / "visogender_OP.tsv", tmp_path / "out" / "visogender_OO.tsv"],
        load_taxonomy(),
        per_cell=5,
    )
    assert report.ok and report.findings == []


def test_seeded_and_deterministic(tmp_path: Path) -> None:
    candidates = write_csv(tmp_path / "pool.csv", pool({"doctor": 9}))
    build_visogender(BuildVisoGenderConfig(candidates, tmp_path / "a", seed=1))
    build_visogender(BuildVisoGenderConfig(candidates, tmp_path / "b", seed=1))
    build_visogender(BuildVisoGenderConfig(candidates, tmp_path / "c", seed=2))
    for name in ("visogender_OP.tsv", "visogender_OO.tsv", "build_report.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    assert selected_urls(tmp_path / "a") != selected_urls(tmp_path / "c")
    # an image keeps its ID whatever the seed
    ids_a = {r.url: r.idx for r in read_visogender_tsv(tmp_path / "a" / "visogender_OP.tsv")}
    ids_c = {r.url: r.idx for r in read_visogender_tsv(tmp_path / "c" / "visogender_OP.tsv")}
    assert all(ids_a[url] == ids_c[url] for url in ids_a.keys() & ids_c.keys())
    assert ids_a.keys() & ids_c.keys()


def test_adding_candidates_to_one_cell_leaves_the_others_alone(tmp_path: Path) -> None:
    records = pool({"doctor": 7, "lawyer": 7})
    base = write_csv(tmp_path / "base.csv", records)
    extra = dict(records[0], url="https://img.example.org/new.jpg", source="new")
    grown = write_csv(tmp_path / "grown.csv", [*records, extra])
    build_visogender(BuildVisoGenderConfig(base, tmp_path / "a"))
    build_visogender(BuildVisoGenderConfig(grown, tmp_path / "b"))
    before, after = selected_urls(tmp_path / "a"), selected_urls(tmp_path / "b")
    changed_cell = f"{records[0]['occupation']}/OP/MM"
    assert {k for k in before if before[k] != after[k]} <= {changed_cell}


def test_skips_unlicensed_and_duplicates_keeping_the_first(tmp_path: Path) -> None:
    records = pool({"doctor": 5})
    first = records[0]["url"]
    records[1]["licence_ok"] = "no"
    records.append(dict(records[2], source="exact copy"))
    pexels = "https://images.pexels.com/photos/42/pexels-photo-42.jpeg"
    records[3]["url"] = pexels + "?auto=compress&w=600"
    records.append(dict(records[3], url=pexels + "?w=1260&h=750&dpr=1", source="resized"))
    path = write_csv(tmp_path / "pool.csv", records)
    result = build_visogender(BuildVisoGenderConfig(path, tmp_path / "out", keep_incomplete=True))
    assert result.skipped_unlicensed == [3]
    assert [(d["line"], d["duplicate_of_line"], d["kind"]) for d in result.skipped_duplicates] == [
        (len(records), 4, "exact"),
        (len(records) + 1, 5, "canonical"),
    ]
    urls = {r.url for r in read_visogender_tsv(tmp_path / "out" / "visogender_OP.tsv")}
    assert first in urls and records[1]["url"] not in urls
    assert pexels + "?auto=compress&w=600" in urls and pexels + "?w=1260&h=750&dpr=1" not in urls
    # the unlicensed row made MM short by one
    assert [(s.cell, s.available, s.short_by) for s in result.shortfalls] == [("MM", 4, 1)]


def test_shortfalls_are_reported_and_incomplete_occupations_left_out(tmp_path: Path) -> None:
    path = write_csv(
        tmp_path / "pool.csv", pool({"doctor": 5, "baker": 5}, skip=("baker", "OP", "FM"))
    )
    result = build_visogender(BuildVisoGenderConfig(path, tmp_path / "out"))
    assert result.included == ["doctor"] and result.excluded == ["baker"]
    report = json.loads((tmp_path / "out" / "build_report.json").read_text())
    assert report["shortfalls"] == [
        {"occupation": "baker", "context": "OP", "cell": "FM", "available": 4, "needed": 5,
         "short_by": 1}
    ]  # fmt: skip
    assert report["complete"] is False
    assert "| baker | OP | FM | 4 | 5 | 1 |" in (tmp_path / "out" / "build_report.md").read_text()
    occupations = {
        r.occupation for r in read_visogender_tsv(tmp_path / "out" / "visogender_OP.tsv")
    }
    assert occupations == {"doctor"}

    kept = build_visogender(BuildVisoGenderConfig(path, tmp_path / "kept", keep_incomplete=True))
    assert kept.included == ["doctor", "baker"]
    balance = validate_files([tmp_path / "kept" / "visogender_OP.tsv"])
    assert [f.check for f in balance.errors] == ["balance"]
    assert "'baker'" in balance.errors[0].message


def test_all_occupations_reports_every_missing_cell(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "pool.csv", pool({"doctor": 5}))
    result = build_visogender(BuildVisoGenderConfig(path, tmp_path / "out", occupations="all"))
    assert len(result.excluded) == 22 and result.included == ["doctor"]
    assert len(result.shortfalls) == 22 * 6
    assert {s.available for s in result.shortfalls} == {0}
    with pytest.raises(ConfigError, match="unknown occupation 'astronaut'"):
        build_visogender(BuildVisoGenderConfig(path, tmp_path / "x", occupations=("astronaut",)))
    assert not (tmp_path / "x").exists()


def test_strict_keeps_the_previous_build(tmp_path: Path) -> None:
    out = tmp_path / "out"
    good = write_csv(tmp_path / "good.csv", pool({"doctor": 5}))
    build_visogender(BuildVisoGenderConfig(good, out, strict=True))
    before = (out / "visogender_OP.tsv").read_bytes()
    short = write_csv(tmp_path / "short.csv", pool({"doctor": 5}, skip=("doctor", "OO", "F")))
    result = build_visogender(BuildVisoGenderConfig(short, out, strict=True))
    assert not result.complete
    assert (out / "visogender_OP.tsv").read_bytes() == before
    assert json.loads((out / "build_report.json").read_text())["complete"] is False
    assert [p.name for p in result.written] == ["build_report.json", "build_report.md"]


def test_contexts_and_jsonl_input_and_custom_occupations(tmp_path: Path) -> None:
    extra = tmp_path / "nurse.csv"
    extra.write_text(
        "occupation,sector,specialisation,participant,object\n"
        "nurse,medical,hospital_worker,patient,thermometer\n"
    )
    records = [r for r in pool({"doctor": 5}) if r["context"] == "OO"]
    records = [dict(r, occupation="nurse") for r in records]
    path = tmp_path / "pool.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    result = build_visogender(
        BuildVisoGenderConfig(
            path, tmp_path / "out", taxonomy=(extra,), contexts=(Context.OO,), per_cell=3
        )
    )
    assert result.complete and not (tmp_path / "out" / "visogender_OP.tsv").exists()
    rows = read_visogender_tsv(tmp_path / "out" / "visogender_OO.tsv").rows
    assert len(rows) == 6 and {r.object for r in rows} == {"thermometer"}


@pytest.mark.parametrize(
    ("change", "line", "field", "words"),
    [
        ({"occupation": "astronaut"}, 4, "occupation", "--taxonomy"),
        ({"occupation_gender": "male"}, 4, "occupation_gender", "masculine/feminine"),
        ({"participant_gender": ""}, 4, "participant_gender", "unknown gender label"),
        ({"context": "OX"}, 4, "context", "expected OP or OO"),
        ({"url": ""}, 4, "url", "empty URL"),
        ({"url": "https://a b.jpg"}, 4, "url", "whitespace"),
        ({"licence_ok": "perhaps"}, 4, "licence_ok", "yes or no"),
    ],
)
def test_bad_pool_names_line_and_field_and_writes_nothing(
    tmp_path: Path, change: dict[str, str], line: int, field: str, words: str
) -> None:
    records = pool({"doctor": 5})
    records[2].update(change)
    path = write_csv(tmp_path / "pool.csv", records)
    out = tmp_path / "out"
    out.mkdir()
    (out / "visogender_OP.tsv").write_text("previous build\n")
    with pytest.raises(DataFormatError) as caught:
        build_visogender(BuildVisoGenderConfig(path, out))
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), line, field)
    assert words in str(caught.value)
    assert sorted(p.name for p in out.iterdir()) == ["visogender_OP.tsv"]
    assert (out / "visogender_OP.tsv").read_text() == "previous build\n"


def test_nouns_that_disagree_with_the_taxonomy_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "pool.jsonl"
    path.write_text(
        json.dumps(
            {"url": "https://x/1.jpg", "occupation": "doctor", "context": "OO",
             "occupation_gender": "F", "licence_ok": True, "object": "stethoscope"}
        ) + "\n"
    )  # fmt: skip
    with pytest.raises(DataFormatError, match="taxonomy's object 'clipboard'") as caught:
        build_visogender(BuildVisoGenderConfig(path, tmp_path / "out"))
    assert (caught.value.line, caught.value.field) == (1, "object")


def test_the_example_pool(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "candidates.csv"
    result = build_visogender(BuildVisoGenderConfig(example, tmp_path))
    assert result.included == ["teacher", "doctor", "engineer"]
    assert [(s.occupation, s.context, s.cell, s.short_by) for s in result.shortfalls] == [
        ("hairdresser", "OP", "FM", 1)
    ]
    assert [d["kind"] for d in result.skipped_duplicates] == ["exact", "canonical"]
    assert {c.value: len(r) for c, r in result.rows.items()} == {"OP": 60, "OO": 30}


def test_config_parses_and_checks_its_fields(tmp_path: Path) -> None:
    config = BuildVisoGenderConfig(
        "pool.csv", "out", taxonomy="extra.csv", contexts="oo, OP,OO", occupations=" doctor,nurse "
    )  # type: ignore[arg-type]
    assert config.candidates == Path("pool.csv") and config.out == Path("out")
    assert config.taxonomy == (Path("extra.csv"),)
    assert config.contexts == (Context.OO, Context.OP)
    assert config.occupations == ("doctor", "nurse")
    assert BuildVisoGenderConfig("p", "o", occupations=" all ").occupations == "all"
    with pytest.raises(ConfigError, match="per_cell: must be at least 1"):
        BuildVisoGenderConfig("p", "o", per_cell=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="contexts: unknown context 'OX'"):
        BuildVisoGenderConfig("p", "o", contexts="OX")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="contexts: needs at least one"):
        BuildVisoGenderConfig("p", "o", contexts=" , ")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="occupations: name at least one"):
        BuildVisoGenderConfig("p", "o", occupations=",")  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        config.seed = 3  # type: ignore[misc]  # frozen


def test_an_unwritable_output_folder_is_an_environment_error(tmp_path: Path) -> None:
    from contrastkit.errors import ResourceError

    path = write_csv(tmp_path / "pool.csv", pool({"doctor": 5}))
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ResourceError, match="cannot write the build folder"):
        build_visogender(BuildVisoGenderConfig(path, tmp_path / "file"))
