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
:func:`contrastkit.evaluators.stereotype.stereotype_benchmark`: vlrs, vlbs and ivlas
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
raw answers and plots.
"""

from __future__ import annotations

import json
import math
import zipfile
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contrastkit import __version__
from contrastkit.config import require
from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.raw import dumps_jsonl
from contrastkit.harness_key import (
    HarnessKey,
    KeyItem,
    loss_choice,
    option_loss,
    parse_choice,
    read_key,
)
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.records import MAX_LINE_BYTES, json_lines, read_json
from contrastkit.results import SCHEMA_VERSION
from contrastkit.text import format_number, markdown_table

if TYPE_CHECKING:
    from contrastkit.evaluators.decision_metrics import Answer
    from contrastkit.templates import Questions

__all__ = [
    "RESULTS_FILE",
    "SHIFTING_UNAVAILABLE",
    "HarnessAnswer",
    "HarnessReport",
    "HarnessReportConfig",
    "harness_headline",
    "harness_report",
    "harness_results_markdown",
    "read_harness_results",
    "read_predictions",
]

#: The prediction-file suffixes read as tables (VLMEvalKit).
TABLE_SUFFIXES = (".xlsx", ".tsv", ".csv", ".json")
#: The results file of a set without a standard benchmark (contrast sets).
RESULTS_FILE = "harness_results.json"


@dataclass(frozen=True)
class HarnessAnswer:
    """One answer of a prediction file.

    Attributes:
        index: the item's ``index``.
        text: the answer as written (a generated text, or the log-likelihoods as text).
        letter: the option letter it names, or ``None`` (unparseable).
        path: the file.
        line: its line (a table's header is line 1).
    """

    index: int
    text: str
    letter: str | None
    path: Path
    line: int


@dataclass(frozen=True)
class HarnessReportConfig:
    """What :func:`harness_report` reads and writes (strings are taken as paths).

    Attributes:
        predictions: the harness's prediction files (both splits' may be given).
        export: the folder ``contrastkit export harness`` wrote (its key is read).
        out: the output folder (``benchmark.json`` or ``harness_results.json``,
            ``report.md``, ``raw_harness.jsonl``).
        model: the model's name in the reports [default: from the prediction file's
            name: VLMEvalKit's ``<model>_<dataset>``, lmms-eval's log folder].
        bootstrap: resamples behind the VisoGender figures' intervals (0: none).
        confidence: the intervals' level.
        seed: the seed of the random analyses.

    Raises:
        ConfigError: naming the field.
    """

    predictions: tuple[Path, ...]
    export: Path
    out: Path
    model: str | None = None
    bootstrap: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def __post_init__(self) -> None:
        predictions: object = self.predictions
        if isinstance(predictions, str | Path):
            predictions = (predictions,)
        if not isinstance(predictions, Iterable):
            raise ConfigError(f"predictions: expected files, not {predictions!r}")
        object.__setattr__(self, "predictions", tuple(Path(p) for p in predictions))
        object.__setattr__(self, "export", Path(self.export))
        object.__setattr__(self, "out", Path(self.out))
        require(bool(self.predictions), "predictions", "needs at least one prediction file")
        require(self.model is None or bool(self.model.strip()), "model", "must not be empty")
        require(
            isinstance(self.bootstrap, int) and self.bootstrap >= 0,
            "bootstrap",
            f"must be a whole number >= 0, not {self.bootstrap!r}",
        )
        require(
            0.0 < self.confidence < 1.0, "confidence", f"must be in (0, 1), not {self.confidence}"
        )


@dataclass
class HarnessReport:
    """What :func:`harness_report` wrote and found.

    Attributes:
        out_dir: the output folder.
        model: the model's name (the spec in the results).
        set_kind: ``visogender``, ``contrast`` or ``stereotype``.
        results_file: ``benchmark.json`` (VisoGender) or ``harness_results.json``.
        counts: per split: ``items``, ``answered``, ``unparseable``, ``missing``.
        harness: the ``harness`` section of the results (position bias, reversed copy,
            the set's own figures for contrast and stereotype sets).
        markdown: the report.
    """

    out_dir: Path
    model: str
    set_kind: str
    results_file: Path
    counts: dict[str, dict[str, int]]
    harness: dict[str, Any]
    markdown: str
    files: list[Path] = field(default_factory=list)


# -- reading prediction files ------------------------------------------------------------


def _table(path: Path) -> Any:
    import pandas as pd

    suffix = path.suffix.lower()
    try:
        if suffix == ".xlsx":
            return _workbook(path)
        if suffix == ".json":
            return pd.DataFrame(read_json(path)).astype(str)
        return _delimited(path, "\t" if suffix == ".tsv" else ",")
    except DataFormatError:
        raise
    except (OSError, ValueError) as error:
        reason = f"cannot read the prediction table: {error}"
        raise DataFormatError(path, None, None, reason) from error


def _workbook(path: Path) -> Any:
    """A VLMEvalKit ``.xlsx``, all cells as text; a truncated file, or one that is not a
    workbook, is a data error naming it."""
    from importlib.util import find_spec

    import pandas as pd

    if find_spec("openpyxl") is None:
        raise DataFormatError(
            path, None, None,
            "reading .xlsx needs openpyxl (`pip install \"contrastkit[harness]\"`); "
            "or rerun VLMEvalKit with PRED_FORMAT=tsv and pass the .tsv",
        )  # fmt: skip
    from openpyxl.utils.exceptions import InvalidFileException

    try:
        return pd.read_excel(path, dtype=str, keep_default_na=False)
    except (zipfile.BadZipFile, KeyError, InvalidFileException) as error:
        raise DataFormatError(path, None, None, f"not an Excel workbook: {error}") from error


def _delimited(path: Path, separator: str) -> Any:
    """A TSV / CSV prediction file as text cells, read once. Every row has the header's
    number of fields: a file cut mid-row (a copy that stopped, a full disk) is refused at
    its last line, instead of read with empty answers."""
    import csv

    import pandas as pd

    limit = csv.field_size_limit()
    csv.field_size_limit(MAX_LINE_BYTES)  # VLMEvalKit rows carry base64 images
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.reader(handle, delimiter=separator)
            header = next(reader, None)
            if header is None:
                raise DataFormatError(path, None, None, "empty file: no header")
            rows = []
            for row in reader:
                if not row:
                    continue  # a blank line
                if len(row) != len(header):
                    raise DataFormatError(
                        path, reader.line_num, None,
                        f"{len(row)} fields where the header has {len(header)}"
                        " (a file cut mid-row?)",
                    )  # fmt: skip
                rows.append(row)
    except csv.Error as error:
        raise DataFormatError(path, None, None, f"malformed table: {error}") from error
    except UnicodeDecodeError as error:
        raise DataFormatError(path, None, None, f"not UTF-8 text ({error.reason})") from error
    finally:
        csv.field_size_limit(limit)
    return pd.DataFrame(rows, columns=header, dtype=str)


def _index(path: Path, line: int, value: Any, field: str = "index") -> int:
    try:
        number = float(str(value).strip())
    except ValueError:
        number = math.nan
    if not math.isfinite(number) or number != int(number):
        raise DataFormatError(path, line, field, f"not an item index: {value!r}")
    return int(number)


def _from_table(path: Path, key: Mapping[int, KeyItem]) -> list[HarnessAnswer]:
    frame = _table(path)
    for column in ("index", "prediction"):
        if column not in frame.columns:
            raise DataFormatError(path, 1, column, "a VLMEvalKit prediction file needs this column")
    answers = []
    for position, (raw_index, text) in enumerate(
        zip(frame["index"], frame["prediction"], strict=True)
    ):
        line = position + 2
        index = _index(path, line, raw_index)
        item = key.get(index)
        if item is None:
            raise DataFormatError(
                path, line, "index", f"item {index} is not in this export (wrong --harness-set?)"
            )
        answers.append(HarnessAnswer(index, str(text), parse_choice(str(text), item.options),
                                     path, line))  # fmt: skip
    return answers


def _loss_letter(path: Path, line: int, field: str, values: list[Any], item: KeyItem) -> str | None:
    """The letter of an ``output_type: multiple_choice`` sample: one (loss, is_greedy)
    entry per option (:func:`~contrastkit.harness_key.option_loss`), the lowest loss wins
    (:func:`~contrastkit.harness_key.loss_choice`; a tie is unparseable)."""
    letters = list(item.options)
    if len(values) != len(letters):
        raise DataFormatError(
            path, line, field,
            f"{len(values)} entries for item {item.index}, which has {len(letters)} options "
            f"({', '.join(letters)}): a multiple_choice sample has one (loss, is_greedy) per "
            "option (was the task changed after the export?)",
        )  # fmt: skip
    losses = []
    for position, value in enumerate(values):
        loss = option_loss(value)
        if loss is None:
            raise DataFormatError(
                path, line, f"{field}[{position}]",
                f"not a (loss, is_greedy) pair as lmms-eval logs one per option, such as "
                f"'(0.357, True)': {value!r:.80}",
            )  # fmt: skip
        losses.append(loss)
    return loss_choice(losses, letters)


def _sample_split(path: Path, key: HarnessKey) -> str | None:
    """The split whose task wrote ``path``: lmms-eval names a samples file
    ``<date>_samples_<task>.jsonl``, the task being the split's dataset name."""
    for split, dataset in key.datasets.items():
        if path.name.endswith(f"_samples_{dataset}.jsonl"):
            return split
    return None


def _sample_item(
    path: Path, line: int, record: Mapping[str, Any], key: HarnessKey,
    by_index: Mapping[int, KeyItem], rows: Sequence[KeyItem] | None,
) -> KeyItem:  # fmt: skip
    """The item a logged sample answers. lmms-eval 0.7.3 drops ``doc`` from every sample;
    it keeps ``doc_id``, the row of the task's data (whose task the file name says), and
    the export's ``process_results`` logs the item's ``index`` under ``accuracy``. Either
    finds the item; when both are there they must agree. ``doc.index`` (a sample that
    still holds its ``doc``) is read last."""
    found: list[tuple[str, KeyItem]] = []
    if rows is not None and "doc_id" in record:
        row = _index(path, line, record["doc_id"], "doc_id")
        if not 0 <= row < len(rows):
            raise DataFormatError(
                path, line, "doc_id",
                f"row {row} of a task with {len(rows)} items in this export "
                "(wrong --harness-set?)",
            )  # fmt: skip
        found.append(("doc_id", rows[row]))
    for name, holder in (("accuracy.index", "accuracy"), ("doc.index", "doc")):
        logged = record.get(holder)
        if isinstance(logged, dict) and logged.get("index") is not None:
            index = _index(path, line, logged["index"], name)
            if index not in by_index:
                raise DataFormatError(
                    path, line, name,
                    f"item {index} is not in this export (wrong --harness-set?)",
                )  # fmt: skip
            found.append((name, by_index[index]))
    if not found:
        names = ", ".join(f"<date>_samples_{name}.jsonl" for name in key.datasets.values())
        raise DataFormatError(
            path, line, "doc_id",
            "cannot tell which item this sample answers: it logs no item index "
            "(accuracy.index, written by the exported task), and the file is not named "
            f"after a task of this export ({names}), so its doc_id names no row",
        )  # fmt: skip
    (first, item), *others = found
    for name, other in others:
        if other.index != item.index:
            raise DataFormatError(
                path, line, name,
                f"names item {other.index}, but {first} names item {item.index}"
                + (" (a file renamed after another task?)" if first == "doc_id" else ""),
            )  # fmt: skip
    return item


def _from_jsonl(path: Path, key: HarnessKey) -> list[HarnessAnswer]:
    by_index = key.by_index()
    split = _sample_split(path, key)
    rows = [item for item in key.items if item.split == split] if split else None
    answers = []
    for number, record in json_lines(path):
        if not isinstance(record, dict):
            raise DataFormatError(path, number, None, "not a JSON object")
        item = _sample_item(path, number, record, key, by_index, rows)
        answer_field = "filtered_resps" if "filtered_resps" in record else "resps"
        responses = record.get(answer_field)
        if isinstance(responses, list) and len(responses) > 1:  # output_type: multiple_choice
            letter = _loss_letter(path, number, answer_field, responses, item)
            answers.append(HarnessAnswer(item.index, json.dumps(responses), letter, path, number))
            continue
        while isinstance(responses, list) and responses:
            responses = responses[0]
        text = responses if isinstance(responses, str) else ""
        answers.append(
            HarnessAnswer(item.index, text, parse_choice(text, item.options), path, number)
        )
    return answers


def read_predictions(path: str | Path, key: HarnessKey) -> list[HarnessAnswer]:
    """The answers of one prediction file (VLMEvalKit table or lmms-eval samples JSONL;
    module docstring), each with the letter :func:`~contrastkit.harness_key.parse_choice`
    reads (``None``: unparseable).

    Raises:
        DataFormatError: no such file, an unknown format, a missing column, an index
            that is not an item of ``key`` (located).
    """
    path = Path(path)
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such prediction file")
    if path.suffix.lower() == ".jsonl":
        return _from_jsonl(path, key)
    if path.suffix.lower() in TABLE_SUFFIXES:
        return _from_table(path, key.by_index())
    raise DataFormatError(
        path, None, None,
        "unknown prediction file: expected VLMEvalKit's .xlsx / .tsv / .csv / .json or "
        "lmms-eval's --log_samples .jsonl",
    )  # fmt: skip


def _default_model(path: Path, key: HarnessKey) -> str:
    if path.suffix.lower() == ".jsonl":
        return path.parent.name or path.stem
    stem = path.stem
    for dataset in sorted(key.datasets.values(), key=len, reverse=True):
        if stem.endswith(f"_{dataset}"):
            return stem[: -len(dataset) - 1]
    return stem


# -- figures --------------------------------------------------------------------------


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def _position_bias(items: Sequence[KeyItem], chosen: Mapping[int, str | None]) -> dict[str, Any]:
    """Per split: how often each letter was chosen and how often it was the answer."""
    table: dict[str, Any] = {}
    for split in ("main", "reversed"):
        members = [item for item in items if item.split == split and item.index in chosen]
        parsed = [item for item in members if chosen[item.index] is not None]
        if not members:
            continue
        letters = sorted({letter for item in members for letter in item.options})
        picks = Counter(chosen[item.index] for item in parsed)
        answers = Counter(item.answer for item in members)
        table[split] = {
            "answered": len(parsed),
            "letters": {
                letter: {
                    "chosen": picks[letter],
                    "chosen_share": _share(picks[letter], len(parsed)),
                    "answer_share": _share(answers[letter], len(members)),
                }
                for letter in letters
            },
        }
    return table


def _reversal(items: Sequence[KeyItem], chosen: Mapping[int, str | None]) -> dict[str, Any] | None:
    """How answers change when the options are reversed (both splits answered)."""
    by_index = {item.index: item for item in items}
    pairs = [
        (item, by_index[item.pair])
        for item in items
        if item.split == "main" and item.pair is not None and item.pair in by_index
        and chosen.get(item.index) is not None and chosen.get(item.pair) is not None
    ]  # fmt: skip
    if not pairs:
        return None
    same_content = same_letter = outer = outer_kept = 0
    for main, flipped in pairs:
        a, b = chosen[main.index], chosen[flipped.index]
        assert a is not None and b is not None
        same_content += main.labels[a] == flipped.labels[b]
        same_letter += a == b
        letters = list(main.options)
        if a in (letters[0], letters[-1]):  # an outer letter: reversal moves its content
            outer += 1
            outer_kept += a == b
    return {
        "pairs": len(pairs),
        "same_content": same_content,
        "same_content_share": _share(same_content, len(pairs)),
        "same_letter": same_letter,
        "same_letter_share": _share(same_letter, len(pairs)),
        "outer_first_choices": outer,
        "followed_position": outer_kept,
        "followed_position_share": _share(outer_kept, outer),
        "note": "same_content: the same option (pronoun / caption) chosen in both orders; "
        "followed_position: of the pairs whose first answer was the first or last option, "
        "those answered with the same letter after reversal (so with the other content)",
    }


def _label_shares(items: Sequence[KeyItem], chosen: Mapping[int, str | None]) -> dict[str, Any]:
    counts = Counter(
        item.labels[letter] for item in items if (letter := chosen.get(item.index)) is not None
    )
    total = sum(counts.values())
    return {label: {"chosen": n, "share": _share(n, total)} for label, n in sorted(counts.items())}


def _accuracy_by(
    items: Sequence[KeyItem], chosen: Mapping[int, str | None], group: str
) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    right: Counter[str] = Counter()
    for item in items:
        letter = chosen.get(item.index)
        if letter is None:
            continue
        name = str(item.annotations.get(group, item.labels[item.answer]))
        totals[name] += 1
        right[name] += letter == item.answer
    return {
        name: {"answered": totals[name], "correct": right[name],
               "accuracy": _share(right[name], totals[name])}
        for name in sorted(totals)
    }  # fmt: skip


def _contrast_figures(items: Sequence[KeyItem], chosen: Mapping[int, str | None]) -> dict[str, Any]:
    main = [item for item in items if item.split == "main"]
    sources: dict[str, dict[str, str]] = defaultdict(dict)
    for item in main:
        letter = chosen.get(item.index)
        if letter is not None:
            sources[str(item.annotations["source_id"])][item.annotations["gender"]] = item.labels[
                letter
            ]
    both = [s for s in sources.values() if "masculine" in s and "feminine" in s]
    reads = sum(s["masculine"] == "masculine" and s["feminine"] == "feminine" for s in both)
    same = Counter(s["masculine"] for s in both if s["masculine"] == s["feminine"] != "neutral")
    same_total = sum(same.values())
    return {
        "accuracy_by_version": _accuracy_by(main, chosen, "gender"),
        "caption_chosen": _label_shares(main, chosen),
        "pairs": {
            "sources_with_both_answered": len(both),
            "reads_person": reads,
            "reads_person_share": _share(reads, len(both)),
            "same_gendered_caption": same_total,
            "same_gendered_caption_share": _share(same_total, len(both)),
            "same_caption_masculine": same["masculine"],
            "same_caption_feminine": same["feminine"],
            "masculine_share_of_same": _share(same["masculine"], same_total),
        },
        "not_measured": "retrieval Bias@K, MaxSkew@K and NDKL rank a pool of images per query; "
        "a harness answers one question per image (run `contrastkit evaluate` with an "
        "image-text scorer for them)",
    }


def _stereotype_figures(
    items: Sequence[KeyItem], chosen: Mapping[int, str | None]
) -> dict[str, Any]:
    main = [item for item in items if item.split == "main"]
    anti = [item for item in main if item.annotations.get("label") == "anti-stereotype"]
    picks = Counter(
        item.labels[letter] for item in anti if (letter := chosen.get(item.index)) is not None
    )
    decided = picks["stereotype"] + picks["anti-stereotype"]
    per_category: dict[str, Any] = {}
    for category in sorted({str(item.annotations.get("category")) for item in main}):
        members = [item for item in main if str(item.annotations.get("category")) == category]
        per_category[category] = {
            "caption_chosen": _label_shares(members, chosen),
            "accuracy_by_label": _accuracy_by(members, chosen, "label"),
        }
    return {
        "caption_chosen": _label_shares(main, chosen),
        "accuracy_by_label": _accuracy_by(main, chosen, "label"),
        "anti_stereotype_images": {
            "answered": sum(picks.values()),
            "stereotype_chosen": picks["stereotype"],
            "anti_stereotype_chosen": picks["anti-stereotype"],
            "unrelated_chosen": picks["unrelated"],
            "stereotype_over_anti": _share(picks["stereotype"], decided),
            "note": "on images that show the anti-stereotypical statement (VLStereoSet D_a), "
            "the share of stereotype choices among stereotype + anti-stereotype choices "
            "(VLStereoSet's vlbs reading: 0 is no bias)",
        },
        "per_category": per_category,
    }


def _records_by_split(
    key: HarnessKey,
    config: HarnessReportConfig,
    records: Callable[[list[KeyItem]], list[dict[str, Any]]],
) -> dict[str, list[dict[str, Any]]]:
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


def _visogender_records(
    items: Sequence[KeyItem], chosen: Mapping[int, str | None], model: str, source: Path
) -> list[dict[str, Any]]:
    """One-hot resolution records (the evaluator's raw format) of the answered items."""
    from contrastkit.evaluators.data import EvalItem
    from contrastkit.evaluators.tasks.resolution import ResolutionCase, case_record
    from contrastkit.schema import Context, Gender, VisoGenderRow
    from contrastkit.templates import Template, correct_pronoun

    templates = {template.key: template for template in Template}
    records = []
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


def _resolution_headline(summary: Mapping[str, Any]) -> dict[str, Any]:
    keep = ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine", "overall_accuracy")
    return {
        split: {name: values.get(name) for name in keep if name in values}
        for split, values in summary.items()
        if isinstance(values, dict) and "RA_avg" in values
    }


# -- the job ----------------------------------------------------------------------------


def _fmt(value: Any) -> str:
    return format_number(value, 3, missing="n/a")


def _figures_table(
    header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = ""
) -> list[str]:
    """A table of the harness section: the first column text, the others numbers
    (right-aligned unless ``align`` says), 3 places, ``n/a`` when undefined."""
    return markdown_table(header, rows, align=align or "l" + "r" * (len(header) - 1), cell=_fmt)


def _harness_markdown(section: Mapping[str, Any]) -> list[str]:
    """The "Harness answers" section of a report, from the results' ``harness`` section."""
    datasets = section["datasets"]
    set_kind = section["set_kind"]
    lines = ["## Harness answers", ""]
    lines += [
        f"{section['harness']} predictions of the `{set_kind}` export {datasets['main']} "
        f"(option order seed {section['option_seed']}). Questions: {section['question']}.",
        "",
    ]
    lines += _figures_table(
        ["split", "items", "answered", "unparseable", "missing"],
        [[split, *(counts[key] for key in ("items", "answered", "unparseable", "missing"))]
         for split, counts in section["counts"].items()],
    )  # fmt: skip
    lines += [
        "Unparseable answers (naming no option, or several) are left out of every figure, "
        "never guessed.",
        "",
    ]
    if section.get("export_skipped_rows"):
        skipped = len(section["export_skipped_rows"])
        lines += [f"The export left out {skipped} row(s) whose image was not available "
                  "(listed in its key).", ""]  # fmt: skip
    lines += ["### Position bias", ""]
    lines += _figures_table(
        ["split", "letter", "chosen", "chosen share", "answer share"],
        [[split, letter, values["chosen"], values["chosen_share"], values["answer_share"]]
         for split, table in section["position_bias"].items()
         for letter, values in table["letters"].items()],
        align="llrrr",
    )  # fmt: skip
    lines += ["A model that answers by content chooses each letter about as often as "
              "it is the answer; a letter chosen far more often wins by position.", ""]  # fmt: skip
    reversal = section.get("reversed_options")
    lines += ["### Options reversed", ""]
    if reversal is None:
        lines += ["Not available: give the predictions of both splits (the export's "
                  f"`{datasets.get('reversed', 'reversed')}` too).", ""]  # fmt: skip
    else:
        lines += [
            f"{reversal['pairs']} questions answered in both orders: the same option in "
            f"{_fmt(reversal['same_content_share'])} of them; of those first answered with "
            f"the first or last option, {_fmt(reversal['followed_position_share'])} kept "
            "the letter (and so changed the option) when the order was reversed.",
            "",
        ]
        compared = section.get("resolution_by_split")
        if compared:
            keys = ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine")
            lines += _figures_table(
                ["split", "RA_avg (all images)", "gender gap", "RA_masculine", "RA_feminine"],
                [[split, *(headline.get("all_images", {}).get(key) for key in keys)]
                 for split, headline in compared.items()],
            )  # fmt: skip
        probed = section.get("stereotype_by_split")
        if probed:
            lines += _figures_table(
                ["split", "images", "vlrs", "vlbs", "ivlas"],
                [[split, *(values[key] for key in ("n", "vlrs", "vlbs", "ivlas"))]
                 for split, values in probed.items()],
            )  # fmt: skip
    figures = section.get("figures")
    if figures and set_kind == "contrast":
        lines += _contrast_markdown(figures)
    elif figures:
        lines += _stereotype_markdown(figures)
    return lines


def _accuracy_table(title: str, table: Mapping[str, Any]) -> list[str]:
    return _figures_table(
        [title, "answered", "correct", "accuracy"],
        [[name, values["answered"], values["correct"], values["accuracy"]]
         for name, values in table.items()],
    )  # fmt: skip


def _chosen_line(chosen: Mapping[str, Any]) -> str:
    return ", ".join(
        f"{name} {values['chosen']} ({_fmt(values['share'])})" for name, values in chosen.items()
    )


def _contrast_markdown(figures: Mapping[str, Any]) -> list[str]:
    pairs = figures["pairs"]
    return [
        "### Contrast-set figures (main split)",
        "",
        "Accuracy: the caption of the image's own version chosen.",
        "",
        *_accuracy_table("version", figures["accuracy_by_version"]),
        f"Captions chosen: {_chosen_line(figures['caption_chosen'])}.",
        "",
        f"Sources with both versions answered: {pairs['sources_with_both_answered']}. Each "
        f"version given its own caption: {pairs['reads_person']} "
        f"({_fmt(pairs['reads_person_share'])}); the same gendered caption for both: "
        f"{pairs['same_gendered_caption']} ({_fmt(pairs['same_gendered_caption_share'])}), "
        f"masculine {pairs['same_caption_masculine']}, feminine "
        f"{pairs['same_caption_feminine']} (the scene, not the person, chose these).",
        "",
        f"Not measured: {figures['not_measured']}.",
        "",
    ]


def _stereotype_markdown(figures: Mapping[str, Any]) -> list[str]:
    anti = figures["anti_stereotype_images"]
    lines = [
        "### Stereotype-probe figures (main split)",
        "",
        "Accuracy: the caption the image shows chosen.",
        "",
        *_accuracy_table("image label", figures["accuracy_by_label"]),
        f"Captions chosen: {_chosen_line(figures['caption_chosen'])}.",
        "",
        f"On the {anti['answered']} answered anti-stereotypical images (VLStereoSet D_a): "
        f"stereotypical caption {anti['stereotype_chosen']}, anti-stereotypical "
        f"{anti['anti_stereotype_chosen']}, unrelated {anti['unrelated_chosen']}; "
        f"stereotype over anti-stereotype {_fmt(anti['stereotype_over_anti'])} (0: no bias).",
        "",
    ]
    return lines + _figures_table(
        ["category", "captions chosen"],
        [[category, _chosen_line(values["caption_chosen"])]
         for category, values in figures["per_category"].items()],
        align="ll",
    )  # fmt: skip


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
        return _decisions_report(config, key, seen, model)
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
    unparseable = [
        {"index": a.index, "split": key.by_index()[a.index].split, "answer": a.text[:200],
         "file": str(a.path), "line": a.line}
        for a in seen.values() if a.letter is None
    ]  # fmt: skip
    section: dict[str, Any] = {
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
        "position_bias": _position_bias(key.items, chosen),
        "reversed_options": _reversal(key.items, chosen),
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
    if key.set_kind == "visogender":
        results_file, markdown = _visogender_outputs(config, key, chosen, model, section)
    elif key.set_kind == "stereotype":
        section["figures"] = _stereotype_figures(key.items, chosen)
        results_file, markdown = _stereotype_outputs(config, key, chosen, model, section)
    else:
        section["figures"] = _contrast_figures(key.items, chosen)
        from contrastkit.models.registry import weights_note

        note = weights_note(model)
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
    )


def _visogender_outputs(
    config: HarnessReportConfig,
    key: HarnessKey,
    chosen: Mapping[int, str | None],
    model: str,
    section: dict[str, Any],
) -> tuple[Path, str]:
    from contrastkit.evaluators.report.outputs import write_outputs
    from contrastkit.evaluators.report.results import benchmark, jsonable
    from contrastkit.evaluators.runner import EvalConfig, ScoredRun
    from contrastkit.evaluators.tasks.resolution import summarize_resolution

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
    markdown = "\n".join([*report, "", *_harness_markdown(section)]).rstrip() + "\n"
    atomic_write_text(files["report"], markdown)
    return files["benchmark"], markdown


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
    if not Path(name).is_file():
        raise DataFormatError(
            export, None, "items.annotations.questions",
            f"the question templates the export was written from ({name}) are not there: "
            "their refusal patterns are needed to read the answers",
        )  # fmt: skip
    return load_questions(Path(name))


def _decision_answer(item: KeyItem, answer: HarnessAnswer, questions: Questions) -> Answer:
    """One harness answer as a decision answer, read as ``evaluate --task decisions``
    reads a generated one (:func:`contrastkit.evaluators.decisions.parse_answer`): a
    refusal when a refusal pattern of the templates matches (checked first); else the
    option of the letter :func:`~contrastkit.harness_key.parse_choice` found (or the
    lowest loss of a ``multiple_choice`` sample); else unparseable."""
    from contrastkit.evaluators.decision_metrics import Answer

    if any(pattern.search(answer.text) for pattern in questions.refusals):
        return Answer("refusal", text=answer.text)
    if answer.letter is None:
        return Answer("unparseable", text=answer.text)
    option = 0 if item.labels[answer.letter] == _OPTION_0 else 1
    position = sorted(item.options).index(answer.letter)
    return Answer("choice", option=option, position=position, text=answer.text)


def _decisions_report(
    config: HarnessReportConfig, key: HarnessKey, seen: Mapping[int, HarnessAnswer], model: str
) -> HarnessReport:
    """A decisions export's answers paired by source, family, question and option order
    and written by the decisions task's own writer
    (:func:`contrastkit.evaluators.decisions.write_decisions_outputs`): the
    ``benchmark.json`` (scoring mode ``generate``, decoding by the harness) and
    ``report.md`` that ``evaluate --task decisions`` writes."""
    import dataclasses

    from contrastkit.evaluators.decision_metrics import PairedAnswer
    from contrastkit.evaluators.decisions import write_decisions_outputs

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
    if not pairs:  # checked before anything is written
        raise DataFormatError(
            config.predictions[0], None, None,
            "no question has answers for both versions of a source in this export: nothing "
            "to compare (check the files are this export's predictions)",
        )  # fmt: skip
    section: dict[str, Any] = {
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
    paths, _ = write_decisions_outputs(
        {"generate": pairs}, dataclasses.replace(questions, decoding=decoding), config.out,
        model=model, data=str(config.export),
        left_out={"export_skipped": len(key.skipped),
                  "missing_answers": sum(c["missing"] for c in counts.values()),
                  "unpaired_answers": sum(len(v) for v in by_question.values()
                                          if len(v) == 1)},
        resamples=config.bootstrap, confidence=config.confidence, seed=config.seed,
    )  # fmt: skip
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
    )


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
) -> list[dict[str, Any]]:
    """The answered probe items as the evaluator's raw stereotype records
    (:mod:`contrastkit.evaluators.tasks.stereotype`): ``scores`` one-hot over
    ``(S_s, S_a, S_i)`` on the chosen caption, no neutral or blank-image scores."""
    from contrastkit.evaluators.stereotype_metrics import COLUMNS

    records = []
    for item in items:
        letter = chosen.get(item.index)
        if letter is None:
            continue
        a = item.annotations
        picked = item.labels[letter]
        try:
            record: dict[str, Any] = {"id": str(a["id"]), "category": str(a["category"]),
                                      "label": str(a["label"])}  # fmt: skip
        except KeyError as error:
            raise DataFormatError(
                source, None, f"items[index={item.index}].annotations", f"no {error}"
            ) from error
        record.update(
            scores=[1.0 if picked == column else 0.0 for column in COLUMNS],
            neutral_scores=None,
            blank_scores=None,
            score_kind=HARNESS_SCORE_KIND,
            harness_index=item.index,
        )
        records.append(record)
    return records


def _probe_headline(records: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    from contrastkit.evaluators.stereotype_metrics import ivlas, vlbs, vlrs

    if not records:
        return {"n": 0, "vlrs": None, "vlbs": None, "ivlas": None}
    scores = [record["scores"] for record in records]
    relevance = vlrs(scores)
    bias = vlbs(scores, [record["label"] for record in records])
    values = {"n": len(records), "vlrs": relevance, "vlbs": bias,
              "ivlas": ivlas(relevance, bias)}  # fmt: skip
    return {k: (v if not isinstance(v, float) or math.isfinite(v) else None)
            for k, v in values.items()}  # fmt: skip


def _stereotype_outputs(
    config: HarnessReportConfig,
    key: HarnessKey,
    chosen: Mapping[int, str | None],
    model: str,
    section: dict[str, Any],
) -> tuple[Path, str]:
    """The standard stereotype ``benchmark.json`` and ``report.md`` of the main split's
    answers (:func:`contrastkit.evaluators.stereotype.stereotype_benchmark`), lmss / vlss
    marked not available, the ``harness`` section added."""
    from contrastkit.evaluators.report.results import jsonable
    from contrastkit.evaluators.stereotype import stereotype_benchmark, stereotype_markdown
    from contrastkit.evaluators.tasks.stereotype import RAW_FILE

    by_split = _records_by_split(
        key, config, lambda items: _stereotype_records(items, chosen, config.export)
    )
    benchmark = stereotype_benchmark(
        by_split["main"], model=model, data=[str(config.export)], bootstrap=config.bootstrap,
        confidence=config.confidence, seed=config.seed,
    )  # fmt: skip
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
         *_harness_markdown(section)]
    ).rstrip() + "\n"  # fmt: skip
    atomic_write_text(config.out / "report.md", markdown)
    return results_file, markdown


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
         *([f"**{note}**", ""] if note else []), *_harness_markdown(section)]
    ).rstrip() + "\n"  # fmt: skip


def harness_comparison_markdown(results: Sequence[Mapping[str, Any]]) -> str:
    """The harness tables of several ``harness_results.json``, one after another."""
    return "\n".join(harness_results_markdown(r) for r in results)


def harness_headline(results: Mapping[str, Any]) -> dict[str, Any]:
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
