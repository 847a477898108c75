"""A decisions export's answers (``export harness --decisions``) read as the decisions
task reads generated ones, paired by source, and written by the decisions task's own
writer."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness.config import (
    HarnessReport,
    HarnessReportConfig,
    HarnessSection,
)
from contrastkit.evaluators.harness.predictions import HarnessAnswer
from contrastkit.harness_key import HarnessKey, KeyItem

if TYPE_CHECKING:
    from contrastkit.evaluators.tasks.decision_probes.metrics import Answer, PairedAnswer
    from contrastkit.templates import Questions

__all__ = ["decisions_report"]


#: The key's label of the option that the decision metrics call option 0.
_OPTION_0 = "masculine-stereotyped"


def _decision_templates(key: HarnessKey, export: Path) -> Questions:
    """The question templates a decisions export was written from (their refusal
    patterns read the answers; their families and pairs name the figures)."""
    from contrastkit.templates import load_questions

    named = {str(item.annotations.get("questions", "bundled")) for item in key.items}
    if len(named) != 1:
        raise DataFormatError(
            export, None, "items.annotations.questions",
            f"the items name several question templates ({', '.join(sorted(named))})",
        )  # fmt: skip
    (name,) = named
    if name == "bundled":
        return load_questions(None)
    if (export / name).is_file():  # the export's copy (QUESTIONS_FILE)
        return load_questions(export / name)
    if not Path(name).is_file():  # an export written before the copy: the path given
        raise DataFormatError(
            export, None, "items.annotations.questions",
            f"the question templates the export was written from ({name}) are not there: "
            "their refusal patterns are needed to read the answers",
        )  # fmt: skip
    return load_questions(Path(name))


def _decision_answer(item: KeyItem, answer: HarnessAnswer, questions: Questions) -> Answer:
    """One harness answer as a decision answer, read as ``evaluate --task decisions``
    reads a generated one
    (:func:`contrastkit.evaluators.tasks.decision_probes.answers.parse_answer`): a
    refusal when a refusal pattern of the templates matches (checked first); else the
    option of the letter :func:`~contrastkit.harness_key.parse_choice` found (or the
    lowest loss of a ``multiple_choice`` sample); else unparseable."""
    from contrastkit.evaluators.tasks.decision_probes.metrics import Answer
    from contrastkit.templates import is_refusal

    if is_refusal(answer.text, questions.refusals):
        return Answer("refusal", text=answer.text)
    if answer.letter is None:
        return Answer("unparseable", text=answer.text)
    option = 0 if item.labels[answer.letter] == _OPTION_0 else 1
    position = sorted(item.options).index(answer.letter)
    return Answer("choice", option=option, position=position, text=answer.text)


def _check_readable(
    config: HarnessReportConfig, key: HarnessKey, seen: Mapping[int, HarnessAnswer],
    counts: Mapping[str, Mapping[str, int]], pairs: Sequence[PairedAnswer],
) -> None:  # fmt: skip
    """Refuse answers that give nothing to compute, as the other sets' answers are
    refused: none names an option and none refuses (every one unparseable), or no
    question has answers for both versions of a source.

    Raises:
        DataFormatError: naming the first prediction file (and the first unparseable
            answer, with its file and line).
    """
    read = sum(c["answered"] + c["refusals"] for c in counts.values())
    unparseable = sum(c["unparseable"] for c in counts.values())
    if not read and unparseable:
        items = key.by_index()
        example = next(a for i, a in seen.items() if i in items)
        raise DataFormatError(
            config.predictions[0], None, None,
            f"all {unparseable} answers matched items of this export but none names an "
            f"option letter or refuses (first: {example.text[:80]!r} at "
            f"{example.path}:{example.line}): nothing to compute; check the model's prompt "
            "or output format",
        )  # fmt: skip
    if not pairs:
        raise DataFormatError(
            config.predictions[0], None, None,
            "no question has answers for both versions of a source in this export: nothing "
            "to compare (check the files are this export's predictions)",
        )  # fmt: skip


def decisions_report(
    config: HarnessReportConfig, key: HarnessKey, seen: Mapping[int, HarnessAnswer], model: str
) -> HarnessReport:
    """A decisions export's answers paired by source, family, question and option order
    and written by the decisions task's own writer (:func:`contrastkit.evaluators.tasks.
    decision_probes.benchmark.write_decisions_outputs`): the ``benchmark.json`` (scoring
    mode ``generate``, decoding by the harness) and ``report.md`` that ``evaluate --task
    decisions`` writes."""
    import dataclasses

    from contrastkit.evaluators.tasks.decision_probes.benchmark import (
        DecisionsRun,
        write_decisions_outputs,
    )
    from contrastkit.evaluators.tasks.decision_probes.metrics import PairedAnswer

    questions = _decision_templates(key, config.export)
    counts = {
        split: {"items": 0, "answered": 0, "refusals": 0, "unparseable": 0, "missing": 0}
        for split in key.datasets
    }
    by_question: dict[tuple[str, str, str, int], dict[str, Answer]] = {}
    for item in key.items:
        a = item.annotations
        family, question = str(a["family"]), str(a["question"])
        if questions.families.get(family) is None:
            raise DataFormatError(
                config.export, None, f"items[index={item.index}].annotations.family",
                f"{family!r} is not a family of the templates {questions.source}",
            )  # fmt: skip
        counts[item.split]["items"] += 1
        answer = seen.get(item.index)
        if answer is None:
            counts[item.split]["missing"] += 1
            continue
        decided = _decision_answer(item, answer, questions)
        outcome = {"choice": "answered", "refusal": "refusals"}.get(decided.outcome, "unparseable")
        counts[item.split][outcome] += 1
        order = 0 if item.labels.get("A") == _OPTION_0 else 1
        versions = by_question.setdefault((str(a["source_id"]), family, question, order), {})
        versions[str(a["gender"])] = decided
    pairs = [
        PairedAnswer(source, family, question, order, v["masculine"], v["feminine"])
        for (source, family, question, order), v in by_question.items()
        if "masculine" in v and "feminine" in v
    ]
    _check_readable(config, key, seen, counts, pairs)  # before anything is written
    section: HarnessSection = {
        "harness": key.harness,
        "set_kind": key.set_kind,
        "export": str(config.export),
        "datasets": key.datasets,
        "predictions": [str(path) for path in config.predictions],
        "answer_rule": "refusal patterns of the templates, then "
        "contrastkit.harness_key.parse_choice",
        "counts": counts,
    }
    decoding = {
        "harness": key.harness,
        "settings": "the harness's own (not recorded by contrastkit)",
    }
    run = DecisionsRun(
        model=model, data=str(config.export),
        left_out={"export_skipped": len(key.skipped),
                  "missing_answers": sum(c["missing"] for c in counts.values()),
                  "unpaired_answers": sum(len(v) for v in by_question.values()
                                          if len(v) == 1)},
        resamples=config.bootstrap, confidence=config.confidence, seed=config.seed,
        data_weights_note=key.weights_note,
    )  # fmt: skip
    paths, benchmark = write_decisions_outputs(
        {"generate": pairs}, dataclasses.replace(questions, decoding=decoding), config.out, run
    )
    markdown = paths["report"].read_text(encoding="utf-8")
    return HarnessReport(
        out_dir=config.out,
        model=model,
        set_kind=key.set_kind,
        results_file=paths["benchmark"],
        counts=counts,
        harness=section,
        markdown=markdown,
        files=list(paths.values()),
        weights_note=benchmark.get("weights_note"),
        warnings=list(benchmark.get("warnings") or []),
    )
