"""Moved modules keep their old import paths for one release: the old path gives the very
same module object (so registries, isinstance checks and monkeypatches agree), with a
DeprecationWarning naming the new path."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "always::DeprecationWarning", "-c", code],
        capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_the_old_models_package_path_is_the_new_package() -> None:
    run = _run(
        "import contrastkit.models.registry as new\n"
        "import contrastkit.evaluators.models.registry as old\n"
        "from contrastkit.evaluators.models import load_model, parse_spec\n"
        "from contrastkit.evaluators.models.openclip import OpenCLIPScorer\n"
        "import contrastkit.models.openclip as openclip\n"
        "import contrastkit.evaluators.models as package, contrastkit.models as real\n"
        "assert old is new and load_model is new.load_model and package is real\n"
        "assert OpenCLIPScorer is openclip.OpenCLIPScorer\n"
        "print(parse_spec('open_clip:ViT-B-32/openai').kind)\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "dual"
    assert "contrastkit.evaluators.models moved to contrastkit.models" in run.stderr


def test_the_new_path_does_not_warn() -> None:
    run = _run("import contrastkit.models.registry, contrastkit.models.families")
    assert run.returncode == 0 and "DeprecationWarning" not in run.stderr, run.stderr


def test_the_old_apps_and_quality_paths_are_the_moved_modules() -> None:
    run = _run(
        "import contrastkit.builders.gensynth.job as job, contrastkit.builders.quality as q\n"
        "from contrastkit.apps.gensynth import build_gensynth, GenSynthConfig\n"
        "import contrastkit.apps.gensynth_ray, contrastkit.builders.gensynth.ray as ray\n"
        "import contrastkit.evaluators.quality as old_q\n"
        "assert build_gensynth is job.build_gensynth and old_q is q\n"
        "assert contrastkit.apps.gensynth_ray is ray\n"
    )
    assert run.returncode == 0, run.stderr
    assert "contrastkit.apps.gensynth moved to contrastkit.builders.gensynth.job" in run.stderr


def test_the_old_zero_shot_package_path_is_the_task_folder() -> None:
    run = _run(
        "import contrastkit.evaluators.tasks.zero_shot.job as job\n"
        "from contrastkit.evaluators.zero_shot.job import zero_shot_disparity\n"
        "import contrastkit.evaluators.zero_shot.groups.vg as old_vg\n"
        "import contrastkit.evaluators.tasks.zero_shot.groups.vg as vg\n"
        "assert zero_shot_disparity is job.zero_shot_disparity and old_vg is vg\n"
    )
    assert run.returncode == 0, run.stderr
    assert (
        "contrastkit.evaluators.zero_shot moved to contrastkit.evaluators.tasks.zero_shot"
        in run.stderr
    )


def test_the_shared_report_modules_do_not_import_the_visogender_folder() -> None:
    run = _run(
        "import sys\n"
        "import contrastkit.evaluators.report.comparison_plots\n"
        "import contrastkit.evaluators.report.plots, contrastkit.evaluators.report.markdown\n"
        "import contrastkit.evaluators.report.results, contrastkit.evaluators.stats\n"
        "print([m for m in sys.modules if 'tasks.visogender' in m])\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "[]"
    assert "DeprecationWarning" not in run.stderr, run.stderr


def test_the_old_visogender_names_of_the_report_modules_are_the_moved_objects() -> None:
    run = _run(
        "import contrastkit.evaluators.tasks.visogender.comparison_plots as comparison\n"
        "import contrastkit.evaluators.tasks.visogender.report as report\n"
        "import contrastkit.evaluators.tasks.visogender.benchmark as benchmark\n"
        "from contrastkit.evaluators.report.comparison_plots import comparison_figure\n"
        "from contrastkit.evaluators.report.plots import write_comparison_plots, CHANCE\n"
        "from contrastkit.evaluators.report.markdown import markdown_report, _labor_section\n"
        "from contrastkit.evaluators.report.results import headline\n"
        "assert comparison_figure is comparison.comparison_figure\n"
        "assert write_comparison_plots is comparison.write_comparison_plots\n"
        "assert markdown_report is report.markdown_report\n"
        "assert _labor_section is report.labor_section and headline is benchmark.headline\n"
        "print(CHANCE['two-way'])\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "0.5"
    assert (
        "contrastkit.evaluators.report.comparison_plots.comparison_figure moved to "
        "contrastkit.evaluators.tasks.visogender.comparison_plots.comparison_figure"
    ) in run.stderr
    assert "report.markdown._labor_section moved to" in run.stderr
    assert "visogender.report.labor_section" in run.stderr


def test_visogender_figures_writer_and_baselines_at_their_old_paths_are_the_moved_ones() -> None:
    run = _run(
        "import contrastkit.evaluators.tasks.visogender.plots as plots\n"
        "import contrastkit.evaluators.tasks.visogender.outputs as outputs\n"
        "import contrastkit.evaluators.tasks.visogender.baselines as baselines\n"
        "from contrastkit.evaluators.report.plots import PLOTS, figures, write_plots\n"
        "import contrastkit.evaluators.report.outputs as old_outputs\n"
        "from contrastkit.evaluators.stats import retrieval_random_baseline, baseline_z\n"
        "from contrastkit.evaluators.report import write_outputs\n"
        "assert PLOTS is plots.PLOTS and figures is plots.figures\n"
        "assert write_plots is plots.write_plots and old_outputs is outputs\n"
        "assert write_outputs is outputs.write_outputs\n"
        "assert retrieval_random_baseline is baselines.retrieval_random_baseline\n"
        "print(baseline_z(1.0, 0.0, 0.0))\n"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(nan, 'baseline spread ~0')"
    assert "report.plots.figures moved to" in run.stderr
    assert "report.outputs moved to contrastkit.evaluators.tasks.visogender.outputs" in run.stderr
    assert (
        "stats.baseline_z moved to contrastkit.evaluators.tasks.visogender.baselines" in run.stderr
    )


def test_the_engine_s_old_harness_task_lookup_is_the_registry_s() -> None:
    run = _run(
        "import contrastkit.evaluators.tasks.registry as registry\n"
        "from contrastkit.evaluators.engine.harness import harness_tasks, task_questions\n"
        "assert harness_tasks is registry.harness_tasks\n"
        "assert task_questions is registry.task_questions\n"
    )
    assert run.returncode == 0, run.stderr
    assert (
        "engine.harness.task_questions moved to contrastkit.evaluators.tasks.registry"
    ) in run.stderr


def test_a_name_no_report_module_had_is_still_an_attribute_error() -> None:
    run = _run("from contrastkit.evaluators.report.plots import no_such_plot")
    assert run.returncode != 0 and "ImportError" in run.stderr, run.stderr
