"""Publish an export folder to the Hugging Face Hub, or rehearse it locally (``dry_run``).

The repository gets exactly the export's Hub files: ``README.md`` (the dataset card),
``build_metadata.json`` and ``data/`` (parquet shards per config and split); the local
``saved/`` copy stays home. The token comes from the config, ``HF_TOKEN`` or the user's
``hf auth login``; it is passed to ``huggingface_hub`` and never printed or logged.

A dry run writes that exact tree to a local folder and loads every config from it with
``datasets.load_dataset``, checking the row counts against the build metadata, so what
would be pushed is known to load before anything leaves the machine. The tree folder is
only ever replaced when it is absent, empty, or a tree an earlier dry run wrote (marked
by a :data:`TREE_MARKER` file): a folder of the user's is never deleted.

Nothing is copied: the tree's files are hard links to the export's (copies only where
the tree is on another file system), and a real publish uploads the export folder's Hub
files in place (``HfApi.upload_folder`` with :data:`HUB_PATTERNS`; with ``hf_xet`` it
streams, commits a large folder in several parts and resumes where an interrupted upload
stopped). An export's files are written once and never changed in place (a new export
replaces the whole folder), so the links stay equal to what was exported.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contrastkit import __version__
from contrastkit.builders.export import METADATA_FILE, build_weights, read_metadata
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.io import atomic_write_text, check_writable
from contrastkit.repo_ids import check_repo_id

__all__ = [
    "HUB_FILES",
    "HUB_PATTERNS",
    "RANDOM_WEIGHTS_FLAG",
    "TREE_MARKER",
    "PublishConfig",
    "PublishResult",
    "check_publishable",
    "publish",
    "random_weight_models",
    "write_hub_tree",
]

HUB_FILES = ("README.md", METADATA_FILE, "data")
"""What of an export folder goes to the Hub."""

HUB_PATTERNS = ("README.md", METADATA_FILE, "data/**")
""":data:`HUB_FILES` as ``upload_folder`` patterns (relative to the export folder)."""

TREE_MARKER = ".contrastkit-hub-tree"
"""The file a dry run leaves in its tree folder, so a later dry run may replace it."""


@dataclass(frozen=True)
class PublishConfig:
    """What :func:`publish` pushes, and where (strings are taken as paths).

    Attributes:
        export: A folder written by ``contrastkit export``.
        repo_id: ``USER/NAME`` or ``ORG/NAME``.
        private: Create the repository private.
        dry_run: Write the exact tree to ``tree`` and load it with ``datasets`` instead.
        tree: Where a dry run writes the tree (default: ``<export>-hub`` beside it). It
            must be absent, empty, or a tree an earlier dry run wrote.
        token: A Hub token; default ``HF_TOKEN`` or the cached login. Never shown in the
            config's ``repr``.
        allow_random_weights: Publish a set built with random-weight models (a tiny
            editor or image encoder, e.g. the quickstart's) anyway. Without it such a set
            is refused (a dry run still rehearses it): its edits and filter decisions are
            meaningless, and its card says so.
    """

    export: Path
    repo_id: str
    private: bool = False
    dry_run: bool = False
    tree: Path | None = None
    token: str | None = field(default=None, repr=False)
    allow_random_weights: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "export", Path(self.export))
        if self.tree is not None:
            object.__setattr__(self, "tree", Path(self.tree))
        check_repo_id(self.repo_id, "repo_id")
        if self.tree is not None and not self.dry_run:
            raise ConfigError(
                "tree: only a dry run writes a tree folder: pass dry_run=True (`--dry-run`)"
            )

    @property
    def tree_path(self) -> Path:
        """Where a dry run writes the tree: :attr:`tree`, or ``<export>-hub``."""
        return self.tree or self.export.with_name(f"{self.export.name}-hub")


@dataclass
class PublishResult:
    """What :func:`publish` did."""

    repo_id: str
    dry_run: bool
    tree: Path | None = None
    files: list[str] = field(default_factory=list)
    loaded_rows: dict[str, dict[str, int]] = field(default_factory=dict)
    url: str | None = None
    #: Which of the build's models had random weights (``editor``, ``encoder``).
    random_weight_models: list[str] = field(default_factory=list)


def _check_tree_folder(tree: Path) -> None:
    """Refuse to replace anything but an absent or empty folder or an earlier tree."""
    if tree.is_symlink() or (tree.exists() and not tree.is_dir()):
        raise StateError(f"{tree}: the tree folder is a file or a link; choose another --tree")
    if tree.is_dir() and any(tree.iterdir()) and not (tree / TREE_MARKER).is_file():
        raise StateError(
            f"{tree}: the folder is not empty and was not written by a contrastkit dry run "
            f"(no {TREE_MARKER} file); it is left alone: choose another --tree or empty it"
        )


def _link_or_copy(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Hard-link ``source`` at ``target`` (no bytes copied), or copy it where a link
    cannot be made (another file system, or one without hard links)."""
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def write_hub_tree(export_dir: Path, tree: Path, *, mark: bool = True) -> list[str]:
    """Put the export's Hub files in ``tree`` (hard links where the file system allows,
    else copies); return their relative paths.

    ``tree`` must be absent, empty, or a tree written here before (it holds
    :data:`TREE_MARKER`); such a tree is replaced. With ``mark`` the marker is written
    (it is not one of the returned files and is never uploaded).

    Raises:
        DataFormatError: ``export_dir`` is not an export folder, or lacks a Hub file.
        StateError: ``tree`` is a file, or a folder with other content.
    """
    export_dir, tree = Path(export_dir), Path(tree)
    read_metadata(export_dir)  # an export folder, or a clear error
    for name in HUB_FILES:
        if not (export_dir / name).exists():
            raise DataFormatError(export_dir / name, None, None, "missing; export it again")
    _check_tree_folder(tree)
    if tree.exists():
        shutil.rmtree(tree)
    tree.mkdir(parents=True)
    if mark:
        atomic_write_text(tree / TREE_MARKER, "written by contrastkit publish --dry-run\n")
    for name in HUB_FILES:
        source = export_dir / name
        if source.is_dir():
            shutil.copytree(source, tree / name, copy_function=_link_or_copy)
        else:
            _link_or_copy(source, tree / name)
    return sorted(
        str(p.relative_to(tree)) for p in tree.rglob("*") if p.is_file() and p.name != TREE_MARKER
    )


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
                raise DataFormatError(
                    tree, None, None,
                    f"config {config} loads as {loaded[config]}, the metadata says {expected}",
                )  # fmt: skip
    return loaded


#: The command-line spelling of :attr:`PublishConfig.allow_random_weights`.
RANDOM_WEIGHTS_FLAG = "--i-know-these-are-random-weights"


def random_weight_models(metadata: dict[str, Any]) -> list[str]:
    """Which models of an export's build had random weights (``editor``, ``encoder``),
    from its build metadata (:func:`contrastkit.builders.export.build_weights`)."""
    flags = metadata.get("random_weights")
    if not isinstance(flags, dict):
        flags = build_weights(metadata.get("build_summary") or {})["random_weights"]
    return [name for name, flag in flags.items() if flag]


def check_publishable(config: PublishConfig, metadata: dict[str, Any]) -> None:
    """Refuse a set built with random-weight models unless ``allow_random_weights``.

    Raises:
        ConfigError: naming ``allow_random_weights`` and the command-line flag.
    """
    models = random_weight_models(metadata)
    if models and not config.allow_random_weights:
        raise ConfigError(
            f"allow_random_weights: {config.export} was built with random-weight models "
            f"(the {' and the '.join(models)}: tiny test models), so its images and filter "
            "decisions are meaningless; build it with real models, or, if you really mean "
            f"to publish a pipeline check, pass allow_random_weights=True (`{RANDOM_WEIGHTS_FLAG}`)"
        )


def publish(config: PublishConfig) -> PublishResult:
    """Push an export folder to the dataset repository ``config.repo_id``, or, with
    ``dry_run``, write the exact tree locally and load it with ``datasets``.

    Raises:
        ConfigError: no token (set ``HF_TOKEN`` or run ``hf auth login``); a set built
            with random-weight models without ``allow_random_weights`` (checked first).
        DataFormatError: not an export folder, or a tree that does not load as its
            metadata says.
        StateError: the dry run's tree folder holds something else (it is left alone).
        ResourceError: the tree folder cannot be written.
    """
    if config.dry_run:
        tree = config.tree_path
        read_metadata(config.export)
        _check_tree_folder(tree)
        check_writable(tree.parent, "the Hub tree folder")
        files = write_hub_tree(config.export, tree)
        return PublishResult(
            config.repo_id, True, tree, files, _verify(tree),
            random_weight_models=random_weight_models(read_metadata(config.export)),
        )  # fmt: skip

    check_publishable(config, read_metadata(config.export))
    from huggingface_hub import HfApi, get_token

    token = config.token or get_token()
    if not token:
        raise ConfigError(
            "no Hugging Face token: set HF_TOKEN or run `hf auth login`, then publish again "
            "(or rehearse with --dry-run)"
        )
    api = HfApi(token=token)
    # The tree that is checked is made of hard links beside the export (same file
    # system); what is uploaded is the export folder itself, its Hub files only.
    try:
        scratch = tempfile.TemporaryDirectory(prefix=".contrastkit-hub-", dir=config.export.parent)
    except OSError:  # the export's folder is read-only: links would cross file systems
        scratch = tempfile.TemporaryDirectory(prefix="contrastkit-hub-")
    with scratch as folder:
        files = write_hub_tree(config.export, Path(folder) / "tree", mark=False)
        _verify(Path(folder) / "tree")
    repo = api.create_repo(
        config.repo_id, repo_type="dataset", private=config.private, exist_ok=True
    )
    api.upload_folder(
        folder_path=str(config.export),
        repo_id=config.repo_id,
        repo_type="dataset",
        commit_message=f"Export with contrastkit {__version__}",
        allow_patterns=list(HUB_PATTERNS),  # saved/ stays home
        delete_patterns=["data/**"],  # shards of an older export go in the same commit
    )
    return PublishResult(
        config.repo_id, False, None, files, url=str(repo),
        random_weight_models=random_weight_models(read_metadata(config.export)),
    )  # fmt: skip
