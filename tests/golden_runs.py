"""The commands behind the golden outputs (``tests/test_golden_outputs.py``): every
evaluating command run on the test fixtures with tiny seeded models, and its files read
back with what depends on the run (times, versions, the temporary folder) scrubbed.

Shared by the golden test and by ``tests/golden_spread.py``, which runs the same commands
on other CPU kernel paths, thread counts and batch sizes to measure how far each number
moves.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from eval_data import write_small_dataset
from stereoset_data import make_probe_fixture
from zero_shot_data import write_coco, write_vg

#: Keys whose values depend on the run, not on the code's behaviour.
VOLATILE = frozenset(
    {"created", "created_at", "date", "time", "timestamp", "elapsed", "elapsed_s",
     "seconds", "duration", "duration_s", "contrastkit_version", "version", "versions",
     "python", "torch", "platform", "host", "hostname", "started", "finished"}
)  # fmt: skip

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


def golden_outputs(tmp: Path, batch_size: int | None = None) -> dict[str, Any]:
    """Every command's outputs on the fixtures, by command name, run in ``tmp``;
    ``batch_size`` (images per forward pass) for the evaluate commands, else their
    default."""
    from contrastkit.tiny.clip import tiny_open_clip
    from contrastkit.tiny.itm import tiny_vilt

    clip = tiny_open_clip(tmp / "models")
    got: dict[str, Any] = {}
    fast: tuple[str, ...] = ("--bootstrap", "50", "--device", "cpu", "--workers", "0")
    if batch_size is not None:
        fast += ("--batch-size", str(batch_size))

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
    # (weights of spread 0.3, not ViLT's 0.02: at 0.02 the tiny model's stereotype shifts
    # are float32 rounding, 1e-9, and their signs differ between CPU kernel paths)
    vilt = tiny_vilt(tmp / "models", initializer_range=0.3)
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


#: float32's machine epsilon: the unit of the golden tolerances.
FLOAT32_EPS = 2.0**-23

#: A number as the reports print it: an integer, a decimal, or scientific notation.
NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def last_digit(number: str) -> float:
    """The value of one unit of the last digit printed in ``number`` (``0.25``: 0.01,
    ``1.5e-05``: 1e-06, ``12``: 1)."""
    mantissa, _, exponent = number.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return float(10.0 ** (int(exponent or 0) - decimals))
