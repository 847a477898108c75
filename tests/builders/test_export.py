"""Export to Hugging Face datasets, the dataset card, and the publishing dry run."""

from __future__ import annotations

import json
import re
from pathlib import Path

import datasets
import numpy as np
import pytest
import yaml
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import (
    ExportContrastConfig,
    ExportVisoGenderConfig,
    export_contrast_set,
    export_visogender,
    load_export,
    read_metadata,
)
from contrastkit.builders.genswap import swap_faces
from contrastkit.builders.genswap_job import GenSwapConfig
from contrastkit.builders.gensynth import (
    EditStageConfig,
    FilterSettings,
    run_edit_stage,
    run_filter_stage,
    run_select_stage,
)
from contrastkit.builders.gensynth.quality import run_quality_checks
from contrastkit.builders.manifest import read_contrast_set
from contrastkit.builders.publish import PublishConfig, publish
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings, load_editor
from contrastkit.curation.faces import FaceDetector
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.models import load_scorer
from contrastkit.schema import URL_COLUMN, Context, Gender
from contrastkit.store import ImageMeta, ImageStore
from contrastkit.tsv import read_visogender_tsv
from contrastkit.tsv import write_visogender_tsv as write_tsv
from factories import hold_build_lock, make_row, photo

M, F = Gender.MASCULINE, Gender.FEMININE
datasets.disable_progress_bars()
runner = CliRunner()


def test_round_trip_through_save_to_disk_and_parquet_keeps_rows_and_image_bytes(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, oo, store_dir, _ = built
    store = ImageStore(store_dir)
    result = export_visogender(ExportVisoGenderConfig((op, oo), tmp_path / "out", store=store.root))
    assert list(result.configs) == ["OP", "OO"]
    rows = read_visogender_tsv(op).rows
    for source in ("disk", "parquet"):
        loaded = load_export(tmp_path / "out", "OP", source=source)["test"]
        assert loaded.num_rows == len(rows)
        features = loaded.features
        assert features["occupation_gender"].names == ["masculine", "feminine"]
        assert features["context"].names == ["OP", "OO"]
        assert isinstance(features["image"], datasets.Image)
        for row, record in zip(rows, loaded.cast_column("image", datasets.Image(decode=False)),
                               strict=True):  # fmt: skip
            assert record["idx"] == row.idx and record["url"] == row.url
            assert features["occupation_gender"].int2str(record["occupation_gender"]) == (
                row.occupation_gender.value
            )
            assert features["participant_gender"].int2str(record["participant_gender"]) == (
                row.participant_gender.value if row.participant_gender else None
            )
            sha = store.sha_for_url(row.url)
            assert sha is not None and record["image_sha256"] == sha
            assert record["image"]["bytes"] == store.read(sha)  # not re-encoded
    oo_loaded = load_export(tmp_path / "out", "OO", source="parquet")["test"]
    assert "object" in oo_loaded.column_names and "participant" not in oo_loaded.column_names


def test_the_card_states_the_numbers_of_the_data(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, oo, store_dir, checks = built
    export_visogender(
        ExportVisoGenderConfig((op, oo), tmp_path / "out", store=store_dir, checks=checks)
    )
    card = (tmp_path / "out" / "README.md").read_text()
    front, body = re.match(r"---\n(.*?)\n---\n(.*)", card, re.S).groups()  # type: ignore[union-attr]
    header = yaml.safe_load(front)
    assert header["license"] == "cc-by-4.0" and header["size_categories"] == ["n<1K"]
    assert [c["config_name"] for c in header["configs"]] == ["OP", "OO"]
    assert "zero-shot-image-classification" in header["task_categories"]

    data = load_export(tmp_path / "out", "OP")["test"]
    genders = data.features["occupation_gender"]
    for occupation in ("doctor", "teacher"):
        n = sum(1 for o, g in zip(data["occupation"], data["occupation_gender"], strict=True)
                if o == occupation and genders.int2str(g) == "masculine")  # fmt: skip
        assert n == 2
        assert f"| {occupation} | 1 | 1 | 1 | 1 |" in body  # MM MF FM FF
    assert "12 rows in 2 config(s)" in body
    assert "| ok | 12 |" in body  # from the urls check results
    assert "must **not** be used to train" in body and "Removal requests" in body
    metadata = read_metadata(tmp_path / "out")
    assert metadata["url_check"]["status_counts"] == {"ok": 12}
    assert metadata["total_rows"] == 12


def test_url_only_export_and_missing_images(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, _, _, _ = built
    plain = export_visogender(ExportVisoGenderConfig((op,), tmp_path / "plain"))
    assert "image" not in plain.configs["OP"]["test"].column_names
    assert "URL-only export" in (tmp_path / "plain" / "README.md").read_text()

    empty = ImageStore(tmp_path / "empty-store")
    named = re.escape(f'op.tsv:2: field "{URL_COLUMN}": the image store')
    with pytest.raises(DataFormatError, match=named):
        export_visogender(ExportVisoGenderConfig((op,), tmp_path / "failed", store=empty.root))
    assert not (tmp_path / "failed").exists()
    assert not list(tmp_path.glob(".failed*"))  # no half-written folder left behind

    skipped = export_visogender(
        ExportVisoGenderConfig((op,), tmp_path / "skipped", store=empty.root, skip_missing=True)
    )
    assert skipped.configs["OP"]["test"].num_rows == 0
    assert len(skipped.metadata["skipped_missing_images"]["OP"]) == 8


def local_image_set(folder: Path, urls: list[str] | None = None) -> Path:
    """An OO TSV of four rows whose URL column names image files in its folder, each
    written the way a person or a script writes it: a relative name, a name in a
    subfolder, an absolute path and a ``file://`` URL (or ``urls`` as given, the files
    written under ``img/``)."""
    (folder / "img").mkdir(parents=True)
    for n in range(4):
        (folder / "img" / f"{n:04d}.jpg").write_bytes(photo(100 + n))
    if urls is None:
        (folder / "img" / "0000.jpg").rename(folder / "0000.jpg")
        urls = ["0000.jpg", "img/0001.jpg", str(folder / "img" / "0002.jpg"),
                (folder / "img" / "0003.jpg").as_uri()]  # fmt: skip
    rows = [make_row("doctor", (M, F)[n % 2], n=n, url=url) for n, url in enumerate(urls)]
    return write_tsv(folder / "oo.tsv", rows, Context.OO)


def test_local_image_files_are_embedded_and_the_card_says_so(tmp_path: Path) -> None:
    """Issue 31 item 3: a TSV whose URL column names local files (which `evaluate`
    reads) exported as a URL-only set whose card told the user to fetch `img/0000.jpg`.
    The images are embedded, `url` holds each file's name relative to the TSV's folder,
    and the card describes an image-embedded set; `evaluate` reads the images back."""
    from contrastkit.evaluators.data import ImageLoader, load_items

    tsv = local_image_set(tmp_path / "data")
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "visogender", str(tsv), "--out", str(out)])
    assert result.exit_code == 0, result.output
    names = ["0000.jpg", "img/0001.jpg", "img/0002.jpg", "img/0003.jpg"]
    for source in ("disk", "parquet"):
        loaded = load_export(out, "OO", source=source)["test"]
        records = list(loaded.cast_column("image", datasets.Image(decode=False)))
        assert [r["url"] for r in records] == names  # no path of the exporter's machine
        for name, record in zip(names, records, strict=True):
            assert record["image"]["bytes"] == (tmp_path / "data" / name).read_bytes()
    card = " ".join((out / "README.md").read_text().split())
    assert "URL-only" not in card and "Fetch them" not in card
    assert "embedded in the `image` column" in card and "no URL check applies" in card
    assert str(tmp_path) not in card + (out / "build_metadata.json").read_text()
    metadata = read_metadata(out)
    assert metadata["with_images"] and metadata["image_sources"] == {
        "local_files": 4, "image_store": 0
    }  # fmt: skip
    items = load_items([out])  # what `evaluate --data EXPORT` scores
    assert [i.image_ref.startswith("dataset:") for i in items] == [True] * 4
    first = ImageLoader().open(items[0])  # no store, no file: the image is in the export
    with Image.open(tmp_path / "data" / "0000.jpg") as original:
        assert np.array_equal(np.asarray(first), np.asarray(original.convert("RGB")))


@pytest.mark.parametrize("where", ["../secret.jpg", "absolute"])
def test_a_local_image_outside_the_tsvs_folder_is_refused(tmp_path: Path, where: str) -> None:
    """Data never names a file outside the folder the user gave: a `..` name or an
    absolute path elsewhere is an error naming the file, line and field, and nothing is
    written (an export is meant to be published)."""
    (tmp_path / "secret.jpg").write_bytes(photo(7))
    url = where if where != "absolute" else str(tmp_path / "secret.jpg")
    tsv = local_image_set(tmp_path / "data", ["img/0000.jpg", url, "img/0002.jpg"])
    with pytest.raises(DataFormatError, match="names a file outside the data's folder") as caught:
        export_visogender(ExportVisoGenderConfig((tsv,), tmp_path / "out"))
    assert (caught.value.line, caught.value.field) == (3, URL_COLUMN)
    assert not (tmp_path / "out").exists() and not list(tmp_path.glob(".out*"))


def test_local_images_beside_urls_need_the_store_of_the_urls(tmp_path: Path) -> None:
    """Without a store, rows naming local files beside rows naming URLs are refused
    (the export embeds every image or none), naming the first local row and the URL row;
    with the store that holds the URL's image, both kinds are embedded."""
    url = "https://example.org/0001.jpg"
    tsv = local_image_set(tmp_path / "data", ["img/0000.jpg", url, "img/0002.jpg"])
    result = runner.invoke(app, ["export", "visogender", str(tsv), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and not (tmp_path / "o").exists()
    output = " ".join(result.output.split())
    assert f'oo.tsv:2: field "{URL_COLUMN}": a local image file' in output
    assert "oo.tsv:3 gives an image URL" in output and "--store DIR" in output

    store = ImageStore(tmp_path / "store")
    data = photo(101)
    store.put(data, ImageMeta(format="JPEG", width=72, height=72, phash="0" * 16), url=url)
    mixed = export_visogender(ExportVisoGenderConfig((tsv,), tmp_path / "out", store=store.root))
    loaded = mixed.configs["OO"]["test"].cast_column("image", datasets.Image(decode=False))
    assert loaded["url"] == ["img/0000.jpg", url, "img/0002.jpg"]
    assert loaded[1]["image"]["bytes"] == data
    assert loaded[2]["image"]["bytes"] == (tmp_path / "data" / "img" / "0002.jpg").read_bytes()
    assert mixed.metadata["image_sources"] == {"local_files": 2, "image_store": 1}
    card = " ".join((tmp_path / "out" / "README.md").read_text().split())
    assert "2 from image files in the annotation files' folder" in card


def test_a_missing_local_image_is_an_error_or_left_out(tmp_path: Path) -> None:
    tsv = local_image_set(tmp_path / "data", ["img/0000.jpg", "img/gone.jpg", "img/0002.jpg"])
    with pytest.raises(DataFormatError, match=r"image file not found: .*gone\.jpg") as caught:
        export_visogender(ExportVisoGenderConfig((tsv,), tmp_path / "out"))
    assert caught.value.line == 3
    kept = export_visogender(ExportVisoGenderConfig((tsv,), tmp_path / "out", skip_missing=True))
    assert kept.configs["OO"]["test"]["idx"] == ["OO_0", "OO_2"]
    assert kept.metadata["skipped_missing_images"] == {"OO": ["OO_1"]}
    broken = local_image_set(tmp_path / "broken", ["img/0000.jpg", "img/0003.jpg"])
    (tmp_path / "broken" / "img" / "0003.jpg").write_bytes(b"not an image")
    with pytest.raises(DataFormatError, match=r"0003\.jpg is not a readable image"):
        export_visogender(ExportVisoGenderConfig((broken,), tmp_path / "out2"))


def test_a_new_export_replaces_the_old_one_whole(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, oo, _, _ = built
    export_visogender(ExportVisoGenderConfig((op, oo), tmp_path / "out"))
    export_visogender(ExportVisoGenderConfig((oo,), tmp_path / "out"))
    assert sorted(read_metadata(tmp_path / "out")["configs"]) == ["OO"]
    assert not (tmp_path / "out" / "data" / "OP").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


# -- contrast sets ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gensynth_build(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> Path:  # fmt: skip
    """A finished tiny GenSynth build of the shipped photos (the filter accepts everything:
    random weights make the paper's thresholds meaningless)."""
    out = tmp_path_factory.mktemp("gensynth") / "build"
    editor = load_editor(tiny_editor_dir, ModelConfig(batch_size=8))
    run_edit_stage(
        EditStageConfig(coco_dir, out, EditSettings(steps=2, resolution=32), min_box_side=64),
        editor,
    )
    scorer = load_scorer(tiny_clip_spec)
    run_filter_stage(out, scorer, FilterSettings(k=10, tau_real=-1, tau_gender=-1))
    run_select_stage(out, seed=0)
    run_quality_checks(out, scorer, None)
    return out


@pytest.mark.xdist_group("gensynth_build")  # its module fixture, built once
@pytest.mark.slow
def test_contrast_set_round_trip_and_card(gensynth_build: Path, tmp_path: Path) -> None:
    result = export_contrast_set(ExportContrastConfig(gensynth_build, tmp_path / "out"))
    items = read_contrast_set(gensynth_build)
    for source in ("disk", "parquet"):
        data = load_export(tmp_path / "out", "contrast", source=source)["test"]
        assert data.num_rows == len(items) == 6
        assert data.features["gender"].names == ["masculine", "feminine"]
        raw = data.cast_column("image", datasets.Image(decode=False))
        for item, record in zip(items, raw, strict=True):
            assert record["edit_id"] == item.edit_id and record["captions"] == item.captions
            assert data.features["gender"].int2str(record["gender"]) == item.gender
            assert record["image"]["bytes"] == (gensynth_build / item.image).read_bytes()
            assert record["instruction"].startswith(("Make", "Turn", "Convert"))
        assert (
            data[0]["neutral_captions"][0] == "A person takes a picture with a camera on a tripod."
        )
    card = (tmp_path / "out" / "README.md").read_text()
    summary = json.loads((gensynth_build / "build_summary.json").read_text())
    accepted, edits = summary["filter"]["accepted"], summary["filter"]["edits"]
    assert f"{accepted} of {edits} edits accepted" in card
    assert "6 images from 3 source photos: 3 masculine and 3 feminine" in card
    assert "tau_R = -1, tau_G = -1" in card and "K = 10" in card
    q = summary["quality"]["contrast_set"]
    assert f"| contrast_set | 6 | {100 * q['zero_shot_gender_accuracy']:.1f}% |" in card
    assert result.metadata["kind"] == "gensynth"


@pytest.mark.slow
def test_genswap_sets_export_too(
    coco_dir: Path, face_bank: Path, face_detector: FaceDetector, tmp_path: Path
) -> None:
    swap = GenSwapConfig(coco_dir, face_bank, tmp_path / "swap", min_box_side=64)
    swap_faces(swap, detector=face_detector)
    result = export_contrast_set(ExportContrastConfig(tmp_path / "swap", tmp_path / "out"))
    data = result.configs["contrast"]["test"]
    assert data.num_rows == 6 and all(d is not None for d in data["donor"])
    assert all(p is None for p in data["p_real"])  # GenSwap has no filter
    card = (tmp_path / "out" / "README.md").read_text()
    assert card.startswith("---\n") and "GenSwap" in card and "adults only: age 20" in card
    dry = publish(PublishConfig(tmp_path / "out", "me/genswap", dry_run=True))
    assert dry.loaded_rows == {"contrast": {"test": 6}}


def test_contrast_export_needs_a_finished_build(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="run the select stage first"):
        export_contrast_set(ExportContrastConfig(tmp_path, tmp_path / "out"))
    result = runner.invoke(app, ["export", "contrast", str(tmp_path), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2


# -- safety of the folders a job replaces -------------------------------------------------


def test_export_never_replaces_a_folder_that_is_not_an_export(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, _, _, _ = built
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.md").write_text("keep me")
    with pytest.raises(StateError, match="not a contrastkit export"):
        export_visogender(ExportVisoGenderConfig((op,), mine))
    assert sorted(p.name for p in mine.iterdir()) == ["notes.md"]


def test_a_saved_dataset_instead_of_a_dataset_dict_is_a_data_format_error(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    import shutil

    op, _, _, _ = built
    export_visogender(ExportVisoGenderConfig((op,), tmp_path / "out"))
    saved = tmp_path / "out" / "saved" / "OP"
    dataset = load_export(tmp_path / "out", "OP")["test"]
    shutil.rmtree(saved)
    dataset.save_to_disk(str(saved))
    with pytest.raises(DataFormatError, match="not a DatasetDict"):
        load_export(tmp_path / "out", "OP")
    with pytest.raises(ConfigError, match="no config 'XX'"):
        load_export(tmp_path / "out", "XX", source="parquet")


def test_export_configs_check_their_fields(tmp_path: Path) -> None:
    config = ExportVisoGenderConfig("op.tsv", "out", store="store")  # type: ignore[arg-type]
    assert config.files == (Path("op.tsv"),) and config.store == Path("store")
    with pytest.raises(ConfigError, match="files: needs at least one"):
        ExportVisoGenderConfig((), tmp_path)
    with pytest.raises(ConfigError, match="out: must not be the build folder"):
        ExportContrastConfig(tmp_path, tmp_path)
    with pytest.raises(ConfigError, match="tree: only a dry run"):
        PublishConfig(tmp_path, "me/x", tree=tmp_path / "t")


@pytest.mark.xdist_group("gensynth_build")  # its module fixture, built once
@pytest.mark.slow
def test_an_export_never_reads_a_build_a_stage_is_rewriting(
    gensynth_build: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While a stage holds the build folder's lock (a rebuild re-filtering and
    re-selecting), ``export contrast`` is refused naming the holder and writes nothing;
    while an export reads the folder, a stage started there is refused; afterwards both
    work (issue 30: an export taken during a rebuild mixed the new summary and the old
    contrast set)."""
    from contrastkit.builders import export as export_module

    release = tmp_path / "release"
    holder = hold_build_lock(gensynth_build, release)
    try:
        with pytest.raises(StateError, match=rf"a run is writing it \(pid {holder.pid}@"):
            export_contrast_set(ExportContrastConfig(gensynth_build, tmp_path / "during"))
        result = CliRunner().invoke(app, ["export", "contrast", str(gensynth_build), "--out",
                                          str(tmp_path / "cli")])  # fmt: skip
        assert result.exit_code == 2 and "when it has finished" in result.output
        assert not (tmp_path / "during").exists() and not (tmp_path / "cli").exists()
    finally:
        release.touch()
        holder.wait(timeout=30)

    refused: list[str] = []
    real = export_module._export_contrast_set

    def reading(config: ExportContrastConfig) -> object:
        try:
            run_select_stage(gensynth_build, seed=0)  # a stage started mid-export
        except StateError as error:
            refused.append(str(error))
        return real(config)

    monkeypatch.setattr(export_module, "_export_contrast_set", reading)
    export_contrast_set(ExportContrastConfig(gensynth_build, tmp_path / "after"))
    assert refused and "holds" in refused[0]
    assert (tmp_path / "after" / "README.md").is_file()


@pytest.mark.xdist_group("gensynth_build")  # its module fixture, built once
@pytest.mark.slow
@pytest.mark.parametrize("bad", ["not-an-image", "outside"])
def test_a_contrast_item_that_is_not_an_image_in_the_build_is_refused(
    gensynth_build: Path, tmp_path: Path, bad: str
) -> None:
    """An edit file whose bytes are not an image, or an item naming a file outside the
    build folder: a located error before anything is written (the exported rows would
    fail to load, or the export would read a file the build does not own)."""
    import shutil

    build = tmp_path / "build"
    shutil.copytree(gensynth_build, build, ignore=shutil.ignore_patterns(".build.lock"))
    items = read_contrast_set(build)
    if bad == "not-an-image":
        (build / items[1].image).write_bytes(b"these bytes are not an image")
        words = "is not a readable image"
    else:
        lines = (build / "contrast_set.jsonl").read_text().splitlines()
        secret = tmp_path / "secret.png"
        shutil.copy(build / items[1].image, secret)
        lines[1] = lines[1].replace(json.dumps(items[1].image), json.dumps("../secret.png"))
        (build / "contrast_set.jsonl").write_text("\n".join(lines) + "\n")
        words = "names a file outside"
    with pytest.raises(DataFormatError, match=words) as caught:
        export_contrast_set(ExportContrastConfig(build, tmp_path / "out"))
    assert caught.value.line == 2 and caught.value.field == "image"
    assert not (tmp_path / "out").exists()


@pytest.mark.xdist_group("gensynth_build")  # its module fixture, built once
@pytest.mark.slow
def test_a_build_summary_with_a_nan_is_refused_naming_the_figure(
    gensynth_build: Path, tmp_path: Path
) -> None:
    """A NaN (or an infinity) in build_summary.json would be printed as "nan" in the
    dataset card: the export refuses it, naming the figure."""
    import shutil

    build = tmp_path / "build"
    shutil.copytree(gensynth_build, build, ignore=shutil.ignore_patterns(".build.lock"))
    summary = json.loads((build / "build_summary.json").read_text())
    summary["select"]["images"] = float("nan")
    (build / "build_summary.json").write_text(json.dumps(summary))
    with pytest.raises(DataFormatError, match="nan is not a finite number") as caught:
        export_contrast_set(ExportContrastConfig(build, tmp_path / "out"))
    assert caught.value.field == "select.images"
    assert not (tmp_path / "out").exists()


def test_an_export_folder_has_the_permissions_of_any_folder_the_user_makes(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    """Exports are built in a staging folder and renamed into place: they get ``0o777``
    less the umask like any other output (under umask 022, 755), not ``mkdtemp``'s
    private 700 (issue 31)."""
    import os
    import stat

    op, oo, store_dir, _ = built
    old = os.umask(0o022)
    try:
        export_visogender(ExportVisoGenderConfig((op, oo), tmp_path / "out", store=store_dir))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "out").stat().st_mode) == 0o755
