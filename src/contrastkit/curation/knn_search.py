"""The exact nearest-neighbour searches behind :mod:`contrastkit.curation.knn_filter`.

:func:`search_neighbours` runs the search that a :class:`KnnSearch` names over stacked
blocks of embeddings: a FAISS ``IndexFlatL2`` (sharded over the GPUs on ``cuda``), NumPy
(:func:`contrastkit.distances.squared_euclidean` per block of queries, then
``argpartition``) or the torch search (:func:`torch_search`, CPU or every visible GPU:
per block of queries one fp32 GEMM and an exact two-stage selection over groups of
:data:`GROUP` points). :func:`contrastkit.curation.knn_filter.resolve_backend` chooses
which one runs.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

import numpy as np

from contrastkit.distances import squared_euclidean

if TYPE_CHECKING:
    import torch

__all__ = [
    "GROUP",
    "TILE_POINTS",
    "KnnSearch",
    "SearchSummary",
    "TorchTiling",
    "block_rows",
    "search_neighbours",
    "torch_search",
]

#: Points per group in the torch search's first selection stage.
GROUP = 32
#: Memory budget of one block of distances in the torch search, per device type.
_BLOCK_BYTES = {"cpu": 256 << 20, "cuda": 4 << 30}
#: Points per column tile of the torch search (a multiple of GROUP).
TILE_POINTS = 1 << 18


class SearchSummary(TypedDict):
    """The search that ran, as a build summary records it (:meth:`KnnSearch.summary`)."""

    backend: Literal["faiss", "numpy", "torch"]
    device: Literal["cpu", "cuda"]
    gpus: int


@dataclass(frozen=True)
class KnnSearch:
    """The nearest-neighbour search that runs (what
    :func:`~contrastkit.curation.knn_filter.resolve_backend` resolved).

    Attributes:
        backend: ``faiss``, ``numpy`` or ``torch``.
        device: ``cpu`` or ``cuda``.
        gpus: GPUs the search uses (every visible one on ``cuda``; 0 on ``cpu``).
    """

    backend: Literal["faiss", "numpy", "torch"]
    device: Literal["cpu", "cuda"]
    gpus: int = 0

    def summary(self) -> SearchSummary:
        """``{"backend", "device", "gpus"}`` for a build summary."""
        return {"backend": self.backend, "device": self.device, "gpus": self.gpus}


@dataclass(frozen=True)
class TorchTiling:
    """How the torch search cuts its distance matrix into blocks (the answer is the same
    for every choice; only memory and speed change).

    Attributes:
        block_bytes: memory budget of one ``(queries, tile)`` float32 distance block;
            ``None``: 256 MiB on the CPU, on CUDA 4 GiB or a quarter of the free memory.
        tile_points: points per column tile (rounded down to a multiple of :data:`GROUP`).
    """

    block_bytes: int | None = None
    tile_points: int = TILE_POINTS


def _stack(parts: Sequence[np.ndarray]) -> np.ndarray:
    return parts[0] if len(parts) == 1 else np.concatenate(parts)


def _rows(parts: Sequence[np.ndarray], ids: np.ndarray) -> np.ndarray:
    """Rows ``ids`` of the stacked ``parts``: a view when they are a range inside one part
    (the edits, for the filter), else a copy."""
    first, last = int(ids[0]), int(ids[-1])
    if last - first + 1 == len(ids) and np.array_equal(ids, np.arange(first, last + 1)):
        offset = 0
        for part in parts:
            if offset <= first and last < offset + len(part):
                rows: np.ndarray = part[first - offset : last - offset + 1]
                return rows
            offset += len(part)
    gathered: np.ndarray = _stack(parts)[ids]
    return gathered


def _faiss_search(
    parts: Sequence[np.ndarray], queries: np.ndarray, n: int, gpus: int
) -> np.ndarray:
    import faiss

    index: Any = faiss.IndexFlatL2(parts[0].shape[1])
    for part in parts:  # numbered in order: the stacked indices
        index.add(part)
    if gpus:
        # Cloned with its points (a sharded index takes them in one pass only): each GPU
        # holds 1/gpus of them, and every query goes to all.
        options = faiss.GpuMultipleClonerOptions()
        options.shard = True
        index = faiss.index_cpu_to_all_gpus(index, co=options, ngpu=gpus)
    _, found = index.search(queries, n)
    return np.asarray(found, dtype=np.int64)


def _numpy_search(points: np.ndarray, queries: np.ndarray, n: int, block: int = 4096) -> np.ndarray:
    found = np.empty((len(queries), n), dtype=np.int64)
    for start in range(0, len(queries), block):
        q = queries[start : start + block]
        distance = squared_euclidean(q, points)
        part = np.argpartition(distance, n - 1, axis=1)[:, :n]
        order = np.argsort(np.take_along_axis(distance, part, axis=1), axis=1, kind="stable")
        found[start : start + len(q)] = np.take_along_axis(part, order, axis=1)
    return found


@contextmanager
def _exact_fp32(torch: Any) -> Iterator[None]:
    """fp32 matrix products in full fp32 (no TF32, no bf16) while the search runs."""
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("highest")
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(before)


def block_rows(device: torch.device, tile: int, block_bytes: int | None = None) -> int:
    """Queries per block of the torch search: the ``(rows, tile)`` float32 distance block
    fits ``block_bytes`` (default: 256 MiB on the CPU; on CUDA 4 GiB, or a quarter of the
    free memory when less)."""
    import torch

    if block_bytes is None:
        block_bytes = _BLOCK_BYTES[device.type]
        if device.type == "cuda":
            block_bytes = min(block_bytes, torch.cuda.mem_get_info(device)[0] // 4)
    return int(max(1, min(16384, block_bytes // (4 * tile))))


def _torch_search_on(
    device: torch.device,
    parts: Sequence[np.ndarray],
    query_ids: np.ndarray,
    n: int,
    tiling: TorchTiling,
) -> np.ndarray:
    """The ``n`` nearest points (query masked) of each query, on one torch device."""
    import torch

    total, width = sum(len(part) for part in parts), parts[0].shape[1]
    padded = -(-total // GROUP) * GROUP
    tile_points = max(GROUP, tiling.tile_points // GROUP * GROUP)
    # The stacked points (uploaded part by part), padded with zero rows whose squared
    # norm is +inf: never nearer than a point.
    x = torch.empty((padded, width), dtype=torch.float32, device=device)
    offset = 0
    for part in parts:
        x[offset : offset + len(part)].copy_(torch.from_numpy(part))
        offset += len(part)
    x[total:] = 0.0
    if not bool(torch.isfinite(x).all()):  # checked here rather than on the host: faster
        raise ValueError("the embeddings hold NaN or infinite values")
    norms = (x * x).sum(dim=1)
    norms[total:] = torch.inf
    ids = torch.from_numpy(query_ids).to(device)
    found = torch.empty((len(query_ids), n), dtype=torch.int64, device=device)
    rows = block_rows(device, min(padded, tile_points), tiling.block_bytes)
    steps = torch.arange(GROUP, device=device)
    for start in range(0, len(query_ids), rows):
        block = ids[start : start + rows]
        row = torch.arange(len(block), device=device)
        # -2 q is exact in floating point; addmm adds ||x||² to every row.
        q = x[block] * -2.0
        best_values: list[torch.Tensor] = []
        best_ids: list[torch.Tensor] = []
        for first in range(0, padded, tile_points):
            last = min(first + tile_points, padded)
            scores = torch.addmm(norms[first:last], q, x[first:last].T)
            # Mask each query's own column when it lies in this tile (no host sync).
            inside = (block >= first) & (block < last)
            column = (block - first).clamp(0, last - first - 1)
            scores[row, column] = torch.where(inside, torch.inf, scores[row, column])
            # Group j of the tile is columns j, j + G, j + 2G, ... (G groups): the minimum
            # over GROUP strided rows of the view reads memory in order (fast on a GPU).
            spread = (last - first) // GROUP
            groups = scores.view(len(block), GROUP, spread).amin(dim=1)
            chosen = groups.topk(min(n, spread), dim=1, largest=False, sorted=False).indices
            candidates = (chosen[:, :, None] + steps * spread).reshape(len(block), -1)
            values, order = scores.gather(1, candidates).topk(
                min(n, candidates.shape[1]), dim=1, largest=False
            )
            best_values.append(values)
            best_ids.append(candidates.gather(1, order) + first)
            del scores
        if len(best_values) == 1:
            found[start : start + len(block)] = best_ids[0]
        else:
            merged = torch.cat(best_values, dim=1).topk(n, dim=1, largest=False).indices
            found[start : start + len(block)] = torch.cat(best_ids, dim=1).gather(1, merged)
    result: np.ndarray = found.cpu().numpy()
    return result


def torch_search(
    parts: Sequence[np.ndarray],
    query_ids: np.ndarray,
    n: int,
    search: KnnSearch,
    tiling: TorchTiling = TorchTiling(),
) -> np.ndarray:
    """Exact search with torch on ``search.device``: the CPU, or ``search.gpus`` GPUs (the
    queries split evenly between them, one thread each).

    Args:
        parts: blocks of embeddings, stacked in order (never copied into one array).
        query_ids: indices into the stacked points of the queries.
        n: neighbours per query, the query's own point masked.
        search: where it runs (its ``backend`` is not read).
        tiling: the block sizes (they change memory and speed, not the answer).

    Returns:
        (len(query_ids), n) int64 indices into the stacked points, nearest first.
    """
    import torch

    if search.device == "cpu":
        targets = [torch.device("cpu")]
    else:
        targets = [torch.device("cuda", i) for i in range(max(1, search.gpus))]
    shares = np.array_split(query_ids, len(targets))

    def run(i: int) -> np.ndarray:
        return _torch_search_on(targets[i], parts, shares[i], n, tiling)

    with _exact_fp32(torch), torch.inference_mode():
        if len(targets) == 1:
            return run(0)
        with ThreadPoolExecutor(len(targets)) as pool:
            return np.concatenate(list(pool.map(run, range(len(targets)))))


def search_neighbours(
    parts: Sequence[np.ndarray], query_ids: np.ndarray, k: int, search: KnnSearch
) -> np.ndarray:
    """The ``k`` nearest neighbours of each query over the stacked ``parts`` (never copied
    into one array on the GPU paths), nearest first, the query itself never among them.

    ``k + 1`` are searched and the query's own index removed (or, when an exact duplicate
    pushed it out, the farthest one); the torch search masks the query instead.

    Returns:
        (len(query_ids), k) int64 indices into the stacked points.
    """
    if len(query_ids) == 0:
        return np.empty((0, k), dtype=np.int64)
    if search.backend == "torch":
        # The query's own column is masked (+inf) and at least k other points are finite,
        # so the k nearest are never the query itself.
        return torch_search(parts, query_ids, k, search)
    if search.backend == "faiss":
        found = _faiss_search(parts, _rows(parts, query_ids), k + 1, search.gpus)
    else:
        points = _stack(parts)
        found = _numpy_search(points, points[query_ids], k + 1)
    # k + 1 found: drop the query itself, or, when ties (exact duplicates) left it out,
    # the farthest.
    drop = found == query_ids[:, None]
    missing = ~drop.any(axis=1)
    drop[missing, -1] = True
    neighbours: np.ndarray = found[~drop].reshape(len(query_ids), k)
    return neighbours
