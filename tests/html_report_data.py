"""Results of the test fixtures for the HTML report's tests: a VisoGender set, a contrast
set, a stereotype probe set and decision probes, each evaluated with a tiny model
(random weights) through the command line, as a user gets them."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from decision_data import small_questions
from eval_data import write_small_dataset
from stereoset_data import make_probe_fixture

QUESTIONS = small_questions("occupation", "salary")

FAST = ("--bootstrap", "20", "--device", "cpu", "--workers", "0")


def invoke(*args: object) -> str:
    result = CliRunner().invoke(app, [str(a) for a in args])
    if result.exception and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output[-3000:]
    return result.output


def evaluated(tmp: Path) -> dict[str, list[Path]]:
    """Each task's result folders, by task."""
    from contrastkit.tiny.clip import tiny_open_clip
    from contrastkit.tiny.vlm import tiny_llava

    clip = tiny_open_clip(tmp / "models")
    vg = write_small_dataset(tmp / "visogender")
    invoke("evaluate", "visogender", "--data", vg["OP"], "--data", vg["OO"], "--model", clip,
           "--out", tmp / "out-vg", "--subsample-runs", "5", "--baseline-runs", "5",
           *FAST)  # fmt: skip
    contrast = contrast_export(tmp / "contrast", sources=5)
    invoke("evaluate", "contrast", "--data", contrast, "--model", clip, "--out",
           tmp / "out-contrast", "--k", "2", "--html", tmp / "site-evaluate", *FAST)  # fmt: skip
    probes = make_probe_fixture(tmp / "probes")[2]
    invoke("evaluate", "stereotype", "--data", probes, "--model", clip, "--out",
           tmp / "out-stereo", *FAST)  # fmt: skip
    questions = tmp / "questions.yaml"
    questions.write_text(QUESTIONS, encoding="utf-8")
    vlm = tiny_llava(tmp / "models")
    invoke("evaluate", "decisions", "--data", contrast, "--model", vlm, "--out",
           tmp / "out-decisions", "--questions", questions, "--bootstrap", "5",
           "--decision-scoring", "logprob")  # fmt: skip
    return {
        name: sorted(p for p in (tmp / f"out-{name}").iterdir() if p.is_dir())
        for name in ("vg", "contrast", "stereo", "decisions")
    }
