"""``contrastkit evaluate`` and ``contrastkit report``: score models, compare results.

The work is :func:`contrastkit.evaluators.job.evaluate` and
:func:`contrastkit.evaluators.job.compare_results`; these commands map options onto their
configs and print the results.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.text import Text

from contrastkit.cli import zero_shot as zs
from contrastkit.cli.common import (
    console,
    err_console,
    plain,
    print_json,
    shown,
    user_errors,
)
from contrastkit.cli.evaluate_config import evaluate_config, task_names
from contrastkit.cli.evaluate_options import (
    AUTO_GROUPS,
    AnalysesOptions,
    AutoData,
    DataOptions,
    HtmlOptions,
    TaskChoice,
    ZeroShotData,
    task_groups,
)
from contrastkit.cli.helptext import App, HelpGroup
from contrastkit.cli.html_option import compared_results as _compared
from contrastkit.cli.html_option import html_report as _html_report
from contrastkit.cli.options import (
    BootstrapOptions,
    ModelOptions,
    OptionGroup,
    OutputOptions,
    command_function,
)
from contrastkit.text import count as counted

if TYPE_CHECKING:
    from contrastkit.evaluators.job import EvaluateResult
    from contrastkit.evaluators.tasks.registry import Task

#: The name of the command that picks the task from the data (``contrastkit evaluate
#: --data ...`` runs it).
AUTO = "auto"

#: The zero-shot disparity task's name in the registry (its command: ``evaluate zero-shot``).
ZERO_SHOT = "zero-shot"


def _run(task: str | None, groups: Iterable[OptionGroup]) -> None:
    """Evaluate with ``task`` (``None``: the data's) and print what was written."""
    from contrastkit.cli.common import progress
    from contrastkit.evaluators.job import evaluate as run_evaluation

    groups = list(groups)
    html = next((g.html for g in groups if isinstance(g, HtmlOptions)), None)
    with user_errors():
        result = run_evaluation(evaluate_config(groups, task), progress=progress)
    [output] = [group for group in groups if isinstance(group, OutputOptions)]
    _print_evaluation(result, output.as_json)
    if html is not None:
        with user_errors():
            folders = [entry.folder for entry in result.evaluations]
            _html_report(folders, html, output.as_json, result.store)


def _deprecated(old: str, new: str) -> None:
    """One line on stderr: an older spelling that still works, and the one to use."""
    err_console.print(plain(f"deprecated: {old}; use {new}", style="yellow"), highlight=False)


def _auto(values: Mapping[type[OptionGroup], OptionGroup]) -> None:
    """``contrastkit evaluate [auto] --data ...``: the data picks the task (a Visual
    Genome or COCO folder: what ``evaluate zero-shot`` does); ``--task`` names
    VisoGender's analyses, or (deprecated) the stereotype or zero-shot task."""
    from contrastkit.errors import ConfigError

    values = {DataOptions if cls is AutoData else cls: group for cls, group in values.items()}
    choice, data = values[TaskChoice], values[DataOptions]
    assert isinstance(choice, TaskChoice) and isinstance(data, DataOptions)
    with user_errors():
        tasks = task_names(choice.task)
        if zs.TASK in tasks:  # per-concept zero-shot disparities
            if len(tasks) > 1:
                raise ConfigError(f"--task: {zs.TASK} runs alone")
            _zero_shot_of_auto(values, deprecated=True)
            return
        stereotype = "stereotype" in tasks
        if stereotype and len(tasks) > 1:
            raise ConfigError("--task: stereotype runs alone, not with " + ", ".join(
                t for t in tasks if t != "stereotype"))  # fmt: skip
        if stereotype:
            _deprecated("--task stereotype", "`contrastkit evaluate stereotype`")
        elif zs.data_task(data.data) == ZERO_SHOT:  # a Visual Genome or COCO folder
            _zero_shot_of_auto(values)
            return
    # the zero-shot analysis' options are for a Visual Genome or COCO folder (above)
    groups = [group for cls, group in values.items() if cls not in (TaskChoice, zs.ZeroShotOptions)]
    if not stereotype:
        groups.append(AnalysesOptions.take({"tasks": tasks}))  # --task, split
    _run("stereotype" if stereotype else None, groups)


def _zero_shot_of_auto(
    values: Mapping[type[OptionGroup], OptionGroup], *, deprecated: bool = False
) -> None:
    """``contrastkit evaluate --data VG_OR_COCO ...`` (or the ``deprecated`` ``--task
    zero-shot-disparity``): what ``evaluate zero-shot`` does with the same options
    (``auto`` has them all); --html is refused."""
    from contrastkit.errors import ConfigError

    html = values.get(HtmlOptions)
    if isinstance(html, HtmlOptions) and html.html is not None:
        raise ConfigError("--html: the zero-shot analysis has no HTML report")
    if deprecated:
        _deprecated(f"--task {zs.TASK}", "`contrastkit evaluate zero-shot`")
    _zero_shot(values)


def _zero_shot(values: Mapping[type[OptionGroup], OptionGroup]) -> None:
    """``contrastkit evaluate zero-shot``: the zero-shot disparities analysis."""
    data = values[DataOptions]
    assert isinstance(data, DataOptions)
    zs.run_options(data, values)


#: What each built-in task's command says it does (a plugin's says which data it reads).
_DESCRIPTIONS = {
    "visogender": """Resolution and retrieval bias on a VisoGender-style set (VisoGender
    Tab. 2, 3, 5).

    --data: official-format TSVs, a folder or an export of them, a saved dataset, or
    `visogender` (the bundled official sets). Each model writes OUT/MODEL/ (benchmark.json,
    report.md, plots/); a rerun reuses the scores already there. Every option in detail:
    docs/reference/commands/evaluate.md.


    Example: contrastkit evaluate visogender --data visogender --model open_clip:ViT-B-32/openai
    """,
    "contrast": """Retrieval bias of neutral queries and pair preference on a contrast
    set (GenSynth Sec. 5).

    --data: a `contrastkit export contrast` folder or its Hub copy. Each model writes
    OUT/MODEL/ (benchmark.json, report.md, plots/); a rerun reuses the scores already
    there.


    Example: contrastkit evaluate contrast --data export/contrast --model open_clip:ViT-B-32/openai
    """,
    "stereotype": """VLStereoSet's stereotype scores on a probe set.

    --data: a probe TSV / JSONL, a `contrastkit build stereoset` folder, its export or
    Hub copy. Each model writes OUT/MODEL/ (benchmark.json, report.md, plots/); a rerun
    reuses the scores already there.


    Example: contrastkit evaluate stereotype --data build/vlss --model vlm:llava-hf/llava-1.5-7b-hf
    """,
    "decisions": """Counterfactual decision probes: generative VLMs (vlm:) asked the same
    questions about both versions of each contrast-set source; flip rate, gaps, refusals.

    --data: a `contrastkit export contrast` folder. Each model writes OUT/MODEL/
    (benchmark.json, report.md, raw_decisions.jsonl, plots/). Details: docs/decisions.md.


    Example: contrastkit evaluate decisions --data export --model vlm:llava-hf/llava-1.5-7b-hf
    """,
}

_AUTO_HELP = """The task the data calls for, with every task's options (what
`contrastkit evaluate --data ...` runs).

A VisoGender-style set gets `visogender`, a contrast-set export `contrast`, a probe set
`stereotype`, a Visual Genome or COCO folder `zero-shot`; the options the task does not
use are ignored.

Example: contrastkit evaluate --data visogender --model open_clip:ViT-B-32/openai
"""


def _description(task: Task) -> str:
    """The help of ``contrastkit evaluate TASK``."""
    if task.name in _DESCRIPTIONS:
        return _DESCRIPTIONS[task.name]
    description = getattr(task.protocol, "description", "")
    if description:
        example = getattr(task.protocol, "example_model", "") or "SPEC"
        return (
            f"{description}\n\nEach model writes OUT/MODEL/.\n\nExample: contrastkit "
            f"evaluate {task.name} --data DATA --model {example}"
        )
    from contrastkit.kinds import kinds

    kind = kinds().get(task.kind or "")
    data = kind.plural if kind is not None else "its data"
    return (
        f"The {task.name} task on {data} (from {task.source}).\n\n"
        f"Each model writes OUT/MODEL/.\n\nExample: contrastkit evaluate {task.name} "
        "--data DATA --model SPEC"
    )


#: The example spec of each built-in task's --model: a model that can do the task.
_MODEL_EXAMPLES = {
    "visogender": "open_clip:ViT-B-32/openai",
    "contrast": "open_clip:ViT-B-32/openai",
    "stereotype": "vlm:llava-hf/llava-1.5-7b-hf",
    "decisions": "vlm:llava-hf/llava-1.5-7b-hf",
    AUTO: "open_clip:ViT-B-32/openai",
}


def model_help(task: str, example: str = "") -> str:
    """The help of ``contrastkit evaluate TASK --model``: an example the task takes
    (``example``, else the built-in task's)."""
    example = example or _MODEL_EXAMPLES.get(task, "")
    shown = f", e.g. {example}" if example else ""
    return f"Model spec{shown} (all families: `contrastkit models list`). Repeatable."


def task_command(task: Task) -> Any:
    """The command function of ``contrastkit evaluate TASK``: the common options and
    the groups the task names."""

    def run(values: Mapping[type[OptionGroup], OptionGroup]) -> None:
        _run(task.name, values.values())

    example = getattr(task.protocol, "example_model", "")
    helps = {"model": model_help(task.name, example)}
    return command_function(task.name, task_groups(task), run, _description(task), helps)


class EvaluateGroup(HelpGroup):
    """``contrastkit evaluate``: one command per registered task (plugins' found when
    asked for); options without a task name go to ``auto``, which asks the data."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        if args and args[0].startswith("-") and args[0] not in ctx.help_option_names:
            args = [AUTO, *args]
        return super().parse_args(ctx, args)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        return ["[TASK] --data PATH --model SPEC [OPTIONS]"]

    def _plugin_tasks(self) -> dict[str, Task]:
        from contrastkit.evaluators.tasks.registry import tasks

        with user_errors():
            found = tasks()
        return {
            name: task
            for name, task in found.items()
            if task.run is not None and name not in self.commands
        }

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        command = super().get_command(ctx, cmd_name)
        if command is not None:
            return command
        task = self._plugin_tasks().get(cmd_name)
        if task is None:
            return None
        sub = App(rich_markup_mode="markdown", add_completion=False)
        sub.command(name=task.name)(task_command(task))
        command = typer.main.get_command(sub)
        self.add_command(command, task.name)
        return command

    def list_commands(self, ctx: Any) -> list[str]:
        names = list(self.commands)
        return [*names, *self._plugin_tasks()]


app = App(
    cls=EvaluateGroup,
    help="Score models for gender bias: one command per task, each with its own options "
    "(`contrastkit evaluate TASK --help`).\n\n"
    "Without a task, `contrastkit evaluate --data PATH --model SPEC` picks it from the data "
    "(`auto`).\n\n"
    "Example: contrastkit evaluate visogender --data visogender --model "
    "open_clip:ViT-B-32/openai",
    no_args_is_help=True,
    rich_markup_mode="markdown",
)


def _zero_shot_command() -> Any:
    """``contrastkit evaluate zero-shot``: its own options (one --data folder, --model or
    --predictions, the "Zero-shot disparity" panel, no --html) and its own printing, so
    not :func:`task_command`'s; it runs the same analysis as the registry's row."""
    return command_function(
        ZERO_SHOT,
        (ZeroShotData, OutputOptions, ModelOptions, BootstrapOptions, zs.ZeroShotOptions),
        lambda values: _zero_shot({
            DataOptions if cls is ZeroShotData else cls: group for cls, group in values.items()
        }),
        zs.HELP,
    )  # fmt: skip


#: The registered tasks whose command is their own rather than :func:`task_command`'s.
_OWN_COMMANDS = {ZERO_SHOT: _zero_shot_command}


def _built_in_commands() -> None:
    """Add the command of each built-in task, made from its row as the registry holds it
    (a task folder's own where one replaces the table's row), then ``auto``."""
    from contrastkit.evaluators.tasks.registry import built_in_rows

    for task in built_in_rows():
        if task.run is not None:
            own = _OWN_COMMANDS.get(task.name)
            app.command(name=task.name)(own() if own is not None else task_command(task))
    app.command(name=AUTO)(
        command_function(AUTO, AUTO_GROUPS, _auto, _AUTO_HELP, {"model": model_help(AUTO)})
    )


_built_in_commands()


def _print_evaluation(result: EvaluateResult, as_json: bool) -> None:
    """One line per model (and data folder), the skipped tasks, the comparison file."""
    from contrastkit.evaluators.report.headlines import headline_figures, headline_lines

    headlines = [
        headline_figures(entry.model, entry.summary, result.kind) for entry in result.evaluations
    ]
    if as_json:
        print_json([
            {**entry.to_dict(), "headlines": figures}
            for entry, figures in zip(result.evaluations, headlines, strict=True)
        ])  # fmt: skip
        return
    _print_skipped_rows(result)
    for entry, figures in zip(result.evaluations, headlines, strict=True):
        line = Text.assemble((shown(entry.model), "bold"))
        if result.kind == "contrast":
            pairs = entry.summary["pairs"]
            preference = (
                f"masculine preferred in {pairs['masculine_preferred']:.2f} of pairs"
                if pairs.get("applicable", True)
                else "pair preference not applicable (one version per photo)"
            )
            if entry.summary.get("retrieval_note"):
                preference += " (retrieval metrics not computed: --contrast-metrics all)"
            scoring = entry.summary.get("scoring") or {}
            if scoring.get("unit") == "image-query pair":
                preference += (
                    f", {counted(int(scoring['computed']), 'image-query pair')} scored, "
                    f"{int(scoring['reused'])} reused"
                )
            line.append(shown(
                f" on {entry.data}: {counted(entry.summary['queries'], 'neutral query')}, "
                f"{preference} -> {entry.folder}"
            ))  # fmt: skip
        else:
            line.append(shown(
                f": {counted(entry.scored_images, 'image')} scored, "
                f"{counted(entry.reused_records, 'record')} reused -> {entry.folder}"
            ))  # fmt: skip
        console.print(line, highlight=False)
        for text in headline_lines(figures):
            style = "yellow" if text.startswith(("random weights:", "warning:")) else ""
            console.print(plain(f"  {text}", style=style), highlight=False)
        for note in entry.skipped:
            console.print(plain(f"  skipped: {note}"), highlight=False)
    if result.comparison is not None:
        console.print(plain(f"comparison: {result.comparison}"), highlight=False)


def _print_skipped_rows(result: EvaluateResult, shown_rows: int = 3) -> None:
    """One line on the rows left out for want of an image (and the URLs fetched)."""
    if result.checked:
        urls = "URL" if result.checked == 1 else "URLs"
        console.print(
            plain(f"fetched {result.fetched} of the {result.checked} image {urls} missing "
                  f"from {result.store}"),
            highlight=False,
        )  # fmt: skip
    count = len(result.skipped_rows)
    if not count:
        return
    rows = "row" if count == 1 else "rows"
    first = ", ".join(row.idx for row in result.skipped_rows[:shown_rows])
    more = ", ..." if count > shown_rows else ""
    console.print(
        plain(f"left out {count} {rows} without an image ({first}{more}); every report.md "
              "lists them with the reason"),
        highlight=False,
    )  # fmt: skip


def report(
    results: list[Path] = typer.Argument(
        None,
        help="benchmark.json (or zero-shot disparity.json) files, or the model folders "
        "`contrastkit evaluate` wrote.",
    ),
    out: Path | None = typer.Option(
        None,
        "--out",
        help="Also write the markdown here (with --harness-predictions: the output folder).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the headline numbers as JSON."),
    harness_predictions: list[Path] = typer.Option(
        None,
        "--harness-predictions",
        help="Predictions of a harness on a `contrastkit export harness` set (repeatable): "
        "VLMEvalKit's MODEL_DATASET.xlsx/.tsv/.csv or lmms-eval's --log_samples .jsonl.",
    ),
    harness_set: Path | None = typer.Option(
        None, "--harness-set", help="The folder `contrastkit export harness` wrote."
    ),
    model: str | None = typer.Option(
        None, "--model", help="With --harness-predictions: the model's name in the reports."
    ),
    html: Path | None = typer.Option(
        None,
        "--html",
        metavar="DIR",
        help="Also write the offline HTML report into DIR: the models side by side, a page "
        "per result, galleries of the images behind the figures; opens from file://.",
    ),
) -> None:
    """Put several models' results side by side (resolution: Tab. 2; retrieval: Tab. 3;
    retrieval with the occupation and the participant as the query's subject: Tab. 5;
    zero-shot disparities: mAP per group and the concepts with an AP gap).

    Example:

        contrastkit report results/open_clip-ViT-B-32-openai results/git-microsoft-git-large

    With --harness-predictions (a harness's answers on a `contrastkit export harness` set)
    and --harness-set, writes the bias metrics into --out (a VisoGender set's
    benchmark.json, report.md) and compares them with any RESULTS given:

        contrastkit report --harness-predictions llava_x.tsv --harness-set vlm --out res/llava

    With --html DIR, also writes the offline HTML report (docs/how-to/html-report.md):

        contrastkit report results/* --html report-site
    """
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.job import ReportConfig, compare_results

    if harness_predictions or harness_set is not None:
        with user_errors():
            stray = [p for p in results or [] if p.suffix in (".xlsx", ".tsv", ".csv", ".jsonl")]
            if stray:
                raise ConfigError(
                    f"results: {stray[0]} is not a benchmark; give each prediction file its "
                    "own --harness-predictions"
                )
        produced = _harness_report(harness_predictions, harness_set, out, model, as_json)
        if not results:
            return
        results, out = [*produced, *results], None
    with user_errors():
        if not results:
            raise ConfigError("results: give benchmark files or folders, or --harness-predictions")
        compared = _compared(results, html is not None)
        comparison = compare_results(ReportConfig(results=compared, out=out)) if compared else None
    if comparison is not None and as_json:
        print_json(list(comparison.headlines))
    elif comparison is not None:
        typer.echo(shown(comparison.markdown, multiline=True), nl=False)
    if html is not None:
        with user_errors():
            _html_report(list(results), html, as_json, None)


def _harness_report(
    predictions: list[Path] | None,
    export: Path | None,
    out: Path | None,
    model: str | None,
    as_json: bool,
) -> list[Path]:
    """``report --harness-predictions``: write the harness's results, print what was
    found; returns the results folder to compare with the other RESULTS given."""
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.harness import HarnessReportConfig, harness_report

    with user_errors():
        for value, name in ((predictions, "--harness-predictions"), (export, "--harness-set"),
                            (out, "--out")):  # fmt: skip
            if not value:
                raise ConfigError(f"{name}: needed to read a harness's predictions")
        assert export is not None and out is not None and predictions
        found = harness_report(HarnessReportConfig(
            predictions=tuple(predictions), export=export, out=out, model=model,
        ))  # fmt: skip
    if as_json:
        print_json({"model": found.model, "set_kind": found.set_kind,
                    "results": str(found.results_file), "counts": found.counts,
                    "random_weights": found.weights_note is not None,
                    "weights_note": found.weights_note, "warnings": found.warnings,
                    "harness": found.harness})  # fmt: skip
    else:
        for split, counts in found.counts.items():
            console.print(plain(
                f"{split}: {counted(counts['items'], 'item')}, {counts['answered']} answered, "
                + (f"{counts['refusals']} refusals, " if "refusals" in counts else "")
                + f"{counts['unparseable']} unparseable, {counts['missing']} missing"
            ))  # fmt: skip
        if found.weights_note:
            console.print(plain(f"random weights: {found.weights_note}", style="yellow"))
        for text in found.warnings:
            console.print(plain(f"warning: {text}", style="yellow"))
        console.print(plain(f"wrote {found.results_file} and {found.out_dir / 'report.md'}"))
    return [found.out_dir]


def register(root: typer.Typer) -> None:
    """Add ``evaluate`` (its task commands) and ``report`` to the root app."""
    root.add_typer(app, name="evaluate")
    root.command(name="report")(report)
