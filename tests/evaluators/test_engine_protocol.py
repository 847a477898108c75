"""The engine's own promises, with a toy task on a folder of PNGs and the planted
captioner: an interrupted run keeps every finished batch and a rerun scores only the
rest; bad data is named by file, line and field; a task's own bug is a TypeError naming
the task, never a data error; a result that does not fit its schema is refused before
anything is written; a task declared without a result class is refused when registered."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from contrastkit import extend
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.engine import run_task
from contrastkit.evaluators.job import EvaluateConfig
from contrastkit.evaluators.runner import EvalConfig
from planted_captioner import CALLS, planted_family


@dataclass(frozen=True, kw_only=True)
class ToyResult(extend.TaskResult):
    TASK = "toy-words"

    manly: float | None = None
    manly_ci: extend.Interval | None = None


@dataclass(frozen=True)
class ToySettings(extend.TaskSettings):
    fail_at: int = extend.setting(-1, help="Raise in the batch holding this item index.")
    bad_result: bool = extend.setting(False, help="Return a result that breaks the schema.")
    short: bool = extend.setting(False, help="Return one record too few.")


class ToyTask(extend.Task[ToySettings, ToyResult]):
    """Each PNG of a folder listed in images.tsv (one name per line) is described; the
    share of descriptions saying 'man'."""

    name, kind, result, settings = "toy-words", "contrast", ToyResult, ToySettings
    capabilities = frozenset({"descriptions"})
    scoring_settings = ()  # no setting changes a record

    def items(
        self, paths: Sequence[Path], settings: ToySettings, split: str | None
    ) -> Iterable[extend.Item]:
        for path in paths:
            listing = path / "images.tsv"
            for line, name in enumerate(listing.read_text().splitlines(), start=1):
                yield extend.Item(key=name, images={"image": name}, source=listing, line=line)

    def score(
        self,
        model: Any,
        items: Sequence[extend.Item],
        images: Sequence[Mapping[str, Any]],
        settings: ToySettings,
    ) -> list[Mapping[str, Any]]:
        keys = [item.key for item in items]
        if settings.fail_at >= 0 and f"{settings.fail_at}.png" in keys:
            raise KeyboardInterrupt  # the user's Ctrl-C in the middle of a run
        captions = model.generate_captions([i["image"] for i in images], 5)
        records = [{"man": "man" in caption.split()} for caption in captions]
        return records[:-1] if settings.short else records

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: extend.RunContext[ToySettings]
    ) -> ToyResult:
        values = [float(r["man"]) for r in records]
        if context.settings.bad_result:
            return ToyResult(manly="many")  # type: ignore[arg-type]
        return ToyResult(manly=sum(values) / len(values), manly_ci=context.mean_interval(values))

    def render(self, result: ToyResult) -> str:
        return f"manly {result.manly}\n"

    def compare(self, results: Sequence[ToyResult]) -> str:
        return "".join(f"{r.model} {r.manly}\n" for r in results)

    def headline(self, result: ToyResult) -> dict[str, Any]:
        return {"task": self.name, "model": result.model, "manly": result.manly}


TASK = ToyTask()


@pytest.fixture
def planted() -> Iterator[str]:
    with planted_family() as prefix:
        yield f"{prefix}:colour"


def _folder(tmp_path: Path, n: int = 6, broken: int | None = None) -> Path:
    folder = tmp_path / "pngs"
    folder.mkdir()
    for i in range(n):
        colour = (200, 0, 0) if i % 2 == 0 else (0, 0, 200)
        if i == broken:
            (folder / f"{i}.png").write_bytes(b"not a png")
        else:
            Image.new("RGB", (8, 8), colour).save(folder / f"{i}.png")
    (folder / "images.tsv").write_text("".join(f"{i}.png\n" for i in range(n)))
    return folder


def _run(folder: Path, out: Path, spec: str, **settings: Any) -> Any:
    config = EvaluateConfig(
        data=(str(folder),), models=(spec,), out=out, task_settings=ToySettings(**settings),
        settings=EvalConfig(bootstrap=100), model=extend_model(),
    )  # fmt: skip
    return run_task(TASK, config, (folder,))


def extend_model() -> Any:
    from contrastkit.config import ModelConfig

    return ModelConfig(device="cpu", batch_size=2)


def test_an_interrupted_run_keeps_its_batches_and_a_rerun_scores_the_rest(
    planted: str, tmp_path: Path
) -> None:
    folder, out = _folder(tmp_path), tmp_path / "out"
    with pytest.raises(KeyboardInterrupt):
        _run(folder, out, planted, fail_at=4)  # batches of 2: items 0-3 are done
    [raw] = list(out.rglob("raw_toy_words.jsonl"))
    assert [json.loads(line)["key"] for line in raw.read_text().splitlines()] == [
        "0.png", "1.png", "2.png", "3.png"
    ]  # fmt: skip
    assert not list(out.rglob("benchmark.json"))
    CALLS.clear()
    result = _run(folder, out, planted)
    [entry] = result.evaluations
    assert (entry.reused_records, entry.scored_images) == (4, 2) and len(CALLS) == 1
    data = json.loads((entry.folder / "benchmark.json").read_text())
    assert data["manly"] == 0.5 and data["items"] == 6 and data["manly_ci"]["resamples"] == 100
    assert "settings" not in json.loads(raw.read_text().splitlines()[0])  # scoring_settings = ()


def test_an_image_that_does_not_open_is_named_by_file_line_and_field(
    planted: str, tmp_path: Path
) -> None:
    folder = _folder(tmp_path, broken=3)
    with pytest.raises(DataFormatError) as caught:
        _run(folder, tmp_path / "out", planted)
    error = caught.value
    assert str(folder / "images.tsv") in str(error) and ":4" in str(error)
    assert "images.image" in str(error) and "'3.png'" in str(error)


def test_duplicate_keys_are_refused_before_any_model_loads(planted: str, tmp_path: Path) -> None:
    folder = _folder(tmp_path, n=2)
    (folder / "images.tsv").write_text("0.png\n1.png\n0.png\n")
    CALLS.clear()
    with pytest.raises(DataFormatError, match=r"'0.png' also at .*images.tsv:1"):
        _run(folder, tmp_path / "out", planted)
    assert CALLS == []


def test_a_task_bug_is_a_type_error_naming_the_task_and_nothing_is_written(
    planted: str, tmp_path: Path
) -> None:
    folder, out = _folder(tmp_path), tmp_path / "out"
    with pytest.raises(TypeError, match="task toy-words: score\\(\\) gave 1 records for 2 items"):
        _run(folder, out, planted, short=True)
    with pytest.raises(
        TypeError, match=r"task toy-words: its result .* does not fit its schema at manly"
    ):
        _run(folder, tmp_path / "out2", planted, bad_result=True)
    assert not list((tmp_path / "out2").rglob("benchmark.json"))
    assert not list((tmp_path / "out2").rglob("report.md"))


def test_an_incomplete_task_is_refused_when_registered() -> None:
    class NoResult(extend.Task):  # type: ignore[type-arg]
        name, kind = "no-result", "contrast"

    with pytest.raises(ConfigError, match="set its 'result' class attribute"):
        extend.register_task(NoResult())

    class Mismatch(extend.Task):  # type: ignore[type-arg]
        name, kind, result = "other-name", "contrast", ToyResult

    with pytest.raises(ConfigError, match="has TASK = 'toy-words'; set it to 'other-name'"):
        extend.register_task(Mismatch())
