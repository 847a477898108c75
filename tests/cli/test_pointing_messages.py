"""Messages that point the right way (issue 47.3): a mistyped model folder is called a
missing folder, not an unknown architecture; the command line names its flags, not the
Python arguments behind them; a warning does not ask for what was already given."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ModelNotFoundError
from contrastkit.models import load_model

runner = CliRunner()


def _models(tmp_path: Path) -> Path:
    """A folder of model folders, as ``contrastkit quickstart`` leaves it."""
    models = tmp_path / "build" / "models"
    for name in ("tiny-open-clip", "tiny-instruct-pix2pix"):
        (models / name).mkdir(parents=True)
    return models


@pytest.mark.parametrize("prefix", ["open_clip", "hf-clip"])
def test_a_mistyped_model_folder_is_a_missing_folder_with_the_closest_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, prefix: str
) -> None:
    _models(tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelNotFoundError) as raised:
        load_model(f"{prefix}:build/models/tiny-open-clp", ModelConfig(device="cpu"))
    message = str(raised.value)
    assert "build/models/tiny-open-clp does not exist" in message
    assert "did you mean build/models/tiny-open-clip?" in message
    assert "architecture" not in message


def test_the_command_line_says_the_model_folder_does_not_exist(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _models(tmp_path)
    data = contrast_export(tmp_path / "set", sources=1)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, [
        "evaluate", "contrast", "--data", str(data), "--model",
        "open_clip:build/models/tiny-open-clp", "--out", str(tmp_path / "res"),
    ])  # fmt: skip
    assert result.exit_code == 2
    assert "folder build/models/tiny-open-clp does not exist" in result.output
    assert "unknown OpenCLIP architecture" not in result.output


def test_the_command_line_names_flags_where_python_names_arguments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))  # no ~/.cache/clip here
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    spec = "open_clip:ViT-B-32/laion2b_s34b_b79k"
    with pytest.raises(ModelNotFoundError, match=r"pass download=True"):
        load_model(spec)  # the Python API keeps Python's words
    data = contrast_export(tmp_path / "set", sources=1)
    result = runner.invoke(
        app, ["evaluate", "contrast", "--data", str(data), "--model", spec, "--out", "res"]
    )
    assert result.exit_code == 2
    assert "pass `--allow-download`" in result.output and "download=True" not in result.output
    editor = runner.invoke(app, ["build", "gensynth", "--coco", str(tmp_path), "--out",
                                 str(tmp_path / "b"), "--editor", "nobody/no-editor"])  # fmt: skip
    assert editor.exit_code == 2
    assert "`--allow-download`" in editor.output and "download=True" not in editor.output
    export = tmp_path / "export"
    export.mkdir()
    (export / "build_metadata.json").write_text(
        '{"configs": {}, "random_weights": {"editor": true, "encoder": false}}'
    )
    published = runner.invoke(app, ["publish", str(export), "--repo-id", "me/set"])
    assert published.exit_code == 2
    assert "pass `--i-know-these-are-random-weights`" in published.output
    assert "allow_random_weights" not in published.output
    tree = runner.invoke(app, ["publish", str(export), "--repo-id", "me/set", "--tree", "t"])
    assert tree.exit_code == 2 and "--tree: only a dry run" in tree.output
    assert "pass `--dry-run`" in tree.output and "dry_run" not in tree.output


@pytest.mark.parametrize(("tau", "asks"), [(-1.0, False), (None, True)])
def test_the_random_editor_warning_asks_for_accept_all_thresholds_only_when_not_given(
    tmp_path: Path, tau: float | None, asks: bool
) -> None:
    from contrastkit.builders.gensynth.job import GenSynthConfig
    from contrastkit.builders.gensynth.notes import start_notes
    from contrastkit.builders.gensynth.settings import resolve_settings
    from contrastkit.tiny.marker import mark_random_weights

    editor = tmp_path / "editor"
    mark_random_weights(editor)
    config = GenSynthConfig(out=tmp_path / "b", coco=tmp_path, editor=str(editor),
                            embedder="open_clip:ViT-B-32/openai", tau_real=tau,
                            tau_gender=tau)  # fmt: skip
    [warning] = [n for n in start_notes(config, resolve_settings(config)) if "editor" in n]
    assert "random weights" in warning
    assert ("give --tau-real -1 --tau-gender -1" in warning) is asks
    if not asks:
        assert "accepts every one of them at --tau-real -1 --tau-gender -1" in warning
        assert "few or none" not in warning


def test_allow_download_without_a_network_says_so_and_points_at_no_hidden_traceback(
    tmp_path: Path, coco_dir: Path
) -> None:
    import os
    import subprocess

    from factories import console_script

    env = {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens: refused
           "HF_HUB_CACHE": str(tmp_path / "hub"), "HF_HUB_OFFLINE": "0"}  # fmt: skip
    result = subprocess.run(
        [console_script(), "build", "gensynth", "--coco", str(coco_dir), "--out",
         str(tmp_path / "b"), "--allow-download", "--editor", "someone/some-editor"],
        capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("environment error: editor model 'someone/some-editor' could not")
    assert "no connection to the Hugging Face Hub" in last
    assert "stacktrace" not in result.stderr.lower() and "Traceback" not in result.stderr


def _option_help(command: list[str], option: str) -> str:
    import typer as typer_module

    click_command = typer_module.main.get_command(app)
    for word in command:
        click_command = click_command.get_command(None, word)  # type: ignore[attr-defined]
    [param] = [p for p in click_command.params if option in p.opts]
    return str(param.help)


def test_each_command_s_help_speaks_of_what_it_runs() -> None:
    decisions = _option_help(["evaluate", "decisions"], "--model")
    assert "vlm:" in decisions and "open_clip:" not in decisions  # a generative model
    assert "open_clip:" in _option_help(["evaluate", "contrast"], "--model")
    for command in (["evaluate", "decisions"], ["evaluate", "visogender"], ["audit"]):
        assert "editor" not in _option_help(command, "--dtype")
    for command in (["build", "gensynth"], ["quickstart"]):  # they run an editor
        assert "editor family" in _option_help(command, "--dtype")


def test_urls_check_on_local_image_paths_says_there_is_nothing_to_check(
    tmp_path: Path,
) -> None:
    from contrastkit.schema import Context, Gender
    from contrastkit.tsv import write_visogender_tsv
    from factories import make_row

    m, f = Gender.MASCULINE, Gender.FEMININE
    rows = [make_row("doctor", m, n=1, url="images/a.jpg"),
            make_row("doctor", f, n=2, url=str(tmp_path / "images" / "b.jpg")),
            make_row("nurse", f, n=3, url="file:///data/c.jpg")]  # fmt: skip
    local = tmp_path / "local_OO.tsv"
    write_visogender_tsv(local, rows, Context.OO)
    result = runner.invoke(app, ["urls", "check", str(local)])
    assert result.exit_code == 0, result.output
    assert "invalid_url" not in result.output
    assert "3 rows with a local image file, not URL-checked" in result.output
    assert "no URLs to check: nothing to check for local files" in result.output
    typo = tmp_path / "typo_OO.tsv"
    write_visogender_tsv(
        typo, [*rows, make_row("nurse", m, n=4, url="htps://x.example/d.jpg")], Context.OO
    )
    checked = runner.invoke(app, ["urls", "check", str(typo), "--json"])
    assert checked.exit_code == 1  # a URL with a mistyped scheme is still checked
    report = json.loads(checked.output)
    assert [row["status"] for row in report["results"]] == ["invalid_url"]
    assert report["local_rows"] == 3


def test_export_contrast_of_a_missing_or_foreign_folder_says_what_it_is(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["export", "contrast", str(tmp_path / "nope"), "--out", "x"])
    assert missing.exit_code == 2
    assert f"{tmp_path / 'nope'}: no such folder" in missing.output
    assert "select stage" not in missing.output
    (tmp_path / "coco" / "annotations").mkdir(parents=True)  # a COCO folder, say
    foreign = runner.invoke(app, ["export", "contrast", str(tmp_path / "coco"), "--out", "x"])
    assert foreign.exit_code == 2 and "not a build folder" in foreign.output
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "manifest.jsonl").write_text("")
    unselected = runner.invoke(app, ["export", "contrast", str(tmp_path / "build"), "--out", "x"])
    assert unselected.exit_code == 2 and "run the select stage first" in unselected.output


def test_a_wrong_coco_split_names_the_splits_the_folder_has(coco_dir: Path) -> None:
    from contrastkit.builders.coco import find_split
    from contrastkit.errors import DataFormatError

    [split] = [p.name[len("captions_") : -5] for p in coco_dir.glob("annotations/captions_*")]
    with pytest.raises(DataFormatError) as raised:
        find_split(coco_dir, "val2071")
    assert f"the split here is {split} (--split {split})" in str(raised.value)


def test_a_failed_build_leaves_no_empty_output_folder_it_made(tmp_path: Path) -> None:
    missing = str(tmp_path / "nope.csv")
    made = tmp_path / "new" / "deeper" / "out"
    result = runner.invoke(
        app, ["build", "visogender", "--candidates", missing, "--out", str(made)]
    )
    assert result.exit_code == 2
    assert not (tmp_path / "new").exists()  # with the parents it made for it
    existing = tmp_path / "mine"
    existing.mkdir()
    again = runner.invoke(
        app, ["build", "visogender", "--candidates", missing, "--out", str(existing)]
    )
    assert again.exit_code == 2 and existing.is_dir()  # not the command's to remove
    no_editor = str(tmp_path / "no-editor")
    gensynth = runner.invoke(app, ["build", "gensynth", "--coco", str(tmp_path / "no-coco"),
                                   "--out", str(made), "--editor", no_editor])  # fmt: skip
    assert gensynth.exit_code == 2 and not (tmp_path / "new").exists()


def test_ctrl_c_during_build_gensynth_says_what_was_kept_and_how_to_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import contrastkit.builders.gensynth.job as job

    out = tmp_path / "build"

    def interrupted_after_three_edits(*args: object, **kwargs: object) -> None:
        out.mkdir()
        (out / "manifest.jsonl").write_text('{"edit_id": "a"}\n' * 3)
        raise KeyboardInterrupt

    monkeypatch.setattr(job, "build_gensynth", interrupted_after_three_edits)
    result = runner.invoke(app, ["build", "gensynth", "--coco", str(tmp_path), "--out", str(out)])
    assert result.exit_code == 130
    assert f"interrupted: {out} keeps 3 finished edits (manifest.jsonl)" in result.output
    assert "rerun the same command to resume" in result.output
    assert out.is_dir()  # what was kept stays


def test_a_tiny_flux_kontext_edit_hides_only_the_warnings_expected_of_a_tiny_model(
    tmp_path: Path,
) -> None:
    import logging
    import shutil

    from PIL import Image

    from contrastkit.curation.editing import EditSpec
    from contrastkit.curation.editor_families import KEEP_THE_REST_INSTRUCTIONS
    from contrastkit.curation.editors import load_editor
    from contrastkit.schema import Gender
    from contrastkit.tiny.editor import tiny_flux_kontext
    from contrastkit.tiny.marker import MARKER_FILE

    tiny = Path(str(tiny_flux_kontext(tmp_path / "tiny")).partition(":")[2])  # flux-kontext:DIR
    unmarked = tmp_path / "unmarked"  # the same pipeline, not marked as a tiny model
    shutil.copytree(tiny, unmarked)
    (unmarked / MARKER_FILE).unlink()
    instruction = max(KEEP_THE_REST_INSTRUCTIONS[Gender.FEMININE], key=len)  # > 77 characters
    spec = EditSpec("e", "s", Gender.FEMININE, instruction, 2.5, None, 1, 0)
    image = Image.new("RGB", (32, 32), (90, 120, 30))

    class Printed(logging.Handler):  # what the library's own handler would print
        def __init__(self) -> None:
            super().__init__(logging.WARNING)
            self.lines: list[str] = []

        def emit(self, record: logging.LogRecord) -> None:
            self.lines.append(record.getMessage())

    printed = Printed()
    library = logging.getLogger("diffusers")
    library.addHandler(printed)
    # diffusers' default verbosity (warnings), whatever an earlier test in this process
    # set it to: the test asks what a user would see
    level, library.level = library.level, logging.WARNING
    try:
        for folder, hidden in ((tiny, True), (unmarked, False)):
            editor = load_editor(f"flux-kontext:{folder}", ModelConfig(device="cpu", batch_size=1))
            printed.lines.clear()
            editor.edit([image], [spec])
            truncated = [line for line in printed.lines if "CLIP can only handle" in line]
            assert (not truncated) is hidden, printed.lines
    finally:
        library.removeHandler(printed)
        library.setLevel(level)
