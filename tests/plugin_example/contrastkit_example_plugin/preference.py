"""An example plugin task on an example dataset kind: for each image of a caption-pairs
folder (``caption_pairs.tsv``: ``image``, ``masculine``, ``feminine``), which of the two
captions does a dual encoder score higher? One module: the kind, the task, and its four
functions; two entry points register them."""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contrastkit.evaluators.tasks.registry import Task
from contrastkit.kinds import DatasetKind

FILE = "caption_pairs.tsv"
NAME = "caption-preference"


def is_caption_pairs(path: Path) -> bool:
    return Path(path).is_dir() and (Path(path) / FILE).is_file()


KIND = DatasetKind(
    "caption-pairs", "a caption-pairs folder", "caption-pairs folders",
    "contrastkit_example_plugin.preference:is_caption_pairs", task=NAME,
)  # fmt: skip


def run(config: Any, paths: Sequence[Path], progress: Any) -> Any:
    from PIL import Image

    from contrastkit.evaluators.evaluation import EvaluateResult, ModelEvaluation
    from contrastkit.evaluators.report.results import model_slug
    from contrastkit.models import load_scorer

    rows = []
    for path in paths:
        with (Path(path) / FILE).open(encoding="utf-8", newline="") as handle:
            rows += [(Path(path), row) for row in csv.DictReader(handle, delimiter="\t")]
    evaluations = []
    for spec in config.models:
        scorer = load_scorer(spec, config.model)
        preferred = []
        for folder, row in rows:
            with Image.open(folder / row["image"]) as image:
                scores = scorer.score([image.convert("RGB")], [row["masculine"], row["feminine"]])
            preferred.append(float(scores[0, 0] > scores[0, 1]))
        summary = {"images": len(preferred),
                   "figures": {"masculine preferred": sum(preferred) / len(preferred)}}  # fmt: skip
        out = config.out / model_slug(spec)
        out.mkdir(parents=True, exist_ok=True)
        benchmark = out / "benchmark.json"
        benchmark.write_text(json.dumps({"task": NAME, "model": spec, "summary": summary}))
        evaluations.append(ModelEvaluation(
            model=spec, folder=out, files={"benchmark": benchmark},
            scored_images=len(preferred), summary=summary,
        ))  # fmt: skip
    return EvaluateResult(NAME, tuple(paths), tuple(evaluations))


def read(path: Path) -> dict[str, Any] | None:
    file = Path(path) / "benchmark.json" if Path(path).is_dir() else Path(path)
    if not file.is_file():
        return None
    data = json.loads(file.read_text(encoding="utf-8"))
    return data if isinstance(data, dict) and data.get("task") == NAME else None


def headline(results: Mapping[str, Any]) -> dict[str, Any]:
    return {"task": NAME, "model": results["model"], **results["summary"]["figures"]}


def compare(results: Sequence[Mapping[str, Any]]) -> str:
    lines = ["## Caption preference", "", "| model | images | masculine preferred |",
             "|---|---:|---:|"]  # fmt: skip
    for r in results:
        share = r["summary"]["figures"]["masculine preferred"]
        lines.append(f"| `{r['model']}` | {r['summary']['images']} | {share:.2f} |")
    return "\n".join(lines) + "\n"


_HERE = "contrastkit_example_plugin.preference"
TASK = Task(
    NAME, "caption-pairs", f"{_HERE}:run", read=f"{_HERE}:read",
    headline=f"{_HERE}:headline", compare=f"{_HERE}:compare",
)  # fmt: skip
