"""Typed results (``contrastkit.results``): every results file in ``tests/golden`` (what
each command writes on the fixtures) reads into its tree and writes back unchanged, files
of older versions (no ``task`` / ``schema_version``) read, unknown keys survive, a wrong
type is located, and the JSON Schemas in ``docs/schemas`` are current and describe the
golden files."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from contrastkit.errors import DataFormatError
from contrastkit.results import (
    SCHEMA_VERSION,
    AuditReport,
    ContrastResult,
    HarnessResult,
    Result,
    StereotypeResult,
    VisoGenderResult,
    ZeroShotResult,
    json_schema,
    load_result,
    registered_results,
    task_of,
)
from contrastkit.results.schema import schema_file_name

ROOT = Path(__file__).parents[1]
GOLDEN = ROOT / "tests" / "golden"
SCHEMAS = ROOT / "docs" / "schemas"
RESULTS = re.compile(r"(^|/)(benchmark|disparity|audit|harness_results)\.json$")

#: The tree each golden command's results files read into.
EXPECTED = {
    "audit_coco": AuditReport,
    "audit_contrast": AuditReport,
    "audit_visogender": AuditReport,
    "evaluate_contrast": ContrastResult,
    "evaluate_stereotype": StereotypeResult,
    "evaluate_visogender": VisoGenderResult,
    "evaluate_visogender_two-way": VisoGenderResult,
    "evaluate_zero-shot_coco": ZeroShotResult,
    "evaluate_zero-shot_vg": ZeroShotResult,
    "report_harness": VisoGenderResult,
}


def _golden_results() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for path in sorted(GOLDEN.glob("*.json")):
        files = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(files, dict):
            found += [
                (path.stem, name, data) for name, data in files.items() if RESULTS.search(name)
            ]
    return found


GOLDEN_RESULTS = _golden_results()
IDS = [f"{stem}:{name}" for stem, name, _ in GOLDEN_RESULTS]


def _same(a: Any, b: Any) -> bool:
    """Equal JSON, keys in the same order (NaN, as the contrast benchmark writes it, equal
    to itself)."""
    return json.dumps(a) == json.dumps(b)


def test_every_golden_command_has_results_files() -> None:
    assert {stem for stem, _, _ in GOLDEN_RESULTS} == set(EXPECTED)
    assert len(GOLDEN_RESULTS) == 11


@pytest.mark.parametrize(("stem", "name", "data"), GOLDEN_RESULTS, ids=IDS)
def test_golden_results_round_trip(stem: str, name: str, data: dict[str, Any]) -> None:
    result = load_result(data)
    assert type(result) is EXPECTED[stem]
    assert result.schema_version == SCHEMA_VERSION
    assert _same(result.to_json(), data)
    assert type(result).from_json(data) == result
    assert not result.extra and not result.absent - _OPTIONAL_SECTIONS  # all typed


#: Sections of a results file that some commands do not write.
_OPTIONAL_SECTIONS = frozenset(
    {"retrieval_bias", "retrieval_flipped", "multiple_choice", "skipped_rows", "harness",
     "image_probe", "contrastkit_version", "dataset", "metadata", "note", "label",
     "predictions", "blank_image", "context", "predictions_file", "cache", "language",
     "compare_report", "consistency"}
)  # fmt: skip


@pytest.mark.parametrize(("stem", "name", "data"), GOLDEN_RESULTS, ids=IDS)
def test_load_result_reads_the_file_and_its_folder(
    stem: str, name: str, data: dict[str, Any], tmp_path: Path
) -> None:
    path = tmp_path / "out" / name.replace("<hash>", "h")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")
    assert _same(load_result(path).to_json(), data)
    assert _same(load_result(path.parent).to_json(), data)
    if path.parent.name == "zero_shot":  # a model folder holding zero_shot/disparity.json
        assert type(load_result(path.parent.parent)) is ZeroShotResult


def test_typed_fields_read_the_figures() -> None:
    [visogender] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_visogender"]
    result = load_result(visogender)
    assert isinstance(result, VisoGenderResult)
    inner = visogender[result.name]
    assert result.name.startswith("visogender_open_clip")
    assert result.metadata.model_name == inner["metadata"]["model_name"]
    assert result.metadata.ks == (5, 10)
    split = result.resolution_bias and result.resolution_bias.two_person_images
    assert split and split.gender_gap == inner["resolution_bias"]["two_person_images"]["gender_gap"]
    assert (
        split.intervals["gender_gap_ci"].low
        == (inner["resolution_bias"]["two_person_images"]["gender_gap_ci"]["low"])
    )
    assert result.retrieval_bias is not None
    assert (
        result.retrieval_bias.metrics["bias@10"].mean == inner["retrieval_bias"]["bias@10"]["mean"]
    )
    assert "context" not in result.retrieval_bias.metrics
    [zero_shot] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_zero-shot_vg"]
    disparity = load_result(zero_shot)
    assert isinstance(disparity, ZeroShotResult)
    first = disparity.concepts[0]
    assert first.ap == {"ap_men": zero_shot["concepts"][0]["ap_men"],
                        "ap_women": zero_shot["concepts"][0]["ap_women"]}  # fmt: skip
    assert first.ap_diff_ci == tuple(zero_shot["concepts"][0]["ap_diff_ci"])


def _without_version(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` as a contrastkit before typed results wrote it."""
    old = copy.deepcopy(data)
    inner = next(iter(old.values())) if len(old) == 1 else old
    inner.pop("schema_version")
    if inner["task"] in ("visogender", "audit"):  # the files that had no task before
        inner.pop("task")
    return old


@pytest.mark.parametrize(("stem", "name", "data"), GOLDEN_RESULTS, ids=IDS)
def test_files_of_older_versions_read_as_version_1(
    stem: str, name: str, data: dict[str, Any]
) -> None:
    old = _without_version(data)
    result = load_result(old)
    assert type(result) is EXPECTED[stem]
    assert result.schema_version == 1 and result.task == load_result(data).task
    assert _same(result.to_json(), old)  # nothing added to a file that lacked them


def test_a_legacy_visogender_file_is_read_by_compare_results(tmp_path: Path) -> None:
    from contrastkit.evaluators.job import ReportConfig, compare_results

    [data] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_visogender"]
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(_without_version(data)), encoding="utf-8")
    comparison = compare_results(ReportConfig(results=(path,)))
    assert comparison.headlines[0]["model"] == next(iter(data.values()))["metadata"]["model_name"]
    assert "task" not in comparison.results[0]


def test_unknown_keys_survive_at_every_level() -> None:
    [data] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_contrast"]
    mine = copy.deepcopy(data)
    mine["my_note"] = {"run": 3}
    mine["summary"]["pairs"]["my_flag"] = True
    mine["summary"]["retrieval"]["bias@2"]["my_count"] = 7
    result = load_result(mine)
    assert isinstance(result, ContrastResult)
    assert result.extra == {"my_note": {"run": 3}}
    assert result.summary.pairs is not None and result.summary.pairs.extra == {"my_flag": True}
    assert result.summary.retrieval["bias@2"].extra == {"my_count": 7}
    assert _same(result.to_json(), mine)


@pytest.mark.parametrize(
    ("stem", "edit", "field", "reason"),
    [
        ("evaluate_contrast", lambda d: d["summary"]["retrieval"]["bias@2"].update(mean="high"),
         "summary.retrieval.bias@2.mean", "expected a number or null, got a string"),
        ("evaluate_stereotype", lambda d: d["summary"]["overall"].update(n=1.5),
         "summary.overall.n", "expected an integer, got a number"),
        ("evaluate_zero-shot_vg", lambda d: d["concepts"][1].update(ap_diff_ci="wide"),
         "concepts[1].ap_diff_ci", "expected an array or null, got a string"),
        ("audit_coco", lambda d: d.pop("composition"), "composition", "missing"),
        ("evaluate_visogender",
         lambda d: next(iter(d.values()))["metadata"].update(ks=[5, "10"]),
         "visogender_open_clip-models-tiny-open-clip-<hash>_results.metadata.ks[1]",
         "expected an integer, got a string"),
    ],
)  # fmt: skip
def test_a_wrong_type_is_a_located_error(
    stem: str, edit: Any, field: str, reason: str, tmp_path: Path
) -> None:
    data = copy.deepcopy(next(d for s, _, d in GOLDEN_RESULTS if s == stem))
    edit(data)
    path = tmp_path / "benchmark.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_result(path)
    assert (caught.value.path, caught.value.line) == (str(path), None)
    assert (caught.value.field, caught.value.reason) == (field, reason)


def test_the_task_and_version_are_checked(tmp_path: Path) -> None:
    [data] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_contrast"]
    newer = {**data, "schema_version": SCHEMA_VERSION + 1}
    with pytest.raises(DataFormatError, match="from a newer contrastkit") as caught:
        load_result(newer)
    assert caught.value.field == "schema_version"
    with pytest.raises(DataFormatError, match="unknown task 'mystery'"):
        load_result({**data, "task": "mystery"})
    with pytest.raises(DataFormatError, match="not a contrastkit results file"):
        load_result({"model": "m"})
    with pytest.raises(DataFormatError, match="'stereotype' is not a contrast result"):
        ContrastResult.from_json({**data, "task": "stereotype"})
    with pytest.raises(DataFormatError) as caught:
        ContrastResult.from_json({k: v for k, v in data.items() if k != "task"})
    assert (caught.value.field, caught.value.reason) == ("task", "missing")
    assert task_of({"visogender_m_results": {"metadata": {}}}) == "visogender"
    assert task_of({"task": "harness-contrast"}) == "harness-contrast"
    with pytest.raises(DataFormatError, match="no results file here"):
        load_result(tmp_path)


def test_a_harness_results_file_reads(tmp_path: Path) -> None:
    data = {"task": "harness-contrast", "schema_version": 1, "model": "harness:m",
            "random_weights": False, "weights_note": None,
            "harness": {"harness": "vlmevalkit", "set_kind": "contrast",
                        "counts": {"main": {"items": 4, "answered": 3, "unparseable": 1,
                                            "missing": 0}},
                        "figures": {"k": 1}}}  # fmt: skip
    (tmp_path / "harness_results.json").write_text(json.dumps(data), encoding="utf-8")
    result = load_result(tmp_path)
    assert isinstance(result, HarnessResult)
    assert result.harness.counts["main"].unparseable == 1
    assert _same(result.to_json(), data)


def test_report_refuses_an_audit_with_a_located_error(tmp_path: Path) -> None:
    from contrastkit.evaluators.job import ReportConfig, compare_results

    [data] = [d for s, _, d in GOLDEN_RESULTS if s == "audit_coco"]
    path = tmp_path / "audit.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(DataFormatError, match="an audit result, not a benchmark"):
        compare_results(ReportConfig(results=(path,)))


# -- JSON Schemas ----------------------------------------------------------------------------


def _trees() -> list[type[Result]]:
    from contrastkit.evaluators.tasks.registry import tasks

    tasks()  # the task folders register their result classes when the tasks are read
    return sorted(set(registered_results().values()), key=lambda cls: cls.TASK)


def test_the_committed_schemas_are_current() -> None:
    """``python -m contrastkit.results`` writes them again after a tree changes."""
    files = {path.name for path in SCHEMAS.glob("*.schema.json")}
    assert files == {schema_file_name(cls) for cls in _trees()}
    for cls in _trees():
        committed = json.loads((SCHEMAS / schema_file_name(cls)).read_text(encoding="utf-8"))
        assert committed == json_schema(cls), f"{schema_file_name(cls)} is stale"


_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


#: The scalar keywords: keyword -> (value breaks it, what the error says).
_SCALAR_CHECKS: dict[str, tuple[Any, Any]] = {
    "type": (lambda s, v: not _TYPES[s](v), lambda s: f"not {s}"),
    "const": (lambda s, v: v != s, lambda s: f"not {s!r}"),
    "enum": (lambda s, v: v not in s, lambda s: f"not one of {s}"),
    "pattern": (lambda s, v: not re.search(s, v), lambda s: f"does not match {s}"),
    "minimum": (lambda s, v: v < s, lambda s: f"below {s}"),
    "maximum": (lambda s, v: v > s, lambda s: f"above {s}"),
}


def _errors(schema: dict[str, Any], value: Any, root: dict[str, Any], where: str = "") -> list[str]:
    """Where ``value`` breaks ``schema``: a validator of the draft 2020-12 keywords the
    generated schemas use."""
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        found = _errors(root["$defs"][name], value, root, where)
        if found:
            return found
    if "anyOf" in schema:
        failed = [_errors(s, value, root, where) for s in schema["anyOf"]]
        if all(failed):  # the errors of the one option of the value's type, if one
            typed = [f for f in failed if not f[0].endswith(("not null", "matches no option"))]
            return typed[0] if len(typed) == 1 else [f"{where}: matches no option"]
    for keyword, (breaks, says) in _SCALAR_CHECKS.items():
        if keyword in schema and breaks(schema[keyword], value):
            return [f"{where}: {says(schema[keyword])}"]
    if isinstance(value, dict):
        return _object_errors(schema, value, root, where)
    if isinstance(value, list) and "items" in schema:
        return [
            e
            for n, v in enumerate(value)
            for e in _errors(schema["items"], v, root, f"{where}[{n}]")
        ]
    return []


def _object_errors(
    schema: dict[str, Any], value: dict[str, Any], root: dict[str, Any], where: str
) -> list[str]:
    """The errors of an object: its size, its required keys and each of its values."""
    found: list[str] = []
    if not schema.get("minProperties", 0) <= len(value) <= schema.get("maxProperties", 1e9):
        found.append(f"{where}: {len(value)} keys")
    found += [f"{where}.{k}: missing" for k in schema.get("required", []) if k not in value]
    for k, v in value.items():
        found += _value_errors(schema, k, v, root, f"{where}.{k}")
    return found


def _value_errors(
    schema: dict[str, Any], key: str, value: Any, root: dict[str, Any], where: str
) -> list[str]:
    """The errors of an object's value under the schemas its key matches."""
    sub = schema.get("properties", {}).get(key)
    matched = [s for p, s in schema.get("patternProperties", {}).items() if re.search(p, key)]
    found = [e for s in [sub] * (sub is not None) + matched for e in _errors(s, value, root, where)]
    rest = schema.get("additionalProperties", True)
    if sub is not None or matched:
        return found
    if rest is False:
        return [f"{where}: not allowed"]
    return _errors(rest, value, root, where) if isinstance(rest, dict) else []


@pytest.mark.parametrize(("stem", "name", "data"), GOLDEN_RESULTS, ids=IDS)
def test_golden_results_match_their_schema(stem: str, name: str, data: dict[str, Any]) -> None:
    schema = json.loads((SCHEMAS / schema_file_name(EXPECTED[stem])).read_text(encoding="utf-8"))
    assert _errors(schema, data, schema) == []
    assert _errors(schema, _without_version(data), schema) == []  # older files too
    try:
        import jsonschema  # not a dependency: a second opinion where it is installed
    except ImportError:
        return
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema).validate(data)


def test_the_schema_rejects_what_the_tree_rejects() -> None:
    schema = json_schema(StereotypeResult)
    [data] = [d for s, n, d in GOLDEN_RESULTS if s == "evaluate_stereotype" and "vilt" in n]
    bad = copy.deepcopy(data)
    bad["summary"]["overall"]["n"] = "16"
    bad["shifting"]["instances"][0]["id"] = 3
    del bad["model"]
    assert sorted(_errors(schema, bad, schema)) == [
        ".model: missing",
        ".shifting.instances[0].id: not string",
        ".summary.overall.n: not integer",
    ]
    assert _errors(schema, {**data, "task": "contrast"}, schema) == [".task: not 'stereotype'"]
    visogender = json_schema(VisoGenderResult)
    assert _errors(visogender, {"a": 1, "b": 2}, visogender) == [": 2 keys", ".a: not allowed",
                                                                ".b: not allowed"]  # fmt: skip


def test_the_module_example_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example in ``contrastkit.results``'s docstring, on a golden VisoGender result."""
    import contrastkit.results

    [data] = [d for s, _, d in GOLDEN_RESULTS if s == "evaluate_visogender"]
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "out" / "open_clip-ViT-B-32-openai"
    folder.mkdir(parents=True)
    (folder / "benchmark.json").write_text(json.dumps(data), encoding="utf-8")
    doc = contrastkit.results.__doc__ or ""
    lines = doc.split("Example::\n")[1].splitlines()
    end = next(n for n, line in enumerate(lines) if line and not line.startswith("    "))
    code = "\n".join(line.removeprefix("    ") for line in lines[:end])
    exec(compile(code, "contrastkit.results example", "exec"), {"__name__": "example"})
    model = next(iter(data.values()))["metadata"]["model_name"]
    assert capsys.readouterr().out.startswith(f"{model} -1.0 ")
