"""Embeddings the zero-shot disparity job keeps between runs, so a rerun embeds nothing
twice and an interrupted run resumes.

A dual encoder's score for an image and a concept is the cosine similarity of the
image's embedding and the concept prompt's embedding (:mod:`.job`), so the job keeps the
two kinds of embeddings, not the scores: a changed prompt template or concept set then
embeds only the new prompts (a fraction of a second) and no image again, and a changed
concept filter embeds only the images it newly keeps.

Layout, under the job's output folder (``OUT/<model>/zero_shot/cache/``):

* ``images.npz`` / ``texts.npz`` — the embeddings of one model: arrays ``keys`` (the
  entries' keys, strings), ``vectors`` (float32, one unit-norm row per key), ``model``
  (the registry spec) and ``precision`` (the model's dtype, e.g. ``torch.float32``).
* ``images.part-000001.npz``, ... — the same arrays for one batch, written (temporary
  file, fsync, rename: :mod:`contrastkit.io`) as soon as the batch is embedded, so an
  interrupted run loses at most the batch in flight. When every embedding is there the
  parts are merged into ``images.npz`` / ``texts.npz`` and removed.
* ``.lock`` — one run at a time (a second gets a :class:`~contrastkit.errors.StateError`).

Keys: an image is ``image id | path relative to the data folder | file size in bytes``
(a replaced file of another size is embedded again); a prompt is its text. Files of
another model spec or precision are ignored (and replaced when the run completes), as
are files that cannot be read (a disk error, a file cut short by hand).
"""

from __future__ import annotations

import contextlib
import re
import zipfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contrastkit.io import atomic_write

__all__ = ["CACHE_FOLDER", "EmbeddingCache", "image_key"]

#: The cache's folder inside the job's output folder.
CACHE_FOLDER = "cache"

_PART = re.compile(r"^(?P<kind>[a-z]+)\.part-(?P<n>\d+)\.npz$")


def image_key(root: Path, image_id: str, path: Path) -> str:
    """The cache key of an image: its id, its path relative to ``root`` (absolute when
    outside it) and its size in bytes."""
    try:
        where = path.relative_to(root).as_posix()
    except ValueError:
        where = path.as_posix()
    try:
        size = path.stat().st_size
    except OSError:  # a missing image is reported by the embedding step, located
        size = -1
    return f"{image_id}|{where}|{size}"


class EmbeddingCache:
    """The kept embeddings of one kind (``images`` or ``texts``) of one model.

    Args:
        folder: the cache folder (created on the first write).
        kind: ``images`` or ``texts``: the file names' stem.
        model: the model's registry spec.
        precision: the model's dtype as text; embeddings of another precision are not
            reused.
    """

    def __init__(self, folder: Path, kind: str, model: str, precision: str) -> None:
        self.folder = Path(folder)
        self.kind = kind
        self.model = model
        self.precision = precision
        self._vectors: dict[str, np.ndarray] = {}
        self._dim: int | None = None
        self._stale = False  # a file to replace: another model's, unreadable, or parts
        self._next_part = 1
        self._load()

    def _files(self) -> tuple[Path, list[tuple[int, Path]]]:
        parts = []
        if self.folder.is_dir():
            for path in self.folder.iterdir():
                match = _PART.match(path.name)
                if match and match["kind"] == self.kind:
                    parts.append((int(match["n"]), path))
        return self.folder / f"{self.kind}.npz", sorted(parts)

    def _read(self, path: Path) -> tuple[list[str], np.ndarray] | None:
        """``(keys, vectors)`` of a file of this model and precision, else ``None``."""
        try:
            with np.load(path, allow_pickle=False) as data:
                if str(data["model"]) != self.model or str(data["precision"]) != self.precision:
                    return None
                keys = [str(key) for key in data["keys"]]
                vectors = np.asarray(data["vectors"], dtype=np.float32)
        except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile):
            return None
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            return None
        return keys, vectors

    def _load(self) -> None:
        merged, parts = self._files()
        self._next_part = (parts[-1][0] + 1) if parts else 1
        self._stale = bool(parts)
        for path in [merged, *(path for _, path in parts)]:
            if not path.is_file():
                continue
            content = self._read(path)
            if content is None or (self._dim is not None and content[1].shape[1] != self._dim):
                self._stale = True
                continue
            keys, vectors = content
            self._dim = vectors.shape[1]
            self._vectors.update(zip(keys, vectors, strict=True))

    def __contains__(self, key: object) -> bool:
        return key in self._vectors

    def __len__(self) -> int:
        return len(self._vectors)

    def missing(self, keys: Iterable[str]) -> list[str]:
        """The distinct ``keys`` not in the cache, in first-seen order."""
        return [key for key in dict.fromkeys(keys) if key not in self._vectors]

    def _write(self, path: Path, keys: Sequence[str], vectors: np.ndarray) -> None:
        arrays: dict[str, Any] = {
            "keys": np.array(list(keys), dtype=str),
            "vectors": np.asarray(vectors, dtype=np.float32),
            "model": np.array(self.model),
            "precision": np.array(self.precision),
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        atomic_write(path, lambda handle: np.savez(handle, **arrays))

    def add(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Keep ``vectors`` (one row per key) and write them to disk as one part file
        at once (flushed and renamed into place)."""
        vectors = np.asarray(vectors, dtype=np.float32)
        if vectors.ndim != 2 or vectors.shape[0] != len(keys):
            raise ValueError(f"{vectors.shape[0]} embeddings for {len(keys)} keys")
        if not len(keys):
            return
        if self._dim is not None and vectors.shape[1] != self._dim:
            # the model changed under the same spec: the old embeddings are useless
            self._vectors.clear()
        self._dim = vectors.shape[1]
        self._write(self.folder / f"{self.kind}.part-{self._next_part:06d}.npz", keys, vectors)
        self._next_part += 1
        self._stale = True
        self._vectors.update(zip(keys, vectors, strict=True))

    def matrix(self, keys: Sequence[str]) -> np.ndarray:
        """The embeddings of ``keys``, ``(len(keys), d)`` float32 (all must be kept)."""
        if not keys:
            return np.zeros((0, self._dim or 0), dtype=np.float32)
        return np.stack([self._vectors[key] for key in keys]).astype(np.float32, copy=False)

    def consolidate(self) -> None:
        """Merge every kept embedding into ``<kind>.npz`` and remove the part files (a
        no-op when there is nothing to merge)."""
        if not self._stale:
            return
        merged, parts = self._files()
        keys = list(self._vectors)
        self._write(merged, keys, self.matrix(keys))
        for _, path in parts:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self._stale = False
        self._next_part = 1
