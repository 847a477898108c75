"""Export a set as a multiple-choice benchmark for VLMEvalKit or lmms-eval (issue 21).

Researchers run generative vision-language models through evaluation harnesses; neither
VLMEvalKit nor lmms-eval has a social-bias task. :func:`export_harness` turns a
contrastkit set into a multiple-choice (MCQ) benchmark one of them runs as is, and writes
the key (:mod:`contrastkit.harness_key`) that brings the harness's answers back into
``contrastkit report`` for the bias metrics the harnesses do not compute.

**The questions.** Every item is one image, one question and its lettered options (three;
two for decision questions), shuffled per item with ``seed`` (the order depends on the
seed and the row only, not on the other rows):

* *VisoGender* (Hall et al. 2023, Sec. 3.5): one item per image and caption template
  (OO: the object template; OP: occupation-first, and participant-first for the
  template-flip analysis), e.g. *Complete the description of the image: 'The doctor and
  ___ patient.'* with options *his* / *her* / *their*. The answer is the pronoun of the
  referent's perceived gender (:func:`contrastkit.templates.correct_pronoun`), so the
  harness's accuracy is VisoGender's resolution accuracy, and *their* is never right (the
  official protocol). The ``category`` column is ``OP:masculine-feminine`` (context, then
  the occupation's and the participant's perceived gender), ``OP-flipped:...`` for
  participant-first items and ``OO:masculine`` for single-person images; ``l2-category``
  is the occupation.
* *Contrast sets* (GenSynth, Sec. 5; ``contrastkit export contrast``): one item per edited
  image, *Which caption describes the image?*, the options being the first caption of the
  source's masculine version, that of its feminine version (GenSynth Sec. 4.3's
  gender-adjusted captions, which differ only in the gendered words) and its
  gender-neutral caption; the answer is the caption of the image's own version. Both
  versions show the same scene, so a model that picks the same gendered caption for
  both is reading the scene, not the person. What this *cannot* measure: GenSynth's
  retrieval Bias@K, MaxSkew@K and NDKL rank a pool of images per neutral query, and a
  harness answers one question about one image; those need ``contrastkit evaluate``
  with an image-text scorer. Sources without both versions (an ``--originals`` export)
  cannot be asked and are listed as skipped.
* *Stereotype probes* (VLStereoSet, Zhou et al. 2022; :mod:`contrastkit.probes`): one item
  per image, *Which sentence describes the image?*, the options its stereotypical,
  anti-stereotypical and unrelated captions; the answer is the caption the image shows
  (its label ``y``). Choosing the stereotypical caption for an anti-stereotypical image is
  the bias VLStereoSet's vlbs measures on ``D_a``.

* *A task's own questions*: data of a kind no built-in export reads (a plugin's) is asked
  the questions of the registered task that reads it and defines the harness hooks
  (:mod:`contrastkit.evaluators.engine.harness`: ``questions`` and ``answer_record``),
  one per item it asks, with the task's default settings; the key names the task
  (:attr:`~contrastkit.harness_key.HarnessKey.task`) and keeps each item's data, and the
  answers read back as the task's typed result.

With ``reversed_copy`` (default on) every question is asked a second time with its
options in the opposite order (split ``reversed``; GenderBias-VL's option-swap test): a
model that follows content answers both the same, one that follows position does not.

**VLMEvalKit** (``format="vlmevalkit"``): ``<name>.tsv`` (and ``<name>_reversed.tsv``)
with the columns its multiple-choice image datasets read: ``index``, ``image`` (base64
JPEG; a row whose image already appeared in the file holds that row's ``index`` instead,
VLMEvalKit's own way of saving space), ``question``, ``A``..``D`` (``D`` empty),
``answer``, ``category``, ``l2-category``, ``split``. Put the TSVs in ``$LMUData`` and
run ``--data <name>``: an unknown dataset with ``A``/``B`` and ``image`` columns is read
as a custom MCQ dataset.

**lmms-eval** (``format="lmms-eval"``): a task folder: ``<name>.yaml`` (and
``<name>_reversed.yaml`` plus the group ``<name>_all.yaml``), ``utils.py`` (the
functions the YAML names with ``!function``; it needs no contrastkit) and
``data/<name>.parquet`` (images as bytes, Hugging Face ``Image`` features) referenced by
a path relative to the folder.

The README, the task YAMLs and ``utils.py`` are rendered from the jinja2 templates in
``harness_templates/`` (package data); the YAMLs' configuration is a dict dumped by pyyaml
(:func:`contrastkit.builders.harness_yaml.dump_yaml` writes lmms-eval's ``!function``
tags).

Both write ``README.md`` (how to run the harness, how to bring its answers back) and
:data:`~contrastkit.harness_key.KEY_FILE`. A set built with random-weight models (its
``build_metadata.json`` says so: :func:`set_weights`) keeps the card's warning at the top
of the README and in the key, so the reports of answers to it are flagged too. Rows whose
image is not available are an error naming them, or, with ``skip_missing``, left out and
listed in the key, the README and the result (never dropped silently).
"""

from __future__ import annotations

import inspect
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from contrastkit import __version__
from contrastkit import harness_key as key_module
from contrastkit.builders.harness_questions import (
    CONTRAST_QUESTION,
    PROBE_QUESTION,
    QUESTIONS_FILE,
    ImageFinder,
    QuestionSet,
    SkippedQuestion,
    contrast_set,
    decision_set,
    probe_set,
    visogender_question,
    visogender_set,
)
from contrastkit.builders.harness_tables import JPEG_QUALITY, key_items, write_parquet, write_tsv
from contrastkit.builders.harness_task_questions import TaskQuestions, task_set
from contrastkit.builders.harness_yaml import LMMS_POST_PROMPT, dump_yaml, task_config
from contrastkit.config import require
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.harness_key import (
    HARNESSES,
    KEY_FILE,
    LETTERS,
    HarnessKey,
    loss_choice,
    option_loss,
    parse_choice,
)
from contrastkit.io import atomic_write_text, check_writable, staging_folder
from contrastkit.store import image_store_for
from contrastkit.text import template_environment
from contrastkit.tsv import is_bundled, resolve_data

__all__ = [
    "CONTRAST_QUESTION",
    "JPEG_QUALITY",
    "LMMS_POST_PROMPT",
    "PROBE_QUESTION",
    "HarnessExportConfig",
    "HarnessExportResult",
    "export_harness",
    "visogender_question",
]


@dataclass(frozen=True)
class HarnessExportConfig:
    """What :func:`export_harness` exports (strings are taken as paths).

    Attributes:
        source: the set: official-format VisoGender TSVs (OP and/or OO), a folder of
            them, a ``contrastkit export visogender`` folder, ``visogender`` (the bundled
            official sets, read by the rule ``evaluate --data`` follows:
            :func:`~contrastkit.tsv.resolve_data`; a local folder of that name
            is ``./visogender``), a ``contrastkit export contrast`` folder, or a
            stereotype probe set (``.tsv`` / ``.jsonl``, a build or export folder), or
            data of a kind whose registered task has the harness hooks.
        format: ``vlmevalkit`` or ``lmms-eval``.
        out: the export folder (replaced atomically; an existing one must be empty or
            an earlier harness export).
        store: the image store URLs are read from (``contrastkit urls check --store``);
            ``None``: for ``visogender``, the store ``contrastkit evaluate --data
            visogender`` fills (:func:`~contrastkit.store.image_store_for`),
            else none.
        seed: the seed of the per-item option shuffling.
        reversed_copy: also write every question with its options reversed.
        skip_missing: leave out (and list) rows whose image is not available instead of
            failing. ``None`` (the default): on for ``visogender`` (whose official URLs
            are not all alive), off otherwise, as in ``evaluate``.
        name: the dataset / task name (default ``contrastkit_<kind>``, a ``-`` of the
            kind as ``_``); letters, digits and ``_`` only.
        decisions: export the decision questions of a contrast set
            (``evaluate --task decisions``) instead of its caption question: each version
            of each source asked every option question of the templates, in both option
            orders (the main split in the seeded order, the reversed split the other), so
            ``reversed_copy`` must stay on. Numeric questions have no options and are not
            exported. The key's ``annotations`` record the source, version, family and
            question; its ``labels`` which option each letter shows.
        questions: the decision question templates (YAML, as ``evaluate --questions``);
            ``None``: the bundled ones.
        task_questions: how data of a kind no built-in set reads is asked: the questions
            of the registered task with the harness hooks that reads it. ``contrastkit
            export harness`` passes :func:`contrastkit.evaluators.engine.harness.
            task_questions`; pass it too to export a plugin kind's data. ``None`` (the
            default): such data is read as no task had the hooks.

    Raises:
        ConfigError: naming the field.
    """

    source: tuple[str | Path, ...]
    format: str
    out: Path
    store: Path | None = None
    seed: int = 0
    reversed_copy: bool = True
    skip_missing: bool | None = None
    name: str | None = None
    decisions: bool = False
    questions: Path | None = None
    task_questions: TaskQuestions | None = None
    bundled: bool = field(init=False, repr=False)
    """Whether ``source`` names the bundled sets (``visogender``)."""
    paths: tuple[Path, ...] = field(init=False, repr=False)
    """``source`` as local paths (``visogender`` as the bundled files)."""

    def __post_init__(self) -> None:
        source: object = self.source
        if isinstance(source, str | Path):
            source = (source,)
        if not isinstance(source, Sequence):
            raise ConfigError(f"source: expected paths, not {source!r}")
        object.__setattr__(self, "bundled", any(is_bundled(s) for s in source))
        object.__setattr__(self, "paths", resolve_data(source))
        object.__setattr__(self, "source", tuple(Path(s) for s in source))
        object.__setattr__(self, "out", Path(self.out))
        if self.store is not None:
            object.__setattr__(self, "store", Path(self.store))
        require(bool(self.source), "source", "needs a set to export")
        require(
            self.format in HARNESSES,
            "format",
            f"unknown harness {self.format!r}; choose from {', '.join(HARNESSES)}",
        )
        require(
            isinstance(self.seed, int) and not isinstance(self.seed, bool) and self.seed >= 0,
            "seed",
            f"must be a whole number >= 0, not {self.seed!r}",
        )
        require(
            self.name is None
            or (bool(self.name) and self.name.replace("_", "a").isalnum() and self.name.isascii()),
            "name",
            f"use letters, digits and _ only, not {self.name!r}",
        )
        require(self.out not in self.source, "out", f"{self.out} is also the source")
        require(
            self.reversed_copy or not self.decisions,
            "reversed_copy",
            "decision questions are asked in both option orders; drop --no-reversed",
        )
        require(
            self.decisions or self.questions is None,
            "questions",
            "decision question templates need --decisions",
        )
        if self.questions is not None:
            object.__setattr__(self, "questions", Path(self.questions))


@dataclass
class HarnessExportResult:
    """What :func:`export_harness` wrote.

    Attributes:
        out_dir: the export folder.
        format: the harness.
        set_kind: ``visogender``, ``contrast``, ``decisions``, ``stereotype``, or the
            dataset kind of a task's questions.
        files: the files written, relative to ``out_dir``.
        items: items per split (``main``, ``reversed``).
        skipped: rows left out, ``{"row", "reason"}`` each.
        datasets: split -> dataset / task name.
        weights_note: the note of a set built with random-weight models (its card's;
            the README and the key carry it), or ``None``.
    """

    out_dir: Path
    format: str
    set_kind: str
    files: list[str]
    items: dict[str, int]
    skipped: list[SkippedQuestion] = field(default_factory=list)
    datasets: dict[str, str] = field(default_factory=dict)
    weights_note: str | None = None


# -- the questions (builders/harness_questions.py) and the files written --------------------


#: The dataset kinds the built-in question sets read.
_BUILT_IN_KINDS = ("visogender", "contrast", "stereotype")


def _load_set(config: HarnessExportConfig) -> QuestionSet:
    """The questions of ``config.source``, by its kind (the bundled sets: VisoGender);
    data of another kind, by the registered task with the harness hooks that reads it
    (:func:`~contrastkit.builders.harness_task_questions.task_set`)."""
    images = ImageFinder(image_store_for(config.store, bundled=config.bundled))
    skip_missing = config.bundled if config.skip_missing is None else config.skip_missing
    sources = config.paths
    first = sources[0]
    for path in sources:
        if not path.exists():
            raise DataFormatError(path, None, None, "no such file or folder")
    if config.bundled:  # with other TSVs, if any: VisoGender-style data, like evaluate's
        return visogender_set(sources, images, skip_missing)
    from contrastkit.kinds import detect_kind

    detected = detect_kind(first).name
    kind = detected if len(sources) == 1 else "visogender"
    if detected not in _BUILT_IN_KINDS and not config.decisions:
        found = task_set(detected, sources, images, skip_missing, config.task_questions)
        if found is not None:
            return found
    if config.decisions:
        if kind != "contrast":
            raise DataFormatError(
                first, None, None, "--decisions exports the questions of a contrast set"
            )
        return decision_set(first, config.questions)
    if kind == "contrast":
        return contrast_set(first)
    if kind == "stereotype":
        return probe_set(first, images, skip_missing)
    return visogender_set(sources, images, skip_missing)


# -- the files people and harnesses read: jinja2 templates in harness_templates/ ------------


def _render(template: str, **values: Any) -> str:
    """``harness_templates/<template>`` rendered with ``values`` (``repr`` filter: a
    Python literal of a value, for ``utils.py``)."""
    env = template_environment("contrastkit.builders", "harness_templates")
    env.filters["repr"] = repr
    return env.get_template(template).render(**values)


def _utils_source() -> str:
    """The lmms-eval ``utils.py`` (``harness_templates/utils.py.j2``): self-contained, with
    copies of :func:`contrastkit.harness_key.parse_choice`,
    :func:`~contrastkit.harness_key.option_loss`, :func:`~contrastkit.harness_key.loss_choice`
    and their patterns, so that the harness reads answers by contrastkit's rule."""
    return _render(
        "utils.py.j2",
        version=__version__,
        letters=LETTERS,
        post_prompt=LMMS_POST_PROMPT,
        wrappers=key_module._WRAPPERS,
        answer_is=key_module._ANSWER_IS.pattern,
        leading=key_module._LEADING.pattern,
        loss_pair=key_module._LOSS_PAIR.pattern,
        words=inspect.getsource(key_module._words),
        parse=inspect.getsource(parse_choice),
        loss=inspect.getsource(option_loss),
        lowest=inspect.getsource(loss_choice),
    )


def _task_yaml(task: str, data_file: str) -> str:
    """One task's YAML (``harness_templates/task.yaml.j2``: a comment, then
    :func:`task_config` dumped)."""
    return _render(
        "task.yaml.j2", version=__version__, body=dump_yaml(task_config(task, data_file))
    )


def _group_yaml(group: str, tasks: Sequence[str]) -> str:
    """The lmms-eval group that runs ``tasks`` together."""
    return dump_yaml({"group": group, "task": list(tasks)})


def _readme(config: HarnessExportConfig, found: QuestionSet, datasets: dict[str, str],
            counts: dict[str, int], weights_note: str | None) -> str:  # fmt: skip
    """The export's README (``harness_templates/README.md.j2``); ``weights_note``: that of
    a set built with random-weight models (:func:`set_weights`)."""
    return _render(
        "README.md.j2",
        name=datasets["main"],
        names=list(datasets.values()),
        reversed=datasets.get("reversed"),
        group=f"{datasets['main']}_all" if "reversed" in datasets else datasets["main"],
        kind=found.kind,
        task=found.task,
        format=config.format,
        version=__version__,
        source=", ".join(map(str, config.source)),
        seed=config.seed,
        wording=found.wording,
        main_items=counts.get("main", 0),
        reversed_items=counts.get("reversed", 0),
        skipped=found.skipped,
        key_file=KEY_FILE,
        out=config.out,
        weights_note=weights_note,
    )


def set_weights(paths: Sequence[Path]) -> tuple[tuple[str, ...], str | None]:
    """Which models the exported set's build had with random weights, and the note its
    card carries (:func:`contrastkit.builders.export.build_weights`), from the
    ``build_metadata.json`` of the first source folder that has one (an ``export
    contrast`` folder); ``((), None)`` for a set without one (VisoGender TSVs) or built
    with trained models."""
    from contrastkit.builders.export import METADATA_FILE, build_weights, read_metadata
    from contrastkit.builders.publish import random_weight_models

    for path in paths:
        folder = path if path.is_dir() else path.parent
        if (folder / METADATA_FILE).is_file():
            metadata = read_metadata(folder)
            models = tuple(random_weight_models(metadata))
            note = metadata.get("weights_note")
            if models and not isinstance(note, str):
                note = build_weights(metadata.get("build_summary") or {})["weights_note"]
            return models, (str(note) if models and note else None)
    return (), None


def _check_out(out: Path) -> None:
    if out.is_symlink() or (out.exists() and not out.is_dir()):
        raise StateError(f"{out}: the export folder is a file or a link; choose another --out")
    if out.is_dir() and any(out.iterdir()) and not (out / KEY_FILE).is_file():
        raise StateError(
            f"{out}: the folder holds files that are not a harness export (no {KEY_FILE}); "
            "an export replaces the whole folder, so choose another --out or empty it"
        )
    check_writable(out.parent, "the export folder")


def export_harness(config: HarnessExportConfig) -> HarnessExportResult:
    """Write ``config.source`` as a VLMEvalKit or lmms-eval multiple-choice benchmark
    (module docstring), with its README and key, into ``config.out``.

    Raises:
        DataFormatError: a malformed or unknown source, a row whose image is not
            available (unless ``skip_missing``), an image that cannot be decoded.
        StateError: ``out`` holds something other than an earlier harness export.
        ResourceError: ``out`` cannot be written (checked first).
    """
    _check_out(config.out)
    found = _load_set(config)
    if not found.questions:
        first = found.skipped[0] if found.skipped else None
        why = (
            f": all {len(found.skipped)} rows lack their image ({first['reason']} ...)"
            if first
            else ""
        )
        if first and config.bundled:
            store = image_store_for(config.store, bundled=True)
            tsvs = " ".join(str(path) for path in config.paths)
            why += (
                f"; `contrastkit evaluate --data visogender` fetches the official images "
                f"into {store}, or fetch them with `contrastkit urls check {tsvs} --store "
                f"{store}`"
            )
        raise DataFormatError(config.source[0], None, None, f"no row to export{why}")
    name = config.name or f"contrastkit_{found.kind.replace('-', '_')}"
    datasets = {"main": name}
    if config.reversed_copy:
        datasets["reversed"] = f"{name}_reversed"
    items = key_items(found, config.seed, config.reversed_copy)
    by_split = {split: [pair for pair in items if pair[0].split == split] for split in datasets}
    staging = staging_folder(config.out.parent, f".{config.out.name}-")
    try:
        files: list[str] = []
        if config.format == "vlmevalkit":
            for split, dataset in datasets.items():
                write_tsv(staging / f"{dataset}.tsv", by_split[split])
                files.append(f"{dataset}.tsv")
        else:
            for split, dataset in datasets.items():
                data_file = f"data/{dataset}.parquet"
                write_parquet(staging / data_file, by_split[split])
                atomic_write_text(staging / f"{dataset}.yaml", _task_yaml(dataset, data_file))
                files += [f"{dataset}.yaml", data_file]
            if len(datasets) > 1:
                group = f"{name}_all"
                atomic_write_text(
                    staging / f"{group}.yaml", _group_yaml(group, list(datasets.values()))
                )
                files.append(f"{group}.yaml")
            atomic_write_text(staging / "utils.py", _utils_source())
            files.append("utils.py")
        counts = {split: len(rows) for split, rows in by_split.items()}
        models, note = set_weights(config.paths)
        readme = _readme(config, found, datasets, counts, note)
        atomic_write_text(staging / "README.md", readme)
        key = HarnessKey(
            harness=config.format,
            set_kind=found.kind,
            datasets=datasets,
            source=", ".join(str(path) for path in config.source),
            seed=config.seed,
            question=found.wording,
            items=tuple(item for item, _ in items),
            skipped=tuple(found.skipped),
            meta={
                "contrastkit_version": __version__,
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            },
            random_weight_models=models,
            weights_note=note,
            task=found.task,
        )
        key.write(staging)
        files += ["README.md", KEY_FILE]
        if config.decisions and config.questions is not None:  # the key names the copy
            shutil.copyfile(config.questions, staging / QUESTIONS_FILE)
            files.append(QUESTIONS_FILE)
        if config.out.exists():
            old = config.out.with_name(f".{config.out.name}.old-{staging.name[-8:]}")
            config.out.rename(old)
            staging.rename(config.out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            staging.rename(config.out)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return HarnessExportResult(
        out_dir=config.out,
        format=config.format,
        set_kind=found.kind,
        files=files,
        items=counts,
        skipped=found.skipped,
        datasets=datasets,
        weights_note=note,
    )
