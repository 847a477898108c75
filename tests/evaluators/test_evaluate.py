"""End to end: datasets, image sources, the runner, reports and the CLI, with real files and
tiny models; a scorer with known similarities gives known metrics."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.cli import app
from contrastkit.errors import ConfigError
from contrastkit.evaluators.data import ImageLoader, load_items
from contrastkit.evaluators.runner import EvalConfig, ImageBatches, read_raw, score_dataset
from contrastkit.evaluators.stats import labor_comparison, labor_shares
from contrastkit.evaluators.tasks.visogender.benchmark import benchmark, load_benchmark
from contrastkit.evaluators.tasks.visogender.outputs import write_outputs
from contrastkit.evaluators.tasks.visogender.report import markdown_report
from contrastkit.models import ImageTextScorer

runner = CliRunner()
FAST = ["--subsample-runs", "20", "--baseline-runs", "40"]


class KnownScorer:
    """An :class:`ImageTextScorer` with chosen similarities: every image scores 0.9 with
    "his" captions and 0.1 with "her" captions (a model that always says "his"); with
    "their" texts (the neutral caption and the retrieval query) images of masculine
    occupations score 0.8 and the others 0.2. Images are told apart by their width."""

    spec = "known:always-his"

    def __init__(self, masculine_widths: set[int]):
        self.masculine_widths = masculine_widths
        self.text_calls: list[str] = []

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        rows = []
        for image in images:
            third = 0.8 if image.width in self.masculine_widths else 0.2
            rows.append([0.9, 0.1, third])
        return np.array(rows, dtype=np.float32)

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        self.text_calls.extend(texts)
        basis = {" his ": 0, " her ": 1, " their ": 2}
        rows = np.zeros((len(texts), 3), dtype=np.float32)
        for i, text in enumerate(texts):
            rows[i, next(v for k, v in basis.items() if k in f" {text} ")] = 1.0
        return rows

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


def test_a_scorer_with_known_similarities_gives_known_metrics(
    dataset: Path, tmp_path: Path
) -> None:
    items = load_items([dataset])
    loader = ImageLoader()
    widths = {
        loader.open(item).width for item in items if item.row.occupation_gender.value == "masculine"
    }
    scorer = KnownScorer(widths)
    assert isinstance(scorer, ImageTextScorer)
    config = EvalConfig(neutral=True, subsample_runs=30, baseline_runs=200)
    run = score_dataset(items, scorer, tmp_path / "out", config, ImageBatches(loader, 5))
    results = next(iter(benchmark(run, config, [dataset]).values()))

    assert results["metadata"]["protocol"] == "visogender-official"  # the default
    assert results["metadata"]["bootstrap"]["resamples"] == 1000
    resolution = results["resolution_bias"]
    assert resolution["all_images"]["overall_accuracy"] == 0.5  # (OO 0.5 + OP 0.5) / 2
    assert resolution["all_images"]["overall_accuracy_ci"]["resamples"] == 1000
    # "his" always wins: masculine referents right, feminine ones wrong
    for split in ("all_images", "single_person_images", "two_person_images"):
        assert resolution[split]["RA_masculine"] == 1.0
        assert resolution[split]["RA_feminine"] == 0.0
        assert resolution[split]["gender_gap"] == 1.0
        assert resolution[split]["RA_avg"] == 0.5
    assert resolution["per_cell"]["MF"]["accuracy"] == 1.0  # pronoun follows the occupation
    assert resolution["participant_first"]["per_cell"]["MF"]["accuracy"] == 0.0  # participant
    assert resolution["participant_first"]["per_cell"]["FM"]["accuracy"] == 1.0
    # with "their" as a candidate, masculine images (0.8 > 0.9? no) still pick his; feminine
    # images score their 0.2 < his 0.9: no neutral resolutions at all
    assert resolution["neutral"]["all_images"]["R_neutral"] == 0.0

    retrieval = results["retrieval_bias"]
    assert retrieval["context"] == "OP"
    # per occupation: 4 masculine at 0.8, 4 feminine tied at 0.2
    per = retrieval["two_person_images"]["per_occupation"]
    for values in per.values():
        assert values["bias@5"] == pytest.approx((4 - 1) / 5)
        assert values["bias_gensynth@5"] == pytest.approx(3 / 5)
        assert values["bias@10"] == 0.0  # K beyond the 8 images: all retrieved
        assert values["skew_masculine@5"] == pytest.approx(math.log(0.8 / 0.5))
        assert values["skew_feminine@5"] == pytest.approx(math.log(0.2 / 0.5))
        assert values["maxskew@5"] == pytest.approx(math.log(1.6))
        assert values["minskew@5"] == pytest.approx(math.log(0.4))
    shares = [1, 1, 1, 1, 4 / 5, 4 / 6, 4 / 7, 4 / 8]
    kl = [
        p * math.log(p / 0.5) + ((1 - p) * math.log((1 - p) / 0.5) if p < 1 else 0.0)
        for p in shares
    ]
    weights = [1 / math.log2(i + 1) for i in range(1, 9)]
    ndkl = sum(w * d for w, d in zip(weights, kl, strict=True)) / sum(weights)
    assert retrieval["NDKL"]["mean"] == pytest.approx(ndkl)
    assert {key: retrieval["bias@5"][key] for key in ("mean", "sigma", "n", "n_undefined")} == {
        "mean": pytest.approx(0.6),
        "sigma": 0.0,
        "n": 2,
        "n_undefined": 0,
    }
    # single-person images: 2 masculine above 2 feminine
    single = retrieval["single_person_images"]["per_occupation"]["doctor"]
    assert single["bias@5"] == 0.0 and single["NDKL"] > 0

    errors = results["error_analysis"]
    sub = errors["resolution_subsamples"]["k=1"]["all_images"]
    assert sub["gender_gap"] == {"mean": 1.0, "sigma": 0.0}
    baseline = errors["retrieval_random_baseline"]["two_person_images"]["bias@5"]
    assert baseline["real"] == pytest.approx(0.6)
    assert abs(baseline["baseline_mean"]) < 0.15
    assert baseline["z"] > 2  # far from random relabelling

    # every distinct caption and query was embedded, each image once
    assert len(run.resolution) == 8 + 16 * 2 and len(run.retrieval) == 24
    assert run.scored_images == 24


def test_the_official_protocol_scores_their_and_two_way_does_not(
    dataset: Path, tmp_path: Path
) -> None:
    """ "their" is a candidate of the official protocol: the runner scores it even without
    ``neutral``, and the neutral rates (Appendix D.1) come for free; the two-way protocol
    scores his / her only, unless ``neutral`` asks for "their"."""
    items = load_items([dataset])
    loader = ImageLoader()
    widths = {loader.open(item).width for item in items if item.row.cell in ("M", "MM", "MF")}
    for protocol, neutral, scored in (
        ("visogender-official", False, {"masculine", "feminine", "neutral"}),
        ("two-way", False, {"masculine", "feminine"}),
        ("two-way", True, {"masculine", "feminine", "neutral"}),
    ):
        scorer = KnownScorer(widths)
        config = EvalConfig(
            tasks=("resolution",), protocol=protocol, neutral=neutral, bootstrap=50,
            subsample_runs=5,
        )  # fmt: skip
        out = tmp_path / f"{protocol}-{neutral}"
        run = score_dataset(items, scorer, out, config, ImageBatches(loader))
        assert all(set(record["scores"]) == scored for record in run.resolution)
        assert any(" their " in f" {text} " for text in scorer.text_calls) == ("neutral" in scored)
        results = next(iter(benchmark(run, config, [dataset]).values()))
        assert results["metadata"]["protocol"] == protocol
        resolution = results["resolution_bias"]
        assert ("neutral" in resolution) == ("neutral" in scored)
        # "his" 0.9 always beats "their" (0.8 or 0.2): both protocols agree here
        assert resolution["single_person_images"]["RA_masculine"] == 1.0
        report = markdown_report(results)
        assert f"Protocol `{protocol}`" in report


@pytest.mark.model_outputs
def test_resuming_reuses_raw_scores_and_recomputes_only_what_is_missing(
    dataset: Path, tmp_path: Path
) -> None:
    items = load_items([dataset])
    loader = ImageLoader()
    config = EvalConfig(subsample_runs=5, baseline_runs=5)
    out = tmp_path / "out"
    first = score_dataset(items, KnownScorer(set()), out, config, ImageBatches(loader))
    assert first.scored_images == 24 and first.reused == 0
    again = score_dataset(items, KnownScorer(set()), out, config, ImageBatches(loader))
    # resolution, retrieval and the participant-subject (Tab. 5) queries of the 16 OP images
    assert again.scored_images == 0 and again.reused == 40 + 24 + 16
    assert again.resolution == first.resolution
    # lose the last three records and leave a half-written line, as a crash would
    raw = out / "raw_resolution.jsonl"
    lines = raw.read_text().splitlines()
    raw.write_text("\n".join(lines[:-3]) + "\n" + lines[-3][:20])
    resumed = score_dataset(items, KnownScorer(set()), out, config, ImageBatches(loader))
    assert resumed.scored_images == 2  # the images those records belonged to
    assert resumed.resolution == first.resolution
    assert len(read_raw(raw)) == 40
    # another model's records are not reused
    other = KnownScorer(set())
    other.spec = "known:other"
    assert score_dataset(items, other, out, config, ImageBatches(loader)).scored_images == 24


def test_labour_statistics_ship_with_their_source() -> None:
    shares = labor_shares()
    assert len(shares) == 23
    assert shares["hairdresser"].male_share_percent == 6.9
    assert shares["specialist"].year == 2020 and shares["doctor"].year == 2022
    assert "labour force statistics" in shares["engineer"].source
    # perfectly monotone data: r = 1, tau = 1
    got = labor_comparison({"hairdresser": 0.1, "teacher": 0.2, "engineer": 0.9, "astronaut": 5})
    assert got["n"] == 3 and got["kendall_tau"] == pytest.approx(1.0)
    assert 0.9 < got["pearson_r"] <= 1.0 and 0 <= got["pearson_p"] <= 1
    assert math.isnan(labor_comparison({"teacher": 0.1, "engineer": 0.2})["pearson_r"])


def _intervals(node: object, path: str = "") -> list[tuple[str, float, dict[str, float]]]:
    """Every (path, figure, interval) of a benchmark's nested dicts."""
    found = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key.endswith("_ci") and isinstance(value, dict):
                found.append((f"{path}.{key}", node[key[:-3]], value))
            else:
                found += _intervals(value, f"{path}.{key}")
    return found


@pytest.mark.slow
def test_cli_bootstrap_writes_intervals_into_the_json_the_report_and_the_plots(
    dataset: Path, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    base = ["evaluate", "--data", str(dataset), "--model", tiny_specs["open_clip"], *FAST]
    result = runner.invoke(app, [*base, "--out", str(tmp_path / "o"), "--bootstrap", "200"])
    assert result.exit_code == 0, result.output
    folder = next((tmp_path / "o").iterdir())
    _, results = load_benchmark(folder)
    meta = results["metadata"]
    assert meta["protocol"] == "visogender-official" and meta["bootstrap"]["resamples"] == 200
    found = _intervals(results["resolution_bias"])
    overall = results["resolution_bias"]["all_images"]
    assert ".all_images.overall_accuracy_ci" in {path for path, _, _ in found}
    for path, figure, ci in found:
        assert ci["resamples"] == 200 and ci["level"] == 0.95, path
        if figure is not None and ci["low"] is not None:
            assert ci["low"] <= figure <= ci["high"], path
    report = (folder / "report.md").read_text()
    ci = overall["overall_accuracy_ci"]
    assert f"| Overall | {overall['RA_avg']:.2f} [{ci['low']:.2f}, {ci['high']:.2f}] |" in report
    assert "Protocol `visogender-official`" in report and "200 resamples" in report
    with Image.open(folder / "plots" / "accuracy_by_gender_pair.png") as plot:
        assert plot.format == "PNG"
    # two-way, no intervals: the same files without any _ci, the protocol recorded
    result = runner.invoke(
        app,
        [*base, "--out", str(tmp_path / "t"), "--protocol", "two-way", "--bootstrap", "0"],
    )
    assert result.exit_code == 0, result.output
    _, two_way = load_benchmark(next((tmp_path / "t").iterdir()))
    assert two_way["metadata"]["protocol"] == "two-way"
    assert not _intervals(two_way["resolution_bias"])
    side = runner.invoke(app, ["report", str(folder), str(next((tmp_path / "t").iterdir()))])
    assert side.exit_code == 0
    assert "visogender-official" in side.output and "two-way" in side.output


def test_cli_bad_input_exits_2_with_a_clear_message(
    dataset: Path, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    base = ["evaluate", "--data", str(dataset), "--out", str(tmp_path / "o")]
    result = runner.invoke(app, [*base, "--model", "hf-clip:contrastkit-test/none"])
    assert result.exit_code == 2 and "hf download contrastkit-test/none" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--task", "retrieval"])
    assert result.exit_code == 2 and "needs a dual encoder" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--task", "ranking"])
    assert result.exit_code == 2 and "unknown task" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--k", "five"])
    assert result.exit_code == 2 and "comma-separated integers" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--protocol", "3-way"])
    assert result.exit_code == 2 and "protocol: unknown protocol '3-way'" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--confidence", "95"])
    assert result.exit_code == 2 and "confidence: must be in (0, 1)" in result.stderr
    result = runner.invoke(app, [*base, "--model", tiny_specs["blip"], "--bootstrap", "-1"])
    assert result.exit_code == 2 and "--bootstrap" in result.stderr
    result = runner.invoke(
        app,
        [
            "evaluate",
            "--data",
            str(tmp_path),
            "--out",
            str(tmp_path / "o"),
            "--model",
            tiny_specs["blip"],
        ],
    )
    assert result.exit_code == 2 and "no official-format TSV" in result.stderr
    assert not any((tmp_path / "o").iterdir())  # checked writable up front; nothing written
    result = runner.invoke(app, ["report", str(tmp_path / "missing.json")])
    assert result.exit_code == 2 and "no such benchmark file" in result.stderr


@pytest.mark.slow
def test_write_outputs_replaces_files_atomically(dataset: Path, tmp_path: Path) -> None:
    items = load_items([dataset])
    config = EvalConfig(tasks=("resolution",), subsample_runs=5, baseline_runs=5)
    run = score_dataset(items, KnownScorer(set()), tmp_path, config, ImageBatches(ImageLoader()))
    files = write_outputs(benchmark(run, config, [dataset]), tmp_path / "model")
    plots = ("resolution_accuracy", "accuracy_by_gender_pair", "gap_per_occupation",
             "labour_statistics")  # fmt: skip
    assert set(files) == {"benchmark", "report", *plots, *(f"{p}_svg" for p in plots)}
    assert not list((tmp_path / "model").glob(".*tmp*"))
    assert "retrieval_bias" not in json.loads(files["benchmark"].read_text()).popitem()[1]


def test_hub_style_folders_of_the_same_name_are_not_read_back_from_a_stale_cache(
    tmp_path: Path, official_oo: Path
) -> None:
    """Two `publish --dry-run` trees, both named ``tree``, with different URLs: each is
    read as it is now (the datasets cache keys local folders by name)."""
    import datasets

    from contrastkit.builders.export import ExportVisoGenderConfig, export_visogender
    from contrastkit.builders.publish import PublishConfig, publish
    from contrastkit.evaluators.hub import materialize_hub_dataset
    from contrastkit.tsv import read_visogender_tsv, write_visogender_tsv

    table = read_visogender_tsv(official_oo)
    got = []
    for run in ("first", "second"):
        base, url = tmp_path / run, f"https://example.org/{run}.png"
        rows = [r.__class__(**{**r.__dict__, "url": url}) for r in table.rows[:4]]
        write_visogender_tsv(base / "oo.tsv", rows, table.context)
        export_visogender(ExportVisoGenderConfig(files=(base / "oo.tsv",), out=base / "export"))
        publish(PublishConfig(base / "export", "me/oo", dry_run=True, tree=base / "tree"))
        saved = materialize_hub_dataset(str(base / "tree"), base / "copy") / "saved" / "OO"
        got.append(set(datasets.load_from_disk(str(saved))["test"]["url"]))
    assert got == [{"https://example.org/first.png"}, {"https://example.org/second.png"}]


# -- the Python API: evaluate() and compare_results() without the command line ------------


@pytest.mark.slow
def test_evaluate_from_python_then_the_cli_resumes_and_report_compares(
    dataset: Path, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    """One evaluation, two entry points: ``evaluate()`` from Python scores four models
    (dual encoders, a captioning model and an ITM model), then ``contrastkit evaluate``
    on the same folder with the same models resumes it (every score reused) and writes
    every output, and ``compare_results`` / ``contrastkit report`` compare them."""
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.job import (
        EvaluateConfig,
        ReportConfig,
        compare_results,
        evaluate,
    )

    phases: list[tuple[str, int | None]] = []
    updates: list[tuple[int, int]] = []

    @contextmanager
    def progress(label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        phases.append((label, total))
        yield lambda done, total: updates.append((done, total))

    families = ("open_clip", "blip", "siglip", "git")
    out = tmp_path / "results"
    config = EvaluateConfig(
        data=(str(dataset / "visogender_OP.tsv"), str(dataset / "visogender_OO.tsv")),
        models=tuple(tiny_specs[f] for f in families),
        out=out,
        model=ModelConfig(device="cpu", batch_size=8),
        settings=EvalConfig(neutral=True, subsample_runs=20, baseline_runs=40),
    )
    result = evaluate(config, progress=progress)
    assert result.kind == "visogender"
    assert [e.model for e in result.evaluations] == list(config.models)
    assert [label for label, _ in phases] == [f"scoring {spec}" for spec in config.models]
    assert updates[-1] == (24, 24)
    dual, blip, _, captioning = result.evaluations
    assert dual.scored_images == 24 and dual.reused_records == 0 and dual.skipped == ()
    assert captioning.skipped == ("retrieval (captioning models cannot retrieve)",)
    assert set(dual.files) >= {"benchmark", "report", "bias_at_k_per_occupation"}
    assert all(path.is_file() for path in dual.files.values())
    assert dual.summary["resolution_bias"]["all_images"]["n"] == 24
    assert set(dual.summary["retrieval_bias"]["bias@5"]) >= {"mean", "sigma"}
    assert not any(name.startswith("per_") for name in dual.summary["resolution_bias"])
    assert result.comparison == out / "comparison.md"
    assert "## Retrieval bias" in result.comparison.read_text()
    assert json.loads(json.dumps(dual.to_dict()))["folder"] == str(dual.folder)

    comparison = compare_results(
        ReportConfig(results=(dual.folder, captioning.files["benchmark"]), out=tmp_path / "c.md")
    )
    assert (tmp_path / "c.md").read_text() == comparison.markdown
    # the side-by-side plot beside each comparison, shown by the markdown
    assert "![the models side by side](c.png)" in comparison.markdown
    assert (tmp_path / "c.png").stat().st_size and (tmp_path / "c.svg").stat().st_size
    assert "(comparison.png)" in result.comparison.read_text()
    assert (result.comparison.parent / "comparison.svg").is_file()
    assert [h["model"] for h in comparison.headlines] == [dual.model, captioning.model]
    assert comparison.headlines[0] == dual.summary
    assert comparison.results[1]["metadata"]["experiment_desc"] == "CAPTIONING"

    # The command line, same data, folder and models: resumed, every score reused.
    args = ["evaluate", "--data", str(dataset / "visogender_OP.tsv"), "--data",
            str(dataset / "visogender_OO.tsv"), "--out", str(out), "--neutral",
            "--device", "cpu", "--batch-size", "8", "--json", *FAST]  # fmt: skip
    for family in families:
        args += ["--model", tiny_specs[family]]
    for path in (*dual.files.values(), *blip.files.values()):
        path.unlink()  # written again by the resumed run
    again = runner.invoke(app, args)
    assert again.exit_code == 0, again.output
    summary = json.loads(again.stdout)
    assert [entry["model"] for entry in summary] == list(config.models)
    assert all(entry["scored_images"] == 0 for entry in summary)
    # resolution + retrieval + participant-subject retrieval (Tab. 5, the 16 OP images)
    assert summary[0]["reused_records"] == 40 + 24 + 16
    folder = Path(summary[0]["folder"])
    assert folder == dual.folder
    for name in ("raw_resolution.jsonl", "raw_retrieval.jsonl", "benchmark.json", "report.md"):
        assert (folder / name).stat().st_size > 0
    for name in (
        "accuracy_by_gender_pair",
        "gap_per_occupation",
        "bias_at_k_per_occupation",
        "labour_statistics",
    ):
        with Image.open(folder / "plots" / f"{name}.png") as plot:
            assert plot.format == "PNG" and plot.width > 300
    assert not (captioning.folder / "raw_retrieval.jsonl").exists()
    assert summary[3]["skipped"] == ["retrieval (captioning models cannot retrieve)"]
    name, results = load_benchmark(folder / "benchmark.json")
    assert name.startswith("visogender_open_clip") and name.endswith("_results")
    assert results["metadata"]["experiment_desc"] == "CLIP"
    assert set(results["resolution_bias"]["all_images"]) >= {"overall_accuracy", "RA_avg"}
    for key in ("bias@5", "bias@10", "maxskew@5", "maxskew@10", "NDKL"):
        assert set(results["retrieval_bias"][key]) >= {"mean", "sigma"}
    assert load_benchmark(captioning.folder)[1]["metadata"]["experiment_desc"] == "CAPTIONING"
    assert load_benchmark(Path(summary[1]["folder"]))[0].startswith("visogender_blip")
    lines = (folder / "raw_resolution.jsonl").read_text().splitlines()
    assert len(lines) == 40 and json.loads(lines[0])["scores"].keys() == {
        "masculine",
        "feminine",
        "neutral",
    }
    assert (out / "comparison.md").is_file()

    report = runner.invoke(app, ["report", str(folder), str(captioning.folder / "benchmark.json"),
                                 "--out", str(tmp_path / "side.md")])  # fmt: skip
    assert report.exit_code == 0
    assert tiny_specs["open_clip"] in report.output and tiny_specs["git"] in report.output
    assert "Two people, different gender RA_avg" in (tmp_path / "side.md").read_text()
    as_json = runner.invoke(app, ["report", str(folder), "--json"])
    assert json.loads(as_json.stdout)[0]["retrieval_bias"]["bias@5"]["mean"] is not None


def test_bad_config_values_are_config_errors_naming_the_field(
    dataset: Path, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.job import EvaluateConfig, ReportConfig, evaluate

    def config(**changes: object) -> EvaluateConfig:
        values: dict[str, object] = {
            "data": (str(dataset),), "models": (tiny_specs["blip"],), "out": tmp_path / "o",
        }  # fmt: skip
        return EvaluateConfig(**{**values, **changes})  # type: ignore[arg-type]

    for settings, field in (
        ({"ks": (0, 5)}, "ks"),
        ({"tasks": ("ranking",)}, "tasks"),
        ({"tasks": ()}, "tasks"),
        ({"baseline_runs": 1}, "baseline_runs"),
        ({"subsample_ks": (0,)}, "subsample_ks"),
        ({"ndkl_k": 0}, "ndkl_k"),
    ):
        with pytest.raises(ConfigError, match=f"^{field}: "):
            EvalConfig(**settings)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match=r"^data: give at least one"):
        config(data=())
    with pytest.raises(ConfigError, match=r"^models: give at least one"):
        config(models=[])
    with pytest.raises(ConfigError, match=r"^data: takes a tuple"):
        config(data=str(dataset))
    with pytest.raises(ConfigError, match="expected hf:USER/NAME"):
        config(data=("hf:not a repo",))
    with pytest.raises(ConfigError, match="must start with one of"):
        config(models=("clip:ViT-B-32",))
    with pytest.raises(ConfigError, match="given twice"):
        config(models=(tiny_specs["blip"], tiny_specs["blip"]))
    with pytest.raises(ConfigError, match=r"^batch_size: "):
        config(model=ModelConfig(batch_size=0))
    with pytest.raises(ConfigError, match=r"^results: give at least one"):
        ReportConfig(results=())
    # checked by the job before any model loads: nothing is scored, nothing written
    with pytest.raises(ConfigError, match="retrieval task needs a dual encoder"):
        evaluate(config(settings=EvalConfig(tasks=("retrieval",))))
    with pytest.raises(ConfigError, match=r"^store: "):
        evaluate(config(store=tmp_path / "no-store"))
    assert not list((tmp_path / "o").iterdir())


def test_an_unwritable_output_is_an_environment_error_before_any_work(
    dataset: Path, tmp_path: Path, tiny_specs: dict[str, str]
) -> None:
    from contrastkit.errors import ResourceError
    from contrastkit.evaluators.job import EvaluateConfig, ReportConfig, compare_results, evaluate

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    missing_model = "hf-clip:contrastkit-test/never-loaded"  # would fail if it were loaded
    with pytest.raises(ResourceError, match="cannot write evaluation results"):
        evaluate(EvaluateConfig(data=(str(dataset),), models=(missing_model,), out=blocker))
    with pytest.raises(ResourceError, match="cannot write the comparison"):
        compare_results(ReportConfig(results=(tmp_path / "none.json",), out=blocker / "c.md"))


@pytest.mark.slow
def test_plots_leave_the_matplotlib_backend_alone(
    dataset: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import matplotlib

    monkeypatch.setitem(matplotlib.rcParams, "backend", "svg")  # a notebook's own choice
    items = load_items([dataset])
    config = EvalConfig(subsample_runs=5, baseline_runs=5)
    run = score_dataset(items, KnownScorer(set()), tmp_path, config, ImageBatches(ImageLoader()))
    files = write_outputs(benchmark(run, config, [dataset]), tmp_path / "model")
    assert matplotlib.rcParams["backend"] == "svg"
    for name in ("accuracy_by_gender_pair", "bias_at_k_per_occupation", "labour_statistics"):
        with Image.open(files[name]) as plot:
            assert plot.format == "PNG" and plot.width > 300


def test_a_labour_correlation_from_too_few_occupations_is_not_read() -> None:
    """Three occupations gave "r = -1.00 (p = 0.04)" with a fitted line (issue 31): below
    MIN_LABOUR_OCCUPATIONS the result carries a caveat and the report shows no p-value;
    from that many on, no caveat."""
    from contrastkit.evaluators.stats import MIN_LABOUR_OCCUPATIONS
    from contrastkit.evaluators.tasks.visogender.report import labor_section as _labor_section

    few = labor_comparison({"hairdresser": 0.1, "teacher": 0.2, "engineer": 0.9})
    assert few["n"] == 3 and "too few to read a correlation" in few["caveat"]
    section = "\n".join(_labor_section({"resolution_gap": few}))
    assert "| n/a |" in section and "too few to read a correlation" in section
    # r and τ are as undefined as their p-values: one mark for all four
    assert "| resolution_gap | n/a | n/a | n/a | n/a | 3 |" in section
    names = sorted(labor_shares())[:MIN_LABOUR_OCCUPATIONS]
    enough = labor_comparison({name: float(n) for n, name in enumerate(names)})
    assert enough["n"] == MIN_LABOUR_OCCUPATIONS and "caveat" not in enough
    assert "n/a" not in "\n".join(_labor_section({"resolution_gap": enough}))
