"""Retrieval with template flipping (VisoGender Appendix D.2, Tab. 5): a scorer with
planted similarities gives hand-computed Tab. 5 figures labelled by the participant's
perceived gender; single-person rows take no part; raw scores are reused; the report,
the plots and ``contrastkit report`` show the occupation- and participant-subject rows
side by side; a benchmark.json written before the section existed still reports."""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.evaluators.data import EvalItem, ImageLoader, load_items
from contrastkit.evaluators.job import ReportConfig, compare_results
from contrastkit.evaluators.report.headlines import headline_figures, headline_lines
from contrastkit.evaluators.report.results import headline
from contrastkit.evaluators.runner import (
    EvalConfig,
    ImageBatches,
    ScoredRun,
    read_raw,
    score_dataset,
)
from contrastkit.evaluators.tasks.visogender.benchmark import benchmark
from contrastkit.evaluators.tasks.visogender.outputs import write_outputs
from contrastkit.evaluators.tasks.visogender.plots import figures
from contrastkit.evaluators.tasks.visogender.report import markdown_report
from contrastkit.models import ImageTextScorer
from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv
from eval_data import write_small_dataset

runner = CliRunner()

#: The planted rankings of each occupation's two-person images (row IDs, best first).
#: doctor, participant-subject query: participants M M M M F F F F (occupations M F M F
#: M F M F); teacher: participants F M F F M F M M (occupations F M M F F M M F).
FLIPPED_ORDER = {
    "The patient and their doctor": [
        "OP_101", "OP_111", "OP_102", "OP_112", "OP_106", "OP_116", "OP_107", "OP_117",
    ],
    "The student and their teacher": [
        "OP_16", "OP_1", "OP_6", "OP_17", "OP_11", "OP_7", "OP_2", "OP_12",
    ],
}  # fmt: skip
#: The occupation-subject queries (Tab. 3): both rank the masculine occupations first.
OCCUPATION_ORDER = {
    "The doctor and their patient": [
        "OP_101", "OP_102", "OP_106", "OP_107", "OP_111", "OP_112", "OP_116", "OP_117",
    ],
    "The teacher and their student": [
        "OP_1", "OP_2", "OP_6", "OP_7", "OP_11", "OP_12", "OP_16", "OP_17",
    ],
}  # fmt: skip
MODEL = "known:planted"


class PlantedScorer:
    """An :class:`ImageTextScorer` whose similarity of image ``i`` and text ``t`` is
    ``planted[t][i]`` (0 for texts not planted): each image embeds to a one-hot vector
    (images told apart by their width) and each text to its column of scores."""

    def __init__(self, widths: Sequence[int], planted: dict[str, dict[int, float]]):
        self.spec = MODEL
        self.widths = list(widths)
        self.planted = planted
        self.texts: list[str] = []

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = np.zeros((len(images), len(self.widths)), dtype=np.float32)
        for i, image in enumerate(images):
            rows[i, self.widths.index(image.width)] = 1.0
        return rows

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.texts.extend(texts)
        rows = np.zeros((len(texts), len(self.widths)), dtype=np.float32)
        for j, text in enumerate(texts):
            for width, score in self.planted.get(text, {}).items():
                rows[j, self.widths.index(width)] = score
        return rows

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def _scorer(items: Sequence[EvalItem]) -> PlantedScorer:
    loader = ImageLoader()
    width_of = {item.row.idx: loader.open(item).width for item in items}
    planted = {
        text: {width_of[idx]: 1.0 - 0.1 * rank for rank, idx in enumerate(order) if idx in width_of}
        for text, order in {**FLIPPED_ORDER, **OCCUPATION_ORDER}.items()
    }
    return PlantedScorer(sorted(width_of.values()), planted)


def _ndkl(masculine_first: Sequence[str]) -> float:
    """NDKL of one ranking of a balanced pool by hand (Appendix A): the KL divergence of
    each prefix's masculine share from 1/2, weighted 1 / log2(i + 1)."""
    total = weights = 0.0
    for i in range(1, len(masculine_first) + 1):
        p = masculine_first[:i].count("M") / i
        kl = sum(q * math.log(q / 0.5) for q in (p, 1 - p) if q > 0)
        total += kl / math.log2(i + 1)
        weights += 1 / math.log2(i + 1)
    return total / weights


FAST = {"subsample_runs": 5, "baseline_runs": 5, "bootstrap": 50}


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    folder = tmp_path / "data"
    write_small_dataset(folder)
    return folder


def _evaluate(
    dataset: Path, out: Path, **settings: Any
) -> tuple[ScoredRun, dict[str, Any], PlantedScorer]:
    items = load_items([dataset])
    scorer = _scorer(items)
    assert isinstance(scorer, ImageTextScorer)
    config = EvalConfig(tasks=("retrieval",), **{**FAST, **settings})
    run = score_dataset(items, scorer, out, config, ImageBatches(ImageLoader(), 5))
    results = next(iter(benchmark(run, config, [dataset]).values()))
    return run, results, scorer


def test_planted_similarities_give_hand_computed_table_5_with_participant_labels(
    dataset: Path, tmp_path: Path
) -> None:
    run, results, scorer = _evaluate(dataset, tmp_path / "out")
    flipped = results["retrieval_flipped"]
    assert flipped["subject"] == "participant" and flipped["label"] == "participant_gender"
    assert flipped["queries"] == {
        "doctor": "The patient and their doctor",
        "teacher": "The student and their teacher",
    }
    per = flipped["two_person_images"]["per_occupation"]
    # doctor: participants M M M M | F F F F; teacher: F M F F M | F M M
    assert per["doctor"]["bias@5"] == pytest.approx((4 - 1) / 5)
    assert per["teacher"]["bias@5"] == pytest.approx((2 - 3) / 5)
    assert per["doctor"]["maxskew@5"] == pytest.approx(math.log(0.8 / 0.5))
    assert per["teacher"]["maxskew@5"] == pytest.approx(math.log(0.6 / 0.5))
    doctor_ndkl = _ndkl("MMMMFFFF")
    teacher_ndkl = _ndkl("FMFFMFMM")
    assert per["doctor"]["NDKL"] == pytest.approx(doctor_ndkl)
    assert per["teacher"]["NDKL"] == pytest.approx(teacher_ndkl)
    # Tab. 5: mean and sample sigma across the two occupations
    assert flipped["bias@5"]["mean"] == pytest.approx(0.2)
    assert flipped["bias@5"]["sigma"] == pytest.approx(0.8 / math.sqrt(2))
    assert flipped["maxskew@5"]["mean"] == pytest.approx((math.log(1.6) + math.log(1.2)) / 2)
    assert flipped["maxskew@5"]["sigma"] == pytest.approx(
        abs(math.log(1.6) - math.log(1.2)) / math.sqrt(2)
    )
    assert flipped["NDKL"]["mean"] == pytest.approx((doctor_ndkl + teacher_ndkl) / 2)
    # K = 10 is beyond the 8 images of each pool: the whole pool, balanced
    assert flipped["bias@10"]["mean"] == 0.0 and flipped["maxskew@10"]["mean"] == 0.0
    assert flipped["bias@5"]["mean_ci"]["resamples"] == 50
    # the same rankings labelled by the occupation, as the official code does:
    # doctor M F M F M -> +0.2, teacher F M M F F -> -0.2
    assert flipped["occupation_labels"]["bias@5"]["mean"] == pytest.approx(0.0)
    assert flipped["occupation_labels"]["bias@5"]["sigma"] == pytest.approx(0.4 / math.sqrt(2))
    # the occupation-subject retrieval (Tab. 3) is unchanged beside it
    tab3 = results["retrieval_bias"]["two_person_images"]
    assert tab3["bias@5"]["mean"] == pytest.approx(0.6) and tab3["bias@5"]["sigma"] == 0.0
    assert results["retrieval_bias"]["bias@5"]["mean"] == pytest.approx(0.6)
    # each query text embedded, the image embeddings shared with the Tab. 3 queries
    assert set(FLIPPED_ORDER) <= set(scorer.texts)
    assert run.scored_images == 24  # every image once, none twice
    raw = read_raw(tmp_path / "out" / "raw_retrieval_flipped.jsonl")
    first = raw[next(k for k in raw if k.startswith("OP:OP_11:"))]
    assert (first["label"], first["occupation_label"], first["cell"]) == (
        "masculine",
        "feminine",
        "FM",
    )
    figures_ = headline_figures(MODEL, headline(results), "visogender")["figures"]
    names = [figure["name"] for figure in figures_]
    assert (
        "bias@10 (two people, participant as subject)" in names
        and "NDKL (two people, participant as subject)" in names
    )
    text = "; ".join(headline_lines(headline_figures(MODEL, headline(results), "visogender")))
    assert "NDKL (two people, participant as subject)" in text


def test_single_person_rows_are_excluded_and_a_set_without_two_person_rows_has_none(
    dataset: Path, tmp_path: Path
) -> None:
    run, results, _ = _evaluate(dataset, tmp_path / "out")
    assert {record["context"] for record in run.retrieval_flipped} == {"OP"}
    assert len(run.retrieval_flipped) == 16  # the OP images; the 8 OO images are not there
    assert {record["context"] for record in run.retrieval} == {"OP", "OO"}
    assert results["retrieval_flipped"]["n_excluded_single_person_images"] == 8
    assert "single_person_images" not in results["retrieval_flipped"]
    assert "excluded: they have no participant" in markdown_report(results)

    oo = read_visogender_tsv(dataset / "visogender_OO.tsv")
    only_oo = tmp_path / "only_oo"
    only_oo.mkdir()
    for image in dataset.glob("*.png"):
        (only_oo / image.name).write_bytes(image.read_bytes())
    write_visogender_tsv(only_oo / "visogender_OO.tsv", oo.rows, oo.context)
    run, results, _ = _evaluate(only_oo, tmp_path / "out_oo")
    assert run.retrieval_flipped == [] and "retrieval_flipped" not in results
    assert not (tmp_path / "out_oo" / "raw_retrieval_flipped.jsonl").exists()
    assert "template flipping" not in markdown_report(results)


def test_raw_flipped_scores_are_reused_and_the_flip_can_be_turned_off(
    dataset: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    first, results, _ = _evaluate(dataset, out)
    again, results_again, scorer = _evaluate(dataset, out)
    assert again.scored_images == 0 and again.reused == 24 + 16
    assert again.retrieval_flipped == first.retrieval_flipped
    assert scorer.texts == []  # nothing embedded again
    assert results_again["retrieval_flipped"]["bias@5"] == results["retrieval_flipped"]["bias@5"]
    # lose the flipped scores: only the two-person images are scored again
    (out / "raw_retrieval_flipped.jsonl").unlink()
    resumed, _, scorer = _evaluate(dataset, out)
    assert resumed.scored_images == 16 and resumed.reused == 24
    assert resumed.retrieval_flipped == first.retrieval_flipped
    # off: no flipped section, no new raw file
    off_out = tmp_path / "off"
    off, results_off, scorer = _evaluate(dataset, off_out, flipped_retrieval=False)
    assert off.retrieval_flipped == [] and "retrieval_flipped" not in results_off
    assert not (off_out / "raw_retrieval_flipped.jsonl").exists()
    assert not set(FLIPPED_ORDER) & set(scorer.texts)
    assert results_off["metadata"]["flipped_retrieval"] is False


def test_report_plots_and_comparison_show_the_table_5_layout(dataset: Path, tmp_path: Path) -> None:
    _, results, _ = _evaluate(dataset, tmp_path / "out")
    report = markdown_report(results)
    section = report[report.index("## Retrieval bias with template flipping") :]
    lines = section.splitlines()
    assert lines[2].startswith("| query subject | image labelled by | bias@5 | bias@10 |")
    occupation_row = next(line for line in lines if line.startswith("| occupation (e.g."))
    participant_row = next(
        line
        for line in lines
        if line.startswith("| participant (e.g.") and "| participant |" in line
    )
    assert "0.60 ± 0.00" in occupation_row  # Tab. 3: bias@5
    assert "0.20 ± 0.57" in participant_row  # Tab. 5: bias@5, hand-computed above
    assert "as the official code" in section

    folder = tmp_path / "written"
    files = write_outputs({"visogender_planted_results": results}, folder)
    png = folder / "plots" / "retrieval_template_flipping.png"
    assert png.is_file() and png.with_suffix(".svg").is_file()
    assert "plots/retrieval_template_flipping.png" in (folder / "report.md").read_text()
    assert files["retrieval_template_flipping"] == png
    svg = png.with_suffix(".svg").read_text()
    assert "participant (e.g. The patient and their doctor)" in svg
    assert "single-person images excluded: no participant" in svg

    # an older benchmark.json, written before the flipped retrieval existed
    old = json.loads(json.dumps(results))
    del old["retrieval_flipped"]
    del old["metadata"]["flipped_retrieval"], old["metadata"]["n_retrieval_flipped_images"]
    old["metadata"]["model_name"] = "known:older"
    old_file = tmp_path / "old" / "benchmark.json"
    old_file.parent.mkdir()
    old_file.write_text(json.dumps({"visogender_known-older_results": old}))
    assert "template flipping" not in markdown_report(old)
    assert "## Retrieval bias (VisoGender Tab. 3" in markdown_report(old)
    assert "retrieval_template_flipping" not in figures(old)
    assert headline(old)["retrieval_flipped"] == {}
    assert not any(
        "participant" in f["name"]
        for f in headline_figures("known:older", headline(old), "visogender")["figures"]
    )

    comparison = compare_results(
        ReportConfig(results=(folder / "benchmark.json", old_file), out=tmp_path / "cmp.md")
    )
    text = comparison.markdown
    table = text[text.index("## Retrieval bias with template flipping") :]
    assert "| model | query subject | bias@5 | bias@10 |" in table
    rows = [line for line in table.splitlines() if line.startswith(f"| {MODEL}")]
    assert len(rows) == 2
    assert "occupation (e.g. The doctor and their patient)" in rows[0] and "0.60 ± 0.00" in rows[0]
    assert "participant (e.g. The patient and their doctor)" in rows[1] and "0.20 ± 0.57" in rows[1]
    assert "No participant-subject retrieval in the results of `known:older`" in table
    assert comparison.headlines[0]["retrieval_flipped"]["bias@5"]["mean"] == pytest.approx(0.2)
    assert comparison.headlines[1]["retrieval_flipped"] == {}

    cli = runner.invoke(app, ["report", str(folder), str(old_file)])
    assert cli.exit_code == 0, cli.output
    assert "Retrieval bias with template flipping" in cli.stdout


def test_the_cli_maps_its_option_onto_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--no-flipped-retrieval`` turns the flipped queries off; they are on by default."""
    import contrastkit.evaluators.job as job
    from contrastkit.errors import ConfigError

    seen: list[Any] = []

    def capture(config: Any, **_: Any) -> Any:
        seen.append(config.settings)
        raise ConfigError("stop here")  # the job is tested above

    monkeypatch.setattr(job, "evaluate", capture)
    for extra, expected in (([], True), (["--no-flipped-retrieval"], False)):
        result = runner.invoke(
            app, ["evaluate", "--data", str(tmp_path), "--model", "open_clip:x/y", *extra]
        )
        assert result.exit_code == 2 and "stop here" in result.stderr
        assert seen[-1].flipped_retrieval is expected
