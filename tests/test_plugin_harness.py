"""Harness export and read-back of a plugin task (issue 45 items 1 and 5): the example
plugin's caption-preference task defines the two harness hooks (``questions``,
``answer_record``) with the public API only, and with no line of contrastkit changed
its caption-pairs data is exported for lmms-eval and VLMEvalKit, and the harness's
answers come back as the task's own typed result: ``benchmark.json`` valid against its
schema, with bootstrap intervals, a ``report.md`` and ``contrastkit report``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from contrastkit.harness_key import HarnessKey, KeyItem, read_key
from lmms_eval_samples import import_utils, rows, sample_line
from test_plugins import contrastkit, install

CAPTIONS = {"masculine": "A man in a room.", "feminine": "A woman in a room."}
#: The label each image's answer chooses (None: an answer that names no option).
CHOICES = ["masculine", "masculine", "feminine", None]


def caption_pairs(folder: Path) -> Path:
    """A caption-pairs folder of four images."""
    from PIL import Image

    folder.mkdir()
    lines = ["image\tmasculine\tfeminine"]
    for n, colour in enumerate([(200, 10, 60), (60, 10, 200), (90, 90, 90), (10, 200, 60)]):
        Image.new("RGB", (32, 32), colour).save(folder / f"{n}.png")
        lines.append(f"{n}.png\t{CAPTIONS['masculine']}\t{CAPTIONS['feminine']}")
    (folder / "caption_pairs.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install(tmp_path_factory.mktemp("plugin") / "site")


def export(site: Path, data: Path, out: Path, harness: str) -> dict[str, Any]:
    run = contrastkit(site, "export", "harness", data, "--format", harness, "--out", out,
                      "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout)  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def vlmevalkit(site: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The caption-pairs folder exported for VLMEvalKit once (its folder and what
    ``export harness --json`` said), read by the tests that answer it."""
    folder = tmp_path_factory.mktemp("vlmevalkit")
    out = folder / "vlm"
    return out, export(site, caption_pairs(folder / "pairs"), out, "vlmevalkit")


def letter(item: KeyItem, label: str) -> str:
    return next(letter for letter, mine in item.labels.items() if mine == label)


def answer(item: KeyItem, position: int) -> str:
    """The answer to an item: its position's choice, worded by letter or by caption."""
    label = CHOICES[position % len(CHOICES)]
    if label is None:
        return "I cannot tell from the picture."
    return letter(item, label) if position % 2 == 0 else f"{CAPTIONS[label]}"


def split_items(key: HarnessKey, split: str) -> list[KeyItem]:
    return [item for item in key.items if item.split == split]


def check_result(site: Path, out: Path, model: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The typed result of the answers of :data:`CHOICES`: 3 answered, 2 masculine."""
    import jsonschema

    from contrastkit.results.schema import json_schema

    benchmark = json.loads((out / "benchmark.json").read_text())
    assert benchmark["task"] == "caption-preference" and benchmark["model"] == model
    assert benchmark["items"] == 3  # the unparseable answer is left out
    assert benchmark["masculine_preferred"] == pytest.approx(2 / 3)
    assert benchmark["mean_margin"] == pytest.approx(1 / 3)
    interval = benchmark["masculine_preferred_ci"]
    assert interval["resamples"] == 1000 and interval["level"] == 0.95
    assert 0 <= interval["low"] <= 2 / 3 <= interval["high"] <= 1
    assert benchmark["settings"] == {"template": "{}"}
    monkeypatch.syspath_prepend(str(site))
    from contrastkit_example_plugin.preference import PreferenceResult

    jsonschema.validate(benchmark, json_schema(PreferenceResult))
    report = (out / "report.md").read_text()
    assert "# Caption preference of" in report and "## Harness answers" in report
    assert "plots/caption_preference.png" in report
    assert (out / "plots" / "caption_preference.png").stat().st_size > 0
    raw = [json.loads(line) for line in (out / "raw_caption_preference.jsonl").open()]
    assert [r["chosen"] for r in raw] == ["masculine", "masculine", "feminine"]
    answers = json.loads((out / "harness_answers.json").read_text())
    assert answers["harness"]["counts"]["main"] == {
        "items": 4, "answered": 3, "unparseable": 1, "missing": 0,
    }  # fmt: skip

    shown = contrastkit(site, "report", out, "--json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    assert json.loads(shown.stdout) == [{"task": "caption-preference", "model": model,
                                         "images": 3, "masculine preferred": 2 / 3}]  # fmt: skip
    table = contrastkit(site, "report", out)
    assert table.returncode == 0 and "## Caption preference" in table.stdout
    assert "| 0.67 [" in table.stdout


def test_a_plugin_task_round_trips_through_lmms_eval(
    site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = caption_pairs(tmp_path / "pairs")
    out = tmp_path / "lmms"
    exported = export(site, data, out, "lmms-eval")
    assert exported["set_kind"] == "caption-pairs"
    assert exported["datasets"] == {
        "main": "contrastkit_caption_pairs", "reversed": "contrastkit_caption_pairs_reversed",
    }  # fmt: skip
    assert exported["items"] == {"main": 4, "reversed": 4}
    assert {"contrastkit_caption_pairs.yaml", "utils.py", "contrastkit_harness.json"} <= set(
        exported["files"]
    )
    key = read_key(out)
    assert key.task == "caption-preference" and key.set_kind == "caption-pairs"
    first = split_items(key, "main")[0]
    assert sorted(first.options.values()) == sorted(CAPTIONS.values())
    assert first.labels[first.answer] == "masculine"
    assert first.annotations["item"]["data"] == CAPTIONS
    assert "caption-preference" in (out / "README.md").read_text()

    utils = import_utils(out)
    logs = tmp_path / "logs" / "dummy-vlm"
    logs.mkdir(parents=True)
    files = []
    for split in ("main", "reversed"):
        dataset = key.datasets[split]
        lines = [
            sample_line(utils, n, doc, [answer(item, n)])
            for n, (item, doc) in enumerate(
                zip(split_items(key, split), rows(out, dataset), strict=True)
            )
        ]
        files.append(logs / f"20260101_120000_samples_{dataset}.jsonl")
        files[-1].write_text("\n".join(lines) + "\n")
    results = tmp_path / "results"
    run = contrastkit(site, "report", "--harness-predictions", files[0], "--harness-predictions",
                      files[1], "--harness-set", out, "--out", results, "--json")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    found = json.loads(run.stdout)
    assert found["set_kind"] == "caption-pairs" and found["model"] == "harness:dummy-vlm"
    assert found["results"] == str(results / "benchmark.json")
    assert found["harness"]["reversed_options"]["same_content_share"] == 1.0
    check_result(site, results, "harness:dummy-vlm", monkeypatch)


def test_a_plugin_task_round_trips_through_vlmevalkit(
    site: Path,
    vlmevalkit: tuple[Path, dict[str, Any]],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    out, exported = vlmevalkit
    assert "contrastkit_caption_pairs.tsv" in exported["files"]
    key = read_key(out)
    items = split_items(key, "main")
    predictions = tmp_path / "llava_contrastkit_caption_pairs.tsv"
    pd.DataFrame(
        [{"index": item.index, "prediction": answer(item, n)} for n, item in enumerate(items)]
    ).to_csv(predictions, sep="\t", index=False)
    results = tmp_path / "results"
    run = contrastkit(site, "report", "--harness-predictions", predictions, "--harness-set",
                      out, "--out", results)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "main: 4 items, 3 answered, 1 unparseable, 0 missing" in run.stdout
    check_result(site, results, "harness:llava", monkeypatch)


def test_without_the_plugin_its_export_is_not_read_back(
    vlmevalkit: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    """The key names the task; without the plugin that provides it the answers are
    refused, naming it."""
    out, _ = vlmevalkit
    [item, *_] = split_items(read_key(out), "main")
    predictions = tmp_path / "m_contrastkit_caption_pairs.tsv"
    pd.DataFrame([{"index": item.index, "prediction": "A"}]).to_csv(
        predictions, sep="\t", index=False
    )
    bare = contrastkit(tmp_path / "nothing", "report", "--harness-predictions", predictions,
                       "--harness-set", out, "--out", tmp_path / "r")  # fmt: skip
    assert bare.returncode == 2
    assert "caption-preference" in bare.stderr and "plugin" in bare.stderr
    assert not any((tmp_path / "r").glob("*"))  # refused before anything is written


def test_a_harness_question_is_checked_when_made() -> None:
    from contrastkit.extend import HarnessQuestion

    def question(options: dict[str, str], answer: str) -> HarnessQuestion:
        return HarnessQuestion("k", b"", "Which?", options, answer)

    assert question({"a": "x", "b": "y"}, "a").answer == "a"
    with pytest.raises(ValueError, match="'c' is not one of the option labels a, b"):
        question({"a": "x", "b": "y"}, "c")
    with pytest.raises(ValueError, match="must differ"):
        question({"a": "x", "b": "x"}, "a")
    with pytest.raises(ValueError, match="needs 2 to 4 options, not 1"):
        question({"a": "x"}, "a")


def test_the_export_asks_the_task_through_the_function_it_is_handed(tmp_path: Path) -> None:
    """The builders do not reach the task registry themselves (the layer contract keeps
    builders and evaluators apart): ``export harness`` hands them the engine's function,
    and without one a kind no built-in set reads is exported as if no task had the hooks."""
    from contrastkit.builders.harness_questions import ImageFinder
    from contrastkit.builders.harness_task_questions import task_set
    from contrastkit.cli.export import _task_questions
    from contrastkit.evaluators.engine.harness import HarnessQuestion
    from contrastkit.evaluators.engine.protocol import Item
    from contrastkit.evaluators.tasks.registry import task_questions

    images = ImageFinder(None)
    assert _task_questions("no-such-kind", []) is None  # the engine's: no task, no questions
    assert task_questions("no-such-kind", []) is None
    asked: list[tuple[str, tuple[Path, ...]]] = []
    item = Item("k1", {}, {"x": 1}, source=tmp_path, name="first", group="g")
    question = HarnessQuestion("k1", b"image", "Which?", {"a": "one", "b": "two"}, "a")

    def questions_of(
        kind: str, paths: Sequence[Path]
    ) -> tuple[str, list[tuple[Item, HarnessQuestion]]]:
        asked.append((kind, tuple(paths)))
        return "mine", [(item, question)]

    found = task_set("plugin-kind", [tmp_path], images, False, questions_of)
    assert asked == [("plugin-kind", (tmp_path,))]
    assert found is not None and found.task == "mine"
    assert [(q.row, q.question, q.answer) for q in found.questions] == [("k1", "Which?", "a")]
    assert task_set("plugin-kind", [tmp_path], images, False) is None  # not handed one
