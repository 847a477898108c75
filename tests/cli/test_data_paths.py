"""No file from outside the data folder (issue 44.1, 44.2; SECURITY.md, "Files a dataset
names"): a row that names ``~/.cache/huggingface/token``, an absolute path elsewhere,
``../x``, a ``file://`` URL elsewhere or a link leading out of the folder is a located
error (exit 2) in every reader and exporter, before anything is read or written; a
link out of the folder is followed only with ``contrastkit --follow-symlinks``.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from contrastkit.audit.data import load_audit_data
from contrastkit.builders.coco import read_coco
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
from contrastkit.probes import read_probes, write_probes
from contrastkit.records import data_file, following_links
from contrastkit.schema import URL_COLUMN
from eval_data import write_small_dataset
from stereoset_data import make_probe_fixture
from zero_shot_data import vg_images, write_vg

runner = CliRunner()

#: What a stranger's file may hold instead of an image: the user's Hub token.
TOKEN = b"hf_secret_token_that_must_never_be_published"


@pytest.fixture
def secret(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home folder with a Hub token (``~`` points there) and a real photo outside the
    data folder: ``secret/photo.jpg`` (a readable image, so only the path rule stops it)."""
    home = tmp_path / "home"
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_bytes(TOKEN)
    monkeypatch.setenv("HOME", str(home))
    folder = tmp_path / "secret"
    folder.mkdir()
    from contrastkit.samples import photo

    photo("astronaut").resize((64, 64)).save(folder / "photo.jpg")
    return folder / "photo.jpg"


def _hostile(data: Path, secret: Path) -> dict[str, str]:
    """The image names that lead out of ``data`` (a link is made in ``data``)."""
    (data / "link.jpg").symlink_to(secret)
    (data / "linked").symlink_to(secret.parent, target_is_directory=True)
    up = Path("..") / secret.relative_to(data.parent)
    return {
        "token": "~/.cache/huggingface/token",
        "absolute": str(secret),
        "dotdot": up.as_posix(),
        "nested-dotdot": f"images/../{up.as_posix()}",
        "file-url": secret.as_uri(),
        "file-link": "link.jpg",
        "folder-link": "linked/photo.jpg",
    }


HOSTILE = ["token", "absolute", "dotdot", "nested-dotdot", "file-url", "file-link", "folder-link"]


def _probe_set(tmp_path: Path, secret: Path, case: str) -> tuple[Path, str]:
    """The fixture probe set with its first row's image replaced by a hostile name."""
    probes = make_probe_fixture(tmp_path / "data")[2]
    value = _hostile(probes.parent, secret)[case]
    rows = read_probes(probes)
    write_probes([dataclasses.replace(rows[0], image=value), *rows[1:]], probes)
    return probes, value


def _refused(result: object, where: str, field: str) -> str:
    output = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, output  # type: ignore[attr-defined]
    assert "Traceback" not in output
    assert where in output and f"field {field!r}" in output, output
    assert "outside the data's folder" in output, output
    return str(output)


@pytest.mark.parametrize("case", HOSTILE)
def test_export_stereotype_never_embeds_a_file_from_outside_the_probe_folder(
    case: str, secret: Path, tmp_path: Path
) -> None:
    probes, _ = _probe_set(tmp_path, secret, case)
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "stereotype", str(probes), "--out", str(out)])
    _refused(result, f"{probes}:2", "image")
    assert not out.exists()  # nothing written, so nothing to publish


@pytest.mark.parametrize("case", HOSTILE)
def test_evaluate_stereotype_reads_no_file_from_outside_the_probe_folder(
    case: str, secret: Path, tmp_path: Path
) -> None:
    probes, _ = _probe_set(tmp_path, secret, case)
    result = runner.invoke(app, ["evaluate", "stereotype", "--data", str(probes), "--model",
                                 "open_clip:/nowhere", "--out", str(tmp_path / "out")])  # fmt: skip
    _refused(result, f"{probes}:2", "image")


def test_follow_symlinks_lets_a_link_lead_out_of_the_folder(secret: Path, tmp_path: Path) -> None:
    """The user's own link to a dataset on other storage: exported with the option, and
    then what the link points to is what is embedded."""
    probes, _ = _probe_set(tmp_path, secret, "folder-link")
    out = tmp_path / "export"
    args = ["export", "stereotype", str(probes), "--out", str(out)]
    assert runner.invoke(app, args).exit_code == 2
    result = runner.invoke(app, ["--follow-symlinks", *args])
    assert result.exit_code == 0, result.output
    from datasets import load_from_disk

    dataset = load_from_disk(str(out / "saved" / "stereotype"))["test"]
    first = dataset.with_format("arrow")[0:1].column("image")[0].as_py()["bytes"]
    assert first == secret.read_bytes()
    # the option lasts one command: the next one refuses the link again
    assert runner.invoke(app, [*args[:-1], str(tmp_path / "again")]).exit_code == 2


def test_the_data_folder_itself_may_be_a_link(tmp_path: Path) -> None:
    """A link to the folder, or above it, is the folder the user names: allowed."""
    probes = make_probe_fixture(tmp_path / "storage" / "data")[2]
    (tmp_path / "link").symlink_to(tmp_path / "storage", target_is_directory=True)
    linked = tmp_path / "link" / "data" / probes.name
    result = runner.invoke(app, ["export", "stereotype", str(linked), "--out",
                                 str(tmp_path / "export")])  # fmt: skip
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("case", ["absolute", "dotdot", "file-url", "file-link", "folder-link"])
def test_visogender_readers_refuse_local_images_outside_the_tsv_folder(
    case: str, secret: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    data.mkdir()
    value = _hostile(data, secret)[case]
    tsvs = write_small_dataset(data, lambda n, path: value if n == 0 else path.name)
    tsv = next(p for p in tsvs.values() if value in p.read_text(encoding="utf-8"))
    evaluate = runner.invoke(app, ["evaluate", "visogender", "--data", str(tsv), "--model",
                                   "open_clip:/nowhere", "--out", str(tmp_path / "o")])  # fmt: skip
    _refused(evaluate, f"{tsv}:2", URL_COLUMN)
    out = tmp_path / "export"
    exported = runner.invoke(app, ["export", "visogender", str(tsv), "--out", str(out)])
    _refused(exported, f"{tsv}:2", URL_COLUMN)
    assert not out.exists()


def _vg_with_id(root: Path, image_id: str) -> Path:
    """The Visual Genome fixture with its first (single-group) image's id replaced."""
    write_vg(root)
    old = vg_images()[0][0]
    for name in ("objects.json", "image_data.json"):
        entries = json.loads((root / name).read_text(encoding="utf-8"))
        for entry in entries:
            if str(entry["image_id"]) == old:
                entry["image_id"] = image_id
        (root / name).write_text(json.dumps(entries), encoding="utf-8")
    return root


@pytest.mark.parametrize("form", ["absolute", "dotdot"])
def test_a_visual_genome_image_id_names_no_file_outside_the_folder(
    form: str, secret: Path, tmp_path: Path
) -> None:
    root = tmp_path / "vg"
    stem = secret.with_suffix("")  # secret/photo: the reader adds .jpg
    image_id = str(stem) if form == "absolute" else f"../../{stem.relative_to(tmp_path)}"
    _vg_with_id(root, image_id)
    with pytest.raises(DataFormatError, match="outside the data's folder") as caught:
        load_grouped(root, GroupingOptions(min_images=1))
    assert caught.value.field == "image_id" and caught.value.path == str(root / "objects.json")


def test_a_visual_genome_image_folder_linked_elsewhere_needs_follow_symlinks(
    tmp_path: Path,
) -> None:
    storage = write_vg(tmp_path / "storage")
    root = tmp_path / "vg"
    root.mkdir()
    for name in ("objects.json", "image_data.json"):
        shutil.copy(storage / name, root / name)
    (root / "VG_100K").symlink_to(storage / "VG_100K", target_is_directory=True)
    with pytest.raises(DataFormatError, match="follow-symlinks"):
        load_grouped(root, GroupingOptions(min_images=1))
    with following_links():
        assert load_grouped(root, GroupingOptions(min_images=1)).images


def _coco_with_link(tmp_path: Path, link: str) -> Path:
    """A COCO folder (captions, boxes, image files) whose ``link`` (``val2017`` or
    ``annotations``) is a link to a copy elsewhere."""
    from audit.conftest import planted_captions, write_planted_coco

    images = planted_captions(masculine=4, feminine=4, undefined=0, shuffled=False)
    storage = write_planted_coco(tmp_path / "storage", images, with_files=True, with_boxes=True)
    root = tmp_path / "coco"
    root.mkdir()
    for name in ("annotations", "val2017"):
        if name == link:
            (root / name).symlink_to(storage / name, target_is_directory=True)
        else:
            shutil.copytree(storage / name, root / name)
    return root


@pytest.mark.parametrize("link", ["val2017", "annotations"])
def test_coco_readers_refuse_a_folder_linked_out_of_the_coco_folder(
    link: str, tmp_path: Path
) -> None:
    """The readers of ``build gensynth`` / ``build genswap`` (read_coco and its image
    paths) and of ``audit``."""
    root = _coco_with_link(tmp_path, link)

    def read_images() -> None:
        coco = read_coco(root, "val2017")
        for image in coco.images.values():
            coco.image_path(image)

    with pytest.raises(DataFormatError, match="follow-symlinks"):
        read_images()
    audit = runner.invoke(app, ["audit", str(root), "--out", str(tmp_path / "audit")])
    assert audit.exit_code == 2 and "follow-symlinks" in audit.output, audit.output
    with following_links():
        read_images()
        assert load_audit_data(root).images


def test_a_link_loop_is_a_located_error(tmp_path: Path) -> None:
    (tmp_path / "a.jpg").symlink_to(tmp_path / "b.jpg")
    (tmp_path / "b.jpg").symlink_to(tmp_path / "a.jpg")
    with pytest.raises(DataFormatError) as caught:
        data_file(tmp_path / "p.tsv", 3, "image", "a.jpg")
    assert (caught.value.line, caught.value.field) == (3, "image")


@pytest.mark.parametrize("case", ["dotdot", "file-link"])
def test_export_harness_embeds_no_file_from_outside_the_data_folder(
    case: str, secret: Path, tmp_path: Path
) -> None:
    probes, _ = _probe_set(tmp_path, secret, case)
    out = tmp_path / "harness"
    result = runner.invoke(app, ["export", "harness", str(probes), "--format", "vlmevalkit",
                                 "--out", str(out)])  # fmt: skip
    _refused(result, f"{probes}:2", "image")
    assert not out.exists()
    data = tmp_path / "visogender"
    data.mkdir()
    value = _hostile(data, secret)[case]
    tsvs = write_small_dataset(data, lambda n, path: value if n == 0 else path.name)
    tsv = next(p for p in tsvs.values() if value in p.read_text(encoding="utf-8"))
    result = runner.invoke(app, ["export", "harness", str(tsv), "--format", "lmms-eval",
                                 "--out", str(out)])  # fmt: skip
    _refused(result, f"{tsv}:2", URL_COLUMN)
    assert not out.exists()


def test_zero_shot_annotations_linked_out_of_the_folder_are_refused(tmp_path: Path) -> None:
    from zero_shot_data import write_coco

    storage = write_vg(tmp_path / "storage")
    root = tmp_path / "vg"
    shutil.copytree(storage / "VG_100K", root / "VG_100K")
    shutil.copy(storage / "image_data.json", root / "image_data.json")
    (root / "objects.json").symlink_to(storage / "objects.json")
    with pytest.raises(DataFormatError, match="follow-symlinks"):
        load_grouped(root, GroupingOptions(min_images=1))
    coco_storage = write_coco(tmp_path / "coco-storage")
    coco = tmp_path / "coco"
    shutil.copytree(coco_storage / "images", coco / "images")
    (coco / "annotations").symlink_to(coco_storage / "annotations", target_is_directory=True)
    with pytest.raises(DataFormatError, match="follow-symlinks"):
        load_grouped(coco, GroupingOptions(min_images=1))
    with following_links():
        assert load_grouped(root, GroupingOptions(min_images=1)).images
        assert load_grouped(coco, GroupingOptions(min_images=1)).images


def test_a_probe_set_saved_in_the_home_folder_cannot_name_the_hub_token(
    secret: Path, tmp_path: Path
) -> None:
    """A hidden file or folder is never a data file, even inside the data folder: a probe
    set saved in ``~`` that names ``.cache/huggingface/token`` is refused."""
    home = tmp_path / "home"
    probes = make_probe_fixture(home)[2]
    rows = read_probes(probes)
    hostile = dataclasses.replace(rows[0], image=".cache/huggingface/token")
    write_probes([hostile, *rows[1:]], probes)
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "stereotype", str(probes), "--out", str(out)])
    assert result.exit_code == 2 and "hidden file or folder (.cache)" in result.output
    assert f"{probes}:2" in result.output and not out.exists()


def test_export_stereotype_embeds_only_files_that_open_as_images(tmp_path: Path) -> None:
    probes = make_probe_fixture(tmp_path / "data")[2]
    (probes.parent / "images" / "00.jpg").write_bytes(TOKEN)  # inside, but not an image
    out = tmp_path / "export"
    result = runner.invoke(app, ["export", "stereotype", str(probes), "--out", str(out)])
    assert result.exit_code == 2 and "is not a readable image" in result.output, result.output
    assert not out.exists()
