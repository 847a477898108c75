"""The GenSynth job from Python: one config, every stage, the Sec. 4.3 checks, resuming,
and errors reported before long work starts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from contrastkit.builders.gensynth.job import GenSynthConfig, Stage, build_gensynth
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings
from contrastkit.errors import ConfigError, ModelNotFoundError, ResourceError, StateError
from contrastkit.samples import photo

EDIT = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)


class Recorder:
    """A progress factory that remembers every stage and its last update."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int]] = {}

    @contextmanager
    def __call__(self, label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        self.seen[label] = (0, 0)

        def update(done: int, total: int) -> None:
            self.seen[label] = (done, total)

        yield update


@pytest.mark.slow
def test_the_whole_build_from_python_then_one_stage_again(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    instructions = tmp_path / "instructions.csv"
    instructions.write_text(
        "gender,instruction\nfeminine,Turn into a woman\nmasculine,Turn into a man\n"
    )
    pool = tmp_path / "pool"
    pool.mkdir()
    for name in ("camera", "astronaut", "grace_hopper"):
        photo(name).resize((64, 64)).save(pool / f"{name}.png")
    config = GenSynthConfig(
        out=tmp_path / "build", coco=coco_dir, limit=2, min_box_side=64,
        editor=str(tiny_editor_dir), embedder=tiny_clip_spec, edit=EDIT,
        instructions=instructions, k=3, tau_real=-1, tau_gender=-1, pool=pool, pool_limit=2,
        model=ModelConfig(device="cpu", batch_size=4),
    )  # fmt: skip
    progress = Recorder()
    result = build_gensynth(config, progress=progress)
    assert result.stages == ("edit", "filter", "select")
    assert progress.seen == {"editing": (4, 4), "embedding": (6, 6)}  # 2 sources x 2 edits
    assert result.sources_kept == 2 and result.contrast_set == config.out / "contrast_set.jsonl"
    assert result.summary["edit"]["settings"]["instructions"] == {
        "feminine": ["Turn into a woman"], "masculine": ["Turn into a man"]
    }  # fmt: skip
    assert result.quality is not None and list(result.quality) == [
        "contrast_set", "original", "all_edits"
    ]  # fmt: skip
    assert result.quality["contrast_set"]["retrieval_pool_size"] == 3  # 2 pool images + own
    stored = json.loads(result.summary_path.read_text())
    assert stored["quality"] == result.quality == result.summary["quality"]

    # The select stage alone, without checks: nothing is edited or embedded again, and
    # the checks of the earlier selection are dropped with it.
    again = build_gensynth(
        GenSynthConfig(out=config.out, stage="select", quality=False)  # type: ignore[arg-type]
    )
    assert again.stages == ("select",) and again.sources_kept == 2 and again.quality is None
    assert "quality" not in again.summary and again.summary["edit"] == result.summary["edit"]

    # The checks on a sample: at most 3 images per set, drawn with the edit seed.
    sampled = build_gensynth(
        GenSynthConfig(out=config.out, stage="select", embedder=tiny_clip_spec,  # type: ignore[arg-type]
                       quality_sample=3, model=ModelConfig(device="cpu", batch_size=4))
    )  # fmt: skip
    assert sampled.quality is not None
    sizes = {name: (q["images"], q["sampled_from"]) for name, q in sampled.quality.items()}
    assert sizes == {"contrast_set": (3, 4), "original": (2, 2), "all_edits": (3, 4)}


def test_a_sample_of_a_labeled_set_is_seeded_ordered_and_bounded() -> None:
    from contrastkit.builders.gensynth import LabeledImages
    from contrastkit.schema import Gender

    images = LabeledImages(
        tuple(Path(f"{i}.png") for i in range(10)),
        tuple(Gender.MASCULINE if i % 2 else Gender.FEMININE for i in range(10)),
        tuple((f"caption {i}",) for i in range(10)),
    )
    picked = images.sample(4, seed=1)
    assert len(picked.images) == 4 and picked == images.sample(4, seed=1)
    assert picked != images.sample(4, seed=2)
    numbers = [int(p.stem) for p in picked.images]
    assert numbers == sorted(numbers)
    assert [picked.captions[k] for k in range(4)] == [(f"caption {i}",) for i in numbers]
    assert picked.genders == tuple(images.genders[i] for i in numbers)
    assert images.sample(None) is images and images.sample(10) is images


@pytest.mark.slow
def test_errors_come_before_long_work(coco_dir: Path, tiny_clip_spec: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ResourceError, match="cannot write the GenSynth build folder"):
        build_gensynth(GenSynthConfig(out=tmp_path / "file", coco=coco_dir,
                                      editor=str(tmp_path / "missing")))  # fmt: skip
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", coco=coco_dir,
                                      editor=str(tmp_path / "missing")))  # fmt: skip
    with pytest.raises(StateError, match="run the edit stage first"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", stage=Stage.FILTER,
                                      embedder=tiny_clip_spec))  # fmt: skip
    with pytest.raises(ConfigError, match=r"pool .*no such folder"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", stage=Stage.SELECT,
                                      pool=tmp_path / "no-pool"))  # fmt: skip


def test_the_config_checks_its_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="coco: the edit stage needs --coco"):
        GenSynthConfig(out=tmp_path).settings()  # nor did the build record a COCO folder
    with pytest.raises(ConfigError, match="stage: 'twice' is not one of"):
        GenSynthConfig(out=tmp_path, stage="twice")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="k: must be >= 1"):
        GenSynthConfig(out=tmp_path, coco=tmp_path, k=0)
    with pytest.raises(ConfigError, match="quality_sample: must be >= 1"):
        GenSynthConfig(out=tmp_path, stage="select", quality=False, quality_sample=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="captioning model"):
        GenSynthConfig(out=tmp_path, stage=Stage.FILTER, embedder="blip:Salesforce/blip")
    config = GenSynthConfig(out="o", stage="select", quality=False, embedder="blip:x")  # type: ignore[arg-type]
    assert config.stage is Stage.SELECT and config.out == Path("o")  # no embedder needed


# -- reruns use the recorded settings; what a run says on the way (issue 31) -------------


def _gensynth(out: Path, *options: str) -> Result:
    result = CliRunner().invoke(app, ["build", "gensynth", "--out", str(out), *options])
    assert result.exit_code in (0, 1), result.output
    return result


def _shown(text: str) -> str:
    return " ".join(text.split())


def _one_instruction_each(tmp_path: Path) -> str:
    """One instruction per target gender: 2 edits per source, a fast build."""
    table = tmp_path / "instructions.csv"
    table.write_text("gender,instruction\nfeminine,Turn into a woman\nmasculine,Turn into a man\n")
    return str(table)


@pytest.mark.slow
def test_a_stage_rerun_uses_the_recorded_settings_and_says_the_selection_is_stale(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """The README's re-filter pattern: `--stage filter --tau-real X` on a build made with
    another embedder uses that embedder (not the default model, which is not on this
    machine), and the K the build used; the old selection is then shown as stale, with
    the command that redoes it; `--stage select` alone redoes it with the recorded
    embedder for its checks."""
    out = tmp_path / "build"
    first = _gensynth(
        out, "--coco", str(coco_dir), "--editor", str(tiny_editor_dir), "--embedder",
        tiny_clip_spec, "--limit", "2", "--min-box-side", "64", "--scales", "9.5",
        "--steps", "2", "--resolution", "32", "--k", "3", "--tau-real", "2", "--no-quality",
        "--instructions", _one_instruction_each(tmp_path),
    )  # fmt: skip
    assert first.exit_code == 1  # P_R > 2 accepts nothing: no source kept
    summary = json.loads((out / "build_summary.json").read_text())
    assert summary["settings"]["embedder"] == tiny_clip_spec
    assert summary["settings"]["edit"]["steps"] == 2 and summary["settings"]["k"] == 3
    assert "tau_real" in summary["settings"]["chosen"]
    assert "tau_gender" not in summary["settings"]["chosen"]

    # The model group's options (how the models run) are not build settings: giving them
    # on a rerun neither records them nor stops the recorded settings from applying.
    refilter = _gensynth(
        out, "--stage", "filter", "--tau-real", "-1", "--tau-gender", "-1",
        "--batch-size", "3", "--dtype", "float32", "--workers", "0", "--decode", "pil",
    )  # fmt: skip
    assert refilter.exit_code == 0, refilter.output
    filtered = json.loads((out / "build_summary.json").read_text())["filter"]
    assert (filtered["encoder"], filtered["k"], filtered["tau_real"]) == (tiny_clip_spec, 3, -1)
    assert filtered["accepted"] == 4
    err = _shown(refilter.stderr)
    assert (
        f"settings recorded by the build in {out}" in err and f"--embedder {tiny_clip_spec}" in err
    )
    shown = _shown(refilter.stdout)
    stale = (
        "select (stale: made before the latest filter stage; run `contrastkit build gensynth "
        f"--out {out} --stage select --embedder {tiny_clip_spec}`): 0 of 2 sources kept"
    )
    assert stale in shown, shown
    settings = json.loads((out / "build_summary.json").read_text())["settings"]
    assert settings["tau_real"] == -1 and settings["k"] == 3 and settings["chosen"] == [
        "tau_real", "tau_gender"
    ]  # fmt: skip

    select = _gensynth(out, "--stage", "select", "--quality-sample", "2")
    assert select.exit_code == 0, select.output
    shown = _shown(select.stdout)
    assert "select: 2 of 2 sources kept" in shown and "stale" not in shown
    stored = json.loads((out / "build_summary.json").read_text())
    assert stored["quality"]["contrast_set"]["images"] == 2  # checked with the recorded embedder
    assert "stale" not in stored["select"]

    # A rerun of the edit stage alone reuses the recorded COCO folder and edit settings:
    # nothing is planned anew (2 steps at 32 px, not the paper's 500 at 512 px). --limit
    # is not recorded: it says how much to edit now.
    edit = _gensynth(out, "--stage", "edit", "--limit", "2", "--json")
    assert json.loads(edit.stdout)["edit"]["skipped_finished"] == 4
    assert json.loads(edit.stdout)["edit"]["edited"] == 0


@pytest.mark.slow
def test_random_weights_are_flagged_at_the_start_and_progress_reaches_a_log(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    """Off a terminal (a log file), a build prints plain progress lines; a random-weight
    editor and embedder are flagged before any work, and when the filter accepts
    (almost) nothing the run points to --tau-real / --tau-gender."""
    out = tmp_path / "build"
    result = _gensynth(
        out, "--coco", str(coco_dir), "--editor", str(tiny_editor_dir), "--embedder",
        tiny_clip_spec, "--limit", "2", "--min-box-side", "64", "--scales", "9.5",
        "--steps", "2", "--resolution", "32", "--k", "3", "--tau-gender", "2", "--no-quality",
        "--instructions", _one_instruction_each(tmp_path),
    )  # fmt: skip
    err = _shown(result.stderr)
    editor_warning = f"warning: the editor {tiny_editor_dir} has random weights"
    embedder_warning = f"warning: the embedder {tiny_clip_spec} has random weights"
    assert editor_warning in err and embedder_warning in err
    assert "this run: 2 steps at 32 px per edit" in err
    assert err.index(embedder_warning) < err.index("editing: 0 of 4 (0%)")  # at the start
    assert "editing: 4 of 4 (100%)" in err and "embedding: 6 of 6 (100%)" in err
    hint = (
        "only 0 of 4 edits accepted (P_R > --tau-real 0.08 and P_G > --tau-gender 2); lower "
        "--tau-real / --tau-gender and rerun the filter alone"
    )
    assert hint in err, err
    assert f"--stage filter --embedder {tiny_clip_spec} --k 3 --tau-real -1 --tau-gender -1`" in err
    assert "random weights, so the thresholds are meaningless" in err
    assert result.exit_code == 1 and "select: 0 of 2 sources kept" in _shown(result.stdout)


@pytest.mark.slow
def test_a_missing_model_fails_before_coco_is_parsed_or_anything_is_edited(
    coco_dir: Path, tiny_editor_dir: Path, tmp_path: Path
) -> None:
    broken = tmp_path / "coco"
    (broken / "annotations").mkdir(parents=True)
    (broken / "annotations" / "captions_train2017.json").write_text("{not json")
    (broken / "annotations" / "instances_train2017.json").write_text("{not json")
    with pytest.raises(ModelNotFoundError, match="does not exist"):  # not the COCO error
        build_gensynth(GenSynthConfig(out=tmp_path / "a", coco=broken,
                                      editor=str(tmp_path / "no-editor")))  # fmt: skip
    # The embedder is found before the edit stage runs, not after it
    out = tmp_path / "b"
    with pytest.raises(ModelNotFoundError, match="checkpoint file not found"):
        build_gensynth(GenSynthConfig(
            out=out, coco=coco_dir, limit=1, min_box_side=64, editor=str(tiny_editor_dir),
            embedder=f"open_clip:ViT-B-32/{tmp_path / 'missing.pt'}", edit=EDIT,
        ))  # fmt: skip
    assert not (out / "manifest.jsonl").exists() and not (out / "coco_table.parquet").exists()


def test_a_bad_option_is_named_by_its_flag(coco_dir: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(
        app, ["build", "gensynth", "--out", str(tmp_path / "o"), "--coco", str(coco_dir),
              "--scales", ""],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "(--scales): at least one text guidance scale is needed" in result.stderr
    assert "caused by" not in result.stderr
    assert not (tmp_path / "o").exists(), "a failed build leaves no folder it made"
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "build_summary.json").write_text(
        json.dumps({"settings": {"edit": {"steps": 0}}})
    )
    result = CliRunner().invoke(app, ["build", "gensynth", "--out", str(tmp_path / "o")])
    assert result.exit_code == 2
    message = " ".join(result.stderr.split())
    assert "build_summary.json" in message and "settings.edit" in message
    assert "steps: must be >= 1, not 0" in message
