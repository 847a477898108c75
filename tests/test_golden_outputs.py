"""Golden outputs: every evaluating command run on the test fixtures with tiny seeded
models, its ``benchmark.json`` (or the command's JSON), ``report.md`` and raw JSONL
compared with the copies under ``tests/golden/``.

The package is being reshaped (registries, typed results); this test says that the files
a user gets do not change while code moves. Only the keys in :data:`VOLATILE` (times,
versions, machine) are left out; paths under the test's folder are written as ``<tmp>``.
Numbers are compared to 1e-9 relative (JSON) or to one unit of the last printed digit
(markdown), because GEMM kernels round differently on other CPUs; anything else must be
identical.

To record new golden files after an intended change, run
``CONTRASTKIT_UPDATE_GOLDEN=1 pytest tests/test_golden_outputs.py -n 0`` and review the
diff of ``tests/golden/`` like any other change.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from eval_data import write_small_dataset
from stereoset_data import make_probe_fixture
from zero_shot_data import write_coco, write_vg

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CONTRASTKIT_UPDATE_GOLDEN") == "1"

#: Keys whose values depend on the run, not on the code's behaviour.
VOLATILE = frozenset(
    {"created", "created_at", "date", "time", "timestamp", "elapsed", "elapsed_s",
     "seconds", "duration", "duration_s", "contrastkit_version", "version", "versions",
     "python", "torch", "platform", "host", "hostname", "started", "finished"}
)  # fmt: skip

#: The only keys that may differ from the golden files recorded before typed results
#: (issue 32 item 3): every results file (``benchmark.json``, ``disparity.json``,
#: ``audit.json``) gained ``task`` (where it had none) and ``schema_version``, and nothing
#: else changed. The golden files have them now; a golden file recorded before them (an
#: older branch's copy) lacks them, and only these keys may then be added to it. Any other
#: added key, and any of these missing from an output, is a difference.
ADDED_KEYS = frozenset({"task", "schema_version"})

#: The files kept from an output folder (plots are images: only their names are kept).
KEPT = re.compile(r"(benchmark|audit|disparity|results|summary)\.json$|\.md$|^raw_.*\.jsonl$")

runner = CliRunner()


def _invoke(*args: object) -> str:
    result = runner.invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output[-3000:]
    return result.output


def _scrub(value: Any, tmp: str) -> Any:
    """``value`` with volatile keys dropped and the test folder written as ``<tmp>``."""
    if isinstance(value, dict):
        return {_scrub(k, tmp): _scrub(v, tmp) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [_scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return _HASH.sub("-<hash>", value.replace(tmp, "<tmp>"))
    return value


#: The hash of a model's path that ends its output folder's name.
_HASH = re.compile(r"(?<=[a-z0-9])-[0-9a-f]{8}(?![0-9a-zA-Z])")


def _collect(folder: Path, tmp: Path) -> dict[str, Any]:
    """The kept files under ``folder`` (by path relative to it), scrubbed, and the names
    of every other file."""
    files: dict[str, Any] = {}
    others = []
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = _HASH.sub("-<hash>", path.relative_to(folder).as_posix())
        if "/_data/" in f"/{name}" or name.startswith("."):
            continue
        if not KEPT.search(path.name):
            others.append(name)
            continue
        text = path.read_text(encoding="utf-8").replace(str(tmp), "<tmp>")
        if path.suffix == ".json":
            files[name] = _scrub(json.loads(text), str(tmp))
        elif path.suffix == ".jsonl":
            files[name] = [_scrub(json.loads(line), str(tmp)) for line in text.splitlines()]
        else:
            files[name] = _scrub_markdown(text)
    files["<other files>"] = others
    return files


_TIMES = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([+-]\d{2}:?\d{2}|Z)?")


def _scrub_markdown(text: str) -> str:
    text = _HASH.sub("-<hash>", _TIMES.sub("<time>", text))
    return re.sub(r"contrastkit \d+\.\d+\.\d+\S*", "contrastkit <version>", text)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every command's outputs on the fixtures, by command name."""
    from contrastkit.tiny.clip import tiny_open_clip
    from contrastkit.tiny.itm import tiny_vilt

    tmp = tmp_path_factory.mktemp("golden")
    clip = tiny_open_clip(tmp / "models")
    got: dict[str, Any] = {}
    fast = ("--bootstrap", "50", "--device", "cpu", "--workers", "0")

    # VisoGender: local images, every task.
    vg = write_small_dataset(tmp / "visogender")
    out = tmp / "out-visogender"
    _invoke("evaluate", "--data", vg["OP"], "--data", vg["OO"], "--model", clip, "--out", out,
            "--subsample-runs", "20", "--baseline-runs", "40", *fast)  # fmt: skip
    got["evaluate visogender"] = _collect(out, tmp)
    two_way = tmp / "out-visogender-two-way"
    # (the task commands and the bare form that lets the data pick write the same files:
    # some runs below use one, some the other)
    _invoke("evaluate", "visogender", "--data", vg["OP"], "--data", vg["OO"], "--model", clip,
            "--out", two_way, "--protocol", "two-way", "--subsample-runs", "20",
            "--baseline-runs", "40", "--only", "resolution", *fast)  # fmt: skip
    got["evaluate visogender two-way"] = _collect(two_way, tmp)

    # A contrast set.
    contrast = contrast_export(tmp / "contrast", sources=4)
    out = tmp / "out-contrast"
    _invoke("evaluate", "contrast", "--data", contrast, "--model", clip, "--out", out, "--k",
            "2,4", *fast)  # fmt: skip
    got["evaluate contrast"] = _collect(out, tmp)

    # A stereotype probe set, an image-text matching model and a dual encoder.
    probes = make_probe_fixture(tmp / "probes")[2]
    vilt = tiny_vilt(tmp / "models")
    out = tmp / "out-stereotype"
    _invoke("evaluate", "--data", probes, "--model", vilt, "--model", clip, "--out", out, *fast)
    got["evaluate stereotype"] = _collect(out, tmp)

    # Zero-shot disparities on Visual Genome and COCO folders.
    for name, folder in (("vg", write_vg(tmp / "vg")), ("coco", write_coco(tmp / "coco"))):
        out = tmp / f"out-zero-shot-{name}"
        task = ["zero-shot"] if name == "coco" else ["--task", "zero-shot-disparity"]
        _invoke("evaluate", *task, "--data", folder, "--model", clip, "--out", out,
                "--min-images", "2", *fast)  # fmt: skip
        got[f"evaluate zero-shot {name}"] = _collect(out, tmp)

    # A harness's answers read back (VLMEvalKit layout: always the first option).
    from contrastkit.builders.harness import HarnessExportConfig, export_harness
    from contrastkit.harness_key import read_key

    export = tmp / "harness-export"
    export_harness(
        HarnessExportConfig(source=(vg["OP"], vg["OO"]), format="vlmevalkit", out=export, seed=1)
    )
    key = read_key(export)
    predictions = []
    for split, dataset in key.datasets.items():
        rows = [{"index": item.index, "question": "q", "A": item.options["A"],
                 "answer": item.answer, "prediction": "B" if item.index % 3 else "A"}
                for item in key.items if item.split == split]  # fmt: skip
        path = tmp / f"tiny_model_{dataset}.tsv"
        pd.DataFrame(rows).to_csv(path, sep="\t", index=False)
        predictions += ["--harness-predictions", path]
    out = tmp / "out-harness"
    _invoke("report", *predictions, "--harness-set", export, "--model", "tiny_model",
            "--out", out)  # fmt: skip
    got["report harness"] = _collect(out, tmp)

    # Comparisons of several results.
    [official] = [p for p in (tmp / "out-visogender").iterdir() if p.is_dir()]
    [other] = [p for p in two_way.iterdir() if p.is_dir()]
    got["report visogender side by side"] = _scrub_markdown(
        _invoke("report", official, other).replace(str(tmp), "<tmp>")
    )
    got["report visogender side by side --json"] = _scrub(
        json.loads(_invoke("report", official, other, "--json")), str(tmp)
    )

    # The dataset audit: a VisoGender folder (no model), a COCO folder (the bundled
    # photos) and a contrast set.
    from contrastkit.samples import write_coco as write_sample_coco

    coco = write_sample_coco(tmp / "sample-coco")
    for name, folder in (("visogender", tmp / "visogender"), ("coco", coco),
                         ("contrast", contrast)):  # fmt: skip
        out = tmp / f"audit-{name}"
        _invoke("audit", folder, "--out", out, "--clusters", "2", "--resamples", "50")
        got[f"audit {name}"] = _collect(out, tmp)
    return got


def _numbers_close(want: str, got: str) -> bool:
    """Two printed numbers agree to one unit of the last digit printed."""
    decimals = len(want.split(".")[1]) if "." in want else 0
    return abs(float(want) - float(got)) <= 1.000001 * 10**-decimals


_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def _same_text(want: str, got: str) -> bool:
    if want == got:
        return True
    if _NUMBER.split(want) != _NUMBER.split(got):
        return False
    pairs = zip(_NUMBER.findall(want), _NUMBER.findall(got), strict=True)
    return all(_numbers_close(a, b) for a, b in pairs)


def _differences(want: Any, got: Any, where: str = "") -> Iterator[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                yield f"{where}.{key}: missing"
            elif key not in want:
                if key not in ADDED_KEYS:
                    yield f"{where}.{key}: added"
            else:
                yield from _differences(want[key], got[key], f"{where}.{key}")
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            yield f"{where}: {len(want)} items, now {len(got)}"
        for n, (a, b) in enumerate(zip(want, got, strict=False)):
            yield from _differences(a, b, f"{where}[{n}]")
    elif isinstance(want, float) and isinstance(got, float):
        if not (math.isclose(want, got, rel_tol=1e-9, abs_tol=1e-12)
                or (math.isnan(want) and math.isnan(got))):  # fmt: skip
            yield f"{where}: {want!r}, now {got!r}"
    elif isinstance(want, str) and isinstance(got, str):
        if not _same_text(want, got):
            yield f"{where}: text differs:\n--- golden\n{want}\n--- now\n{got}"
    elif want != got or type(want) is not type(got):
        yield f"{where}: {want!r}, now {got!r}"


COMMANDS = (
    "evaluate visogender",
    "evaluate visogender two-way",
    "evaluate contrast",
    "evaluate stereotype",
    "evaluate zero-shot vg",
    "evaluate zero-shot coco",
    "report harness",
    "report visogender side by side",
    "report visogender side by side --json",
    "audit visogender",
    "audit coco",
    "audit contrast",
)


def _golden_path(command: str) -> Path:
    return GOLDEN / (command.replace(" --", " ").replace(" ", "_") + ".json")


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
def test_outputs_match_the_golden_files(command: str, outputs: dict[str, Any]) -> None:
    path = _golden_path(command)
    if UPDATE:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(json.dumps(outputs[command], indent=1, ensure_ascii=False) + "\n",
                        encoding="utf-8")  # fmt: skip
    want = json.loads(path.read_text(encoding="utf-8"))
    differences = list(_differences(want, outputs[command], command))
    assert not differences, "\n".join(differences[:20])


def test_every_results_file_has_the_added_keys() -> None:
    """Each golden results file carries ADDED_KEYS (a VisoGender benchmark inside its one
    ``visogender_<model>_results`` object, which Appendix J's shape keeps)."""
    seen = 0
    for path in GOLDEN.glob("*.json"):
        files = json.loads(path.read_text(encoding="utf-8"))
        for name, data in files.items() if isinstance(files, dict) else ():
            if re.search(r"(benchmark|disparity|audit)\.json$", name):
                inner = next(iter(data.values())) if "task" not in data else data
                assert set(inner) >= ADDED_KEYS, f"{path.name}: {name}"
                assert inner["schema_version"] == 1
                seen += 1
    assert seen == 11


def test_the_comparison_tolerates_rounding_only() -> None:
    assert _same_text("| 0.52 | 3 |", "| 0.53 | 3 |")
    assert not _same_text("| 0.52 | 3 |", "| 0.55 | 3 |")
    assert not _same_text("| 0.52 | 3 |", "| 0.52 | 3 | x")
    assert list(_differences({"a": 1.0}, {"a": 1.0 + 1e-12})) == []
    assert list(_differences({"a": 1.0}, {"a": 1.001})) != []
    assert list(_differences({"a": 1}, {"a": 1, "b": 2})) == [".b: added"]
    # a golden file recorded before typed results: exactly ADDED_KEYS may be new
    assert list(_differences({"a": 1}, {"a": 1, "task": "audit", "schema_version": 1})) == []
    assert list(_differences({"a": 1, "schema_version": 1}, {"a": 1})) == [
        ".schema_version: missing"
    ]
    assert list(_differences({"a": 1, "task": 2}, {"a": 1, "task": 3})) == [".task: 2, now 3"]
    assert {_golden_path(c) for c in COMMANDS} == set(GOLDEN.glob("*.json"))
