"""The engine's ``images`` options for any task on the protocol: image references given as
paths or URLs are read the way VisoGender rows are read (a URL through the image store,
a missing image refused with its file, line and field, or left out and listed with
``skip_missing``), and a task without those options keeps its references as given.

The task here is a toy written for the test: it records each image's red channel, so
which image was opened for which item is known."""

from __future__ import annotations

import io
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.engine import Item, RunContext, Task, TaskResult, run_task
from contrastkit.evaluators.job import EvaluateConfig
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.store import ImageMeta, ImageStore
from planted_captioner import planted_family

URL = "http://images.example/blue.png"


@dataclass(frozen=True, kw_only=True)
class RedResult(TaskResult):
    """The red channel of each scored item's image, by item key."""

    TASK = "red-channel-test"

    reds: Mapping[str, int] | None = None


class RedChannel(Task[Any, RedResult]):
    """Rows ``id<TAB>group<TAB>image`` of a text file; each image's red channel."""

    name = "red-channel-test"
    kind = "stereotype"
    result = RedResult
    scoring_settings = ()
    options: tuple[str, ...] = ("images",)

    def items(self, paths: Sequence[Path], settings: Any, split: str | None) -> Iterable[Item]:
        for path in paths:
            lines = path.read_text(encoding="utf-8").splitlines()
            for number, line in enumerate(lines, start=1):
                key, group, image = line.split("\t")
                yield Item(
                    key=key, images={"photo": image}, source=path, line=number, name=key,
                    group=group,
                )  # fmt: skip

    def score(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        settings: Any,
    ) -> list[Mapping[str, Any]]:
        return [{"red": opened["photo"].getpixel((0, 0))[0]} for opened in images]

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[Any]
    ) -> RedResult:
        return RedResult(reds={r["key"]: r["red"] for r in records})

    def render(self, result: RedResult) -> str:
        return f"# Red\n\n{dict(result.reds or {})}\n"

    def compare(self, results: Sequence[RedResult]) -> str:
        return "\n".join(self.render(r) for r in results)

    def headline(self, result: RedResult) -> dict[str, Any]:
        return {"task": self.name, "items": result.items}


class AsGiven(RedChannel):
    """The same task without the ``images`` options."""

    options = ()


@pytest.fixture
def planted() -> Iterator[str]:
    with planted_family() as prefix:
        yield f"{prefix}:colour"


def _png(colour: tuple[int, int, int]) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (4, 4), colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """Three rows: a local red image, a URL the store holds (blue), a missing file."""
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "red.png").write_bytes(_png((250, 0, 0)))
    rows = ["local\tfiles\tred.png", f"remote\turls\t{URL}", "gone\tfiles\tmissing.png"]
    (folder / "rows.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    store = ImageStore(tmp_path / "store")
    meta = ImageMeta(format="PNG", width=4, height=4, phash="0" * 16)
    store.put(_png((0, 0, 240)), meta, url=URL)
    return folder / "rows.tsv"


def _config(data: Path, out: Path, spec: str, **extra: Any) -> EvaluateConfig:
    return EvaluateConfig(
        data=(str(data),), models=(spec,), out=out, settings=EvalConfig(bootstrap=0), **extra
    )


def test_a_missing_image_is_refused_with_its_file_line_and_field(
    planted: str, data: Path, tmp_path: Path
) -> None:
    config = _config(data, tmp_path / "out", planted, store=tmp_path / "store")
    with pytest.raises(DataFormatError) as raised:
        run_task(RedChannel(), config, (data,))
    message = str(raised.value)
    assert "rows.tsv:3" in message and "photo" in message and "missing.png" in message
    assert "--skip-missing" in message
    assert not list((tmp_path / "out").rglob("*.jsonl"))  # refused before any scoring


def test_skip_missing_leaves_the_row_out_and_urls_come_from_the_store(
    planted: str, data: Path, tmp_path: Path
) -> None:
    store = tmp_path / "store"
    config = _config(data, tmp_path / "out", planted, store=store, skip_missing=True)
    result = run_task(RedChannel(), config, (data,))
    assert result.store == store and result.checked == 0
    [row] = result.skipped_rows
    assert (row.idx, row.context, row.source, row.line) == ("gone", "files", "rows.tsv", 3)
    assert "image file not found" in row.reason
    [entry] = result.evaluations
    assert entry.skipped_rows == result.skipped_rows
    benchmark = RedResult.from_json(json.loads((entry.folder / "benchmark.json").read_text()))
    assert benchmark.reds == {"local": 250, "remote": 0}  # the URL's blue image, stored
    assert benchmark.items == 2
    assert [dict(r)["idx"] for r in benchmark.skipped_rows] == ["gone"]
    report = (entry.folder / "report.md").read_text(encoding="utf-8")
    assert "## Skipped rows" in report and "`gone` (missing.png): image file not found" in report


def test_without_a_store_a_url_is_not_available(planted: str, data: Path, tmp_path: Path) -> None:
    config = _config(data, tmp_path / "out", planted, skip_missing=True)
    result = run_task(RedChannel(), config, (data,))
    assert {row.idx: row.reason for row in result.skipped_rows}["remote"] == (
        "no image store given"
    )


def test_a_task_without_the_image_options_opens_its_references_as_given(
    planted: str, data: Path, tmp_path: Path
) -> None:
    config = _config(data, tmp_path / "out", planted, store=tmp_path / "store")
    with pytest.raises(DataFormatError, match=r"images\.photo"):  # the engine's own opening
        run_task(AsGiven(), config, (data,))
