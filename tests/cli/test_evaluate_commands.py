"""``contrastkit evaluate TASK``: one command per task with only the options that task
uses; ``contrastkit evaluate --data ...`` still lets the data pick; the option groups
(model, network, bootstrap, output) are one declaration that every command shares."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.config import ModelConfig

runner = CliRunner()

COMMON = {"--data", "--model", "--split", "--out", "--json", "--device", "--dtype",
          "--batch-size", "--workers", "--decode", "--allow-download"}  # fmt: skip
IMAGES = {"--store", "--fetch", "--no-fetch", "--skip-missing", "--no-skip-missing"}
NETWORK = {"--concurrency", "--timeout", "--retries", "--allow-private", "--no-allow-private",
           "--allow-network", "--resolve"}  # fmt: skip
BOOTSTRAP = {"--bootstrap", "--confidence", "--seed"}
HTML = {"--html"}  # the HTML report of the results (the zero-shot analysis has none)
ZERO_SHOT = {"--predictions", "--prompt", "--layout", "--min-images", "--images-without-concepts",
             "--filter-split", "--concept-map", "--bins", "--calibration", "--temperature",
             "--words", "--word-source", "--compare", "--threshold", "--top"}  # fmt: skip

#: What each task reads (the analyses its job runs); nothing else is offered.
EXPECTED = {
    "visogender": COMMON | HTML | IMAGES | NETWORK | BOOTSTRAP | {
        "--only", "--neutral", "--ndkl-k", "--flipped-retrieval", "--no-flipped-retrieval",
        "--protocol", "--subsample-k", "--subsample-runs", "--baseline-runs", "--k"},
    "contrast": COMMON | HTML | BOOTSTRAP | {"--k", "--contrast-metrics"},
    "stereotype": COMMON | HTML | IMAGES | NETWORK | BOOTSTRAP,
    "zero-shot": COMMON | BOOTSTRAP | ZERO_SHOT,
}  # fmt: skip


def _evaluate_group() -> Any:
    return typer.main.get_command(app).commands["evaluate"]  # type: ignore[attr-defined]


def _shown_options(command: Any) -> set[str]:
    return {
        name
        for param in command.params
        if not param.hidden
        for name in (*param.opts, *param.secondary_opts)
        if name != "--help"
    }


@pytest.mark.parametrize("task", sorted(EXPECTED))
def test_each_task_command_lists_only_the_options_its_task_uses(task: str) -> None:
    import click

    group = _evaluate_group()
    # a task written as a folder (stereotype) gets its command when first asked for
    command = group.get_command(click.Context(group), task)
    assert _shown_options(command) == EXPECTED[task]
    shown = runner.invoke(app, ["evaluate", task, "--help"], env={"COLUMNS": "100"}).output
    for name in EXPECTED[task]:
        assert re.search(rf"(?<![\w-]){re.escape(name)}(?![\w…-])", shown), name
    # the other tasks' options are not there
    for other in ("--neutral", "--contrast-metrics", "--prompt", "--store", "--task"):
        if other not in EXPECTED[task]:
            assert not re.search(rf"(?<![\w-]){re.escape(other)}(?![\w-])", shown), other


def test_evaluate_help_names_the_task_commands_and_each_is_short() -> None:
    shown = runner.invoke(app, ["evaluate", "--help"], env={"COLUMNS": "80"}).output
    assert "contrastkit evaluate [TASK] --data PATH" in shown
    for task in ("visogender", "contrast", "stereotype", "zero-shot", "auto"):
        assert re.search(rf"│ {task} ", shown), task
    visogender = runner.invoke(app, ["evaluate", "visogender", "--help"], env={"COLUMNS": "100"})
    assert visogender.exit_code == 0
    assert len(visogender.output.splitlines()) <= 80
    for panel in ("Options", "Images", "Resolution and retrieval", "Running the model",
                  "Statistics", "Network"):  # fmt: skip
        assert f"─ {panel} ─" in visogender.output
    assert "docs/reference/commands/evaluate.md" in visogender.output  # the details
    # `auto` (what `evaluate --data ...` runs) still takes every task's options
    auto = runner.invoke(app, ["evaluate", "auto", "--help"], env={"COLUMNS": "80"}).output
    assert "─ Zero-shot disparity ─" in auto and "--contrast-metrics" in auto
    assert "zero-shot-disparity" in auto


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The configs the evaluate and zero-shot jobs are called with (they run no further)."""
    import contrastkit.evaluators.job as job
    import contrastkit.evaluators.tasks.zero_shot.job as zero_shot_job

    configs: list[Any] = []

    def record(config: Any, **_: Any) -> Any:
        configs.append(config)
        raise typer.Exit(0)

    monkeypatch.setattr(job, "evaluate", record)
    monkeypatch.setattr(zero_shot_job, "zero_shot_disparity", record)
    return configs


SPEC = "open_clip:ViT-B-32/openai"

#: A value other than the default for each option that sets part of a config.
VALUES: dict[str, list[str]] = {
    "--split": ["--split", "test"], "--out": ["--out", "elsewhere"],
    "--device": ["--device", "cpu"], "--dtype": ["--dtype", "float32"],
    "--batch-size": ["--batch-size", "7"], "--workers": ["--workers", "0"],
    "--decode": ["--decode", "pil"], "--allow-download": ["--allow-download"],
    "--store": ["--store", "images"], "--fetch": ["--fetch"], "--no-fetch": ["--no-fetch"],
    "--skip-missing": ["--skip-missing"], "--no-skip-missing": ["--no-skip-missing"],
    "--concurrency": ["--concurrency", "3"], "--timeout": ["--timeout", "5"],
    "--retries": ["--retries", "0"], "--allow-private": ["--allow-private"],
    "--allow-network": ["--allow-network", "10.1.0.0/16"],
    "--resolve": ["--resolve", "example.org:127.0.0.1"], "--only": ["--only", "resolution"],
    "--neutral": ["--neutral"], "--ndkl-k": ["--ndkl-k", "3"],
    "--no-flipped-retrieval": ["--no-flipped-retrieval"], "--protocol": ["--protocol", "two-way"],
    "--subsample-k": ["--subsample-k", "2"], "--subsample-runs": ["--subsample-runs", "9"],
    "--baseline-runs": ["--baseline-runs", "9"], "--k": ["--k", "3"],
    "--bootstrap": ["--bootstrap", "7"], "--confidence": ["--confidence", "0.9"],
    "--seed": ["--seed", "5"], "--contrast-metrics": ["--contrast-metrics", "pairs"],
    "--prompt": ["--prompt", "a photo of {}"], "--layout": ["--layout", "vg"],
    "--min-images": ["--min-images", "2"], "--images-without-concepts":
    ["--images-without-concepts", "drop"], "--filter-split": ["--filter-split", "train"],
    "--concept-map": ["--concept-map", "map.tsv"], "--bins": ["--bins", "5"],
    "--calibration": ["--calibration", "softmax"], "--temperature": ["--temperature", "50"],
    "--words": ["--words", "w.txt"], "--word-source": ["--word-source", "model"],
    "--compare": ["--compare", "other"], "--threshold": ["--threshold", "2"],
    "--top": ["--top", "3"],
}  # fmt: skip
#: Options that are no part of a config: the model list, the data, the printing, the
#: defaults a flag restates, and the HTML report written after the evaluation (its own
#: config, HtmlReportConfig: tests/evaluators/test_html_report.py).
NOT_CONFIG = {"--data", "--model", "--json", "--flipped-retrieval", "--no-allow-private",
              "--predictions", "--html"}  # fmt: skip

CASES = [
    pytest.param(task, option, id=f"{task} {option}")
    for task, options in sorted(EXPECTED.items())
    for option in sorted(options - NOT_CONFIG)
]


def _config(captured: list[Any], *args: str) -> Any:
    result = runner.invoke(app, ["evaluate", *args])
    assert result.exit_code == 0, result.output
    return captured.pop()


@pytest.mark.parametrize(("task", "option"), CASES)
def test_every_option_of_a_task_command_reaches_its_config(
    captured: list[Any], task: str, option: str
) -> None:
    base = ["--data", "data", "--model", SPEC]
    default = _config(captured, task, *base)
    given = _config(captured, task, *base, *VALUES[option])
    assert given != default, option


def test_a_task_command_runs_its_task_and_the_bare_form_lets_the_data_pick(
    captured: list[Any],
) -> None:
    args = ["--data", "data", "--model", SPEC, "--k", "3", "--device", "cpu"]
    named = _config(captured, "visogender", *args)
    bare = _config(captured, *args)
    auto = _config(captured, "auto", *args)
    assert named.task == "visogender" and bare.task is None and auto == bare
    assert named.settings == bare.settings and named.model == bare.model
    assert _config(captured, "contrast", *args).task == "contrast"


def test_the_old_task_spellings_still_work_with_a_deprecation_note(captured: list[Any]) -> None:
    args = ["--data", "vg", "--model", SPEC, "--bootstrap", "5", "--min-images", "2"]
    old = runner.invoke(app, ["evaluate", "--task", "zero-shot-disparity", *args])
    assert old.exit_code == 0, old.output
    assert old.stderr.strip().splitlines() == [
        "deprecated: --task zero-shot-disparity; use `contrastkit evaluate zero-shot`"
    ]
    assert old.stdout == ""
    new = _config(captured, "zero-shot", *args)
    assert captured.pop() == new and new.bootstrap == 5 and new.min_images == 2

    stereotype = runner.invoke(app, ["evaluate", "--task", "stereotype", "--data", "p.tsv",
                                     "--model", SPEC, "--download"])  # fmt: skip
    assert stereotype.exit_code == 0, stereotype.output
    assert "deprecated: --task stereotype; use `contrastkit evaluate stereotype`" in (
        stereotype.stderr
    )
    config = captured.pop()
    assert config.task == "stereotype" and config.model.download  # --download: old spelling
    assert config == _config(captured, "stereotype", "--data", "p.tsv", "--model", SPEC,
                             "--allow-download")  # fmt: skip
    # the analyses of a VisoGender set are no deprecated task
    plain = runner.invoke(app, ["evaluate", "--task", "resolution", "--data", "d", "--model", SPEC])
    assert plain.exit_code == 0 and "deprecated" not in plain.output
    assert captured.pop().settings.tasks == ("resolution",)


def test_a_task_command_refuses_another_tasks_option() -> None:
    result = runner.invoke(app, ["evaluate", "contrast", "--data", "d", "--model", SPEC,
                                 "--neutral"])  # fmt: skip
    assert result.exit_code == 2 and "No such option: --neutral" in result.output


def test_audit_has_the_whole_model_group(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import contrastkit.audit as audit_package

    configs: list[Any] = []

    def record(config: Any, **_: Any) -> Any:
        configs.append(config)
        raise typer.Exit(0)

    monkeypatch.setattr(audit_package, "audit", record)
    result = runner.invoke(app, [
        "audit", str(tmp_path), "--out", str(tmp_path / "out"), "--device", "cpu", "--dtype",
        "float32", "--batch-size", "4", "--workers", "0", "--decode", "pil", "--allow-download",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert configs[0].model == ModelConfig(device="cpu", dtype="float32", batch_size=4,
                                           download=True, workers=0, decode="pil")  # fmt: skip


def test_commands_that_share_a_group_show_its_options_alike() -> None:
    """The one declaration: each shared option has the same names, default and help on
    every command that has it."""
    root: Any = typer.main.get_command(app)
    commands = {
        "audit": root.commands["audit"],
        "evaluate visogender": root.commands["evaluate"].commands["visogender"],
        "evaluate auto": root.commands["evaluate"].commands["auto"],
        "evaluate zero-shot": root.commands["evaluate"].commands["zero-shot"],
        "urls check": root.commands["urls"].commands["check"],
        "urls maintain": root.commands["urls"].commands["maintain"],
    }
    seen: dict[str, tuple[Any, ...]] = {}
    for command in commands.values():
        for param in command.params:
            if param.name in {"device", "dtype", "batch_size", "workers", "decode", "download",
                              "concurrency", "timeout", "retries", "allow_private",
                              "allow_network", "resolve", "bootstrap", "confidence"}:  # fmt: skip
                key = (tuple(param.opts), tuple(param.secondary_opts), param.default, param.help)
                assert seen.setdefault(param.name, key) == key, param.name
    assert {"device", "workers", "decode", "concurrency", "resolve"} <= set(seen)


MODEL_GROUP = {"--device", "--dtype", "--batch-size", "--workers", "--decode", "--allow-download"}
#: Commands that load a model (at least these), with their --batch-size default where it
#: is not the group's 32 (the editing commands edit 8 sources per pass).
MODEL_COMMANDS = {
    ("audit",): 32, ("build", "gensynth"): 8, ("build", "genswap"): 32, ("quickstart",): 8,
    ("evaluate", "auto"): 32, ("evaluate", "visogender"): 32, ("evaluate", "zero-shot"): 32,
}  # fmt: skip


def _commands(command: Any, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], Any]:
    found = {path: command}
    for name, sub in getattr(command, "commands", {}).items():
        found |= _commands(sub, (*path, name))
    return found


#: The commands that also run an image editor: their --dtype help says the editor
#: family's dtype is the default (issue 47.3).
EDITOR_COMMANDS = {("build", "gensynth"), ("quickstart",)}


def test_every_command_that_loads_a_model_offers_the_whole_model_group() -> None:
    """Issue 33: one model group on every model-loading command, the same options with
    the same help; only a default may differ (--batch-size of the editing commands), and
    the --dtype help of the commands that run an editor (issue 47); a command with any of
    the group's options has all of them."""
    commands = _commands(typer.main.get_command(app))
    reference = {param.name: param for param in commands[("audit",)].params}
    having = {path for path, command in commands.items() if _shown_options(command) & MODEL_GROUP}
    assert set(MODEL_COMMANDS) <= having
    for path in having:
        command = commands[path]
        missing = MODEL_GROUP - _shown_options(command)
        assert not missing, (path, missing)
        params = {param.name: param for param in command.params}
        assert params["batch_size"].default == MODEL_COMMANDS.get(path, 32), path
        for name in ("device", "dtype", "batch_size", "workers", "decode", "download"):
            mine, shared = params[name], reference[name]
            assert mine.opts == shared.opts, (path, name)
            if name == "dtype" and path in EDITOR_COMMANDS:  # issue 47: help of its own
                assert "editor family's own" in mine.help, path
                continue
            assert mine.help == shared.help, (path, name)


@pytest.mark.parametrize(
    ("argv", "target", "field", "batch_size"),
    [
        (["build", "gensynth"], "contrastkit.builders.gensynth.job.build_gensynth", "model", 8),
        (["build", "genswap", "--coco", "c", "--faces", "f"],
         "contrastkit.builders.genswap_job.build_genswap", "model", 32),
        (["quickstart"], "contrastkit.apps.quickstart.quickstart", "runtime", 8),
    ],
)  # fmt: skip
def test_the_build_commands_pass_the_model_group_to_their_job(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    argv: list[str],
    target: str,
    field: str,
    batch_size: int,
) -> None:
    import contrastkit.cli.quickstart as quickstart_cli

    monkeypatch.setattr(quickstart_cli, "_quiet_libraries", lambda: None)
    configs: list[Any] = []

    def record(config: Any, **_: Any) -> Any:
        configs.append(config)
        raise typer.Exit(0)

    monkeypatch.setattr(target, record)
    out = ["--out", str(tmp_path / "out")]
    assert runner.invoke(app, [*argv, *out]).exit_code == 0
    assert getattr(configs[0], field) == ModelConfig(batch_size=batch_size)
    result = runner.invoke(app, [
        *argv, *out, "--device", "cpu", "--dtype", "float32", "--batch-size", "4",
        "--workers", "0", "--decode", "pil", "--allow-download",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    given = ModelConfig(
        device="cpu", dtype="float32", batch_size=4, download=True, workers=0, decode="pil"
    )
    assert getattr(configs[1], field) == given


def test_a_built_in_task_s_own_options_give_its_settings_class(
    captured: list[Any], tmp_path: Path
) -> None:
    """`evaluate contrast` and `evaluate decisions` build their own options from their
    settings classes: the values arrive as the task's settings (the shared --k copied
    in), never in EvaluateConfig's deprecated fields."""
    from contrastkit.evaluators.tasks.contrast_sets import ContrastTaskSettings
    from contrastkit.evaluators.tasks.decision_probes import DecisionSettings

    base = ["--data", "data", "--model", SPEC]
    contrast = _config(captured, "contrast", *base, "--k", "3", "--contrast-metrics", "pairs")
    assert contrast.task_settings == ContrastTaskSettings(ks=(3,), metrics="pairs")
    assert contrast.contrast_metrics == "auto"  # the deprecated field is left alone
    assert _config(captured, "contrast", *base, "--k", "2").task_settings == (
        ContrastTaskSettings(ks=(2,))
    )
    decisions = _config(captured, "decisions", *base, "--decision-scoring", "generate",
                        "--questions", "q.yaml")  # fmt: skip
    assert decisions.task_settings == DecisionSettings(scoring="generate", questions=Path("q.yaml"))
    assert (decisions.decision_scoring, decisions.questions) == ("both", None)
    refused = runner.invoke(app, ["evaluate", "contrast", *base, "--contrast-metrics", "most"])
    assert refused.exit_code == 2 and "contrast_metrics must be one of" in refused.output


def test_auto_s_contrast_metrics_reach_a_contrast_set_and_are_refused_elsewhere(
    captured: list[Any], tmp_path: Path, official_op: Path
) -> None:
    """`evaluate --data ...` keeps --contrast-metrics: on a contrast set it becomes the
    contrast task's settings; on data another task reads, a value other than auto is
    refused instead of silently ignored."""
    from contrast_data import contrast_export
    from contrastkit.evaluators.tasks.contrast_sets import ContrastTaskSettings

    data = str(contrast_export(tmp_path / "set", sources=1))
    args = ["--data", data, "--model", SPEC, "--out", str(tmp_path / "out"), "--k", "4"]
    given = _config(captured, *args, "--contrast-metrics", "all")
    assert given.task is None
    assert given.task_settings == ContrastTaskSettings(ks=(4,), metrics="all")
    assert _config(captured, *args).task_settings is None  # auto: the task's defaults
    other = ["--data", str(official_op), "--model", SPEC, "--out", str(tmp_path / "out2")]
    assert _config(captured, *other, "--contrast-metrics", "auto").task_settings is None
    refused = runner.invoke(app, ["evaluate", *other, "--contrast-metrics", "pairs"])
    assert refused.exit_code == 2, refused.output
    assert "--contrast-metrics: only contrast sets have it" in refused.output
    assert "visogender task" in refused.output
    # the deprecated --task stereotype of evaluate auto: the stereotype task has none either
    stereotype = runner.invoke(
        app, ["evaluate", *other, "--task", "stereotype", "--contrast-metrics", "all"]
    )
    assert stereotype.exit_code == 2, stereotype.output
    assert "only contrast sets have it; this data is evaluated by the stereotype task" in (
        stereotype.output
    )


def test_a_settings_field_spells_its_flag_and_takes_a_shared_value() -> None:
    """setting(flag=...) spells the option; setting(shared=...) leaves the option to the
    shared group and copies its value in; a shared name that is no shared setting is
    refused naming the field, before any command runs."""
    from dataclasses import dataclass

    from contrastkit.cli.task_settings import settings_group
    from contrastkit.errors import ConfigError
    from contrastkit.evaluators.engine import TaskSettings, setting
    from contrastkit.evaluators.runner import EvalConfig

    @dataclass(frozen=True)
    class Mine(TaskSettings):
        depth: int = setting(3, help="How deep.", flag="--search-depth")
        ks: tuple[int, ...] = setting((5,), help="Cut-offs.", shared="ks")

    import inspect

    group = settings_group(Mine)
    [option] = group.parameters()
    assert option.name == "depth"

    def command(**values: Any) -> None:
        print(group(**values).settings(EvalConfig(ks=(9,))))

    command.__signature__ = inspect.Signature(group.parameters())  # type: ignore[attr-defined]
    cli = typer.Typer()
    cli.command()(command)
    shown = runner.invoke(cli, ["--help"], env={"COLUMNS": "120"}).output
    assert "--search-depth" in shown and "--ks" not in shown and "--depth" not in shown
    ran = runner.invoke(cli, ["--search-depth", "4"])
    assert ran.exit_code == 0, ran.output
    assert "depth=4, ks=(9,)" in ran.output
    made = group(depth=7).settings(EvalConfig(ks=(2, 4)))
    assert made == Mine(depth=7, ks=(2, 4))
    assert group(depth=7).settings() == Mine(depth=7)  # no shared values: the defaults

    @dataclass(frozen=True)
    class Typo(TaskSettings):
        ks: tuple[int, ...] = setting((5,), help="Cut-offs.", shared="kz")

    with pytest.raises(ConfigError, match=r"Typo.ks: shared='kz' is no shared setting"):
        settings_group(Typo)
