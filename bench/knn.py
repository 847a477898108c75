"""Benchmark: the GenSynth KNN filter, FAISS against brute-force NumPy on the CPU, and on
the GPU against the GPU's own matrix-product rate.

    python bench/knn.py                          # CPU: 10k, 100k, 1M points
    python bench/knn.py --quick                  # CPU: 10k and 100k, fewer timed queries
    python bench/knn.py --sizes 10000,100000 --max-queries 4000
    python bench/knn.py --device cuda            # GPU: 196,197 points (GenSynth's COCO)
    python bench/knn.py --device cuda --sizes 196197,1000000

For each size N it draws N random 512-d unit vectors (CLIP-like embeddings), 1 in 17
of them "real" (GenSynth: 1 source crop per 16 edits), the rest "edits" with random
target genders, and runs the filter of GenSynth Sec. 4.2 (K=50 neighbours in R ∪ S,
self excluded, P_R and P_G of Eq. 4, the decisions of Eq. 5).

``--device cpu`` (the default) compares

(a) brute force NumPy: blocked ``q @ x.T`` + ``argpartition``
    (:func:`contrastkit.curation.knn_filter.knn_excluding_self` with ``backend="numpy"``);
(b) FAISS ``IndexFlatL2`` on the CPU.

Exact search costs N_queries x N x d: for large N the script times the first
``--max-queries`` edit queries (against all N points) and projects the full filter
linearly in the number of queries; both the measured and the projected times are
printed, with the share of queries whose neighbour sets agree between the backends
(``agree``) and the share of equal accept decisions (``same``).

``--device cuda`` runs the whole filter (every edit a query, nothing projected; the
default N = 196,197 is the paper's COCO scale, 11,541 real crops + 184,656 edits, which
1 in 17 gives exactly) with ``device="cuda"``: FAISS on every GPU when the installed FAISS
has GPU support, else contrastkit's exact torch search (fp32 GEMM + two-stage top-k). The
time runs from NumPy arrays in host memory to neighbours back there (uploads included),
after one warm-up run; the median of ``--repeats`` runs is reported. In the same run it
times the bare matrix products of the same shapes on device-resident data (the edit
queries against all N points, in the row blocks the torch search uses, into a
preallocated output) in fp32 (TF32 off, as the search computes) and in TF32, and prints
the filter's rate (2 x queries x N x d FLOP per second) as a share of each. Target: the
exact filter at >= 70% of the fp32 GEMM rate at 196k points. The first ``--check``
queries are compared with the NumPy search (``agree``, ``same`` as above).
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contrastkit.curation import knn_filter as knn
from contrastkit.curation import knn_search
from contrastkit.curation.knn_filter import accept, knn_excluding_self, resolve_backend
from contrastkit.errors import ConfigError

DIM, K = 512, 50


def _data(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    points = rng.standard_normal((n, DIM), dtype=np.float32)
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    is_real = np.zeros(n, dtype=bool)
    is_real[::17] = True
    genders = rng.integers(0, 2, n)
    return points, is_real, genders


def _filter(
    data: tuple[np.ndarray, np.ndarray, np.ndarray],
    queries: np.ndarray,
    backend: str,
    device: str = "cpu",
) -> tuple[float, np.ndarray, np.ndarray]:
    """Time the filter of ``queries`` among ``data`` (points, is_real, genders as
    :func:`_data` draws them); its neighbours and decisions."""
    points, is_real, genders = data
    start = time.perf_counter()
    neighbours = knn_excluding_self(points, queries, K, backend=backend, device=device)  # type: ignore[arg-type]
    p_real = is_real[neighbours].mean(axis=1)
    p_gender = (genders[neighbours] == genders[queries][:, None]).mean(axis=1)
    decisions = accept(p_real, p_gender)
    return time.perf_counter() - start, neighbours, decisions


def _agreement(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.mean([set(x) == set(y) for x, y in zip(a.tolist(), b.tolist(), strict=True)]))


def _run_cpu(sizes: list[int], max_queries: int) -> None:
    try:
        import faiss
    except ImportError:
        sys.exit("the CPU comparison needs FAISS: pip install -e '.[faiss]' (or '.[dev]')")
    print(
        f"machine: {platform.machine()}, FAISS {faiss.__version__} on the CPU "
        f"({faiss.omp_get_max_threads()} threads), d={DIM}, K={K}"
    )
    print(
        f"{'N':>9} {'queries':>8} {'timed':>6} {'numpy s':>9} {'faiss s':>9} {'ratio':>6}"
        f" {'numpy full s':>13} {'faiss full s':>13} {'agree':>6} {'same':>6}"
    )
    previous: tuple[float, float] | None = None
    for n in sizes:
        data = _data(n)
        edits = np.flatnonzero(~data[1])
        timed = edits[:max_queries]
        t_numpy, nb_numpy, d_numpy = _filter(data, timed, "numpy")
        t_faiss, nb_faiss, d_faiss = _filter(data, timed, "faiss")
        agree = _agreement(nb_numpy, nb_faiss)
        same = float(np.mean(d_numpy == d_faiss))
        scale = len(edits) / len(timed)
        full = (t_numpy * scale, t_faiss * scale)
        print(
            f"{n:>9,} {len(edits):>8,} {len(timed):>6,} {t_numpy:>9.2f} {t_faiss:>9.2f} "
            f"{t_numpy / t_faiss:>6.2f} {full[0]:>13.1f} {full[1]:>13.1f} "
            f"{agree:>6.1%} {same:>6.1%}"
        )
        if previous is not None:
            growth = (full[0] / previous[0], full[1] / previous[1])
            print(
                f"{'':>9} full-filter growth from the previous size: numpy x{growth[0]:.0f}, "
                f"faiss x{growth[1]:.0f}"
            )
        previous = full


def _gemm_seconds(
    points: np.ndarray, queries: np.ndarray, rows: int, precision: str, repeats: int
) -> float:
    """Median time of the bare products queries @ points.T in blocks of ``rows`` queries
    (device-resident data, preallocated output), at ``precision`` ("highest": fp32,
    "high": TF32)."""
    import torch

    device = torch.device("cuda")
    x = torch.from_numpy(points).to(device)
    q_all = x[torch.from_numpy(queries).to(device)]
    out = torch.empty((rows, len(x)), dtype=torch.float32, device=device)
    before = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)

    def once() -> float:
        torch.cuda.synchronize()
        start = time.perf_counter()
        for first in range(0, len(q_all), rows):
            q = q_all[first : first + rows]
            torch.mm(q, x.T, out=out[: len(q)])
        torch.cuda.synchronize()
        return time.perf_counter() - start

    try:
        once()
        return statistics.median(once() for _ in range(repeats))
    finally:
        torch.set_float32_matmul_precision(before)


def _timed_filter(
    real: np.ndarray, real_g: list[str], synthetic: np.ndarray, synthetic_g: list[str]
) -> tuple[float, knn.KnnFilterResult]:
    """The GenSynth filter as the build runs it, from host arrays to host arrays."""
    start = time.perf_counter()
    settings = knn.KnnFilterSettings(k=K, device="cuda")
    result = knn.knn_filter(real, real_g, synthetic, synthetic_g, settings)
    return time.perf_counter() - start, result


def _run_cuda(sizes: list[int], max_queries: int | None, repeats: int, check: int) -> None:
    import torch

    try:
        search = resolve_backend("auto", "cuda", k=K)
    except ConfigError as error:
        sys.exit(f"--device cuda: {error}")
    gpu = torch.cuda.get_device_properties(0)
    print(
        f"machine: {platform.machine()}, {torch.cuda.device_count()} x {gpu.name} "
        f"({gpu.total_memory / 2**30:.0f} GiB), torch {torch.__version__}; search: "
        f"{search.backend} on {search.device} x{search.gpus}; d={DIM}, K={K}, "
        f"median of {repeats} runs after a warm-up"
    )
    print(
        f"{'N':>9} {'queries':>8} {'filter s':>9} {'TFLOP/s':>8} {'fp32 GEMM s':>12} "
        f"{'TFLOP/s':>8} {'share':>6} {'TF32 GEMM s':>12} {'TFLOP/s':>8} {'share':>6} "
        f"{'agree':>6} {'same':>6}"
    )
    names = np.array(["masculine", "feminine"])
    for n in sizes:
        points, is_real, genders = _data(n)
        # knn_filter stacks [real; synthetic]: order the points that way once, untimed.
        points = np.concatenate([points[is_real], points[~is_real]])
        labels = names[np.concatenate([genders[is_real], genders[~is_real]])].tolist()
        n_real = int(is_real.sum())
        n_edits = min(n - n_real, max_queries or n)
        real, synthetic = points[:n_real], points[n_real : n_real + n_edits]
        real_g, synthetic_g = labels[:n_real], labels[n_real : n_real + n_edits]
        total = n_real + n_edits
        _timed_filter(real, real_g, synthetic[:1000], synthetic_g[:1000])  # warm-up
        runs = [_timed_filter(real, real_g, synthetic, synthetic_g) for _ in range(repeats)]
        t_filter = statistics.median(seconds for seconds, _ in runs)
        result = runs[0][1]
        sample = np.arange(n_real, n_real + min(check, n_edits))
        by_numpy = knn_excluding_self(points[:total], sample, K, backend="numpy")
        codes = np.asarray(labels[:total]) == "masculine"
        p_real = (by_numpy < n_real).mean(axis=1)
        p_gender = (codes[by_numpy] == codes[sample][:, None]).mean(axis=1)
        agree = _agreement(by_numpy, result.neighbours[: len(sample)])
        same = float(np.mean(accept(p_real, p_gender) == result.accepted[: len(sample)]))
        queries = np.arange(n_real, total)
        padded = -(-total // knn_search.GROUP) * knn_search.GROUP
        rows = knn_search.block_rows(torch.device("cuda"), min(padded, knn_search.TILE_POINTS))
        t_fp32 = _gemm_seconds(points[:total], queries, rows, "highest", repeats)
        t_tf32 = _gemm_seconds(points[:total], queries, rows, "high", repeats)
        tflop = 2 * n_edits * total * DIM / 1e12
        print(
            f"{total:>9,} {n_edits:>8,} {t_filter:>9.3f} {tflop / t_filter:>8.1f} "
            f"{t_fp32:>12.3f} {tflop / t_fp32:>8.1f} {t_fp32 / t_filter:>6.1%} "
            f"{t_tf32:>12.3f} {tflop / t_tf32:>8.1f} {t_tf32 / t_filter:>6.1%} "
            f"{agree:>6.1%} {same:>6.1%}"
        )
        print(
            f"{'':>9} filter runs (knn_filter, host arrays in and out): "
            f"{', '.join(f'{seconds:.3f}' for seconds, _ in runs)} s; GEMM blocks of {rows} "
            "queries; share = GEMM time / filter time (target >= 70% of fp32)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--quick", action="store_true", help="CPU: 10k and 100k, 2,000 queries")
    parser.add_argument(
        "--sizes", default=None, help="comma-separated N (default 10k,100k,1M; cuda: 196197)"
    )
    parser.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="time at most this many queries per size (CPU: projects the rest)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="cuda: timed runs per size")
    parser.add_argument("--check", type=int, default=2000, help="cuda: queries compared with NumPy")
    args = parser.parse_args()
    if args.device == "cuda":
        sizes = [int(s) for s in (args.sizes or "196197").split(",")]
        _run_cuda(sizes, args.max_queries, max(1, args.repeats), args.check)
        return
    default = "10000,100000" if args.quick else "10000,100000,1000000"
    sizes = [int(s) for s in (args.sizes or default).split(",")]
    _run_cpu(sizes, args.max_queries or (2000 if args.quick else 5000))


if __name__ == "__main__":
    main()
