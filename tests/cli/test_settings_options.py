"""A settings class is where a task's options come from, built-in and plugin tasks alike:
:func:`~contrastkit.evaluators.engine.setting`'s option details (spelling, help panel,
minimum, joined values, a flag without ``--no-``) reach the command, and VisoGender's and
the zero-shot analysis' options are the fields of their settings classes."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import typer
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.cli.evaluate_options import AUTO_GROUPS, TASK_GROUPS, VisoGenderOptions
from contrastkit.cli.task_settings import SettingsOptions, settings_group
from contrastkit.cli.zero_shot import ZeroShotOptions
from contrastkit.errors import ConfigError
from contrastkit.evaluators.engine import TaskSettings, setting
from contrastkit.evaluators.evaluation import EvaluateConfig
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.evaluators.tasks.visogender.settings import AnalysisSettings
from contrastkit.evaluators.tasks.visogender.task import VISOGENDER
from contrastkit.evaluators.tasks.zero_shot.task import ZeroShotSettings

runner = CliRunner()
SPEC = "open_clip:ViT-B-32/openai"


@dataclass(frozen=True)
class Detailed(TaskSettings):
    sizes: tuple[int, ...] = setting(
        (1, 2), help="Sizes.", flag="--size", separator=",", panel="Sizing"
    )
    strict: bool = setting(False, help="Be strict.", negatable=False)
    depth: int = setting(3, help="How deep.", min=2)
    names: tuple[str, ...] = setting(("a",), help="Names.")
    folders: tuple[Path, ...] = setting((), help="Folders.", separator=":")


def _cli(group: type[SettingsOptions]) -> typer.Typer:
    def command(**values: Any) -> None:
        print(repr(group(**values).settings()))

    command.__signature__ = inspect.Signature(group.parameters())  # type: ignore[attr-defined]
    cli = typer.Typer()
    cli.command()(command)
    return cli


def test_option_details_spell_panel_bound_and_join_the_options() -> None:
    cli = _cli(settings_group(Detailed))
    shown = runner.invoke(cli, ["--help"], env={"COLUMNS": "120"}).output
    assert "Sizing" in shown and "Task settings" in shown  # its panel, and the default one
    assert "[default: 1,2]" in shown  # a joined option shows its default joined
    assert "--strict" in shown and "--no-strict" not in shown
    assert "x>=2" in shown and "Repeatable" in shown  # --names: a repeatable option
    ran = runner.invoke(cli, ["--size", "4, 5,", "--strict", "--names", "b", "--names", "c"])
    assert ran.exit_code == 0, ran.output
    assert "Detailed(sizes=(4, 5), strict=True, depth=3, names=('b', 'c'), folders=())" in (
        ran.output
    )
    paths = runner.invoke(cli, ["--folders", "a:b/c"])
    assert "folders=(PosixPath('a'), PosixPath('b/c')))" in paths.output  # of the field's type
    assert runner.invoke(cli, []).output.strip() == repr(Detailed())
    low = runner.invoke(cli, ["--depth", "1"])
    assert low.exit_code == 2 and "--depth" in low.output  # below its min: typer refuses
    group = settings_group(Detailed)
    with pytest.raises(ConfigError, match=r"--size takes comma-separated integers, not 'x'"):
        group(sizes="x").settings()  # type: ignore[call-arg]
    with pytest.raises(ConfigError, match=r"--size needs at least one value"):
        group(sizes=" , ").settings()  # type: ignore[call-arg]


def test_an_unknown_option_detail_or_one_its_type_cannot_take_is_refused() -> None:
    """A detail that would be ignored is refused, naming the field."""
    with pytest.raises(ConfigError, match=r"unknown option detail\(s\) minimum"):
        setting(1, help="x", minimum=1)  # type: ignore[call-arg]

    @dataclass(frozen=True)
    class Wrong(TaskSettings):
        name: str | None = setting(None, help="A name.", separator=",", min=1)

    with pytest.raises(ConfigError, match=r"Wrong.name: separator, min does not apply"):
        settings_group(Wrong)

    @dataclass(frozen=True)
    class Flag(TaskSettings):
        depth: int = setting(1, help="Depth.", negatable=False)

    with pytest.raises(ConfigError, match=r"Flag.depth: negatable does not apply"):
        settings_group(Flag)


def test_visogenders_options_are_the_fields_of_its_settings_class() -> None:
    """The ``visogender`` option group (``evaluate visogender``, a plugin task naming it)
    and ``evaluate auto``'s are made from AnalysisSettings: each field's flag and help."""
    [group] = TASK_GROUPS["visogender"]
    assert issubclass(group, SettingsOptions) and group.settings_class is AnalysisSettings
    own = [spec.name for spec in dataclasses.fields(AnalysisSettings)]
    assert [spec.name for spec in dataclasses.fields(group)] == [n for n in own if n != "ks"]
    assert VisoGenderOptions in AUTO_GROUPS  # evaluate auto: no --only (it has --task)
    assert "tasks" not in {spec.name for spec in dataclasses.fields(VisoGenderOptions)}
    shown = runner.invoke(app, ["evaluate", "visogender", "--help"], env={"COLUMNS": "200"})
    for spec in dataclasses.fields(AnalysisSettings):
        assert spec.metadata["help"] in shown.output, spec.name
    assert "--no-neutral" not in shown.output


def test_the_zero_shot_options_are_predictions_and_the_fields_of_its_settings() -> None:
    names = [spec.name for spec in dataclasses.fields(ZeroShotOptions)]
    assert names == ["predictions", *(spec.name for spec in dataclasses.fields(ZeroShotSettings))]
    made = ZeroShotOptions(bins=4, predictions=None).settings()  # type: ignore[call-arg]
    assert made == ZeroShotSettings(bins=4)
    bad = runner.invoke(app, ["evaluate", "zero-shot", "--data", "d", "--model", SPEC,
                              "--bins", "0"])  # fmt: skip
    assert bad.exit_code == 2 and "--bins" in bad.output


def test_visogender_analyses_as_task_settings_from_python() -> None:
    """``EvaluateConfig(task_settings=AnalysisSettings(...))`` is what ``evaluate
    visogender``'s options mean, applied to ``settings`` (the bootstrap, the seed); an
    analysis given both ways with different values is refused, never one ignored."""
    base = {"data": ("x",), "models": (SPEC,), "out": "o"}
    config = EvaluateConfig(
        **base, settings=EvalConfig(seed=3), task_settings=AnalysisSettings(protocol="two-way")
    )
    analyses = VISOGENDER.settings_of(config).analyses
    assert analyses.protocol == "two-way" and analyses.seed == 3
    assert analyses == EvalConfig(seed=3, protocol="two-way")
    same = EvaluateConfig(
        **base, settings=EvalConfig(neutral=True), task_settings=AnalysisSettings(neutral=True)
    )
    assert VISOGENDER.settings_of(same).analyses.neutral
    clash = EvaluateConfig(
        **base, settings=EvalConfig(neutral=True), task_settings=AnalysisSettings()
    )
    with pytest.raises(ConfigError, match=r"settings.neutral: True here and False in task_"):
        VISOGENDER.settings_of(clash)
    with pytest.raises(ConfigError, match="protocol"):
        AnalysisSettings(protocol="3-way")
    assert AnalysisSettings(tasks=("retrieval", "retrieval")).tasks == ("retrieval",)
