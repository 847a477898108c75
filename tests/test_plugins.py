"""Plugins: a package installed beside contrastkit adds a model family through an entry
point, without forking. The example package (tests/plugin_example) is installed as a real
distribution: a ``.dist-info`` folder written from its ``pyproject.toml`` on the path of
a fresh ``python -m contrastkit`` process, which ``importlib.metadata`` finds as it finds
any installed package."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from contrast_data import contrast_export
from contrastkit.errors import ConfigError
from contrastkit.models.families import BUILT_IN, ModelFamily, register_model

PLUGIN = Path(__file__).parent / "plugin_example"


def install(site: Path, entry_points: dict[str, dict[str, str]] | None = None) -> Path:
    """Install the example plugin into ``site`` (its package and a ``.dist-info``);
    ``entry_points`` replaces the ones its pyproject.toml declares."""
    project = tomllib.loads((PLUGIN / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    shutil.copytree(PLUGIN / "contrastkit_example_plugin", site / "contrastkit_example_plugin")
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n",
        encoding="utf-8",
    )
    groups = entry_points if entry_points is not None else project["entry-points"]
    lines = []
    for group, points in groups.items():
        lines.append(f"[{group}]")
        lines += [f"{name} = {value}" for name, value in points.items()]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return site


def contrastkit(site: Path, *args: object) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), *sys.path])}
    return subprocess.run(
        [sys.executable, "-m", "contrastkit", *map(str, args)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip


@pytest.mark.slow
def test_a_plugin_model_family_is_listed_and_evaluates(tmp_path: Path, tiny_clip_spec: str) -> None:
    site = install(tmp_path / "site")
    listed = contrastkit(site, "models", "list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {row["prefix"]: row for row in json.loads(listed.stdout)["families"]}
    assert rows["grey-clip"]["source"] == "contrastkit-example-plugin:grey-clip"
    assert rows["grey-clip"]["capabilities"] == "embeddings, captions"
    assert rows["open_clip"]["source"] == "contrastkit"
    shown = contrastkit(site, "models", "list")
    assert "grey-clip" in shown.stdout and "contrastkit-example-plugin" in shown.stdout

    data = contrast_export(tmp_path / "set", sources=3)
    # the plugin's model and its base in one run (one torch import): a folder for each
    specs = [f"grey-clip:{tiny_clip_spec}", tiny_clip_spec]
    out = tmp_path / "out"
    run = contrastkit(site, "evaluate", "--data", data, "--model", specs[0], "--model", specs[1],
                      "--out", out, "--k", "2", "--bootstrap", "0", "--device", "cpu")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    folders = [p for p in out.iterdir() if p.is_dir() and not p.name.startswith("_")]
    assert len(folders) == len(specs)
    scores = {}
    for folder in folders:
        spec = json.loads((folder / "benchmark.json").read_text())["model"]
        raw = (folder / "raw_contrast.jsonl").read_text().splitlines()
        scores[spec] = [json.loads(line)["score_masculine"] for line in raw]
    assert sorted(scores) == sorted(specs)
    # the plugin's model saw other (greyscale) images than its base model
    assert scores[f"grey-clip:{tiny_clip_spec}"] != scores[tiny_clip_spec]

    # its base must be a dual encoder: the registry's check, before anything loads
    refused = contrastkit(site, "evaluate", "--data", data, "--model", "grey-clip:vilt:x",
                          "--out", tmp_path / "x")  # fmt: skip
    assert refused.returncode == 2 and "image-text-matching model" in refused.stderr


def test_a_broken_plugin_is_named_never_skipped(tmp_path: Path) -> None:
    site = install(tmp_path / "site", {"contrastkit.models": {"bad": "no_such_module:FAMILY"}})
    run = contrastkit(site, "models", "list")
    assert run.returncode == 2
    assert "plugin contrastkit-example-plugin:bad" in run.stderr
    assert "no_such_module" in run.stderr and "uninstall contrastkit-example-plugin" in run.stderr
    wrong = install(tmp_path / "wrong", {"contrastkit.models": {"x": "json:dumps"}})
    run = contrastkit(wrong, "models", "list")
    assert run.returncode == 2 and "not a ModelFamily" in run.stderr


def test_families_are_checked_when_made_and_registered() -> None:
    with pytest.raises(ConfigError, match="already registered"):
        register_model(ModelFamily("open_clip", "dual", "x", "open_clip:x", "m:f"))
    assert register_model(BUILT_IN[0]) is BUILT_IN[0]  # the same record again is no clash
    with pytest.raises(ConfigError, match="kind must be one of"):
        ModelFamily("x", "generative", "x", "x:y", "m:f")
    with pytest.raises(ConfigError, match="unknown capabilities"):
        ModelFamily("x", "dual", "x", "x:y", "m:f", capabilities=frozenset({"telepathy"}))
    with pytest.raises(ConfigError, match="'module:function'"):
        ModelFamily("x", "dual", "x", "x:y", "not a path")


def pip_install(site: Path, tmp_path: Path) -> Path:
    """Install the example plugin into ``site`` from its own distribution: pip builds it
    from a copy of tests/plugin_example (its pyproject.toml) and installs the wheel, as
    a user's ``pip install`` would; contrastkit itself is the one already installed."""
    source = shutil.copytree(PLUGIN, tmp_path / "plugin-source")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
         "--no-build-isolation", "--disable-pip-version-check", "--target", str(site),
         str(source)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return site


@pytest.mark.slow
def test_a_plugin_kind_and_task_are_evaluated_and_compared(
    tmp_path: Path, tiny_clip_spec: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The example package's caption-pairs kind and caption-preference task, written on
    the task protocol with the public API only: `evaluate` recognises the data and runs
    the task with its own option, its result fits its schema and has intervals and a
    figure, a rerun resumes, and `report` puts its results side by side, all without a
    line of contrastkit changed."""
    import jsonschema
    from PIL import Image

    from contrastkit.results.schema import json_schema

    site = pip_install(tmp_path / "site", tmp_path)
    data = tmp_path / "pairs"
    data.mkdir()
    lines = ["image\tmasculine\tfeminine"]
    for n, colour in enumerate([(200, 10, 60), (60, 10, 200), (90, 90, 90)]):
        Image.new("RGB", (32, 32), colour).save(data / f"{n}.png")
        lines.append(f"{n}.png\tA man in a room.\tA woman in a room.")
    (data / "caption_pairs.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")

    run = contrastkit(site, "evaluate", "--data", data, "--model", tiny_clip_spec,
                      "--out", tmp_path / "out", "--device", "cpu")  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "masculine preferred" in run.stdout and "random weights" in run.stdout
    [folder] = [p for p in (tmp_path / "out").iterdir() if p.is_dir()]
    benchmark = json.loads((folder / "benchmark.json").read_text())
    assert benchmark["task"] == "caption-preference" and benchmark["items"] == 3
    share = benchmark["masculine_preferred"]
    assert share in (0.0, 1 / 3, 2 / 3, 1.0)
    assert benchmark["masculine_preferred_ci"]["resamples"] == 1000  # the engine's bootstrap
    assert benchmark["random_weights"] is True and benchmark["settings"] == {"template": "{}"}
    assert (folder / "plots" / "caption_preference.png").stat().st_size > 0
    assert "plots/caption_preference.png" in (folder / "report.md").read_text()

    # the task has its own command: the options every task command has and its own
    own = contrastkit(site, "evaluate", "caption-preference", "--help")
    assert own.returncode == 0, own.stderr
    assert "--device" in own.stdout and "--allow-download" in own.stdout
    assert "--template" in own.stdout and "--bootstrap" in own.stdout
    assert "caption-pairs folder" in own.stdout and "--neutral" not in own.stdout
    named = contrastkit(site, "evaluate", "caption-preference", "--data", data, "--model",
                        tiny_clip_spec, "--out", tmp_path / "out", "--device", "cpu",
                        "--json")  # fmt: skip
    assert named.returncode == 0, named.stderr[-3000:]
    assert json.loads(named.stdout)[0]["reused_records"] == 3  # resumed
    assert json.loads((folder / "benchmark.json").read_text()) == benchmark
    templated = contrastkit(site, "evaluate", "caption-preference", "--data", data, "--model",
                            tiny_clip_spec, "--out", tmp_path / "t", "--device", "cpu",
                            "--template", "a photo of {}")  # fmt: skip
    assert templated.returncode == 0, templated.stderr[-3000:]
    [other] = [p for p in (tmp_path / "t").iterdir() if p.is_dir()]
    assert json.loads((other / "benchmark.json").read_text())["settings"] == {
        "template": "a photo of {}"
    }
    refused = contrastkit(site, "evaluate", "caption-preference", "--data", data, "--model",
                          tiny_clip_spec, "--template", "no slot")  # fmt: skip
    assert refused.returncode == 2 and "template: must hold" in refused.stderr
    wrong = contrastkit(site, "evaluate", "caption-preference", "--data", data, "--model",
                        tiny_clip_spec, "--k", "3")  # fmt: skip
    assert wrong.returncode == 2 and "No such option: --k" in wrong.stderr

    shown = contrastkit(site, "report", folder, other, "--json")
    assert shown.returncode == 0, shown.stderr[-3000:]
    first, _ = json.loads(shown.stdout)  # the headlines, one per result
    assert first == {"task": "caption-preference", "model": tiny_clip_spec, "images": 3,
                     "masculine preferred": share}  # fmt: skip
    table = contrastkit(site, "report", folder)
    assert "## Caption preference" in table.stdout and f"| {share:.2f} [" in table.stdout

    # without the plugin the same folder is no dataset contrastkit reads
    bare = contrastkit(tmp_path / "nothing", "evaluate", "--data", data, "--model",
                       tiny_clip_spec, "--out", tmp_path / "bare")  # fmt: skip
    assert bare.returncode == 2

    # its benchmark.json fits the JSON schema generated from its result class
    monkeypatch.syspath_prepend(str(site))
    from contrastkit_example_plugin.preference import PreferenceResult

    jsonschema.validate(benchmark, json_schema(PreferenceResult))


def test_the_example_plugin_uses_only_the_public_extension_api() -> None:
    """Every contrastkit import of the example plugin is `contrastkit.extend` (or the
    package itself): what a plugin needs is public, nothing internal is reached for."""
    import ast

    imported = set()
    for path in (PLUGIN / "contrastkit_example_plugin").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(alias.name for alias in node.names)
    ours = {name for name in imported if name.split(".")[0] == "contrastkit"}
    assert ours == {"contrastkit", "contrastkit.extend"}
