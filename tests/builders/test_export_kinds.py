"""One export over the dataset kind (issue 32 item 1): `export` detects what its source
holds and runs the export that kind declares, with the features and card it declares;
`contrastkit export PATH --out OUT` does the same from the command line, and the named
jobs and subcommands give the same datasets."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import datasets
import numpy as np
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import (
    ExportConfig,
    ExportContrastConfig,
    ExportStereotypeConfig,
    ExportVisoGenderConfig,
    contrast_features,
    export,
    export_contrast_set,
    export_stereotype,
    export_visogender,
    load_export,
    originals_card,
    stereotype_features,
    visogender_features,
)
from contrastkit.cli import app
from contrastkit.errors import ConfigError
from contrastkit.kinds import detect_kind, detect_source, kinds
from contrastkit.schema import Context, Gender
from contrastkit.tsv import write_visogender_tsv
from factories import make_row
from loopback import jpeg_bytes
from stereoset_data import make_probe_fixture
from zero_shot_data import write_vg

ROOT = Path(__file__).resolve().parents[2]
runner = CliRunner()
datasets.disable_progress_bars()


def _bench_scale() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_scale", ROOT / "bench" / "scale.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def contrast_build(folder: Path) -> Path:
    """A finished GenSwap-style build of 8 edits (4 sources), 32 px JPEGs."""
    return Path(_bench_scale().write_contrast_build(folder, 8, image_size=32))


def visogender_set(folder: Path) -> Path:
    """An OO TSV whose four rows name image files beside it (embedded, no store)."""
    folder.mkdir(parents=True)
    urls = []
    for n in range(4):
        pixels = np.random.default_rng(n).integers(0, 256, (24, 24, 3), dtype=np.uint8)
        (folder / f"{n}.jpg").write_bytes(jpeg_bytes(Image.fromarray(pixels)))
        urls.append(f"{n}.jpg")
    genders = (Gender.MASCULINE, Gender.FEMININE)
    rows = [make_row("doctor", genders[n % 2], n=n, url=url) for n, url in enumerate(urls)]
    return write_visogender_tsv(folder / "oo.tsv", rows, Context.OO)


def rows_of(out: Path, config: str) -> list[dict[str, Any]]:
    data = load_export(out, config)["test"].cast_column("image", datasets.Image(decode=False))
    return list(data)


def card_of(out: Path) -> str:
    """The card without its export time (``2026-11-27T11:00:00+00:00``)."""
    return re.sub(r"\d{4}-\d\d-\d\dT[\d:+]+", "TIME", (out / "README.md").read_text())


def test_export_detects_each_kind_and_gives_what_the_named_job_gives(tmp_path: Path) -> None:
    build = contrast_build(tmp_path / "build")
    tsv = visogender_set(tmp_path / "vg")
    probes = make_probe_fixture(tmp_path / "probes")[2]
    assert detect_kind(build).name == "visogender"  # not an export: evaluate's sniffing
    assert detect_source(build).name == "contrast"  # but a build that export reads
    cases = [
        (build, "contrast", "genswap",
         lambda out: export_contrast_set(ExportContrastConfig(build, out))),
        (tsv, "OO", "visogender",
         lambda out: export_visogender(ExportVisoGenderConfig((tsv,), out))),
        (probes, "stereotype", "stereotype",
         lambda out: export_stereotype(ExportStereotypeConfig(probes, out))),
    ]  # fmt: skip
    for n, (source, config, recorded, named) in enumerate(cases):
        detected = export(ExportConfig(source, tmp_path / f"detected-{n}"))
        assert detected.metadata["kind"] == recorded
        named(tmp_path / f"named-{n}")
        assert rows_of(tmp_path / f"detected-{n}", config) == rows_of(
            tmp_path / f"named-{n}", config
        )
        cards = [card_of(tmp_path / f"{how}-{n}") for how in ("detected", "named")]
        assert cards[0] == cards[1]


def test_each_kind_declares_its_features_and_card() -> None:
    registered = kinds()
    vg, contrast, stereotype = (registered[n] for n in ("visogender", "contrast", "stereotype"))
    assert vg.export_features("OP") == visogender_features(Context.OP, with_images=True)
    assert vg.export_features("OO", with_images=False) == visogender_features(
        Context.OO, with_images=False
    )
    assert contrast.export_features("contrast") == contrast_features()
    assert stereotype.export_features("stereotype", with_images=False) == stereotype_features(
        with_images=False
    )
    with pytest.raises(ConfigError, match="OP and OO, not 'contrast'"):
        vg.export_features("contrast")
    assert registered["zero-shot"].export is None
    # the contrast kind's card: the originals card for an originals export
    metadata = {
        "kind": "originals", "license": "other", "pretty_name": "Originals",
        "configs": {"contrast": {"splits": {"test": {}}}}, "counts": {
            "contrast": {"masculine": 1, "feminine": 1}},
        "description": "The unedited photos.", "total_rows": 2, "build_dir": "b",
        "source_description": "photos", "source_licence": "theirs",
        "contrastkit_version": "0", "exported_at": "now",
    }  # fmt: skip
    assert contrast.render_card(metadata) == originals_card(metadata)


def test_options_a_kind_does_not_take_and_sources_it_cannot_export(tmp_path: Path) -> None:
    build = contrast_build(tmp_path / "build")
    tsv = visogender_set(tmp_path / "vg")
    with pytest.raises(ConfigError, match="store: contrast sets do not take this option"):
        export(ExportConfig(build, tmp_path / "out", store=tmp_path / "store"))
    with pytest.raises(ConfigError, match="originals: VisoGender-style data do not take"):
        export(ExportConfig(tsv, tmp_path / "out", originals=True))
    with pytest.raises(ConfigError, match="source: mixes contrast sets"):
        export(ExportConfig((build, tsv), tmp_path / "out"))
    with pytest.raises(ConfigError, match="kind: 'nothing' is not a dataset kind"):
        export(ExportConfig(tsv, tmp_path / "out", kind="nothing"))
    vg = write_vg(tmp_path / "vgenome")
    with pytest.raises(ConfigError, match="is a Visual Genome or COCO folder, which is not"):
        export(ExportConfig(vg, tmp_path / "out"))
    done = export(ExportConfig(build, tmp_path / "done"))
    with pytest.raises(ConfigError, match="already a contrastkit export"):
        export(ExportConfig(done.out_dir, tmp_path / "again"))
    assert not (tmp_path / "out").exists() and not (tmp_path / "again").exists()


def test_contrastkit_export_path_detects_the_kind(tmp_path: Path) -> None:
    build = contrast_build(tmp_path / "build")
    visogender_set(tmp_path / "vg")
    result = runner.invoke(app, ["export", str(build), "--out", str(tmp_path / "c")])
    assert result.exit_code == 0, result.output
    assert "contrast/test: 8 rows" in result.output
    originals = runner.invoke(
        app, ["export", str(build), "--out", str(tmp_path / "o"), "--originals"]
    )  # the originals export of this build: it has no sources.jsonl (a synthetic build)
    assert originals.exit_code == 2 and "sources.jsonl: no source" in originals.output
    folder = runner.invoke(app, ["export", str(tmp_path / "vg"), "--out", str(tmp_path / "v")])
    assert folder.exit_code == 0, folder.output  # a folder of TSVs
    assert "OO/test: 4 rows" in folder.output
    refused = runner.invoke(
        app, ["export", str(build), "--out", str(tmp_path / "x"), "--checks", "c.jsonl"]
    )
    assert refused.exit_code == 2
    assert "checks: contrast sets do not take this option" in " ".join(refused.output.split())
    named = runner.invoke(app, ["export", "contrast", str(build), "--out", str(tmp_path / "n")])
    assert named.exit_code == 0, named.output  # the subcommands still work
    assert rows_of(tmp_path / "n", "contrast") == rows_of(tmp_path / "c", "contrast")
    shown = runner.invoke(app, ["export", "--help"])
    assert shown.exit_code == 0 and "contrastkit export PATH --out OUT" in shown.output
