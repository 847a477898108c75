"""Publishing an export: the dry-run tree, the upload, the command line."""

from __future__ import annotations

from pathlib import Path

import datasets
import pytest
from typer.testing import CliRunner

from contrastkit.builders.export import ExportVisoGenderConfig, export_visogender
from contrastkit.builders.publish import TREE_MARKER, PublishConfig, publish
from contrastkit.cli import app
from contrastkit.errors import ConfigError, StateError

datasets.disable_progress_bars()


def test_publish_dry_run_writes_a_tree_that_datasets_loads(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, oo, store_dir, _ = built
    export_visogender(ExportVisoGenderConfig((op, oo), tmp_path / "out", store=store_dir))
    result = publish(PublishConfig(tmp_path / "out", "someone/visogender-test", dry_run=True))
    assert result.tree == tmp_path / "out-hub"
    assert result.files == [
        "README.md", "build_metadata.json",
        "data/OO/test-00000-of-00001.parquet", "data/OP/test-00000-of-00001.parquet",
    ]  # fmt: skip
    assert result.loaded_rows == {"OP": {"test": 8}, "OO": {"test": 4}}
    hub = datasets.load_dataset(
        str(tmp_path / "out-hub"), "OO", split="test", cache_dir=str(tmp_path / "cache")
    )
    assert hub.features["occupation_gender"].names == ["masculine", "feminine"]


def test_publish_refuses_without_a_token_or_with_a_bad_repo_id(
    built: tuple[Path, Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    op, _, _, _ = built
    export_visogender(ExportVisoGenderConfig((op,), tmp_path / "out"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))  # no cached login
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ConfigError, match="no Hugging Face token"):
        publish(PublishConfig(tmp_path / "out", "someone/name"))
    with pytest.raises(ConfigError, match="repo_id 'not a repo id': expected USER/NAME"):
        PublishConfig(tmp_path / "out", "not a repo id", dry_run=True)
    assert "secret" not in repr(PublishConfig(tmp_path / "out", "a/b", token="secret"))


def test_publish_links_the_export_files_and_uploads_the_export_folder_in_place(
    built: tuple[Path, Path, Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import huggingface_hub

    op, oo, store_dir, _ = built
    export_visogender(ExportVisoGenderConfig((op, oo), tmp_path / "out", store=store_dir))
    shard = Path("data/OP/test-00000-of-00001.parquet")
    dry = publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True))
    assert dry.tree is not None
    # The dry run's tree holds hard links to the export's files: no image byte is copied.
    assert (dry.tree / shard).stat().st_ino == (tmp_path / "out" / shard).stat().st_ino

    calls: list[dict[str, object]] = []

    class FakeApi:
        def __init__(self, token: str) -> None:
            assert token == "not-a-real-token"

        def create_repo(self, repo_id: str, **kwargs: object) -> str:
            return f"https://huggingface.co/datasets/{repo_id}"

        def upload_folder(self, **kwargs: object) -> None:
            calls.append(kwargs)

    monkeypatch.setattr(huggingface_hub, "HfApi", FakeApi)
    result = publish(PublishConfig(tmp_path / "out", "me/vg", token="not-a-real-token"))
    assert result.files == dry.files and result.url == "https://huggingface.co/datasets/me/vg"
    (call,) = calls
    assert call["folder_path"] == str(tmp_path / "out")  # the export itself, not a copy
    assert call["allow_patterns"] == ["README.md", "build_metadata.json", "data/**"]
    assert call["delete_patterns"] == ["data/**"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "out-hub"]  # no staging left


runner = CliRunner()


def test_export_and_publish_from_the_command_line(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, oo, store_dir, checks = built
    out = tmp_path / "export"
    exported = runner.invoke(
        app,
        ["export", "visogender", str(op), str(oo), "--store", str(store_dir),
         "--checks", str(checks), "--out", str(out)],
    )  # fmt: skip
    assert exported.exit_code == 0, exported.output
    assert "OP/test: 8 rows" in exported.output
    dry = runner.invoke(app, ["publish", str(out), "--repo-id", "me/vg", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert "datasets.load_dataset loads OP: test 8 rows" in dry.output
    assert "nothing was pushed" in dry.output
    missing = runner.invoke(app, ["publish", str(tmp_path / "nowhere"), "--repo-id", "me/vg",
                                  "--dry-run"])  # fmt: skip
    assert missing.exit_code == 2 and "not an export folder" in missing.output


def test_publish_tree_never_deletes_a_users_folder(
    built: tuple[Path, Path, Path, Path], tmp_path: Path
) -> None:
    op, _, _, _ = built
    export_visogender(ExportVisoGenderConfig((op,), tmp_path / "out"))
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(StateError, match="not written by a contrastkit dry run"):
        publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True, tree=mine))
    assert (mine / "thesis.tex").read_text() == "years of work"
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
    # The export folder itself is not a tree either.
    with pytest.raises(StateError):
        publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True, tree=tmp_path / "out"))
    assert (tmp_path / "out" / "saved").is_dir()
    # A file is refused too; an empty folder, or a tree of an earlier dry run, is replaced.
    (tmp_path / "afile").write_text("x")
    with pytest.raises(StateError, match="is a file"):
        publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True, tree=tmp_path / "afile"))
    (tmp_path / "empty").mkdir()
    first = publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True, tree=tmp_path / "empty"))
    assert (tmp_path / "empty" / TREE_MARKER).is_file() and TREE_MARKER not in first.files
    (tmp_path / "empty" / "stale.txt").write_text("from an earlier run")
    again = publish(PublishConfig(tmp_path / "out", "me/vg", dry_run=True, tree=tmp_path / "empty"))
    assert again.files == first.files and not (tmp_path / "empty" / "stale.txt").exists()
