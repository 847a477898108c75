"""What a GenSynth run tells its user besides its result (``notes`` of
:class:`~contrastkit.builders.gensynth.job.GenSynthResult`): before any work, the options
taken from the build's record and the editor or embedder with random weights; after the
filter, how to accept more edits when (almost) none were accepted."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from contrastkit.builders.gensynth.settings import BuildRequest, GenSynthSettings, command_for
from contrastkit.builders.stages import Stage
from contrastkit.curation.editing import EditSettings
from contrastkit.curation.editor_families import parse_editor_spec

__all__ = ["FEW_ACCEPTED", "filter_notes", "start_notes"]

#: Below this share of accepted edits the run says how to lower the thresholds.
FEW_ACCEPTED = 0.05


def _random_weights(spec: str) -> bool:
    from contrastkit.tiny.marker import spec_has_random_weights

    return spec_has_random_weights(spec)


def start_notes(config: BuildRequest, run: GenSynthSettings) -> list[str]:
    """What to say before any work: the recorded options in use, random weights."""
    notes: list[str] = []
    used: set[str] = set()  # the options the stages of this run use
    if config.stage.runs(Stage.EDIT):
        used |= {"coco", "split", "limit", "min_box_side", "editor", "image_format",
                 "image_quality", *(f"edit.{f.name}" for f in fields(EditSettings))}  # fmt: skip
    if config.needs_embedder:
        used.add("embedder")
    if config.stage.runs(Stage.FILTER) and config.shard is None:
        used |= {"k", "tau_real", "tau_gender"}
    if config.runs_select:
        used |= {"edit.seed"} | (
            {"pool", "pool_limit", "quality_sample"} if config.quality else set()
        )
    taken = [n for n in run.from_build if n in used]
    defaults = EditSettings.for_family(parse_editor_spec(run.editor)[0])
    differing = run.differing([n for n in taken if not n.startswith("edit.")]) + [
        n for n in taken
        if n.startswith("edit.") and getattr(run.edit, n[5:]) != getattr(defaults, n[5:])
    ]  # fmt: skip
    if differing:
        shown = " ".join(run.flags(differing)) or ", ".join(differing)
        notes.append(
            f"settings recorded by the build in {config.work_folder} (give an option to "
            f"change it): {shown}"
        )
    thresholds = f"--tau-real {run.tau_real:g} --tau-gender {run.tau_gender:g}"
    accept_all = run.tau_real < 0 and run.tau_gender < 0
    if config.stage.runs(Stage.EDIT) and _random_weights(run.editor):
        filtered = (
            f"the filter accepts every one of them at {thresholds} (a pipeline check)"
            if accept_all
            else f"the filter will accept few or none of them at {thresholds}; for a "
            "pipeline check give --tau-real -1 --tau-gender -1 (accept every edit)"
        )
        notes.append(
            f"warning: the editor {run.editor} has random weights (a tiny test model): its "
            f"edits are noise, and {filtered}; few --steps at a small --resolution keep such "
            f"a run short (this run: {run.edit.steps} steps at {run.edit.resolution} px "
            "per edit)"
        )
    if config.stage.runs(Stage.FILTER) and _random_weights(run.embedder):
        advice = (
            "they accept every edit here (a pipeline check)"
            if accept_all
            else "give --tau-real -1 --tau-gender -1 to accept every edit in a pipeline check"
        )
        notes.append(
            f"warning: the embedder {run.embedder} has random weights: its embeddings mean "
            f"nothing, so the filter's thresholds ({thresholds}) are meaningless; {advice}"
        )
    return notes


def filter_notes(out: Path, run: GenSynthSettings, summary: Mapping[str, Any]) -> list[str]:
    """After the filter: how to accept more edits when (almost) none were accepted."""
    edits, accepted = int(summary["edits"]), int(summary["accepted"])
    if not edits or accepted >= FEW_ACCEPTED * edits:
        return []
    lower = command_for(out, Stage.FILTER, replace(run, tau_real=-1.0, tau_gender=-1.0))
    note = (
        f"only {accepted} of {edits} edits accepted (P_R > --tau-real {run.tau_real:g} and "
        f"P_G > --tau-gender {run.tau_gender:g}); lower --tau-real / --tau-gender and "
        f"rerun the filter alone (no edit is made again), e.g. `{lower}`"
    )
    randoms = [
        f"the {what} {spec}" for what, spec in (("editor", summary.get("editor_spec")),
                                                ("embedder", run.embedder))
        if spec and _random_weights(str(spec))
    ]  # fmt: skip
    if randoms or summary.get("encoder_random_weights"):
        who = " and ".join(randoms) or f"the embedder {run.embedder}"
        note += (
            f"; {who} {'have' if len(randoms) > 1 else 'has'} random weights, so the "
            "thresholds are meaningless: -1 accepts every edit"
        )
    return [note]
