"""The task engine, through the gendered-words task (a task folder on the protocol) and a
planted captioner registered as a real model family: the shares it must find, resume,
settings that change records, the capability check, the CLI options built from the
settings class, the typed result read back, and ``report``."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrast_data import contrast_export
from contrastkit.cli import app
from contrastkit.errors import ConfigError
from contrastkit.evaluators.contrast_data import contrast_genders
from contrastkit.evaluators.job import EvaluateConfig, ReportConfig, compare_results, evaluate
from contrastkit.evaluators.runner import EvalConfig
from contrastkit.evaluators.tasks.gendered_words import (
    GenderedWordsResult,
    GenderedWordsSettings,
)
from contrastkit.results import load_result
from planted_captioner import CALLS, planted_family

runner = CliRunner()


@pytest.fixture
def planted() -> Iterator[str]:
    with planted_family() as prefix:
        yield prefix


@pytest.fixture
def export(tmp_path: Path) -> Path:
    return contrast_export(tmp_path / "export", sources=4)


def _config(export: Path, out: Path, *models: str, **extra: object) -> EvaluateConfig:
    return EvaluateConfig(
        data=(str(export),), models=models, out=out, task="gendered-words",
        settings=EvalConfig(bootstrap=200), **extra,  # type: ignore[arg-type]
    )  # fmt: skip


def test_the_shares_are_those_the_planted_captions_give(
    planted: str, export: Path, tmp_path: Path
) -> None:
    result = evaluate(_config(export, tmp_path / "out", f"{planted}:colour"))
    [entry] = result.evaluations
    data = json.loads((entry.folder / "benchmark.json").read_text())
    assert data["task"] == "gendered-words" and data["items"] == 4
    assert data["masculine"]["masculine_words"] == 1.0
    assert data["masculine"]["feminine_words"] == 0.0
    assert data["feminine"]["feminine_words"] == 1.0  # "her" and "woman"
    assert data["flip_rate"] == 1.0 and data["follows_edit"] == 1.0
    assert data["against_edit"] == 0.0
    assert data["masculine"]["masculine_words_ci"]["resamples"] == 200
    assert "too few" in data["note"]
    typed = load_result(entry.folder)
    assert isinstance(typed, GenderedWordsResult)
    assert typed.feminine is not None and typed.feminine.labelled_feminine == 1.0
    report = (entry.folder / "report.md").read_text()
    assert "| masculine | with a masculine word | 1.00 [1.00, 1.00] |" in report
    assert "too few" in report
    assert (entry.folder / "plots" / "gendered_words.png").stat().st_size > 0
    assert entry.summary["follows_edit"] == 1.0


def test_a_swapped_captioner_goes_against_the_edit(
    planted: str, export: Path, tmp_path: Path
) -> None:
    result = evaluate(_config(export, tmp_path / "out", f"{planted}:swapped", f"{planted}:same"))
    swapped, same = (
        json.loads((e.folder / "benchmark.json").read_text()) for e in result.evaluations
    )
    assert swapped["against_edit"] == 1.0 and swapped["follows_edit"] == 0.0
    assert same["flip_rate"] == 0.0
    assert same["feminine"]["masculine_words"] == 1.0
    assert result.comparison is not None
    comparison = result.comparison.read_text()
    assert f"`{planted}:swapped`" in comparison and f"`{planted}:same`" in comparison


def test_a_rerun_reuses_the_records_and_other_settings_score_again(
    planted: str, export: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    spec = f"{planted}:colour"
    evaluate(_config(export, out, spec))
    CALLS.clear()
    again = evaluate(_config(export, out, spec))
    assert again.evaluations[0].reused_records == 4 and again.evaluations[0].scored_images == 0
    assert CALLS == []
    with pytest.warns(UserWarning, match="4 records .* scored under other settings"):
        other = evaluate(
            _config(export, out, spec, task_settings=GenderedWordsSettings(max_new_tokens=7))
        )
    assert other.evaluations[0].scored_images == 4 and set(CALLS) == {7}
    data = json.loads((other.evaluations[0].folder / "benchmark.json").read_text())
    assert data["settings"] == {"max_new_tokens": 7}


def test_a_model_without_descriptions_is_refused_before_any_loads(
    export: Path, tmp_path: Path, tiny_clip_spec: str
) -> None:
    with pytest.raises(ConfigError, match="needs descriptions"):
        evaluate(_config(export, tmp_path / "out", tiny_clip_spec))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.jsonl"))


def test_settings_are_checked_and_must_be_the_tasks_own(
    planted: str, export: Path, tmp_path: Path
) -> None:
    with pytest.raises(ConfigError, match="max_new_tokens"):
        GenderedWordsSettings(max_new_tokens=0)
    from contrastkit.evaluators.engine import TaskSettings

    with pytest.raises(ConfigError, match="task_settings"):
        EvaluateConfig(data=("x",), models=("open_clip:x/y",), out=tmp_path, task_settings=3)  # type: ignore[arg-type]
    wrong = _config(export, tmp_path / "o", f"{planted}:colour", task_settings=TaskSettings())
    with pytest.raises(ConfigError, match="takes GenderedWordsSettings"):
        evaluate(wrong)


def test_the_command_has_the_settings_as_options_and_report_reads_it(
    planted: str, export: Path, tmp_path: Path
) -> None:
    shown = runner.invoke(app, ["evaluate", "gendered-words", "--help"], terminal_width=120)
    assert shown.exit_code == 0 and "--max-new-tokens" in shown.output
    out = tmp_path / "out"
    done = runner.invoke(app, [
        "evaluate", "gendered-words", "--data", str(export), "--model", f"{planted}:colour",
        "--out", str(out), "--max-new-tokens", "5", "--bootstrap", "50", "--json",
    ])  # fmt: skip
    assert done.exit_code == 0, done.output
    [folder] = [p for p in out.iterdir() if p.is_dir()]
    data = json.loads((folder / "benchmark.json").read_text())
    assert data["settings"] == {"max_new_tokens": 5} and data["bootstrap"] == 50
    compared = compare_results(ReportConfig(results=(folder,), out=tmp_path / "cmp.md"))
    assert "Gendered words in descriptions" in compared.markdown
    assert compared.headlines[0]["task"] == "gendered-words"
    assert isinstance(compared.results[0], GenderedWordsResult)


def test_sources_with_one_version_are_counted_and_left_out(planted: str, tmp_path: Path) -> None:
    import datasets

    folder = contrast_export(tmp_path / "export", sources=3)
    saved = folder / "saved" / "contrast"
    data = datasets.load_from_disk(str(saved))["test"]
    keep = data.filter(lambda row: not (row["source_id"] == "2" and row["gender"] == 1))
    if len(keep) == len(data):  # the gender column stored as text
        keep = data.filter(
            lambda row: not (row["source_id"] == "2" and row["gender"] == "feminine")
        )
    other = tmp_path / "one-version"
    datasets.DatasetDict({"test": keep}).save_to_disk(str(other / "saved" / "contrast"))
    result = evaluate(_config(other, tmp_path / "out", f"{planted}:colour"))
    data_out = json.loads((result.evaluations[0].folder / "benchmark.json").read_text())
    assert data_out["items"] == 2 and data_out["sources_one_version"] == 1
    assert (
        "1 sources with one version were left out"
        in (result.evaluations[0].folder / "report.md").read_text()
    )


def test_a_real_tiny_blip_describes_both_versions_through_the_engine(
    export: Path, tmp_path: Path
) -> None:
    """A real adapter through the engine: the captions in the raw file are the tiny
    BLIP's own for those images, in the same batches; a model with random weights says
    so in the report. (The tiny BLIP writes the same words for any image, so which
    image reaches which version is checked by the planted captioner's tests above, whose
    captions follow the colour.)"""
    from contrastkit.config import ModelConfig
    from contrastkit.evaluators.contrast_data import load_contrast
    from contrastkit.models import load_model
    from contrastkit.tiny.marker import mark_random_weights
    from tiny_models import tiny_blip

    spec = tiny_blip(tmp_path / "models")
    mark_random_weights(Path(spec.removeprefix("blip:")))
    config = _config(
        export, tmp_path / "out", spec, task_settings=GenderedWordsSettings(max_new_tokens=3),
        model=ModelConfig(device="cpu", batch_size=3),
    )  # fmt: skip
    [entry] = evaluate(config).evaluations
    records = [json.loads(line) for line in (entry.folder / "raw_gendered_words.jsonl").open()]
    assert len(records) == 4
    dataset = load_contrast(export)
    genders = contrast_genders(dataset)
    versions = ("masculine", "feminine")

    def image(source: str, version: str) -> Any:
        [index] = [
            i for i, s in enumerate(dataset["source_id"]) if (s, genders[i]) == (source, version)
        ]
        return dataset[index]["image"].convert("RGB")

    # the adapter's own captions of the same images, in the same calls the engine made
    # (3 sources a batch, both versions each: the same batch shapes, so the same kernels)
    model = load_model(spec, ModelConfig(device="cpu", batch_size=3))
    sources = [record["key"].split(":")[-1] for record in records]
    for start in range(0, len(records), 3):
        batch = records[start : start + 3]
        flat = [image(s, v) for s in sources[start : start + 3] for v in versions]
        expected = model.generate_captions(flat, 3)  # type: ignore[union-attr]
        assert [r[v]["caption"] for r in batch for v in versions] == expected
    assert "Random weights" in (entry.folder / "report.md").read_text()
    assert json.loads((entry.folder / "benchmark.json").read_text())["random_weights"] is True


def test_the_html_report_shows_a_protocol_tasks_results(
    planted: str, export: Path, tmp_path: Path
) -> None:
    from contrastkit.evaluators.html import HtmlReportConfig, write_html_report

    result = evaluate(_config(export, tmp_path / "out", f"{planted}:colour", f"{planted}:same"))
    folders = tuple(entry.folder for entry in result.evaluations)
    report = write_html_report(HtmlReportConfig(results=folders, out=tmp_path / "html"))
    pages = sorted(p.name for p in (tmp_path / "html").glob("result-*.html"))
    assert pages == [
        f"result-gendered-words-{folder.name}.html" for folder in sorted(folders)
    ]  # fmt: skip
    page = (tmp_path / "html" / pages[0]).read_text()
    assert "label flips with the edit" in page and "gendered_words" in page
    assert report.index.is_file()


def test_report_html_gives_an_audit_its_page_and_keeps_it_out_of_the_tables(
    planted: str, export: Path, tmp_path: Path
) -> None:
    """`contrastkit report RESULTS AUDIT --html SITE`: the audit gets its page in the
    site, the side-by-side tables hold the models only; without --html an audit is
    refused as before."""
    golden = json.loads((Path(__file__).parents[1] / "golden" / "audit_coco.json").read_text())
    [audit] = [data for name, data in golden.items() if name.endswith("audit.json")]
    audit_folder = tmp_path / "audit"
    audit_folder.mkdir()
    (audit_folder / "audit.json").write_text(json.dumps(audit), encoding="utf-8")
    [entry] = evaluate(_config(export, tmp_path / "out", f"{planted}:colour")).evaluations
    site = tmp_path / "site"
    done = runner.invoke(app, ["report", str(entry.folder), str(audit_folder), "--html", str(site)])
    assert done.exit_code == 0, done.output
    assert "Gendered words in descriptions" in done.output and "audit" not in done.output.lower()
    assert list(site.glob("result-audit-*.html")) and list(site.glob("result-gendered-words-*"))
    refused = runner.invoke(app, ["report", str(entry.folder), str(audit_folder)])
    assert refused.exit_code == 2 and "an audit result, not a benchmark" in refused.output
