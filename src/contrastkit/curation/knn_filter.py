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

The search is exact: a FAISS ``IndexFlatL2`` (moved to the GPU when FAISS sees one), or
a blocked NumPy search (``backend="numpy"``, the reference the benchmark compares
against; ``"auto"``, the default, takes FAISS when it is installed — the ``faiss`` or
``gpu`` extra — and NumPy otherwise, with the same neighbours). The NumPy search is
:func:`contrastkit.distances.squared_euclidean` per block of queries, then
``argpartition``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from contrastkit.distances import squared_euclidean
from contrastkit.errors import ConfigError
from contrastkit.schema import Gender

__all__ = [
    "DEFAULT_K",
    "DEFAULT_TAU_GENDER",
    "DEFAULT_TAU_REAL",
    "KnnFilterResult",
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

Backend = Literal["auto", "faiss", "numpy"]
BACKENDS: tuple[str, ...] = ("auto", "faiss", "numpy")


def resolve_backend(backend: str) -> Literal["faiss", "numpy"]:
    """The search that ``backend`` stands for: ``auto`` is FAISS when it can be imported,
    else NumPy.

    Raises:
        ConfigError: an unknown name, or ``faiss`` asked for but not installed.
    """
    if backend not in BACKENDS:
        raise ConfigError(f"backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    if backend == "numpy":
        return "numpy"
    try:
        import faiss  # noqa: F401
    except ImportError as error:
        if backend == "auto":
            return "numpy"
        raise ConfigError(
            "backend 'faiss' needs FAISS: pip install 'contrastkit[faiss]' (CPU) or "
            "'contrastkit[gpu]' (faiss-gpu); or use backend 'numpy' (same neighbours)"
        ) from error
    return "faiss"


def _as_matrix(name: str, array: np.ndarray) -> np.ndarray:
    matrix = np.ascontiguousarray(array, dtype=np.float32)
    if matrix.ndim != 2:
        raise ValueError(f"{name} must be a 2-d array (n, dim), found shape {matrix.shape}")
    if not np.isfinite(matrix).all():
        raise ValueError(f"{name} holds NaN or infinite values")
    return matrix


def _faiss_search(
    points: np.ndarray, queries: np.ndarray, n: int, use_gpu: bool | None
) -> np.ndarray:
    import faiss

    index: Any = faiss.IndexFlatL2(points.shape[1])
    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    if use_gpu is None:
        use_gpu = gpus > 0
    if use_gpu:
        if gpus == 0 or not hasattr(faiss, "StandardGpuResources"):
            raise ConfigError("use_gpu=True but this FAISS build sees no GPU (install faiss-gpu)")
        index = faiss.index_cpu_to_gpu(faiss.StandardGpuResources(), 0, index)
    index.add(points)
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


def knn_excluding_self(
    points: np.ndarray,
    query_ids: np.ndarray,
    k: int,
    *,
    backend: Backend = "auto",
    use_gpu: bool | None = None,
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
        backend: ``faiss`` (``IndexFlatL2``; GPU when available), ``numpy``, or ``auto``
            (FAISS when installed, else NumPy).
        use_gpu: FAISS on the GPU: ``None`` when FAISS sees one, ``True`` to insist.

    Returns:
        (len(query_ids), k) int64 indices into ``points``.
    """
    points = _as_matrix("points", points)
    query_ids = np.asarray(query_ids, dtype=np.int64).reshape(-1)
    if k < 1:
        raise ConfigError(f"k must be >= 1, not {k}")
    if k >= len(points):
        raise ConfigError(
            f"k={k} neighbours need at least {k + 1} embeddings (self excluded); "
            f"there are {len(points)}"
        )
    if len(query_ids) and (query_ids.min() < 0 or query_ids.max() >= len(points)):
        raise ValueError("query_ids out of range")
    if len(query_ids) == 0:
        return np.empty((0, k), dtype=np.int64)
    queries = points[query_ids]
    if resolve_backend(backend) == "faiss":
        found = _faiss_search(points, queries, k + 1, use_gpu)
    else:
        found = _numpy_search(points, queries, k + 1)
    drop = found == query_ids[:, None]
    missing = ~drop.any(axis=1)
    drop[missing, -1] = True
    neighbours: np.ndarray = found[~drop].reshape(len(query_ids), k)
    return neighbours


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
    ``n_real`` are real crops.
    """

    p_real: np.ndarray
    p_gender: np.ndarray
    accepted: np.ndarray
    neighbours: np.ndarray
    n_real: int
    k: int


def _labels(name: str, labels: Sequence[Gender | str], n: int) -> np.ndarray:
    if len(labels) != n:
        raise ValueError(f"{name}: {len(labels)} labels for {n} embeddings")
    return np.asarray([Gender(g).value for g in labels], dtype=object)


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
    use_gpu: bool | None = None,
) -> KnnFilterResult:
    """Score and accept edits by their neighbourhoods (GenSynth Sec. 4.2, Eq. 4-5).

    Args:
        real: (n, dim) embeddings of the real person crops ``R``.
        real_genders: their labels (the source images' caption labels).
        synthetic: (m, dim) embeddings of the edited crops ``S``, same encoder.
        synthetic_genders: their target genders.
        k, tau_real, tau_gender: ``K``, ``τ_R``, ``τ_G`` (defaults: Appendix A.3).
        backend, use_gpu: see :func:`knn_excluding_self`.

    Returns:
        ``P_R``, ``P_G``, the Eq. 5 decisions and the neighbours of every edit.
    """
    real = _as_matrix("real", real)
    synthetic = _as_matrix("synthetic", synthetic)
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
    points = np.concatenate([real, synthetic])
    query_ids = np.arange(len(real), len(points))
    neighbours = knn_excluding_self(points, query_ids, k, backend=backend, use_gpu=use_gpu)
    p_real = (neighbours < len(real)).mean(axis=1)
    p_gender = (genders[neighbours] == genders[query_ids][:, None]).mean(axis=1)
    return KnnFilterResult(
        p_real=p_real,
        p_gender=p_gender,
        accepted=accept(p_real, p_gender, tau_real, tau_gender),
        neighbours=neighbours,
        n_real=len(real),
        k=k,
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
