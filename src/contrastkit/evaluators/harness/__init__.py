"""Bring a harness's answers back: VLMEvalKit / lmms-eval predictions -> bias metrics.

``contrastkit export harness`` writes a set as a multiple-choice task and a key
(:mod:`contrastkit.harness_key`). After the harness has run a model, :func:`harness_report`
reads its predictions, maps each item back through the key and computes what the harness
does not:

**Reading the predictions** (:func:`read_predictions`):

* VLMEvalKit's ``<model>_<dataset>.xlsx`` (``PRED_FORMAT=tsv`` / ``json``: ``.tsv`` /
  ``.json``; ``.csv`` too): columns ``index`` and ``prediction``. Reading ``.xlsx`` needs
  ``openpyxl``.
* lmms-eval's ``--log_samples`` ``<date>_samples_<task>.jsonl`` (as lmms-eval 0.7.3 writes
  it: no ``doc``): one object per item. The item is the task's row ``doc_id`` (the file
  name says which task, hence which split) and the ``index`` that the export's
  ``process_results`` logged under ``accuracy``; either is enough, and when both are
  there they must agree (``doc.index`` of a sample that keeps its ``doc`` is read too).
  The answer is ``filtered_resps`` (else ``resps``): a generated text, or, for
  ``output_type: multiple_choice``, one ``(loss, is_greedy)`` per letter, logged as the
  text ``"(0.357, True)"`` (:func:`~contrastkit.harness_key.option_loss`): the lowest
  loss wins, as in lmms-eval's own scoring; a tie is unparseable, and an entry that is
  not such a pair is an error naming the file, line and field.

Each answer's letter comes from :func:`contrastkit.harness_key.parse_choice` (its docstring
is the rule). An answer that names no option or several is **unparseable**: counted and
listed per split, left out of every figure (it is not a choice between the options), never
guessed. Items with no answer in the files given (e.g. only the main split's predictions)
are counted as ``missing``.

**VisoGender** sets: each main-split answer becomes the one-hot scores of its case (1 for
the chosen pronoun, 0 for the others) and goes through the evaluator's own resolution
metrics (:func:`contrastkit.evaluators.report.results.benchmark`, protocol
``visogender-official``: a "their" answer is not resolved, and its rate is the neutral
rate), so ``benchmark.json`` is the file ``contrastkit evaluate`` writes and
``contrastkit report`` reads. The ``harness`` section adds the position-bias table and,
with the reversed split, its resolution figures beside the main ones and how often the
answer follows the content or the position when the options are reversed.

**Stereotype probes**: each main-split answer becomes a one-hot score row over
``(S_s, S_a, S_i)`` (1 for the chosen caption) and goes through the evaluator's own
:func:`contrastkit.evaluators.tasks.stereotype_probing.benchmark.stereotype_benchmark`:
vlrs, vlbs and ivlas
overall and per category with bootstrap intervals, and the IDM / BIM / RAM rows, in the
standard stereotype ``benchmark.json`` that ``contrastkit report`` reads and compares with
``contrastkit evaluate --task stereotype`` results. The argmax metrics need only the
choice, so they are exactly those of a model whose top caption is the answer. lmss and
vlss need scores of neutralised captions and of a blank image, which a harness does not
give: ``shifting`` says ``available: false`` with the ``reason``
(:data:`SHIFTING_UNAVAILABLE`), and so does ``report.md``. The ``harness`` section adds
the position-bias table, with the reversed split its vlrs / vlbs / ivlas beside the main
ones (``stereotype_by_split``), and the set's own figures: the share of each caption role
chosen, accuracy per label, and on anti-stereotypical images (VLStereoSet's ``D_a``) how
often the stereotypical caption is chosen over the anti-stereotypical one.

**Contrast sets**: accuracy per version (does the model read the edited person?), the share
of each caption gender chosen, and per source with both versions answered: whether the
model gave each version its own caption (``reads_person``) or the same gendered caption to
both (``same_gendered_caption``, split by which gender: the scene, not the person, chose
it). These go into ``harness_results.json`` (:data:`RESULTS_FILE`), not a contrast
``benchmark.json``: its retrieval metrics rank a pool of images per neutral query, and its
pair preference compares one query's scores of a photo's two versions, while a harness
answers which caption fits one image; no honest mapping exists. ``contrastkit report``
reads ``harness_results.json`` (:func:`read_harness_results`) and prints its tables.

**Decision questions** (``export harness --decisions``): each answer is read as the
decisions task reads a generated one (a refusal by the templates' refusal patterns first,
then the letter, else unparseable; refusals are counted per split), the two versions'
answers are paired by source, family, question and option order, and the decisions task's
own writer (:func:`contrastkit.evaluators.decisions.write_decisions_outputs`) writes its
``benchmark.json`` (scoring mode ``generate``, decoding by the harness), ``report.md``,
raw answers and plots. Answers that are all unparseable (none names an option or
refuses) are refused, as the other sets' are.

**A task's own questions** (a task with the harness hooks; the key's
:attr:`~contrastkit.harness_key.HarnessKey.task`): each main-split answer becomes the
record the task's ``answer_record`` makes of the chosen option, the task aggregates them
into its typed result with the report's bootstrap, and the engine's writer writes its
``benchmark.json`` (checked against the result's schema), ``report.md`` (the harness
section added) and figures, which ``contrastkit report`` reads as an ``evaluate`` result
(:mod:`~contrastkit.evaluators.harness.task_answers`).

A set built with random-weight models keeps its flag: the key carries the note of its
card (:attr:`~contrastkit.harness_key.HarnessKey.weights_note`), and every results file
and report written from answers to it is flagged ``random_weights`` with that note beside
the model's own (:func:`~contrastkit.evaluators.harness.config.report_weights_note`).

The package: :mod:`~contrastkit.evaluators.harness.predictions` reads the files,
:mod:`~contrastkit.evaluators.harness.figures` computes the harness figures,
:mod:`~contrastkit.evaluators.harness.markdown` writes their report section,
:mod:`~contrastkit.evaluators.harness.outputs` writes the VisoGender and stereotype
benchmarks, :mod:`~contrastkit.evaluators.harness.decisions` the decisions one,
:mod:`~contrastkit.evaluators.harness.task_answers` a task's own result; this
module holds the job, a contrast set's ``harness_results.json`` and its reading back.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypedDict

from contrastkit import __version__
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness.config import (
    HarnessReport,
    HarnessReportConfig,
    HarnessSection,
    UnparseableAnswer,
    report_weights_note,
)
from contrastkit.evaluators.harness.decisions import decisions_report
from contrastkit.evaluators.harness.figures import (
    ContrastFigures,
    contrast_figures,
    position_bias,
    reversed_options,
    stereotype_figures,
)
from contrastkit.evaluators.harness.markdown import harness_markdown
from contrastkit.evaluators.harness.outputs import (
    SHIFTING_UNAVAILABLE,
    stereotype_outputs,
    visogender_outputs,
)
from contrastkit.evaluators.harness.predictions import (
    HarnessAnswer,
    read_predictions,
)
from contrastkit.evaluators.harness.task_answers import registered_task, task_outputs
from contrastkit.evaluators.raw import dumps_jsonl
from contrastkit.harness_key import HarnessKey, read_key
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.results import SCHEMA_VERSION

__all__ = [
    "RESULTS_FILE",
    "SHIFTING_UNAVAILABLE",
    "HarnessAnswer",
    "HarnessHeadline",
    "HarnessReport",
    "HarnessReportConfig",
    "harness_headline",
    "harness_report",
    "harness_results_markdown",
    "read_harness_results",
    "read_predictions",
]

#: The results file of a set without a standard benchmark (contrast sets).
RESULTS_FILE = "harness_results.json"


def _default_model(path: Path, key: HarnessKey) -> str:
    if path.suffix.lower() == ".jsonl":
        return path.parent.name or path.stem
    stem = path.stem
    for dataset in sorted(key.datasets.values(), key=len, reverse=True):
        if stem.endswith(f"_{dataset}"):
            return stem[: -len(dataset) - 1]
    return stem


def harness_report(config: HarnessReportConfig) -> HarnessReport:
    """Read a harness's predictions of a contrastkit harness export and write the bias
    metrics (module docstring) into ``config.out``.

    Raises:
        DataFormatError: a missing or malformed key or prediction file; an item answered
            twice (the same file given twice?).
        ResourceError: ``out`` cannot be written (checked before reading).
    """
    check_writable(config.out, "the harness report")
    key = read_key(config.export)
    if key.task is not None:  # refused before anything is read or written
        registered_task(config.export, key)
    answers: list[HarnessAnswer] = []
    for path in config.predictions:
        answers += read_predictions(path, key)
    seen: dict[int, HarnessAnswer] = {}
    for answer in answers:
        if answer.index in seen:
            first = seen[answer.index]
            raise DataFormatError(
                answer.path, answer.line, "index",
                f"item {answer.index} is also answered at {first.path}:{first.line}",
            )  # fmt: skip
        seen[answer.index] = answer
    chosen = {index: answer.letter for index, answer in seen.items()}
    model = (config.model or f"harness:{_default_model(config.predictions[0], key)}").strip()
    if key.set_kind == "decisions":
        return decisions_report(config, key, seen, model)
    counts: dict[str, dict[str, int]] = {}
    for split in key.datasets:
        members = [item for item in key.items if item.split == split]
        answered = [item for item in members if item.index in chosen]
        parsed = sum(1 for item in answered if chosen[item.index] is not None)
        counts[split] = {
            "items": len(members),
            "answered": parsed,
            "unparseable": len(answered) - parsed,
            "missing": len(members) - len(answered),
        }
    unparseable: list[UnparseableAnswer] = [
        {"index": a.index, "split": key.by_index()[a.index].split, "answer": a.text[:200],
         "file": str(a.path), "line": a.line}
        for a in seen.values() if a.letter is None
    ]  # fmt: skip
    section: HarnessSection = {
        "harness": key.harness,
        "set_kind": key.set_kind,
        "export": str(config.export),
        "datasets": key.datasets,
        "predictions": [str(path) for path in config.predictions],
        "option_seed": key.seed,
        "question": key.question,
        "answer_rule": "contrastkit.harness_key.parse_choice",
        "counts": counts,
        "unparseable": unparseable,
        "export_skipped_rows": list(key.skipped),
        "position_bias": position_bias(key.items, chosen),
        "reversed_options": reversed_options(key.items, chosen),
    }
    raw = [
        {"index": item.index, "split": item.split, "row": item.row,
         "answer": seen[item.index].text if item.index in seen else None,
         "letter": chosen.get(item.index),
         "chosen": item.labels.get(chosen.get(item.index) or "", None),
         "correct_letter": item.answer, "correct": chosen.get(item.index) == item.answer}
        for item in key.items
    ]  # fmt: skip
    main = counts["main"]
    if main["answered"] == 0:  # checked before anything is written
        if main["unparseable"]:
            example = next(a for a in unparseable if a["split"] == "main")
            reason = (
                f"all {main['unparseable']} answers of the main split matched items of this "
                f"export but none names an option letter (first: {example['answer']!r:.80} "
                f"at {example['file']}:{example['line']}): nothing to compute; check the "
                "model's prompt or output format"
            )
        else:
            reason = (
                "no answer of the main split matches an item of this export: nothing to "
                "compute (check the files are this export's predictions)"
            )
        raise DataFormatError(config.predictions[0], None, None, reason)
    config.out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(config.out / "raw_harness.jsonl", dumps_jsonl(raw))
    files = [config.out / "raw_harness.jsonl"]
    if key.task is not None:
        results_file, markdown = task_outputs(config, key, chosen, model, section)
    elif key.set_kind == "visogender":
        results_file, markdown = visogender_outputs(config, key, chosen, model, section)
    elif key.set_kind == "stereotype":
        section["figures"] = stereotype_figures(key.items, chosen)
        results_file, markdown = stereotype_outputs(config, key, chosen, model, section)
    else:
        section["figures"] = contrast_figures(key.items, chosen)
        note = report_weights_note(model, key)
        results = {
            "task": f"harness-{key.set_kind}",
            "schema_version": SCHEMA_VERSION,
            "model": model,
            "random_weights": note is not None,
            "weights_note": note,
            "contrastkit_version": __version__,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "harness": section,
        }
        results_file = config.out / RESULTS_FILE
        atomic_write_text(results_file, json.dumps(results, indent=2, allow_nan=False) + "\n")
        markdown = harness_results_markdown(results)
        atomic_write_text(config.out / "report.md", markdown)
    files += [results_file, config.out / "report.md"]
    return HarnessReport(
        out_dir=config.out,
        model=model,
        set_kind=key.set_kind,
        results_file=results_file,
        counts=counts,
        harness=section,
        markdown=markdown,
        files=files,
        weights_note=report_weights_note(model, key),
    )


# -- reading the results back (``contrastkit report``) ---------------------------------------


def read_harness_results(path: str | Path) -> dict[str, Any] | None:
    """The ``harness_results.json`` :func:`harness_report` writes for a contrast set (the
    file, or a folder holding it and no ``benchmark.json``), or ``None`` for anything
    else (a benchmark).

    Raises:
        DataFormatError: a ``harness_results.json`` that is not a JSON object or has no
            ``harness`` section.
    """
    from contrastkit.records import read_json_object

    path = Path(path)
    if path.is_dir():
        if (path / "benchmark.json").is_file() or not (path / RESULTS_FILE).is_file():
            return None
        path = path / RESULTS_FILE
    if not path.is_file() or path.suffix.lower() != ".json":
        return None
    data = read_json_object(path, "harness results")
    if not str(data.get("task", "")).startswith("harness-"):
        return None
    section = data.get("harness")
    if not isinstance(section, dict) or not isinstance(section.get("counts"), dict):
        raise DataFormatError(path, None, "harness", "harness results without their section")
    return data


def harness_results_markdown(results: Mapping[str, Any]) -> str:
    """The report of one ``harness_results.json`` (its ``report.md``; what
    ``contrastkit report`` prints for it)."""
    section = results["harness"]
    note = results.get("weights_note")
    return "\n".join(
        [f"# {section['set_kind']} set through {section['harness']}: `{results['model']}`", "",
         *([f"**{note}**", ""] if note else []), *harness_markdown(section)]
    ).rstrip() + "\n"  # fmt: skip


def harness_comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The harness tables of several ``harness_results.json``, one after another."""
    return "\n".join(harness_results_markdown(r) for r in results)


class HarnessHeadline(TypedDict):
    """The headline of a ``harness_results.json`` (:func:`harness_headline`)."""

    task: str | None
    model: str | None
    random_weights: bool
    weights_note: str | None
    harness: str | None
    set_kind: str | None
    counts: dict[str, dict[str, int]] | None
    figures: ContrastFigures | None


def harness_headline(results: Mapping[str, Any]) -> HarnessHeadline:
    """The headline of a ``harness_results.json`` (``contrastkit report --json``):
    ``task`` (``harness-contrast``), ``model``, ``random_weights``, ``weights_note``,
    ``harness``, ``set_kind``, ``counts`` (per split) and ``figures`` (the set's own,
    main split)."""
    section = results["harness"]
    return {
        "task": results.get("task"),
        "model": results.get("model"),
        "random_weights": bool(results.get("random_weights")),
        "weights_note": results.get("weights_note"),
        "harness": section.get("harness"),
        "set_kind": section.get("set_kind"),
        "counts": section.get("counts"),
        "figures": section.get("figures"),
    }
