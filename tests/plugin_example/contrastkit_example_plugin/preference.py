"""An example plugin task on an example dataset kind: for each image of a caption-pairs
folder (``caption_pairs.tsv``: ``image``, ``masculine``, ``feminine``), which of the two
captions does a dual encoder score higher?

Written on the task protocol with the public API only (:mod:`contrastkit.extend`): no
model loop, no file writing, no internal import. The engine gives it the options of
its settings on ``contrastkit evaluate caption-preference``, resume, bootstrap
intervals, ``benchmark.json`` checked against its result's schema, ``report.md``, its
figure, ``comparison.md`` and ``contrastkit report``. Its two harness hooks
(``questions``, ``answer_record``) make it exportable with ``contrastkit export harness``
for VLMEvalKit or lmms-eval, and the harness's answers come back as its typed result.
Two entry points register the kind and the task."""

from __future__ import annotations

import csv
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

from contrastkit import extend
from contrastkit.extend import ConfigError, DataFormatError

FILE = "caption_pairs.tsv"
NAME = "caption-preference"
#: What a harness asks of each image.
QUESTION = "Which caption describes the image?"


def is_caption_pairs(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / FILE).is_file()


#: The headline ``evaluate --json`` and ``report --json`` print for a model.
PreferenceHeadline = TypedDict(
    "PreferenceHeadline",
    {"task": str, "model": str, "images": int, "masculine preferred": float | None},
)


KIND = extend.DatasetKind(
    "caption-pairs", "a caption-pairs folder", "caption-pairs folders",
    "contrastkit_example_plugin.preference:is_caption_pairs", task=NAME,
)  # fmt: skip


@dataclass(frozen=True)
class PreferenceSettings(extend.TaskSettings):
    """The task's own options."""

    template: str = extend.setting(
        "{}", help="What each caption is put in before scoring, '{}' marking the caption "
        "(e.g. 'a photo of {}').", metavar="TEXT",
    )  # fmt: skip

    def __post_init__(self) -> None:
        if "{}" not in self.template:
            raise ConfigError(f"template: must hold '{{}}', not {self.template!r}")


@dataclass(frozen=True, kw_only=True)
class PreferenceResult(extend.TaskResult):
    """How often the masculine caption scores higher, and by how much."""

    TASK = NAME

    masculine_preferred: float | None = None
    masculine_preferred_ci: extend.Interval | None = None
    mean_margin: float | None = None
    mean_margin_ci: extend.Interval | None = None


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


class CaptionPreference(extend.Task[PreferenceSettings, PreferenceResult]):
    """Which caption of each pair a dual encoder prefers."""

    name = NAME
    kind = "caption-pairs"
    capabilities = frozenset({"embeddings"})
    settings = PreferenceSettings
    result = PreferenceResult
    description = (
        "Which of two captions (masculine, feminine) a dual encoder scores higher for each "
        "image of a caption-pairs folder (example plugin).\n\nThe share of images whose "
        "masculine caption wins, and the mean score margin, with bootstrap intervals."
    )
    example_model = "open_clip:ViT-B-32/openai"

    def items(
        self, paths: Sequence[Path], settings: PreferenceSettings, split: str | None
    ) -> Iterable[extend.Item]:
        for path in paths:
            file = Path(path) / FILE
            with file.open(encoding="utf-8", newline="") as handle:
                for line, row in enumerate(csv.DictReader(handle, delimiter="\t"), start=2):
                    for column in ("image", "masculine", "feminine"):
                        if not (row.get(column) or "").strip():
                            raise DataFormatError(file, line, column, "empty or missing")
                    yield extend.Item(
                        key=f"{Path(path).name}/{row['image']}", images={"image": row["image"]},
                        data={"masculine": row["masculine"], "feminine": row["feminine"]},
                        source=file, line=line,
                    )  # fmt: skip

    def score(
        self,
        model: Any,
        items: Sequence[extend.Item],
        images: Sequence[Mapping[str, Any]],
        settings: PreferenceSettings,
    ) -> list[Mapping[str, Any]]:
        records = []
        for item, opened in zip(items, images, strict=True):
            texts = [settings.template.format(item.data[g]) for g in ("masculine", "feminine")]
            scores = model.score([opened["image"]], texts)
            records.append({"masculine": float(scores[0, 0]), "feminine": float(scores[0, 1])})
        return records

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: extend.RunContext[PreferenceSettings]
    ) -> PreferenceResult:
        wins = [float(r["masculine"] > r["feminine"]) for r in records]
        margins = [r["masculine"] - r["feminine"] for r in records]
        return PreferenceResult(
            masculine_preferred=_mean(wins),
            masculine_preferred_ci=context.mean_interval(wins),
            mean_margin=_mean(margins),
            mean_margin_ci=context.mean_interval(margins),
        )

    def questions(
        self, items: Sequence[extend.Item], settings: PreferenceSettings
    ) -> list[extend.HarnessQuestion]:
        """Each image asked which of its two captions describes it; neither is wrong, so
        the "answer" is the masculine one and a harness's accuracy is the share of images
        whose masculine caption is chosen."""
        return [
            extend.HarnessQuestion(
                key=item.key, image=item.images["image"], question=QUESTION,
                options={g: settings.template.format(item.data[g])
                         for g in ("masculine", "feminine")},
                answer="masculine", category="caption-pairs",
            )
            for item in items
        ]  # fmt: skip

    def answer_record(self, item: extend.Item, chosen: str) -> Mapping[str, Any]:
        """The caption chosen as a score of 1 and the other as 0: the share preferred is
        that of the choices, the margin +1 or -1 per image (a choice, not a score)."""
        return {"masculine": float(chosen == "masculine"), "feminine": float(chosen == "feminine")}

    def render(self, result: PreferenceResult) -> str:
        share = _figure(result.masculine_preferred, result.masculine_preferred_ci)
        margin = _figure(result.mean_margin, result.mean_margin_ci)
        return "\n".join([
            f"# Caption preference of `{result.model}`", "",
            f"{result.items} images, template {result.settings.get('template')!r}.", "",
            "| figure | value |", "|---|---:|",
            f"| masculine preferred | {share} |",
            f"| mean margin (masculine - feminine) | {margin} |",
        ]) + "\n"  # fmt: skip

    def figures(self, result: PreferenceResult) -> Mapping[str, Any]:
        from matplotlib.figure import Figure

        figure = Figure(figsize=(4, 3), layout="constrained")
        axis = figure.subplots()
        share = result.masculine_preferred or 0.0
        axis.bar(["masculine", "feminine"], [share, 1 - share], color=["#0072B2", "#D55E00"])
        axis.set_ylim(0, 1)
        axis.set_ylabel("share of images preferred")
        weights = "\n(random weights: not a measurement)" if result.random_weights else ""
        figure.suptitle(f"Caption preference, {result.model}{weights}", fontsize=8)
        return {"caption_preference": figure}

    def compare(self, results: Sequence[PreferenceResult]) -> str:
        lines = ["## Caption preference", "", "| model | images | masculine preferred |",
                 "|---|---:|---:|"]  # fmt: skip
        for r in results:
            share = _figure(r.masculine_preferred, r.masculine_preferred_ci)
            lines.append(f"| `{r.model}` | {r.items} | {share} |")
        return "\n".join(lines) + "\n"

    def headline(self, result: PreferenceResult) -> PreferenceHeadline:
        return {"task": NAME, "model": result.model, "images": result.items,
                "masculine preferred": result.masculine_preferred}  # fmt: skip


def _figure(value: float | None, interval: extend.Interval | None) -> str:
    if value is None:
        return "n/a (no images)"
    if interval is None:
        return f"{value:.2f}"
    if interval.low is None or interval.high is None:
        return f"{value:.2f} [n/a: {interval.reason}]"
    return f"{value:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


TASK = CaptionPreference()
