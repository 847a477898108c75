"""Benchmark: the GenSynth KNN filter, FAISS against brute-force NumPy.

    python bench/knn.py                          # 10k, 100k, 1M points
    python bench/knn.py --quick                  # 10k and 100k, fewer timed queries
    python bench/knn.py --sizes 10000,100000 --max-queries 4000

For each size N it draws N random 512-d unit vectors (CLIP-like embeddings), 1 in 17
of them "real" (GenSynth: 1 source crop per 16 edits), the rest "edits" with random
target genders, and runs the filter of GenSynth Sec. 4.2 (K=50 neighbours in R ∪ S,
self excluded, P_R and P_G of Eq. 4, the decisions of Eq. 5) with

(a) brute force NumPy: blocked ``q @ x.T`` + ``argpartition``
    (:func:`contrastkit.curation.knn_filter.knn_excluding_self` with ``backend="numpy"``);
(b) FAISS ``IndexFlatL2`` (on the GPU when FAISS sees one).

Exact search costs N_queries x N x d: for large N the script times the first
``--max-queries`` edit queries (against all N points) and projects the full filter
linearly in the number of queries; both the measured and the projected times are
printed, with the share of queries whose neighbour sets agree between the backends
(``agree``) and the share of equal accept decisions (``same``).
"""

from __future__ import annotations

import argparse
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from contrastkit.curation.knn_filter import accept, knn_excluding_self

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
    points: np.ndarray, is_real: np.ndarray, genders: np.ndarray, queries: np.ndarray, backend: str
) -> tuple[float, np.ndarray, np.ndarray]:
    start = time.perf_counter()
    neighbours = knn_excluding_self(points, queries, K, backend=backend)  # type: ignore[arg-type]
    p_real = is_real[neighbours].mean(axis=1)
    p_gender = (genders[neighbours] == genders[queries][:, None]).mean(axis=1)
    decisions = accept(p_real, p_gender)
    return time.perf_counter() - start, neighbours, decisions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="10k and 100k, 2,000 queries")
    parser.add_argument("--sizes", default=None, help="comma-separated N (default 10k,100k,1M)")
    parser.add_argument(
        "--max-queries",
        type=int,
        default=None,
        help="time at most this many queries per size, project the rest",
    )
    args = parser.parse_args()
    default = "10000,100000" if args.quick else "10000,100000,1000000"
    sizes = [int(s) for s in (args.sizes or default).split(",")]
    max_queries = args.max_queries or (2000 if args.quick else 5000)
    import faiss

    gpus = faiss.get_num_gpus() if hasattr(faiss, "get_num_gpus") else 0
    print(
        f"machine: {platform.machine()}, FAISS {faiss.__version__} on "
        f"{'GPU' if gpus else 'CPU'} ({faiss.omp_get_max_threads()} threads), d={DIM}, K={K}"
    )
    print(
        f"{'N':>9} {'queries':>8} {'timed':>6} {'numpy s':>9} {'faiss s':>9} {'ratio':>6}"
        f" {'numpy full s':>13} {'faiss full s':>13} {'agree':>6} {'same':>6}"
    )
    previous: tuple[float, float] | None = None
    for n in sizes:
        points, is_real, genders = _data(n)
        edits = np.flatnonzero(~is_real)
        timed = edits[:max_queries]
        t_numpy, nb_numpy, d_numpy = _filter(points, is_real, genders, timed, "numpy")
        t_faiss, nb_faiss, d_faiss = _filter(points, is_real, genders, timed, "faiss")
        agree = np.mean(
            [set(a) == set(b) for a, b in zip(nb_numpy.tolist(), nb_faiss.tolist(), strict=True)]
        )
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


if __name__ == "__main__":
    main()
