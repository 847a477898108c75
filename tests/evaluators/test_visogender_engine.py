"""VisoGender on the task engine: the registry's row runs ``run_task`` of the folder's
task, models are refused in the task's words before any loads (a dual encoder or a
captioning model; only retrieval asks for a dual encoder), and a run keeps the files it
always wrote: the raw file of each part (reused on rerun), none of the engine's own,
``benchmark.json`` in its keyed layout and the files listed as before. The engine hooks
the port added are off by default for every other task."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine.protocol import Task, TaskSettings
from contrastkit.evaluators.engine.registration import check_task
from contrastkit.evaluators.engine.run import check_capabilities
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.evaluators.tasks.registry import tasks
from contrastkit.evaluators.tasks.visogender.evaluate import evaluate_visogender
from contrastkit.evaluators.tasks.visogender.task import TASK, VISOGENDER, VisoGender
from contrastkit.models import families
from contrastkit.results.base import Result

RAW_FILES = ("raw_resolution.jsonl", "raw_retrieval.jsonl", "raw_retrieval_flipped.jsonl")


def test_the_registry_row_runs_the_task_and_reads_results_objects() -> None:
    assert TASK is VISOGENDER and isinstance(TASK, VisoGender)
    check_task(TASK)  # a complete declaration
    row = tasks()["visogender"]
    assert row.function("run") is evaluate_visogender
    assert row.protocol is None  # the built-in row: report reads each file's results object
    assert row.options == TASK.options
    names = list(tasks())
    assert names.index("visogender") < names.index("contrast")


@pytest.fixture
def no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Model families of each capability, and a load that fails the test."""

    def family(prefix: str, capabilities: set[str]) -> families.ModelFamily:
        return families.ModelFamily(
            prefix, "captioning", "a test family", f"{prefix}:x", "x:y",
            capabilities=frozenset(capabilities),
        )  # fmt: skip

    for prefix, capabilities in (
        ("dual", {"embeddings", "captions"}), ("pron", {"pronouns"}),
        ("itm", {"captions"}), ("asks", {"answers"}),
    ):  # fmt: skip
        monkeypatch.setitem(families._registered, prefix, family(prefix, capabilities))

    def load(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a model loaded before the models were checked")

    monkeypatch.setattr("contrastkit.models.load_model", load)


@pytest.mark.parametrize(
    ("models", "only", "message"),
    [
        (("dual:a", "itm:b"), None, "models: itm:b is an image-text-matching model: it "
         "scores captions for stereotype probing (a probe set, --task stereotype), not "
         "VisoGender pronouns"),
        (("asks:c",), None, "models: asks:c only answers questions about an image "
         "(capability 'answers'): it runs decision probes (contrastkit evaluate "
         "decisions), not VisoGender's resolution or retrieval"),
        (("pron:d",), ("retrieval",), "models: pron:d is a captioning model; the "
         "retrieval task needs a dual encoder"),
        # every model's capabilities first, then what the parts asked need
        (("pron:d", "itm:b"), ("retrieval",), "models: itm:b is an image-text-matching"),
    ],
)  # fmt: skip
def test_models_are_refused_in_the_tasks_words_before_any_loads(
    dataset: Path, tmp_path: Path, no_loading: None,
    models: tuple[str, ...], only: tuple[str, ...] | None, message: str,
) -> None:  # fmt: skip
    settings = EvalConfig(tasks=only) if only else EvalConfig()
    config = EvaluateConfig(
        data=(str(dataset / "visogender_OP.tsv"),), models=models, out=tmp_path / "out",
        settings=settings,
    )  # fmt: skip
    with pytest.raises(ConfigError) as raised:
        evaluate(config)
    assert str(raised.value).startswith(message)


def test_task_settings_are_refused(dataset: Path, tmp_path: Path, no_loading: None) -> None:
    config = EvaluateConfig(
        data=(str(dataset / "visogender_OP.tsv"),), models=("dual:a",), out=tmp_path,
        task_settings=TaskSettings(),
    )  # fmt: skip
    with pytest.raises(ConfigError, match="task_settings: task visogender has no settings"):
        evaluate(config)


@pytest.mark.slow
def test_a_run_keeps_its_files_and_a_rerun_reuses_every_score(
    dataset: Path, tmp_path: Path, tiny_clip_spec: str
) -> None:
    labels: list[str] = []
    updates: list[tuple[int, int]] = []

    @contextmanager
    def progress(label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        labels.append(label)
        yield lambda done, total: updates.append((done, total))

    config = EvaluateConfig(
        data=(str(dataset / "visogender_OP.tsv"), str(dataset / "visogender_OO.tsv")),
        models=(tiny_clip_spec,), out=tmp_path / "out",
        model=ModelConfig(device="cpu", batch_size=5),
        settings=EvalConfig(subsample_runs=5, baseline_runs=5, bootstrap=0),
    )  # fmt: skip
    [first] = evaluate(config, progress=progress).evaluations
    assert labels == [f"scoring {tiny_clip_spec}"]
    assert updates[-1] == (24, 24)  # in images: the engine adds no update of its own
    assert first.scored_images == 24 and first.reused_records == 0
    assert list(first.files)[:2] == ["benchmark", "report"]
    assert "raw" not in first.files and "resolution_accuracy_svg" in first.files
    folder = first.folder
    assert all((folder / name).is_file() for name in RAW_FILES)
    assert not (folder / TASK.raw_file).exists()
    text = (folder / "benchmark.json").read_text()
    [key] = json.loads(text)
    assert key.startswith("visogender_") and key.endswith("_results")
    report = (folder / "report.md").read_text()
    assert "](plots/resolution_accuracy.png)" in report
    raw = {name: (folder / name).read_bytes() for name in RAW_FILES}

    [again] = evaluate(config).evaluations
    assert again.scored_images == 0 and again.reused_records > 0
    assert {name: (folder / name).read_bytes() for name in RAW_FILES} == raw
    rerun = json.loads((folder / "benchmark.json").read_text())[key]
    for part in ("resolution_bias", "retrieval_bias", "retrieval_flipped"):
        assert rerun[part] == json.loads(text)[key][part]


class _Either(Task[TaskSettings, Result]):
    name = "either-test"
    kind = "visogender"
    any_capabilities = frozenset({"embeddings", "pronouns"})


def test_one_of_several_capabilities_in_the_engines_words(no_loading: None) -> None:
    check_capabilities(_Either(), ["dual:a", "pron:d"])  # each has one of them
    with pytest.raises(ConfigError, match="it needs embeddings or pronouns, and itm:b has"):
        check_capabilities(_Either(), ["dual:a", "itm:b"])


def test_the_hooks_are_off_for_a_task_that_does_not_set_them(tmp_path: Path) -> None:
    task = _Either()
    files: Mapping[str, Path] = {"raw": tmp_path / "r", "benchmark": tmp_path / "b"}
    assert task.listed_files(files) is files
    config = EvaluateConfig(data=("x",), models=("open_clip:ViT-B-32/openai",), out=tmp_path)
    assert task.available(config, (), [], None) is None
    task.check_models(["itm:b"], TaskSettings())  # refuses nothing
    assert (task.plots_on_evaluate, task.reports_progress) == (False, False)
    assert task.progress_label.format(task="t", model="m") == "t: m"
    records: Sequence[Mapping[str, Any]] = [{"a": 1}]
    assert task.raw_text(records) == '{"a": 1}\n'
    for other in tasks().values():
        protocol = other.protocol
        if isinstance(protocol, Task):
            assert not protocol.any_capabilities and not protocol.plots_on_evaluate
            assert not protocol.reports_progress
