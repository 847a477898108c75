"""Plugins that fail (issue 44 item 8): each is named (its distribution and entry point)
in one line with exit 2, never a traceback, never exit 0 with nothing done; a plugin that
claims a name already taken breaks only the commands that use that name.

Each plugin is a real distribution (a module and a ``.dist-info`` folder) on the path of
a fresh ``python -m contrastkit`` process, as tests/test_plugins.py installs its example.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from contrast_data import contrast_export
from contrastkit.evaluators.data import visogender_files

OFFICIAL_OP, OFFICIAL_OO = visogender_files()


def plugin(site: Path, group: str, code: str, value: str = "badplug:THING") -> Path:
    """Install distribution ``bad-plug`` into ``site``: module ``badplug`` (``code``) and
    one entry point ``thing = value`` in ``group``."""
    site.mkdir(parents=True)
    (site / "badplug.py").write_text(code, encoding="utf-8")
    info = site / "bad_plug-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: bad-plug\nVersion: 0.1\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[{group}]\nthing = {value}\n", encoding="utf-8")
    return site


def contrastkit(site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "contrastkit", *map(str, args)],
        capture_output=True, text=True, env=env, check=False, timeout=600,
    )  # fmt: skip


def named(run: subprocess.CompletedProcess[str]) -> None:
    """Exit 2, one line naming the plugin and how to be rid of it, no traceback."""
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr
    assert "plugin bad-plug:thing" in run.stderr and "uninstall bad-plug" in run.stderr


DUPLICATE_KIND = """\
from dataclasses import replace
from contrastkit.kinds import BUILT_IN
THING = replace(next(k for k in BUILT_IN if k.name == "{name}"), detect="badplug:never")
def never(path):
    return False
"""


def test_a_plugin_claiming_a_taken_kind_breaks_only_that_kind(tmp_path: Path) -> None:
    stereotype = plugin(
        tmp_path / "a", "contrastkit.kinds", DUPLICATE_KIND.format(name="stereotype")
    )
    run = contrastkit(stereotype, "export", "visogender", OFFICIAL_OP, OFFICIAL_OO,
                      "--out", tmp_path / "export")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert (tmp_path / "export").is_dir()

    visogender = plugin(
        tmp_path / "b", "contrastkit.kinds", DUPLICATE_KIND.format(name="visogender")
    )
    # the export that recognises the data finds the name contested (export visogender
    # names the built-in kind itself, and works)
    run = contrastkit(visogender, "export", OFFICIAL_OP, OFFICIAL_OO, "--out", tmp_path / "other")
    named(run)
    assert "dataset kind 'visogender'" in run.stderr and "(by contrastkit)" in run.stderr
    assert not (tmp_path / "other").exists()


def test_a_plugin_claiming_a_taken_model_prefix_breaks_only_that_prefix(tmp_path: Path) -> None:
    site = plugin(tmp_path / "site", "contrastkit.models", (
        "from contrastkit.models.families import ModelFamily\n"
        "THING = ModelFamily('open_clip', 'dual', 'x', 'open_clip:x', 'badplug:load')\n"
    ))  # fmt: skip
    run = contrastkit(site, "export", "visogender", OFFICIAL_OP, OFFICIAL_OO,
                      "--out", tmp_path / "export")  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    listed = contrastkit(site, "models", "list")
    assert listed.returncode == 0 and "open_clip" in listed.stdout
    data = contrast_export(tmp_path / "set", sources=1)
    run = contrastkit(site, "evaluate", "--data", data, "--model", "open_clip:ViT-B-32/openai",
                      "--out", tmp_path / "out")  # fmt: skip
    named(run)
    assert "model family 'open_clip'" in run.stderr
    assert not (tmp_path / "out").exists()


RAISES = {
    "SystemExit(0)": "raise SystemExit(0)\n",
    "a BaseException subclass": "class Boom(BaseException):\n    pass\nraise Boom('boom')\n",
    "an object whose iteration raises": (
        "class Tasks:\n    def __iter__(self):\n        raise RuntimeError('no tasks today')\n"
        "THING = Tasks()\n"
    ),
}


@pytest.mark.parametrize("name", list(RAISES))
def test_a_plugin_that_raises_anything_is_named_and_nothing_is_written(
    tmp_path: Path, name: str, tiny_clip_spec: str
) -> None:
    site = plugin(tmp_path / "site", "contrastkit.tasks", RAISES[name])
    data = contrast_export(tmp_path / "set", sources=1)
    out = tmp_path / "out"
    run = contrastkit(site, "evaluate", "--data", data, "--model", tiny_clip_spec,
                      "--out", out, "--device", "cpu")  # fmt: skip
    named(run)
    assert "entry point group contrastkit.tasks" in run.stderr
    assert not out.exists() or not any(out.iterdir())
    # commands that read no task still work
    assert contrastkit(site, "--version").returncode == 0


def test_a_plugin_function_whose_module_exits_at_import_is_named(tmp_path: Path) -> None:
    """A kind's ``detect`` names a module that calls ``sys.exit(0)`` when imported (at the
    first sniff, not at the entry point's load): exit 2 naming it, not exit 0."""
    site = plugin(tmp_path / "site", "contrastkit.kinds", (
        "from contrastkit.kinds import DatasetKind\n"
        "THING = DatasetKind('odd', 'an odd folder', 'odd folders', 'badexit:detect')\n"
    ))  # fmt: skip
    (site / "badexit.py").write_text("raise SystemExit(0)\n", encoding="utf-8")
    run = contrastkit(site, "export", OFFICIAL_OO, "--out", tmp_path / "export")
    assert run.returncode == 2, (run.returncode, run.stderr[-2000:])
    assert "dataset kind 'odd' (bad-plug:thing)" in run.stderr
    assert "badexit:detect does not import: SystemExit" in run.stderr
    assert "Traceback" not in run.stderr and not (tmp_path / "export").exists()


def test_a_plugin_task_on_the_protocol_without_a_result_class_is_named(tmp_path: Path) -> None:
    """A protocol task declared incompletely (no result class) is the plugin error of
    every other bad plugin: named, how to be rid of it, what is missing."""
    site = plugin(tmp_path / "site", "contrastkit.tasks", (
        "from contrastkit import extend\n"
        "class Half(extend.Task):\n"
        "    name, kind = 'half', 'contrast'\n"
        "THING = Half()\n"
    ))  # fmt: skip
    run = contrastkit(site, "evaluate", "--help")
    named(run)
    assert "set its 'result' class attribute" in run.stderr
