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
search that is; :mod:`contrastkit.curation.knn_search` holds the searches):

* ``backend="faiss"``: a FAISS ``IndexFlatL2``; on ``cuda`` sharded over every GPU the
  FAISS build sees (``faiss-gpu``, the ``faiss-gpu`` extra).
* ``backend="numpy"`` (CPU only): :func:`contrastkit.distances.squared_euclidean` per
  block of queries, then ``argpartition``; the reference the others are compared with.
* ``backend="torch"`` (CPU or CUDA, every visible GPU): per block of queries one fp32
  GEMM ``||x||² - 2 q·x`` (``||q||²`` is the same along a row, so it cannot change the
  ranking), the query itself masked, then an exact two-stage selection: the minimum of
  each group of :data:`~contrastkit.curation.knn_search.GROUP` points (strided: points
  ``j, j + G, j + 2G, ...``), the ``K + 1`` groups with the smallest minima (they hold
  the ``K + 1`` nearest points: at most ``K`` points lie strictly closer than the
  ``(K + 1)``-th, so at most ``K`` groups have a smaller minimum), and ``topk`` among
  their points. TF32 is switched off while it runs. Blocks are sized so the distance
  block stays under a memory budget.
* ``backend="auto"`` (the default): on ``cuda`` FAISS when its build sees a GPU, else
  torch; on ``cpu`` FAISS when installed (the ``faiss`` or ``dev`` extra), else NumPy.

``device="auto"`` is ``cuda`` when torch sees a CUDA GPU (or FAISS does), else ``cpu``.
Every backend returns the same neighbours up to exact distance ties.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from contrastkit.curation.knn_search import KnnSearch, search_neighbours
from contrastkit.errors import ConfigError
from contrastkit.schema import Gender

__all__ = [
    "BACKENDS",
    "DEFAULT_K",
    "DEFAULT_TAU_GENDER",
    "DEFAULT_TAU_REAL",
    "DEVICES",
    "FAISS_GPU_MAX_K",
    "KnnFilterResult",
    "KnnFilterSettings",
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

#: FAISS GPU indexes return at most this many neighbours per query (``k + 1`` here).
FAISS_GPU_MAX_K = 2048


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
    return _RESOLVERS[backend](device, k)


def _resolve_numpy(device: str, k: int) -> KnnSearch:
    if device == "cuda":
        raise ConfigError(
            "device 'cuda': backend 'numpy' runs on the CPU only; use backend 'torch' or 'auto'"
        )
    return KnnSearch("numpy", "cpu")


def _resolve_faiss(device: str, k: int) -> KnnSearch:
    faiss_gpus = _faiss_gpus()
    if faiss_gpus is None:
        try:
            import faiss  # noqa: F401
        except ImportError as error:
            raise _no_faiss() from error
    fits_gpu = k + 1 <= FAISS_GPU_MAX_K
    if device == "cpu" or (device == "auto" and not (faiss_gpus and fits_gpu)):
        return KnnSearch("faiss", "cpu")
    if not faiss_gpus:
        raise ConfigError(
            "device 'cuda': backend 'faiss' needs a FAISS build with GPU support "
            "(pip install 'contrastkit[faiss-gpu]' instead of faiss-cpu); or use "
            "backend 'torch' or 'auto'"
        )
    if not fits_gpu:
        raise ConfigError(
            f"k={k}: FAISS on the GPU finds at most {FAISS_GPU_MAX_K - 1} neighbours "
            "(self excluded); use backend 'torch' or 'auto'"
        )
    return KnnSearch("faiss", "cuda", faiss_gpus)


def _torch_on_gpus(device: str) -> KnnSearch | None:
    """The torch search on every GPU torch sees; ``None`` when it sees none on ``auto``."""
    gpus = _torch_gpus()
    if gpus:
        return KnnSearch("torch", "cuda", gpus)
    if device == "cuda":
        raise _no_cuda()
    return None


def _resolve_torch(device: str, k: int) -> KnnSearch:
    if device == "cpu":
        return KnnSearch("torch", "cpu")
    return _torch_on_gpus(device) or KnnSearch("torch", "cpu")


def _resolve_auto(device: str, k: int) -> KnnSearch:
    faiss_gpus = _faiss_gpus()
    if device != "cpu":
        if faiss_gpus and k + 1 <= FAISS_GPU_MAX_K:
            return KnnSearch("faiss", "cuda", faiss_gpus)
        on_gpus = _torch_on_gpus(device)
        if on_gpus is not None:
            return on_gpus
    return KnnSearch("numpy" if faiss_gpus is None else "faiss", "cpu")


#: The resolution of each backend name, from the device and ``k``.
_RESOLVERS: dict[str, Callable[[str, int], KnnSearch]] = {
    "numpy": _resolve_numpy,
    "faiss": _resolve_faiss,
    "torch": _resolve_torch,
    "auto": _resolve_auto,
}


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
    return search_neighbours([points], query_ids, k, search)


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


@dataclass(frozen=True)
class KnnFilterSettings:
    """The knobs of the KNN filter: its Eq. 5 criterion and where its search runs.

    Attributes:
        k, tau_real, tau_gender: ``K``, ``τ_R``, ``τ_G`` (defaults: Appendix A.3).
        backend, device: the search (see :func:`resolve_backend`); every choice finds
            the same neighbours up to exact distance ties.
    """

    k: int = DEFAULT_K
    tau_real: float = DEFAULT_TAU_REAL
    tau_gender: float = DEFAULT_TAU_GENDER
    backend: Backend = "auto"
    device: Device = "auto"


def knn_filter(
    real: np.ndarray,
    real_genders: Sequence[Gender | str],
    synthetic: np.ndarray,
    synthetic_genders: Sequence[Gender | str],
    settings: KnnFilterSettings = KnnFilterSettings(),
) -> KnnFilterResult:
    """Score and accept edits by their neighbourhoods (GenSynth Sec. 4.2, Eq. 4-5).

    Args:
        real: (n, dim) embeddings of the real person crops ``R``.
        real_genders: their labels (the source images' caption labels).
        synthetic: (m, dim) embeddings of the edited crops ``S``, same encoder.
        synthetic_genders: their target genders.
        settings: ``K``, ``τ_R``, ``τ_G`` and the search (defaults: Appendix A.3, the
            search :func:`resolve_backend` picks).

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
    k = settings.k
    _check_k(k, len(real) + len(synthetic))
    search = resolve_backend(settings.backend, settings.device, k=k)
    if search.backend != "torch":  # the torch search checks on its device
        _check_finite("real", real)
        _check_finite("synthetic", synthetic)
    neighbours = search_neighbours([real, synthetic], query_ids, k, search)
    p_real = (neighbours < len(real)).mean(axis=1)
    p_gender = (genders[neighbours] == genders[query_ids][:, None]).mean(axis=1)
    return KnnFilterResult(
        p_real=p_real,
        p_gender=p_gender,
        accepted=accept(p_real, p_gender, settings.tau_real, settings.tau_gender),
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
