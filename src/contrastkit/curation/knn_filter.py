"""The K-nearest-neighbour quality filter of GenSynth and the choice of one edit per gender.

GenSynth (seeds/001) Sec. 4.2: real person crops ``R`` and edited person crops ``S`` are
embedded with one image encoder (CLIP); for each edit ``s_i`` its ``K`` nearest
neighbours ``N_{s_i} = KNN(s_i, R ∪ S)`` by Euclidean distance are found (``s_i`` itself
excluded), and

* Eq. 4: ``P_R(s_i) = (1/K) Σ_{r ∈ N_{s_i}} 1(r ∈ R)`` and
  ``P_G(s_i) = (1/K) Σ_{r ∈ N_{s_i}} 1(gender(r) = gender(s_i))``,
* Eq. 5: ``accept(s_i) = 1`` if ``P_R(s_i) > τ_R`` and ``P_G(s_i) > τ_G``, else 0,

with ``K = 50``, ``τ_R = 0.08``, ``τ_G = 0.5`` (Appendix A.3). The gender of a real crop
is its source's caption label, that of an edit its target gender. Sources with at least
one accepted edit of each gender are kept and one accepted edit per gender is drawn at
random (:func:`select_edits`).

The search is exact, and runs where ``device`` says (:func:`resolve_backend` tells which
search that is):

* ``backend="faiss"``: a FAISS ``IndexFlatL2``; on ``cuda`` sharded over every GPU the
  FAISS build sees (``faiss-gpu``, the ``faiss-gpu`` extra).
* ``backend="numpy"`` (CPU only): :func:`contrastkit.distances.squared_euclidean` per
  block of queries, then ``argpartition``; the reference the others are compared with.
* ``backend="torch"`` (CPU or CUDA, every visible GPU): per block of queries one fp32
  GEMM ``||x||² - 2 q·x`` (``||q||²`` is the same along a row, so it cannot change the
  ranking), the query itself masked, then an exact two-stage selection: the minimum of
  each group of :data:`GROUP` points (strided: points ``j, j + G, j + 2G, ...``), the
  ``K + 1`` groups with the smallest minima (they hold the ``K + 1`` nearest points: at
  most ``K`` points lie strictly closer than the ``(K + 1)``-th, so at most ``K`` groups
  have a smaller minimum), and ``topk`` among their points. TF32 is switched off while it
  runs. Blocks are sized so the distance block stays under a memory budget.
* ``backend="auto"`` (the default): on ``cuda`` FAISS when its build sees a GPU, else
  torch; on ``cpu`` FAISS when installed (the ``faiss`` or ``dev`` extra), else NumPy.

``device="auto"`` is ``cuda`` when torch sees a CUDA GPU (or FAISS does), else ``cpu``.
Every backend returns the same neighbours up to exact distance ties.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

from contrastkit.distances import squared_euclidean
from contrastkit.errors import ConfigError
from contrastkit.schema import Gender

if TYPE_CHECKING:
    import torch

__all__ = [
    "BACKENDS",
    "DEFAULT_K",
    "DEFAULT_TAU_GENDER",
    "DEFAULT_TAU_REAL",
    "DEVICES",
    "KnnFilterResult",
    "KnnSearch",
    "accept",
    "knn_excluding_self",
    "knn_filter",
    "resolve_backend",
    "select_edits",
]

#: Appendix A.3.
DEFAULT_K = 50
DEFAULT_TAU_REAL = 0.08
DEFAULT_TAU_GENDER = 0.5

Backend = Literal["auto", "faiss", "numpy", "torch"]
BACKENDS: tuple[str, ...] = ("auto", "faiss", "numpy", "torch")
Device = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")

#: Points per group in the torch search's first selection stage.
GROUP = 32
#: FAISS GPU indexes return at most this many neighbours per query (``k + 1`` here).
FAISS_GPU_MAX_K = 2048
#: Memory budget of one block of distances in the torch search, per device type.
_BLOCK_BYTES = {"cpu": 256 << 20, "cuda": 4 << 30}
#: Points per column tile of the torch search (a multiple of GROUP).
_TILE_POINTS = 1 << 18


@dataclass(frozen=True)
class KnnSearch:
    """The nearest-neighbour search that runs (what :func:`resolve_backend` resolved).

    Attributes:
        backend: ``faiss``, ``numpy`` or ``torch``.
        device: ``cpu`` or ``cuda``.
        gpus: GPUs the search uses (every visible one on ``cuda``; 0 on ``cpu``).
    """

    backend: Literal["faiss", "numpy", "torch"]
    device: Literal["cpu", "cuda"]
    gpus: int = 0

    def summary(self) -> dict[str, Any]:
        """``{"backend", "device", "gpus"}`` for a build summary."""
        return {"backend": self.backend, "device": self.device, "gpus": self.gpus}


def _faiss_gpus() -> int | None:
    """GPUs the installed FAISS build sees; ``None`` when FAISS is not installed."""
    try:
        import faiss
    except ImportError:
        return None
    get_num_gpus = getattr(faiss, "get_num_gpus", None)
    return int(get_num_gpus()) if get_num_gpus is not None else 0


def _torch_gpus() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def _no_cuda() -> ConfigError:
    return ConfigError(
        "device 'cuda': no CUDA GPU is visible here (torch.cuda.is_available() is False "
        "and FAISS has no GPU support); use 'cpu' or 'auto'"
    )


def _no_faiss() -> ConfigError:
    return ConfigError(
        "backend 'faiss' needs FAISS: pip install 'contrastkit[faiss]' (CPU) or "
        "'contrastkit[faiss-gpu]' (CUDA); or use backend 'numpy' or 'torch' (same neighbours)"
    )


def resolve_backend(
    backend: str = "auto", device: str = "auto", *, k: int = DEFAULT_K
) -> KnnSearch:
    """The search that ``backend`` on ``device`` stands for here, for ``k`` neighbours.

    ``device="auto"`` is ``cuda`` when the backend can run on a GPU of this machine
    (``auto``: torch or FAISS sees one; ``torch``: torch does; ``faiss``: FAISS does),
    else ``cpu``. On ``cuda``, ``auto`` is FAISS on every GPU when the FAISS build has GPU
    support (and ``k + 1 <= 2048``, its GPU limit), else the torch search on every GPU
    torch sees; on ``cpu`` it is FAISS when installed, else NumPy.

    Args:
        backend: ``auto``, ``faiss``, ``numpy`` or ``torch``.
        device: ``auto``, ``cpu`` or ``cuda``.
        k: neighbours per query (self excluded).

    Returns:
        The backend, device and GPU count that :func:`knn_excluding_self` uses.

    Raises:
        ConfigError: an unknown name; ``faiss`` asked for but not installed (or, on
            ``cuda``, without GPU support); ``numpy`` on ``cuda``; ``cuda`` asked for
            without a CUDA GPU.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if device not in DEVICES:
        raise ConfigError(f"device must be one of {', '.join(DEVICES)}, not {device!r}")
    if backend == "numpy":
        if device == "cuda":
            raise ConfigError(
                "device 'cuda': backend 'numpy' runs on the CPU only; use backend 'torch' or 'auto'"
            )
        return KnnSearch("numpy", "cpu")
    faiss_gpus = _faiss_gpus() if backend in ("auto", "faiss") else None
    if backend == "faiss":
        if faiss_gpus is None:
            try:
                import faiss  # noqa: F401
            except ImportError as error:
                raise _no_faiss() from error
        on_gpu = bool(faiss_gpus) and k + 1 <= FAISS_GPU_MAX_K
        if device == "cpu" or (device == "auto" and not on_gpu):
            return KnnSearch("faiss", "cpu")
        if not faiss_gpus:
            raise ConfigError(
                "device 'cuda': backend 'faiss' needs a FAISS build with GPU support "
                "(pip install 'contrastkit[faiss-gpu]' instead of faiss-cpu); or use "
                "backend 'torch' or 'auto'"
            )
        if k + 1 > FAISS_GPU_MAX_K:
            raise ConfigError(
                f"k={k}: FAISS on the GPU finds at most {FAISS_GPU_MAX_K - 1} neighbours "
                "(self excluded); use backend 'torch' or 'auto'"
            )
        return KnnSearch("faiss", "cuda", faiss_gpus)
    if backend == "torch":
        if device == "cpu":
            return KnnSearch("torch", "cpu")
        gpus = _torch_gpus()
        if gpus:
            return KnnSearch("torch", "cuda", gpus)
        if device == "cuda":
            raise _no_cuda()
        return KnnSearch("torch", "cpu")
    # auto
    if device != "cpu":
        if faiss_gpus and k + 1 <= FAISS_GPU_MAX_K:
            return KnnSearch("faiss", "cuda", faiss_gpus)
        gpus = _torch_gpus()
        if gpus:
            return KnnSearch("torch", "cuda", gpus)
        if device == "cuda":
            raise _no_cuda()
    return KnnSearch("numpy" if faiss_gpus is None else "faiss", "cpu")


def _as_matrix(name: str, array: np.ndarray, *, check_finite: bool = True) -> np.ndarray:
    matrix = np.ascontiguousarray(array, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (n, dim), found shape {matrix.shape}")
    if check_finite:
        _check_finite(name, matrix)
    return matrix


def _check_finite(name: str, matrix: np.ndarray) -> None:
    # A float32 sum is finite unless an entry is NaN or infinite (or the sum overflows:
    # then the entries are checked one by one).
    with np.errstate(over="ignore", invalid="ignore"):
        total = matrix.sum()
    if not np.isfinite(total) and not np.isfinite(matrix).all():
        raise ValueError(f"{name} holds NaN or infinite values")


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


def _block_rows(device: torch.device, tile: int, block_bytes: int | None = None) -> int:
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
    block_bytes: int | None,
    tile_points: int,
) -> np.ndarray:
    """The ``n`` nearest points (query masked) of each query, on one torch device."""
    import torch

    total, width = sum(len(part) for part in parts), parts[0].shape[1]
    padded = -(-total // GROUP) * GROUP
    tile_points = max(GROUP, tile_points // GROUP * GROUP)
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
    rows = _block_rows(device, min(padded, tile_points), block_bytes)
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


def _torch_search(
    parts: Sequence[np.ndarray],
    query_ids: np.ndarray,
    n: int,
    device: Literal["cpu", "cuda"],
    gpus: int = 1,
    *,
    block_bytes: int | None = None,
    tile_points: int = _TILE_POINTS,
) -> np.ndarray:
    """Exact search with torch on the CPU or on ``gpus`` GPUs (the queries split evenly
    between them, one thread each)."""
    import torch

    if device == "cpu":
        targets = [torch.device("cpu")]
    else:
        targets = [torch.device("cuda", i) for i in range(max(1, gpus))]
    shares = np.array_split(query_ids, len(targets))

    def run(i: int) -> np.ndarray:
        return _torch_search_on(targets[i], parts, shares[i], n, block_bytes, tile_points)

    with _exact_fp32(torch), torch.inference_mode():
        if len(targets) == 1:
            return run(0)
        with ThreadPoolExecutor(len(targets)) as pool:
            return np.concatenate(list(pool.map(run, range(len(targets)))))


def _neighbours(
    parts: Sequence[np.ndarray], query_ids: np.ndarray, k: int, search: KnnSearch
) -> np.ndarray:
    """The search over the stacked ``parts`` (never copied into one array on the GPU
    paths)."""
    if len(query_ids) == 0:
        return np.empty((0, k), dtype=np.int64)
    if search.backend == "torch":
        # The query's own column is masked (+inf) and at least k other points are finite,
        # so the k nearest are never the query itself.
        return _torch_search(parts, query_ids, k, search.device, search.gpus)
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


def _check_k(k: int, n_points: int) -> None:
    if k < 1:
        raise ConfigError(f"k must be >= 1, not {k}")
    if k >= n_points:
        raise ConfigError(
            f"k={k} neighbours need at least {k + 1} embeddings (self excluded); "
            f"there are {n_points}"
        )


def knn_excluding_self(
    points: np.ndarray,
    query_ids: np.ndarray,
    k: int,
    *,
    backend: Backend = "auto",
    device: Device = "auto",
) -> np.ndarray:
    """The ``k`` nearest neighbours of ``points[query_ids]`` among ``points``, exact, by
    Euclidean distance, nearest first, each query's own row never among them.

    ``k + 1`` neighbours are searched and the query's own index removed (or, when an exact
    duplicate pushed it out, the farthest one), so a point is never its own neighbour
    even among duplicates.

    Args:
        points: (n, dim) embeddings.
        query_ids: indices into ``points`` of the queries.
        k: neighbours per query; ``k < n``.
        backend: ``auto``, ``faiss``, ``numpy`` or ``torch`` (see :func:`resolve_backend`).
        device: ``auto``, ``cpu`` or ``cuda`` (every visible GPU).

    Returns:
        (len(query_ids), k) int64 indices into ``points``.

    Raises:
        ConfigError: a ``k`` that does not fit, or a backend/device that cannot run here.
    """
    points = _as_matrix("points", points, check_finite=False)
    query_ids = np.asarray(query_ids, dtype=np.int64).reshape(-1)
    _check_k(k, len(points))
    if len(query_ids) and (query_ids.min() < 0 or query_ids.max() >= len(points)):
        raise ValueError("query_ids out of range")
    search = resolve_backend(backend, device, k=k)
    if search.backend != "torch":  # the torch search checks on its device
        _check_finite("points", points)
    return _neighbours([points], query_ids, k, search)


def accept(
    p_real: np.ndarray,
    p_gender: np.ndarray,
    tau_real: float = DEFAULT_TAU_REAL,
    tau_gender: float = DEFAULT_TAU_GENDER,
) -> np.ndarray:
    """GenSynth Eq. 5: ``P_R > τ_R and P_G > τ_G`` (strictly), elementwise."""
    return (np.asarray(p_real) > tau_real) & (np.asarray(p_gender) > tau_gender)


@dataclass(frozen=True)
class KnnFilterResult:
    """Scores and decisions for the edits, in the order they were given.

    ``neighbours`` index the stacked embeddings ``[real; synthetic]``: values below
    ``n_real`` are real crops. ``search`` is the backend and device that ran.
    """

    p_real: np.ndarray
    p_gender: np.ndarray
    accepted: np.ndarray
    neighbours: np.ndarray
    n_real: int
    k: int
    search: KnnSearch


_GENDER_CODES = {gender: code for code, gender in enumerate(Gender)}


def _labels(name: str, labels: Sequence[Gender | str], n: int) -> np.ndarray:
    """The labels as small integer codes (one ``Gender`` parse per distinct label)."""
    if len(labels) != n:
        raise ValueError(f"{name}: {len(labels)} labels for {n} embeddings")
    array = np.empty(n, dtype=object)
    array[:] = list(labels)
    codes = np.empty(n, dtype=np.int8)
    for label in set(array.tolist()):  # Gender members equal (and hash as) their values
        gender = Gender(label)
        codes[array == str(gender.value)] = _GENDER_CODES[gender]
    return codes


def knn_filter(
    real: np.ndarray,
    real_genders: Sequence[Gender | str],
    synthetic: np.ndarray,
    synthetic_genders: Sequence[Gender | str],
    *,
    k: int = DEFAULT_K,
    tau_real: float = DEFAULT_TAU_REAL,
    tau_gender: float = DEFAULT_TAU_GENDER,
    backend: Backend = "auto",
    device: Device = "auto",
) -> KnnFilterResult:
    """Score and accept edits by their neighbourhoods (GenSynth Sec. 4.2, Eq. 4-5).

    Args:
        real: (n, dim) embeddings of the real person crops ``R``.
        real_genders: their labels (the source images' caption labels).
        synthetic: (m, dim) embeddings of the edited crops ``S``, same encoder.
        synthetic_genders: their target genders.
        k, tau_real, tau_gender: ``K``, ``τ_R``, ``τ_G`` (defaults: Appendix A.3).
        backend, device: the search (see :func:`resolve_backend`); every choice finds
            the same neighbours up to exact distance ties.

    Returns:
        ``P_R``, ``P_G``, the Eq. 5 decisions, the neighbours of every edit and the
        search that ran.

    Raises:
        ConfigError: a ``k`` that does not fit, or a backend/device that cannot run here.
    """
    real = _as_matrix("real", real, check_finite=False)
    synthetic = _as_matrix("synthetic", synthetic, check_finite=False)
    if real.shape[1] != synthetic.shape[1]:
        raise ValueError(
            f"real and synthetic embeddings differ in width: {real.shape[1]} vs "
            f"{synthetic.shape[1]}"
        )
    genders = np.concatenate(
        [
            _labels("real_genders", real_genders, len(real)),
            _labels("synthetic_genders", synthetic_genders, len(synthetic)),
        ]
    )
    query_ids = np.arange(len(real), len(real) + len(synthetic))
    _check_k(k, len(real) + len(synthetic))
    search = resolve_backend(backend, device, k=k)
    if search.backend != "torch":  # the torch search checks on its device
        _check_finite("real", real)
        _check_finite("synthetic", synthetic)
    neighbours = _neighbours([real, synthetic], query_ids, k, search)
    p_real = (neighbours < len(real)).mean(axis=1)
    p_gender = (genders[neighbours] == genders[query_ids][:, None]).mean(axis=1)
    return KnnFilterResult(
        p_real=p_real,
        p_gender=p_gender,
        accepted=accept(p_real, p_gender, tau_real, tau_gender),
        neighbours=neighbours,
        n_real=len(real),
        k=k,
        search=search,
    )


def select_edits(
    source_ids: Sequence[str],
    targets: Sequence[Gender | str],
    accepted: Sequence[bool] | np.ndarray,
    *,
    seed: int = 0,
) -> dict[str, dict[Gender, int]]:
    """Keep the sources with an accepted edit of each gender and draw one per gender
    (GenSynth Sec. 4.2: "randomly select one edit for each gender").

    Each source draws with its own generator seeded by ``(seed, source_id)``, so adding
    or removing other sources never changes its choice.

    Args:
        source_ids, targets, accepted: per edit, its source, target gender and decision.

    Returns:
        ``{source_id: {Gender.MASCULINE: edit index, Gender.FEMININE: edit index}}`` in
        order of first appearance.
    """
    if not len(source_ids) == len(targets) == len(accepted):
        raise ValueError("source_ids, targets and accepted must have the same length")
    pools: dict[str, dict[Gender, list[int]]] = {}
    for index, (source, target, ok) in enumerate(zip(source_ids, targets, accepted, strict=True)):
        per_gender = pools.setdefault(source, {g: [] for g in Gender.binary()})
        if ok:
            per_gender[Gender(target)].append(index)
    chosen: dict[str, dict[Gender, int]] = {}
    for source, per_gender in pools.items():
        if all(per_gender[g] for g in Gender.binary()):
            rng = random.Random(f"{seed}:{source}")
            chosen[source] = {g: rng.choice(per_gender[g]) for g in Gender.binary()}
    return chosen
