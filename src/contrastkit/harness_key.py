"""The key of a harness export: which set row, and which option meaning, each item is.

``contrastkit export harness`` (:mod:`contrastkit.builders.harness`) writes a set as a
multiple-choice benchmark for an outside evaluation harness (VLMEvalKit, lmms-eval). The
harness sees only questions, lettered options and answer letters; the file
:data:`KEY_FILE` beside the export tells, for every item ``index``, the set it comes from
(:data:`SET_KINDS`), the row, the split (``main``, or ``reversed``: the same question with
the options in the opposite order), what each letter means (a pronoun's gender, a caption's
gender, a stereotype-probe caption's role) and the annotations the bias metrics need. The
reading side (:mod:`contrastkit.evaluators.harness`) maps a harness's predictions back
through it. Builders and evaluators never import each other; this module is where they
meet.

Both sides also share :func:`parse_choice`, the one documented rule that turns a model's
free-text answer into an option letter (or into "unparseable", never into a guess); the
``utils.py`` of an lmms-eval export carries a copy of the same rule (it must run without
contrastkit installed), and the tests check that the two agree. The same holds for
:func:`option_loss` and :func:`loss_choice`, the rule that reads lmms-eval's
``output_type: multiple_choice`` answers (one loss per option; the lowest wins).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from contrastkit.errors import DataFormatError
from contrastkit.io import atomic_write_text
from contrastkit.records import read_json

__all__ = [
    "HARNESSES",
    "KEY_FILE",
    "KEY_FORMAT",
    "KEY_VERSION",
    "LETTERS",
    "SET_KINDS",
    "SPLITS",
    "HarnessKey",
    "KeyItem",
    "KeyItemJSON",
    "loss_choice",
    "option_loss",
    "parse_choice",
    "read_key",
]

#: The key's file name, in the export folder.
KEY_FILE = "contrastkit_harness.json"
#: The key's ``format`` field (tells it from other JSON files).
KEY_FORMAT = "contrastkit-harness-key"
#: The key's ``version``: readers refuse a newer one.
KEY_VERSION = 1
#: The harnesses an export targets.
HARNESSES = ("vlmevalkit", "lmms-eval")
#: The kinds of set an export holds: VisoGender resolution rows, GenSynth / GenSwap
#: contrast sets, VLStereoSet-style stereotype probes, the decision questions of a
#: contrast set (``--decisions``: each version of each source, one item per question).
SET_KINDS = ("visogender", "contrast", "stereotype", "decisions")
#: ``main``: the options in their seeded shuffled order; ``reversed``: the same questions
#: with the options in the opposite order (the position-bias check).
SPLITS = ("main", "reversed")
#: Option letters, in order (VLMEvalKit's multiple-choice columns ``A``..``D``).
LETTERS = ("A", "B", "C", "D")


class KeyItemJSON(TypedDict):
    """One item as a JSON object of the key file (:meth:`KeyItem.to_dict`)."""

    index: int
    split: str
    row: str
    options: dict[str, str]
    labels: dict[str, str]
    answer: str
    category: str
    pair: int | None
    annotations: Mapping[str, object]


@dataclass(frozen=True)
class KeyItem:
    """One multiple-choice item of an export.

    Attributes:
        index: the item's ``index`` in the harness's data (unique across splits).
        split: ``main`` or ``reversed``.
        row: the set row it asks about, e.g. ``OP:12|occupation_first`` (VisoGender:
            context, IDX, template), ``source 7|masculine`` (contrast: source id and the
            version's gender), ``probe 3`` (stereotype probes).
        options: letter -> the option text shown (``his``, a caption ...).
        labels: letter -> what the option means: a gender (``masculine``, ``feminine``,
            ``neutral``) for VisoGender and contrast sets; ``stereotype``,
            ``anti-stereotype`` or ``unrelated`` for probes.
        answer: the letter of the correct option.
        category: the harness's ``category`` column (e.g. ``OP:masculine-feminine``).
        pair: the ``index`` of the same question in the other split, or ``None``.
        annotations: what the metrics need about the row (VisoGender: its annotations and
            template; contrast: the source and version gender; probes: the probe's
            category and image label).
    """

    index: int
    split: str
    row: str
    options: dict[str, str]
    labels: dict[str, str]
    answer: str
    category: str
    pair: int | None = None
    annotations: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> KeyItemJSON:
        """The item as a JSON object of the key file."""
        return {
            "index": self.index,
            "split": self.split,
            "row": self.row,
            "options": dict(self.options),
            "labels": dict(self.labels),
            "answer": self.answer,
            "category": self.category,
            "pair": self.pair,
            "annotations": dict(self.annotations),
        }


@dataclass(frozen=True)
class HarnessKey:
    """The whole key of an export (:data:`KEY_FILE`).

    Attributes:
        harness: ``vlmevalkit`` or ``lmms-eval``.
        set_kind: one of :data:`SET_KINDS`.
        datasets: split -> the harness's name of that split's data (VLMEvalKit dataset
            name / lmms-eval task name).
        source: the exported set, as given.
        seed: the seed of the option shuffling.
        question: how questions are worded, in words (for the reports).
        items: every item, main split first.
        skipped: rows left out (an image that is not available), one object each with
            ``row`` and ``reason``.
        meta: anything else worth recording (contrastkit version, creation time ...).
        random_weight_models: which models of the exported set's build had random
            weights (``editor``, ``encoder``; from its ``build_metadata.json``), written
            with ``random_weights`` (whether any had).
        weights_note: what the set's card says about them (``None``: trained models);
            every report of answers to this export carries it.
        task: the task written on the task protocol whose questions these are (its
            harness hooks: :mod:`contrastkit.evaluators.engine.harness`), whose
            aggregation reads the answers back; ``set_kind`` is then its dataset kind
            (any name, not only one of :data:`SET_KINDS`), and each item's
            ``annotations`` hold its item (``item``: key, ``data``, ``name``, ``group``).
            ``None`` (not written): a built-in set.
    """

    harness: str
    set_kind: str
    datasets: dict[str, str]
    source: str
    seed: int
    question: str
    items: tuple[KeyItem, ...]
    skipped: tuple[Mapping[str, object], ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    random_weight_models: tuple[str, ...] = ()
    weights_note: str | None = None
    task: str | None = None

    def by_index(self) -> dict[int, KeyItem]:
        """The items by their ``index``."""
        return {item.index: item for item in self.items}

    @property
    def reversed_copy(self) -> bool:
        """Whether the export holds the options-reversed split."""
        return any(item.split == "reversed" for item in self.items)

    def to_json(self) -> str:
        """The key file's text."""
        data = {
            "format": KEY_FORMAT,
            "version": KEY_VERSION,
            "harness": self.harness,
            "set_kind": self.set_kind,
            **({"task": self.task} if self.task is not None else {}),
            "datasets": dict(self.datasets),
            "source": self.source,
            "seed": self.seed,
            "question": self.question,
            "meta": dict(self.meta),
            "random_weights": bool(self.random_weight_models or self.weights_note),
            "random_weight_models": list(self.random_weight_models),
            "weights_note": self.weights_note,
            "skipped": [dict(entry) for entry in self.skipped],
            "items": [item.to_dict() for item in self.items],
        }
        return json.dumps(data, ensure_ascii=False, indent=1) + "\n"

    def write(self, folder: str | Path) -> Path:
        """Write the key into ``folder`` (atomically); returns its path."""
        path = Path(folder) / KEY_FILE
        atomic_write_text(path, self.to_json())
        return path


def _need(path: Path, data: Mapping[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        raise DataFormatError(path, None, name, "missing or of the wrong type in the harness key")
    return value


def _item(path: Path, position: int, data: Any) -> KeyItem:
    where = f"items[{position}]"
    if not isinstance(data, dict):
        raise DataFormatError(path, None, where, "not an object")
    try:
        options = {str(k): str(v) for k, v in dict(data["options"]).items()}
        labels = {str(k): str(v) for k, v in dict(data["labels"]).items()}
        item = KeyItem(
            index=int(data["index"]),
            split=str(data["split"]),
            row=str(data["row"]),
            options=options,
            labels=labels,
            answer=str(data["answer"]),
            category=str(data.get("category", "")),
            pair=None if data.get("pair") is None else int(data["pair"]),
            annotations=dict(data.get("annotations") or {}),
        )
    except (KeyError, TypeError, ValueError) as error:
        raise DataFormatError(path, None, where, f"malformed item ({error})") from error
    if item.split not in SPLITS:
        raise DataFormatError(path, None, f"{where}.split", f"unknown split {item.split!r}")
    if item.answer not in item.options or set(item.labels) != set(item.options):
        raise DataFormatError(
            path, None, where, "its answer and labels must name letters of its options"
        )
    return item


def read_key(folder: str | Path) -> HarnessKey:
    """Read the key of a harness export folder (or the key file itself).

    Raises:
        DataFormatError: no key file, invalid JSON, another format, a newer version, or a
            malformed field (named).
    """
    path = Path(folder)
    if path.is_dir():
        path = path / KEY_FILE
    if not path.is_file():
        raise DataFormatError(
            path, None, None, "no harness key: pass the folder `contrastkit export harness` wrote"
        )
    data = read_json(path)
    if not isinstance(data, dict) or data.get("format") != KEY_FORMAT:
        raise DataFormatError(path, None, "format", f"not a {KEY_FORMAT} file")
    version = _need(path, data, "version", int)
    if version > KEY_VERSION:
        raise DataFormatError(
            path, None, "version", f"version {version} is newer than this contrastkit reads "
            f"({KEY_VERSION}); upgrade contrastkit",
        )  # fmt: skip
    harness = _need(path, data, "harness", str)
    set_kind = _need(path, data, "set_kind", str)
    if harness not in HARNESSES:
        raise DataFormatError(path, None, "harness", f"unknown harness {harness!r}")
    task = data.get("task")
    if task is not None and (not isinstance(task, str) or not task):
        raise DataFormatError(path, None, "task", "not a task name")
    if set_kind not in SET_KINDS and task is None:
        raise DataFormatError(path, None, "set_kind", f"unknown set kind {set_kind!r}")
    items = tuple(_item(path, n, entry) for n, entry in enumerate(_need(path, data, "items", list)))
    seen: set[int] = set()
    for item in items:
        if item.index in seen:
            raise DataFormatError(path, None, "items", f"index {item.index} used twice")
        seen.add(item.index)
    models, note = _weights(path, data)
    return HarnessKey(
        harness=harness,
        set_kind=set_kind,
        datasets={str(k): str(v) for k, v in _need(path, data, "datasets", dict).items()},
        source=str(data.get("source", "")),
        seed=int(data.get("seed", 0)),
        question=str(data.get("question", "")),
        items=items,
        skipped=tuple(dict(entry) for entry in data.get("skipped") or []),
        meta=dict(data.get("meta") or {}),
        random_weight_models=models,
        weights_note=note,
        task=task,
    )


def _weights(path: Path, data: Mapping[str, Any]) -> tuple[tuple[str, ...], str | None]:
    """The key's random-weights fields (absent from keys written before they existed:
    trained). A key that says ``random_weights`` without a note still gets one."""
    models = data.get("random_weight_models") or []
    note = data.get("weights_note")
    flag = data.get("random_weights", False)
    if not isinstance(models, list) or not all(isinstance(m, str) for m in models):
        raise DataFormatError(path, None, "random_weight_models", "not a list of model names")
    if note is not None and not isinstance(note, str):
        raise DataFormatError(path, None, "weights_note", "not a string")
    if not isinstance(flag, bool):
        raise DataFormatError(path, None, "random_weights", "not true or false")
    if (flag or models) and not note:
        note = "The exported set was built with models that have random weights."
    return tuple(models), note


# -- the answer-letter rule ------------------------------------------------------------------

_WRAPPERS = " \t\r\n*_`'\"“”‘’"
_ANSWER_IS = re.compile(
    r"\b(?i:answer|option|choice)(?:\s+is)?\s*[:\-]?\s*\(?([A-Z])\)?(?![A-Za-z])"
)
_LEADING = re.compile(r"^\(?([A-Z])(?:[.):,]|\)?$)")


def _words(text: str) -> str:
    """Lower-case words of ``text``, punctuation other than apostrophes dropped."""
    return " ".join(re.sub(r"[^a-z0-9']+", " ", text.lower().replace("’", "'")).split())


def parse_choice(text: object, options: Mapping[str, str]) -> str | None:
    """The option letter a model's answer names, or ``None`` when it names none or more
    than one (an unparseable answer: counted by the reports, never guessed).

    The rule, in order (the first that applies decides):

    1. The answer, stripped of spaces, quotes and markdown emphasis, is a letter of the
       options alone or wrapped: ``B``, ``B.``, ``(B)``, ``B)``, ``B:``, ``B,`` (capital
       letters only: a lone ``a`` is an article).
    2. It starts with such a letter followed by ``.``, ``)``, ``:`` or ``,`` and more text
       (``B. her``, ``(B) her``), or says ``answer is B`` / ``Answer: (B)`` / ``option B``.
       A letter found so that is not one of the options (``D`` of three) makes the
       answer unparseable.
    3. Exactly one option's text occurs in it as whole words, case and final punctuation
       aside (``The doctor and her patient.`` names ``her``; ``his or her`` names two and
       is unparseable). A longer option text that contains a shorter one counts as itself
       only.

    Args:
        text: the model's answer (anything else, such as a missing cell, is unparseable).
        options: letter -> option text, for the item's letters.
    """
    if not isinstance(text, str):
        return None
    answer = text.strip(_WRAPPERS)
    if not answer:
        return None
    match = _LEADING.match(answer) or _ANSWER_IS.search(answer)
    if match is not None:
        return match.group(1) if match.group(1) in options else None
    said = f" {_words(answer)} "
    found = []
    texts = {key: _words(value) for key, value in options.items()}
    for key, value in texts.items():
        if value and f" {value} " in said:
            longer = [
                other for other_key, other in texts.items()
                if other_key != key and f" {value} " in f" {other} " and f" {other} " in said
            ]  # fmt: skip
            if not longer:
                found.append(key)
    return found[0] if len(found) == 1 else None


_LOSS_PAIR = re.compile(r"\((?P<loss>[^,()\s]+), (?:True|False)\)")


def option_loss(value: object) -> float | None:
    """The loss lmms-eval logged for one option of an ``output_type: multiple_choice``
    item, or ``None`` when ``value`` is not such an entry.

    lmms-eval (0.7.3) scores each option with its model's ``loglikelihood``, which returns
    a ``(loss, is_greedy)`` pair: ``loss`` is the mean negative log-likelihood of the
    option's continuation (the letter), so the lowest is the likeliest, and lmms-eval's own
    multiple-choice scoring takes the lowest. lmms-eval 0.7.3 keeps the pair as the text
    ``str(pair)`` (``api/instance.py``, ``unwrap_generation_output``), e.g.
    ``"(0.35667494393873245, True)"``, and that text is what the task's
    ``process_results`` receives and what ``--log_samples`` writes. The pair itself
    (``[0.357, true]`` in JSON) is read too.
    """
    if isinstance(value, str):
        match = _LOSS_PAIR.fullmatch(value)
        if match is None:
            return None
        try:
            return float(match["loss"])
        except ValueError:
            return None
    if (
        isinstance(value, list | tuple)
        and len(value) == 2
        and isinstance(value[0], int | float)
        and not isinstance(value[0], bool)
        and isinstance(value[1], bool)
    ):
        try:
            return float(value[0])
        except OverflowError:  # an integer of hundreds of digits is no loss
            return None
    return None


def loss_choice(losses: Sequence[float], letters: Sequence[str]) -> str | None:
    """The letter whose option has the lowest loss (:func:`option_loss`; one loss per
    letter, in the letters' order), or ``None`` (unparseable) when two or more share the
    lowest or a loss is NaN (the options cannot be ranked)."""
    if any(math.isnan(loss) for loss in losses):
        return None
    best = min(losses)
    top = [letter for letter, loss in zip(letters, losses, strict=True) if loss == best]
    return top[0] if len(top) == 1 else None
