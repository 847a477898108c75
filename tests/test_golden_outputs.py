"""Golden outputs: every evaluating command run on the test fixtures with tiny seeded
models, its ``benchmark.json`` (or the command's JSON), ``report.md`` and raw JSONL
compared with the copies under ``tests/golden/``.

The package is being reshaped (registries, typed results); this test says that the files
a user gets do not change while code moves. Only the keys in :data:`VOLATILE` (times,
versions, machine) are left out; paths under the test's folder are written as ``<tmp>``.
Numbers that come out of float32 forward passes move between CPUs: each CPU takes its
own kernel path (``ATEN_CPU_CAPABILITY``: default, avx2, avx512; MKL's own dispatch), and
thread counts and batch sizes change the order of the sums. Those commands
(:data:`FORWARD_PASSES`) compare each float within a few float32 epsilons of its size
and each printed decimal within that plus one unit of its last digit; everything else
(counts, text, the numbers of commands with no forward pass) must be identical.

Measured spread (``python tests/golden_spread.py``, 2026-11-29, AMD EPYC with AVX-512,
torch 2.14.1, largest change of any float of a command over ten variants: the three
ATen kernel paths with 1 and 2 threads, MKL limited to AVX2 and to SSE4.2, OpenBLAS and
NumPy on their generic paths, batch sizes 1, 5 and 7), in float32 epsilons scaled by the
number's size (absolute change in brackets):

=================================  ==================  ============
command                            largest move        tolerance
=================================  ==================  ============
evaluate visogender                2.13 eps (2.7e-07)  8 eps
evaluate visogender two-way        1.54 eps (2.1e-07)  8 eps
evaluate contrast                  1.06 eps (1.3e-07)  8 eps
evaluate stereotype (ViLT files)   12.2 eps (3.5e-06)  48 eps
evaluate zero-shot vg, coco        0                   8 eps
report visogender side by side     0                   8 eps
report harness, audit *            0                   exact
=================================  ==================  ============

The largest moves came from ``ATEN_CPU_CAPABILITY=default`` (AVX-512 to AVX2 and to
MKL's SSE4.2 path moved less; batch sizes less again).
No count, no decision and no text changed in any variant; the commands without a
forward pass did not move at all. ``.ci/run`` runs this test a second time with
``ATEN_CPU_CAPABILITY=default OMP_NUM_THREADS=1`` (a different kernel path from the
default one on any modern CPU).

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
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from golden_runs import FLOAT32_EPS, NUMBER, golden_outputs, last_digit

pytestmark = pytest.mark.model_outputs

GOLDEN = Path(__file__).parent / "golden"
UPDATE = os.environ.get("CONTRASTKIT_UPDATE_GOLDEN") == "1"

#: The only keys that may differ from the golden files recorded before typed results
#: (issue 32 item 3): every results file (``benchmark.json``, ``disparity.json``,
#: ``audit.json``) gained ``task`` (where it had none) and ``schema_version``, and nothing
#: else changed. The golden files have them now; a golden file recorded before them (an
#: older branch's copy) lacks them, and only these keys may then be added to it. Any other
#: added key, and any of these missing from an output, is a difference.
ADDED_KEYS = frozenset({"task", "schema_version"})


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every command's outputs on the fixtures, by command name."""
    return golden_outputs(tmp_path_factory.mktemp("golden"))


@dataclass(frozen=True)
class Tolerance:
    """How far a number may move between the golden file and this run.

    ``eps``: a float may move by ``eps`` float32 epsilons scaled by its size,
    ``|golden - now| <= eps * 2**-23 * (1 + |golden|)``; 0 is exact. A number printed in
    markdown with a decimal point or an exponent may move by that much plus one unit of
    its last printed digit (the two values may round to either side of a digit); a
    printed integer (a count) is always exact, and so is everything that is not a number.
    """

    eps: float = 0.0

    def floats_close(self, want: float, got: float) -> bool:
        if want == got or (math.isnan(want) and math.isnan(got)):
            return True
        if not (math.isfinite(want) and math.isfinite(got)):
            return False
        return abs(want - got) <= self.eps * FLOAT32_EPS * (1 + abs(want))

    def printed_close(self, want: str, got: str) -> bool:
        if want == got:
            return True
        if self.eps == 0 or not re.search(r"[.e]", want.lower()):
            return False
        slack = self.eps * FLOAT32_EPS * (1 + abs(float(want))) + last_digit(want)
        return abs(float(want) - float(got)) <= slack * (1 + 1e-9)

    def same_text(self, want: str, got: str) -> bool:
        if want == got:
            return True
        if NUMBER.split(want) != NUMBER.split(got):
            return False
        pairs = zip(NUMBER.findall(want), NUMBER.findall(got), strict=True)
        return all(self.printed_close(a, b) for a, b in pairs)


#: Exact: no number of these commands comes out of a forward pass (harness answers,
#: counts, the audit's statistics on fixed inputs).
EXACT = Tolerance()

#: The commands whose numbers come out of float32 forward passes (the tiny OpenCLIP and
#: ViLT models), and how far each may move: about four times the largest move measured
#: with ``python tests/golden_spread.py`` (the module docstring gives the figures).
#: OpenCLIP's scores are cosines of unit vectors (largest move 2.1 epsilons); ViLT's are
#: logits of a deeper stack (largest move 12.2 epsilons), so its files have their own.
#: At 8 epsilons a change of one unit in the fourth significant digit of any number of
#: 1e-3 or more is still a difference (tested below).
FORWARD_PASSES = {
    command: Tolerance(eps=8)
    for command in (
        "evaluate visogender", "evaluate visogender two-way", "evaluate contrast",
        "evaluate stereotype", "evaluate zero-shot vg", "evaluate zero-shot coco",
        "report visogender side by side", "report visogender side by side --json",
    )
}  # fmt: skip

#: Output files of a model whose numbers move further (by the start of their path).
BY_MODEL = {"vilt-": Tolerance(eps=48)}


def tolerance_of(command: str, file: str) -> Tolerance:
    """How far the numbers of ``file`` (a path in ``command``'s outputs) may move."""
    if command not in FORWARD_PASSES:
        return EXACT
    model = [t for prefix, t in BY_MODEL.items() if file.startswith(prefix)]
    return model[0] if model else FORWARD_PASSES[command]


def _differences(
    want: Any, got: Any, where: str = "", tolerance: Tolerance = EXACT
) -> Iterator[str]:
    if isinstance(want, dict) and isinstance(got, dict):
        for key in sorted(set(want) | set(got)):
            if key not in got:
                yield f"{where}.{key}: missing"
            elif key not in want:
                if key not in ADDED_KEYS:
                    yield f"{where}.{key}: added"
            else:
                yield from _differences(want[key], got[key], f"{where}.{key}", tolerance)
    elif isinstance(want, list) and isinstance(got, list):
        if len(want) != len(got):
            yield f"{where}: {len(want)} items, now {len(got)}"
        for n, (a, b) in enumerate(zip(want, got, strict=False)):
            yield from _differences(a, b, f"{where}[{n}]", tolerance)
    elif isinstance(want, float) and isinstance(got, float):
        if not tolerance.floats_close(want, got):
            yield f"{where}: {want!r}, now {got!r}"
    elif isinstance(want, str) and isinstance(got, str):
        if not tolerance.same_text(want, got):
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
    got = outputs[command]
    if isinstance(want, dict) and isinstance(got, dict):
        differences = [f"{command}: files {sorted(set(want) ^ set(got))} differ"]
        differences = differences if set(want) != set(got) else []
        for file in sorted(set(want) & set(got)):
            tolerance = tolerance_of(command, file)
            differences += _differences(want[file], got[file], f"{command}.{file}", tolerance)
    else:
        differences = list(_differences(want, got, command, tolerance_of(command, "")))
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
    forward = FORWARD_PASSES["evaluate contrast"]
    # markdown: a forward-pass number may round to the other side of its last digit
    assert forward.same_text("| 0.52 | 3 |", "| 0.53 | 3 |")
    assert forward.same_text("| 1.86e-03 |", "| 1.87e-03 |")
    assert not forward.same_text("| 0.52 | 3 |", "| 0.55 | 3 |")
    assert not forward.same_text("| 0.52 | 3 |", "| 0.52 | 4 |"), "a count is exact"
    assert not forward.same_text("| 0.52 | 3 |", "| 0.52 | 3 | x")
    assert not forward.same_text("| 1.86e-03 |", "| 1.96e-03 |")
    assert not EXACT.same_text("| 0.52 |", "| 0.53 |"), "no forward pass: exact"
    # JSON: within the float32 tolerance only
    assert list(_differences({"a": 0.1}, {"a": 0.1 + 1e-7}, "", forward)) == []
    assert list(_differences({"a": 0.1}, {"a": 0.1 + 1e-12})) != [], "exact without one"
    assert list(_differences({"a": math.nan}, {"a": math.nan})) == []
    assert list(_differences({"a": 1}, {"a": 1, "b": 2})) == [".b: added"]
    # a golden file recorded before typed results: exactly ADDED_KEYS may be new
    assert list(_differences({"a": 1}, {"a": 1, "task": "audit", "schema_version": 1})) == []
    assert list(_differences({"a": 1, "schema_version": 1}, {"a": 1})) == [
        ".schema_version: missing"
    ]
    assert list(_differences({"a": 1, "task": 2}, {"a": 1, "task": 3})) == [".task: 2, now 3"]
    assert {_golden_path(c) for c in COMMANDS} == set(GOLDEN.glob("*.json"))
    assert set(FORWARD_PASSES) <= set(COMMANDS)


def _numbers(value: Any, where: str = "") -> Iterator[tuple[str, float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _numbers(item, f"{where}.{key}")
    elif isinstance(value, list):
        for n, item in enumerate(value):
            yield from _numbers(item, f"{where}[{n}]")
    elif isinstance(value, float) and math.isfinite(value) and value != 0:
        yield where, value


@pytest.mark.parametrize("command", sorted(FORWARD_PASSES))
def test_a_change_in_the_fourth_significant_digit_fails(command: str) -> None:
    """Every golden float of at least 1e-3 in size (ViLT's: 1e-2), changed by one unit of
    its fourth significant digit, is a difference: the tolerances absorb the kernels'
    rounding, not a change of behaviour. (Below that, such a change is within float32
    rounding of the scores the number is made from.)"""
    golden = json.loads(_golden_path(command).read_text(encoding="utf-8"))
    checked = 0
    for where, value in _numbers(golden):
        tolerance = tolerance_of(command, where.split(".", 1)[-1].split("/")[0])
        if abs(value) < (1e-3 if tolerance.eps <= 8 else 1e-2):
            continue
        step = 10.0 ** (math.floor(math.log10(abs(value))) - 3)
        for changed in (value + step, value - step):
            assert not tolerance.floats_close(value, changed), (where, value, changed)
        checked += 1
    assert checked > 0 or command == "report visogender side by side"
