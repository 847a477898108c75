"""The standard ``benchmark.json`` and ``report.md`` written from a harness's answers:
VisoGender sets through the evaluator's resolution metrics, stereotype probes through the
stereotype benchmark (each main-split answer a one-hot score row), the ``harness`` section
added to each."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, TypeVar

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness.config import (
    HarnessReportConfig,
    HarnessSection,
    ProbeHeadline,
    report_weights_note,
)
from contrastkit.evaluators.harness.markdown import harness_markdown
from contrastkit.evaluators.raw import dumps_jsonl
from contrastkit.harness_key import HarnessKey, KeyItem
from contrastkit.io import atomic_write_text

if TYPE_CHECKING:
    from contrastkit.evaluators.tasks.visogender.records import ResolutionRecord

__all__ = [
    "HARNESS_SCORE_KIND",
    "SHIFTING_UNAVAILABLE",
    "stereotype_outputs",
    "visogender_outputs",
]


#: A kind of raw record made of a split's answered items.
_R = TypeVar("_R")


class _ProbeAnswer(TypedDict):
    """A stereotype probe's answer as the evaluator's raw record (one-hot ``scores`` over
    the three captions, no neutral or blank-image scores) with its key item's index."""

    id: str
    category: str
    label: str
    scores: list[float]
    neutral_scores: None
    blank_scores: None
    score_kind: str
    harness_index: int


def _records_by_split(
    key: HarnessKey,
    config: HarnessReportConfig,
    records: Callable[[list[KeyItem]], list[_R]],
) -> dict[str, list[_R]]:
    """The raw records of each split's answered items (``records`` of the split's key
    items); an error when no answer of the main split could be read."""
    by_split = {
        split: records([item for item in key.items if item.split == split])
        for split in key.datasets
    }
    if not by_split["main"]:
        raise DataFormatError(
            config.predictions[0], None, None,
            "no answer of the main split could be read: nothing to compute (check the "
            "files are this export's predictions)",
        )  # fmt: skip
    return by_split


def _flag_weights(results: dict[str, Any], model: str, key: HarnessKey) -> None:
    """Set ``random_weights`` / ``weights_note`` of ``results`` from the model and from
    the export (a set built with random-weight models:
    :func:`~contrastkit.evaluators.harness.config.report_weights_note`)."""
    note = report_weights_note(model, key)
    results["random_weights"] = note is not None
    results["weights_note"] = note


def _visogender_records(
    items: Sequence[KeyItem], chosen: Mapping[int, str | None], model: str, source: Path
) -> list[ResolutionRecord]:
    """One-hot resolution records (the evaluator's raw format) of the answered items."""
    from contrastkit.evaluators.data import EvalItem
    from contrastkit.evaluators.tasks.visogender.resolution import ResolutionCase, case_record
    from contrastkit.schema import Context, Gender, VisoGenderRow
    from contrastkit.templates import Template, correct_pronoun

    templates = {template.key: template for template in Template}
    records: list[ResolutionRecord] = []
    for item in items:
        letter = chosen.get(item.index)
        if letter is None:
            continue
        a = item.annotations
        context = Context(a["context"])
        try:
            row = VisoGenderRow(
                idx=str(a["idx"]),
                context=context,
                sector=str(a.get("sector", "")),
                specialisation=str(a.get("specialisation", "")),
                occupation=str(a["occupation"]),
                participant=a["noun"] if context is Context.OP else None,
                object=a["noun"] if context is Context.OO else None,
                url=str(a.get("image", "")),
                licence="",
                occupation_gender=Gender(a["occupation_gender"]),
                participant_gender=(
                    Gender(a["participant_gender"]) if a.get("participant_gender") else None
                ),
            )
            template = templates[a["template"]]
        except (KeyError, ValueError) as error:
            raise DataFormatError(
                source, None, f"items[index={item.index}].annotations", f"malformed ({error})"
            ) from error
        genders = (Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL)
        case = ResolutionCase(
            EvalItem(row=row, source=source, image_ref=str(a.get("image", ""))),
            template,
            genders,
            correct_pronoun(row, template),
        )
        picked = item.labels[letter]
        scores = {gender: 1.0 if gender.value == picked else 0.0 for gender in genders}
        record = case_record(case, scores, model)
        record["harness_index"] = item.index
        records.append(record)
    return records


def _resolution_headline(summary: Mapping[str, Any]) -> dict[str, dict[str, float | None]]:
    keep = ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine", "overall_accuracy")
    return {
        split: {name: values.get(name) for name in keep if name in values}
        for split, values in summary.items()
        if isinstance(values, dict) and "RA_avg" in values
    }


def visogender_outputs(
    config: HarnessReportConfig,
    key: HarnessKey,
    chosen: Mapping[int, str | None],
    model: str,
    section: HarnessSection,
) -> tuple[Path, str]:
    from contrastkit.evaluators.report.results import jsonable
    from contrastkit.evaluators.runner import EvalConfig, ScoredRun
    from contrastkit.evaluators.tasks.visogender.benchmark import benchmark
    from contrastkit.evaluators.tasks.visogender.outputs import write_outputs
    from contrastkit.evaluators.tasks.visogender.resolution import summarize_resolution

    by_split = _records_by_split(
        key, config, lambda items: _visogender_records(items, chosen, model, config.export)
    )
    eval_config = EvalConfig(
        tasks=("resolution",), neutral=True, protocol="visogender-official",
        bootstrap=config.bootstrap, confidence=config.confidence, seed=config.seed,
    )  # fmt: skip
    run = ScoredRun(
        model=model, kind="harness", resolution=by_split["main"],
        skipped=["retrieval (a harness answers questions about one image; it does not rank "
                 "images)"],
    )  # fmt: skip
    results_json = benchmark(run, eval_config, [config.export])
    name, results = next(iter(results_json.items()))
    _flag_weights(results, model, key)
    results["metadata"]["experiment_desc"] = "HARNESS-MCQ"
    results["metadata"]["n_unparseable"] = section["counts"]["main"]["unparseable"]
    compared = {"main": _resolution_headline(results.get("resolution_bias", {}))}
    if by_split.get("reversed"):
        summary = summarize_resolution(
            by_split["reversed"], protocol="visogender-official", bootstrap=0, seed=config.seed
        )
        compared["reversed"] = _resolution_headline(summary)
    section["resolution_by_split"] = compared
    results["harness"] = jsonable(section)
    raw = dumps_jsonl(by_split["main"])
    atomic_write_text(config.out / "raw_resolution.jsonl", raw)
    files = write_outputs({name: results}, config.out)
    report = files["report"].read_text(encoding="utf-8").rstrip("\n").split("\n")
    markdown = "\n".join([*report, "", *harness_markdown(section)]).rstrip() + "\n"
    atomic_write_text(files["report"], markdown)
    return files["benchmark"], markdown


#: What the scores of a stereotype benchmark written from a harness's answers are.
HARNESS_SCORE_KIND = "harness answer (1 for the chosen caption, 0 for the others)"
#: Why such a benchmark has no lmss / vlss (its ``shifting.reason`` and report.md).
SHIFTING_UNAVAILABLE = (
    "lmss and vlss (VLStereoSet Sec. 3.5, Eq. 2-3) are log-ratios of the model's two-way "
    "probabilities of the stereotypical caption, its neutralised form and the same with a "
    "blank image; a harness gives one chosen caption per image, no scores and no "
    "neutralised or blank-image questions, so they are not computed (run `contrastkit "
    "evaluate --task stereotype` with a caption scorer for them)"
)


def _stereotype_records(
    items: Sequence[KeyItem], chosen: Mapping[int, str | None], source: Path
) -> list[_ProbeAnswer]:
    """The answered probe items as the evaluator's raw stereotype records
    (:mod:`contrastkit.evaluators.tasks.stereotype_probing.scoring`): ``scores`` one-hot over
    ``(S_s, S_a, S_i)`` on the chosen caption, no neutral or blank-image scores."""
    from contrastkit.evaluators.tasks.stereotype_probing.metrics import COLUMNS

    records: list[_ProbeAnswer] = []
    for item in items:
        letter = chosen.get(item.index)
        if letter is None:
            continue
        a = item.annotations
        picked = item.labels[letter]
        try:
            row_id, category, label = str(a["id"]), str(a["category"]), str(a["label"])
        except KeyError as error:
            raise DataFormatError(
                source, None, f"items[index={item.index}].annotations", f"no {error}"
            ) from error
        records.append(
            {
                "id": row_id,
                "category": category,
                "label": label,
                "scores": [1.0 if picked == column else 0.0 for column in COLUMNS],
                "neutral_scores": None,
                "blank_scores": None,
                "score_kind": HARNESS_SCORE_KIND,
                "harness_index": item.index,
            }
        )
    return records


def _probe_headline(records: Sequence[Mapping[str, Any]]) -> ProbeHeadline:
    from contrastkit.evaluators.tasks.stereotype_probing.metrics import ivlas, vlbs, vlrs

    if not records:
        return {"n": 0, "vlrs": None, "vlbs": None, "ivlas": None}
    scores = [record["scores"] for record in records]
    relevance = vlrs(scores)
    bias = vlbs(scores, [record["label"] for record in records])
    return {"n": len(records), "vlrs": _finite(relevance), "vlbs": _finite(bias),
            "ivlas": _finite(ivlas(relevance, bias))}  # fmt: skip


def _finite(value: float) -> float | None:
    """``value``, or ``None`` when it is not finite (JSON has no NaN)."""
    return value if math.isfinite(value) else None


def stereotype_outputs(
    config: HarnessReportConfig,
    key: HarnessKey,
    chosen: Mapping[int, str | None],
    model: str,
    section: HarnessSection,
) -> tuple[Path, str]:
    """The standard stereotype ``benchmark.json`` and ``report.md`` of the main split's
    answers
    (:func:`contrastkit.evaluators.tasks.stereotype_probing.benchmark.stereotype_benchmark`),
    lmss / vlss
    marked not available, the ``harness`` section added."""
    from contrastkit.evaluators.bootstrap import BootstrapSettings
    from contrastkit.evaluators.report.results import jsonable
    from contrastkit.evaluators.tasks.stereotype_probing.benchmark import (
        stereotype_benchmark,
        stereotype_markdown,
    )
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import RAW_FILE

    by_split = _records_by_split(
        key, config, lambda items: _stereotype_records(items, chosen, config.export)
    )
    intervals = BootstrapSettings(config.bootstrap, config.confidence, config.seed)
    benchmark = stereotype_benchmark(
        by_split["main"], model=model, data=[str(config.export)], bootstrap=intervals
    )
    _flag_weights(benchmark, model, key)
    benchmark["blank_image"] = None
    benchmark["metadata"]["experiment_desc"] = "HARNESS-MCQ"
    benchmark["metadata"]["n_unparseable"] = section["counts"]["main"]["unparseable"]
    benchmark["shifting"]["available"] = False
    benchmark["shifting"]["reason"] = SHIFTING_UNAVAILABLE
    section["stereotype_by_split"] = {
        split: _probe_headline(records) for split, records in by_split.items() if records
    }
    benchmark["harness"] = jsonable(section)
    raw = dumps_jsonl(by_split["main"])
    atomic_write_text(config.out / RAW_FILE, raw)
    results_file = config.out / "benchmark.json"
    atomic_write_text(results_file, json.dumps(benchmark, indent=2, allow_nan=False) + "\n")
    report = stereotype_markdown(benchmark).split("## Intra- and inter-modal bias")[0]
    markdown = "\n".join(
        [report.rstrip("\n"), "",
         "## Intra- and inter-modal bias (lmss, vlss; Sec. 3.5)", "",
         f"Not available from a harness: {SHIFTING_UNAVAILABLE}.", "",
         *harness_markdown(section)]
    ).rstrip() + "\n"  # fmt: skip
    atomic_write_text(config.out / "report.md", markdown)
    return results_file, markdown
