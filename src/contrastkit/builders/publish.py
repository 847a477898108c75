"""Publish an export folder to the Hugging Face Hub, or rehearse it locally (``--dry-run``).

The repository gets exactly the export's Hub files: ``README.md`` (the dataset card),
``build_metadata.json`` and ``data/`` (parquet shards per config and split); the local
``saved/`` copy stays home. The token comes from ``HF_TOKEN`` or the user's
``hf auth login``; it is passed to ``huggingface_hub`` and never printed or logged.

A dry run writes that exact tree to a local folder and loads every config from it with
``datasets.load_dataset``, checking the row counts against the build metadata, so what
would be pushed is known to load before anything leaves the machine.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from contrastkit import __version__
from contrastkit.builders.export import METADATA_FILE, read_metadata
from contrastkit.repo_ids import check_repo_id

__all__ = ["HUB_FILES", "PublishError", "PublishResult", "publish", "write_hub_tree"]

HUB_FILES = ("README.md", METADATA_FILE, "data")
"""What of an export folder goes to the Hub."""


class PublishError(RuntimeError):
    """Publishing cannot proceed (no token, bad repository id, a tree that does not load)."""


@dataclass
class PublishResult:
    """What :func:`publish` did."""

    repo_id: str
    dry_run: bool
    tree: Path | None = None
    files: list[str] = field(default_factory=list)
    loaded_rows: dict[str, dict[str, int]] = field(default_factory=dict)
    url: str | None = None


def write_hub_tree(export_dir: Path, tree: Path) -> list[str]:
    """Copy the export's Hub files to ``tree`` (replacing it); return their relative paths."""
    export_dir = Path(export_dir)
    read_metadata(export_dir)  # an export folder, or a clear error
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    for name in HUB_FILES:
        source = export_dir / name
        if source.is_dir():
            shutil.copytree(source, tree / name)
        elif source.is_file():
            shutil.copy2(source, tree / name)
        else:
            raise PublishError(f"{export_dir}: the export lacks {name}; export it again")
    return sorted(str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file())


def _verify(tree: Path) -> dict[str, dict[str, int]]:
    """Load every config from the tree as the Hub would; compare row counts."""
    from datasets import load_dataset

    metadata = read_metadata(tree)
    loaded: dict[str, dict[str, int]] = {}
    with tempfile.TemporaryDirectory(prefix="contrastkit-verify-") as cache:
        for config, info in metadata["configs"].items():
            # A fresh cache: datasets may otherwise reuse a stale copy keyed by folder name.
            splits = load_dataset(str(tree), config, cache_dir=cache)
            loaded[config] = {split: splits[split].num_rows for split in splits}
            expected = {split: s["rows"] for split, s in info["splits"].items()}
            if loaded[config] != expected:
                raise PublishError(
                    f"{tree}: config {config} loads as {loaded[config]}, metadata says {expected}"
                )
    return loaded


def publish(
    export_dir: Path,
    repo_id: str,
    *,
    private: bool = False,
    dry_run: bool = False,
    tree: Path | None = None,
    token: str | None = None,
) -> PublishResult:
    """Push an export folder to the dataset repository ``repo_id``.

    Args:
        export_dir: A folder written by ``contrastkit export``.
        repo_id: ``USER/NAME`` or ``ORG/NAME``.
        private: Create the repository private.
        dry_run: Write the exact tree to ``tree`` and load it with ``datasets`` instead.
        tree: Where a dry run writes the tree (default: ``<export_dir>-hub`` beside it).
        token: A Hub token; default ``HF_TOKEN`` or the cached login.

    Raises:
        PublishError: bad ``repo_id``, no token, or a tree that does not load.
    """
    check_repo_id(repo_id, "--repo-id")
    export_dir = Path(export_dir)
    if dry_run:
        tree = tree or export_dir.with_name(f"{export_dir.name}-hub")
        files = write_hub_tree(export_dir, tree)
        return PublishResult(repo_id, True, tree, files, _verify(tree))

    from huggingface_hub import HfApi, get_token

    token = token or get_token()
    if not token:
        raise PublishError(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login`, then publish again "
            "(or rehearse with --dry-run)"
        )
    api = HfApi(token=token)
    with tempfile.TemporaryDirectory(prefix="contrastkit-hub-") as folder:
        staged = Path(folder) / "tree"
        files = write_hub_tree(export_dir, staged)
        _verify(staged)
        repo = api.create_repo(repo_id, repo_type="dataset", private=private, exist_ok=True)
        api.upload_folder(
            folder_path=str(staged),
            repo_id=repo_id,
            repo_type="dataset",
            commit_message=f"Export with contrastkit {__version__}",
            delete_patterns=["data/**"],  # shards of an older export go in the same commit
        )
    return PublishResult(repo_id, False, None, files, url=str(repo))
