"""Every job through the Python API alone — ``import contrastkit as ck``, one config per
job, no command line — on the test fixtures: a loopback image server, real photos, the
tiny saved models."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

import contrastkit as ck
from loopback import LoopbackServer, jpeg_bytes, static

OCCUPATION = "doctor"
#: VisoGender's cells for one occupation at one image per cell (OO: M, F; OP: MM..FF).
CELLS = [("OO", "masculine", ""), ("OO", "feminine", ""), ("OP", "masculine", "masculine"),
         ("OP", "masculine", "feminine"), ("OP", "feminine", "masculine"),
         ("OP", "feminine", "feminine")]  # fmt: skip
NETWORK = ck.CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0, total_timeout=10)


def _photo(n: int) -> bytes:
    from contrastkit.samples import photo

    image = photo(("astronaut", "camera", "grace_hopper")[n % 3]).resize((96 + n, 96))
    return jpeg_bytes(image.rotate(15 * n) if n >= 3 else image)


@pytest.fixture(scope="module")
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer({f"/{n}.jpg": static(_photo(n)) for n in range(len(CELLS))}) as up:
        yield up


def _candidates(server: LoopbackServer, path: Path) -> Path:
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["url", "occupation", "context", "occupation_gender",
                         "participant_gender", "licence_ok"])  # fmt: skip
        for n, (context, first, second) in enumerate(CELLS):
            writer.writerow([server.url(f"/{n}.jpg"), OCCUPATION, context, first, second, "yes"])
    return path


@pytest.mark.slow
def test_the_visogender_jobs_end_to_end(
    server: LoopbackServer, tiny_clip_spec: str, tmp_path: Path
) -> None:
    build = ck.build_visogender(ck.BuildVisoGenderConfig(
        candidates=_candidates(server, tmp_path / "pool.csv"), out=tmp_path / "build",
        per_cell=1))  # fmt: skip
    assert build.complete and [p.name for p in build.tables] == [
        "visogender_OP.tsv", "visogender_OO.tsv"
    ]  # fmt: skip

    store = tmp_path / "images"
    report = ck.check_dataset_urls(
        ck.URLCheckJobConfig(
            files=build.tables, network=NETWORK, store=store, results=tmp_path / "checks.jsonl"
        )
    )
    assert report.status_counts() == {"ok": 6} and report.ok  # fmt: skip

    run = ck.maintain(
        ck.MaintainConfig(
            files=build.tables, db=tmp_path / "state.sqlite", network=NETWORK, per_cell=1
        )
    )
    assert run.exit_code == 0 and run.report_path is not None  # fmt: skip
    assert Path(run.report_path).is_file()

    export = ck.export_visogender(ck.ExportVisoGenderConfig(
        files=build.tables, out=tmp_path / "export", store=store,
        checks=tmp_path / "checks.jsonl"))  # fmt: skip
    first = export.configs["OP"]["test"][0]["image"]
    assert isinstance(first, Image.Image) and first.size[1] == 96
    dry = ck.publish(ck.PublishConfig(export=tmp_path / "export", repo_id="lab/vg", dry_run=True))
    assert dry.loaded_rows == {"OP": {"test": 4}, "OO": {"test": 2}}

    settings = ck.EvalConfig(ks=(1, 2), subsample_runs=5, baseline_runs=10)
    evaluated = ck.evaluate(
        ck.EvaluateConfig(
            data=(str(tmp_path / "build"),),
            models=(tiny_clip_spec,),
            out=tmp_path / "results",
            store=store,
            model=ck.ModelConfig(device="cpu", batch_size=4),
            settings=settings,
        )
    )
    (done,) = evaluated.evaluations  # fmt: skip
    assert evaluated.kind == "visogender" and done.scored_images == 6
    benchmark = json.loads((done.folder / "benchmark.json").read_text())
    assert benchmark  # the Appendix J structure, written by the job

    table = ck.compare_results(ck.ReportConfig(results=(done.folder,)))
    assert done.model in table.markdown and len(table.headlines) == 1


@pytest.mark.slow
def test_the_contrast_set_jobs_end_to_end(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, face_bank: Path, tmp_path: Path
) -> None:
    model = ck.ModelConfig(device="cpu", batch_size=4)
    synth = ck.build_gensynth(ck.GenSynthConfig(
        out=tmp_path / "gensynth", coco=coco_dir, limit=2, min_box_side=64,
        editor=str(tiny_editor_dir), embedder=tiny_clip_spec,
        edit=ck.EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32),
        k=3, tau_real=-1, tau_gender=-1, model=model))  # fmt: skip
    assert synth.sources_kept == 2 and synth.quality is not None

    swap = ck.build_genswap(
        ck.GenSwapConfig(
            coco=coco_dir, faces=face_bank, out=tmp_path / "genswap", limit=2, model=model
        )
    )
    assert swap.summary  # fmt: skip

    export = ck.export_contrast_set(ck.ExportContrastConfig(
        build=tmp_path / "gensynth", out=tmp_path / "gs-export"))  # fmt: skip
    assert export.configs["contrast"]["test"].num_rows == 4  # 2 sources x 2 genders

    evaluated = ck.evaluate(ck.EvaluateConfig(
        data=(str(tmp_path / "gs-export"),), models=(tiny_clip_spec,),
        out=tmp_path / "results", model=model))  # fmt: skip
    assert evaluated.kind == "contrast"
    assert evaluated.evaluations[0].summary["pairs"]["masculine_preferred"] is not None


def test_the_quickstart_job_is_the_one_the_command_runs() -> None:
    """``contrastkit.quickstart`` is the job ``contrastkit quickstart`` maps its options
    onto (tests/apps/test_quickstart.py runs it end to end through the console script)."""
    from contrastkit.apps.quickstart import QuickstartConfig, quickstart

    assert ck.quickstart is quickstart and ck.QuickstartConfig is QuickstartConfig


def test_every_job_and_config_is_exported() -> None:
    jobs = {"build_visogender", "build_gensynth", "build_genswap", "export_visogender",
            "export_contrast_set", "publish", "check_dataset_urls", "maintain", "evaluate",
            "compare_results", "quickstart"}  # fmt: skip
    for name in jobs:
        assert callable(getattr(ck, name)) and name in ck.__all__
    for name in ck.__all__:
        if name.endswith("Config") and name not in ("CheckConfig", "EvalConfig"):
            config = getattr(ck, name)
            assert config.__dataclass_params__.frozen, name


def _imported_modules(package: str) -> dict[str, set[str]]:
    """Every ``contrastkit`` module imported (at any depth of the code) by each file of
    ``contrastkit.<package>``."""
    import ast

    root = Path(ck.__file__).parent
    found: dict[str, set[str]] = {}
    for path in sorted((root / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[str(path.relative_to(root))] = {n for n in names if n.startswith("contrastkit.")}
    return found


@pytest.mark.parametrize(
    ("package", "forbidden"),
    [("builders", "contrastkit.evaluators"), ("evaluators", "contrastkit.builders"),
     ("builders", "contrastkit.apps"), ("evaluators", "contrastkit.apps"),
     ("curation", "contrastkit.builders"), ("curation", "contrastkit.evaluators")],
)  # fmt: skip
def test_the_layers_never_import_upwards_or_sideways(package: str, forbidden: str) -> None:
    """docs/architecture.md: builders and evaluators meet only in apps/ (and audit/)."""
    offenders = {
        file: sorted(n for n in names if n == forbidden or n.startswith(forbidden + "."))
        for file, names in _imported_modules(package).items()
    }
    assert {f: n for f, n in offenders.items() if n} == {}
