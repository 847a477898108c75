"""Benchmark: blocked scoring against the dense matrices it replaced (issue 15, item 3).

    python bench/blocked.py                    # 20k images x 2k queries; 25k captions x 5k pool
    python bench/blocked.py --quick            # 5k x 1k; 5k captions x 1k pool (< 20 s)
    python bench/blocked.py --images 20000 --queries 5000 --device cuda

Two hot paths, each on synthetic 512-d unit embeddings (CLIP-like; the cost does not
depend on the values):

1. **Contrast-set evaluation** (GenSynth Sec. 5): ``--images`` images, a masculine and a
   feminine version of each source photo (the feminine one a small perturbation of the
   masculine one, as an edit is), and ``--queries`` neutral captions, each embedded near
   its own source. (a) the dense evaluation as it was before issue 15: one
   ``queries x images`` similarity matrix, then a Python loop calling
   ``retrieval_metrics_batch`` and a stable ``argsort`` per query (the tests' oracle,
   ``dense_evaluate_contrast`` of tests/dense_contrast.py); (b)
   :func:`contrastkit.evaluators.contrast.evaluate_contrast`: blocks of queries, torch
   matrix products and ``topk`` on ``--device``, one metrics call per block. Both read
   the same in-memory stand-ins for a dataset and a model, and the image pipeline
   (``contrastkit.pipeline.embed_images``, measured by bench/embed.py) is replaced by the
   given image embeddings for the run, so the time is the scoring alone.
2. **Recall@K of the quality checks** (GenSynth Sec. 4.3): ``--pool`` images with five
   captions each, every caption searching the pool (its own image excluded from the
   competitors through ``pool_index``, as ``quality_checks`` does without a separate
   pool). (a) the dense ``captions x pool`` distance matrix, (b)
   :func:`contrastkit.builders.quality.recall_at_k`, blocked over captions and pool.

For each: wall time, peak resident memory above the process's memory before the run
(Linux ``VmHWM``, reset through ``/proc/self/clear_refs`` before each run; it counts
torch's allocations too, which ``tracemalloc`` does not see; glibc is told to map every
allocation over 128 KiB on its own and to trim its heap before each run, so memory
freed by one run is not silently reused by the next), the size the dense matrix alone
takes, the ratios, and how far the two computations agree: top-K ids, pair counts and
preferences exactly, mean gap to 1e-6, each query's metrics to 1e-9 (the blocked
similarities are float64 products rounded to float32 and the dense ones float32
products, which differ in the last bit and can order near-ties differently), the
largest difference of a metric's mean over the queries; recall exactly. Both
computations run once on a small set first, so that neither pays for first use of its
library code.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import platform
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
# the dense contrast evaluation (a) is the tests' oracle: tests/dense_contrast.py
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from contrastkit.builders.quality import CaptionQueries, recall_at_k
from contrastkit.distances import squared_euclidean
from contrastkit.evaluators.contrast import ContrastSettings, evaluate_contrast
from dense_contrast import dense_evaluate_contrast

DIM = 512
KS = (5, 10)
T = TypeVar("T")


# --- stand-ins for a contrast set and a model ---------------------------------------------


class _Token:
    """An "image" of the synthetic set: its row, and a ``convert`` that keeps it."""

    def __init__(self, index: int) -> None:
        self.index = index

    def convert(self, mode: str) -> _Token:
        return self


class _Feature:
    """The ``gender`` feature: a ClassLabel's ``int2str``."""

    names = ("masculine", "feminine")

    def int2str(self, value: int) -> str:
        return self.names[value]


class SyntheticContrastSet:
    """What ``evaluate_contrast`` reads of a ``datasets.Dataset``: columns by name, rows
    of the ``image`` column by index."""

    def __init__(self, sources: int, queries: int) -> None:
        self.features = {"gender": _Feature()}
        self.columns: dict[str, list[Any]] = {
            "source_id": [f"s{i // 2}" for i in range(2 * sources)],
            "gender": [i % 2 for i in range(2 * sources)],
            "neutral_captions": [[] for _ in range(2 * sources)],
        }
        for j in range(queries):  # query j belongs to source j % sources
            self.columns["neutral_captions"][2 * (j % sources)].append(f"query {j}")

    def __len__(self) -> int:
        return len(self.columns["gender"])

    def __getitem__(self, key: str | int) -> Any:
        if isinstance(key, str):
            return self.columns[key]
        return {"image": _Token(key)}

    def select_columns(self, names: Sequence[str]) -> SyntheticContrastSet:
        return self


class KnownEmbeddings:
    """A dual encoder that returns given embeddings: image row ``i``, caption ``query j``."""

    spec = "synthetic"

    def __init__(self, images: np.ndarray, texts: np.ndarray) -> None:
        self.images, self.texts = images, texts

    def encode_images(self, images: Sequence[_Token]) -> np.ndarray:
        out: np.ndarray = self.images[[i.index for i in images]]
        return out

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray = self.texts[[int(t.split()[-1]) for t in texts]]
        return out

    def score(self, images: Sequence[_Token], texts: Sequence[str]) -> np.ndarray:
        return self.encode_images(images) @ self.encode_texts(texts).T


@contextlib.contextmanager
def given_image_embeddings(embeddings: np.ndarray) -> Iterator[None]:
    """Stand in for the image pipeline: ``embed_images`` returns ``embeddings`` (checked
    against the number of sources) instead of decoding and encoding images."""
    import contrastkit.pipeline as pipeline

    def embed_images(scorer: Any, sources: Sequence[Any], **options: Any) -> np.ndarray:
        if len(sources) != len(embeddings):
            raise ValueError(f"{len(sources)} images for {len(embeddings)} embeddings")
        return embeddings

    had = "embed_images" in vars(pipeline)
    saved = vars(pipeline).get("embed_images")
    pipeline.embed_images = embed_images  # type: ignore[attr-defined]
    try:
        yield
    finally:
        if had:
            pipeline.embed_images = saved  # type: ignore[attr-defined]
        else:
            del pipeline.embed_images  # type: ignore[attr-defined]


def _unit(array: np.ndarray) -> np.ndarray:
    out: np.ndarray = (array / np.linalg.norm(array, axis=1, keepdims=True)).astype(np.float32)
    return out


def contrast_data(images: int, queries: int, seed: int = 0) -> tuple[Any, KnownEmbeddings]:
    rng = np.random.default_rng(seed)
    sources = images // 2
    masculine = _unit(rng.standard_normal((sources, DIM), dtype=np.float32))
    feminine = _unit(masculine + 0.3 * rng.standard_normal((sources, DIM), dtype=np.float32))
    embeddings = np.empty((2 * sources, DIM), dtype=np.float32)
    embeddings[0::2], embeddings[1::2] = masculine, feminine
    owner = np.arange(queries) % sources
    texts = _unit(masculine[owner] + 1.5 * rng.standard_normal((queries, DIM), dtype=np.float32))
    return SyntheticContrastSet(sources, queries), KnownEmbeddings(embeddings, texts)


# --- (a): the dense computations as they were before issue 15 -----------------------------


def dense_recall_at_k(
    texts: np.ndarray,
    owners: np.ndarray,
    pool: np.ndarray,
    ks: Sequence[int],
    pool_index: Sequence[int],
) -> dict[int, float]:
    """``recall_at_k`` before issue 15: one ``captions x pool`` distance matrix (the
    query images are the pool's, as in every run here)."""
    own = np.sum((texts - pool[owners]) ** 2, axis=1)
    others = squared_euclidean(texts, pool)
    rows = np.asarray(pool_index, dtype=np.int64)[owners]
    valid = rows >= 0
    others[np.arange(len(rows))[valid], rows[valid]] = np.inf
    closer = np.sum(others < own[:, None] - 1e-9, axis=1)
    return {k: float(np.mean(closer < k)) for k in ks}


# --- measuring --------------------------------------------------------------------------


def _status_kib(field: str) -> int | None:
    try:
        with Path("/proc/self/status").open() as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def _libc() -> Any:
    import ctypes

    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def _fixed_mmap_threshold() -> None:
    """glibc: allocations over 128 KiB each get their own mapping, returned on free
    (``M_MMAP_THRESHOLD``, -3; setting it turns off the dynamic threshold)."""
    libc = _libc()
    if libc is not None:
        libc.mallopt(-3, 1 << 17)


def _reset_peak() -> bool:
    libc = _libc()
    if libc is not None:
        libc.malloc_trim(0)
    try:
        with Path("/proc/self/clear_refs").open("w") as refs:
            refs.write("5")
    except OSError:
        return False
    return True


def measure(run: Callable[[], T], device: str = "cpu") -> tuple[T, float, float | None, float]:
    """``run()``'s result, seconds, peak resident MB above the start (None where Linux'
    peak counter cannot be reset) and peak CUDA MB (0 on the CPU)."""
    gc.collect()
    resettable = _reset_peak()
    start_kib = _status_kib("VmRSS")
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
    began = time.perf_counter()
    result = run()
    if device.startswith("cuda"):
        torch.cuda.synchronize()
    seconds = time.perf_counter() - began
    peak_kib = _status_kib("VmHWM")
    peak = None
    if resettable and start_kib is not None and peak_kib is not None:
        peak = (peak_kib - start_kib) / 1024
    gpu = torch.cuda.max_memory_allocated() / 2**20 if device.startswith("cuda") else 0.0
    return result, seconds, peak, gpu


def _mb(value: float | None) -> str:
    return "n/a" if value is None else f"{value:,.0f}"


def _ratio(a: float | None, b: float | None) -> str:
    return "n/a" if a is None or b is None or b <= 0 else f"{a / b:.1f}x"


def _contrast_agree(blocked: dict[str, Any], dense: dict[str, Any]) -> str:
    pairs_of = list(zip(blocked["queries"], dense["queries"], strict=True))
    tops = np.mean([a["top"] == b["top"] for a, b in pairs_of])
    names = list(dense["summary"]["retrieval"])
    same = np.mean(
        [all(np.isclose(a[n], b[n], rtol=1e-9, equal_nan=True) for n in names) for a, b in pairs_of]
    )
    worst = max(
        abs(blocked["summary"]["retrieval"][n]["mean"] - dense["summary"]["retrieval"][n]["mean"])
        for n in names
    )
    mine, theirs = blocked["summary"]["pairs"], dense["summary"]["pairs"]
    pairs = (
        mine["queries_with_pair"] == theirs["queries_with_pair"]
        and mine["masculine_preferred"] == theirs["masculine_preferred"]
        and bool(np.isclose(mine["mean_gap"], theirs["mean_gap"], rtol=1e-6, equal_nan=True))
    )
    return (
        f"top-K ids {tops:.1%} of queries, pair statistics {'equal' if pairs else 'DIFFER'}, "
        f"every metric equal (1e-9) on {same:.1%} of queries, largest gap of a mean {worst:.1e}"
    )


def bench_contrast(images: int, queries: int, block: int | None, device: str) -> None:
    small, small_scorer = contrast_data(200, 50, seed=9)  # first use of the code, untimed
    dense_evaluate_contrast(small, small_scorer, KS)
    with given_image_embeddings(small_scorer.images):
        evaluate_contrast(small, small_scorer, ContrastSettings(ks=KS, block=block, device=device))
    dataset, scorer = contrast_data(images, queries)
    n = len(dataset)
    print(f"\n1. contrast-set evaluation: {n:,} images, {queries:,} queries, K={KS}")
    dense, t_dense, m_dense, _ = measure(lambda: dense_evaluate_contrast(dataset, scorer, KS))
    with given_image_embeddings(scorer.images):
        blocked, t_block, m_block, gpu = measure(
            lambda: evaluate_contrast(
                dataset, scorer, ContrastSettings(ks=KS, block=block, device=device)
            ),
            device,
        )
    rows = block or max(1, min(256, 2**17 // n))
    matrix = queries * n * 4 / 2**20
    print(f"   {'run':<44} {'seconds':>8} {'peak MB':>8}")
    label = "(a) dense queries x images + per-query loop"
    print(f"   {label:<44} {t_dense:>8.1f} {_mb(m_dense):>8}")
    label = f"(b) blocked, {rows} queries per block, {device}"
    gpu_note = f"  (GPU peak {gpu:,.0f} MB)" if device.startswith("cuda") else ""
    print(f"   {label:<44} {t_block:>8.1f} {_mb(m_block):>8}{gpu_note}")
    print(
        f"   (a)/(b): time {_ratio(t_dense, t_block)}, memory {_ratio(m_dense, m_block)}; "
        f"the dense matrix alone: {matrix:,.0f} MB"
    )
    print(f"   agreement: {_contrast_agree(blocked, dense)}")


def bench_recall(pool_size: int, captions_per_image: int) -> None:
    rng = np.random.default_rng(1)
    pool = _unit(rng.standard_normal((pool_size, DIM), dtype=np.float32))
    owners = np.repeat(np.arange(pool_size), captions_per_image)
    texts = _unit(pool[owners] + 1.2 * rng.standard_normal((len(owners), DIM), dtype=np.float32))
    ks = (1, 5, 10)
    index = range(pool_size)
    print(
        f"\n2. quality-check recall@K: {len(owners):,} captions x {pool_size:,}-image pool "
        f"(own image excluded from the competitors)"
    )
    dense, t_dense, m_dense, _ = measure(lambda: dense_recall_at_k(texts, owners, pool, ks, index))
    blocked, t_block, m_block, _ = measure(
        lambda: recall_at_k(CaptionQueries(texts, owners, pool, index), pool, ks)
    )
    matrix = len(owners) * pool_size * 4 / 2**20
    print(f"   {'run':<44} {'seconds':>8} {'peak MB':>8}")
    print(f"   {'(a) dense captions x pool matrix':<44} {t_dense:>8.1f} {_mb(m_dense):>8}")
    print(f"   {'(b) blocked, 1024 captions x 8192 pool':<44} {t_block:>8.1f} {_mb(m_block):>8}")
    print(
        f"   (a)/(b): time {_ratio(t_dense, t_block)}, memory {_ratio(m_dense, m_block)}; "
        f"the dense matrix alone: {matrix:,.0f} MB"
    )
    recall = ", ".join(f"R@{k} {v:.3f}" for k, v in blocked.items())
    print(f"   agreement: recall {'equal' if blocked == dense else 'DIFFERS'} ({recall})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="5k images x 1k queries, 1k pool")
    parser.add_argument("--images", type=int, default=None, help="contrast-set images")
    parser.add_argument("--queries", type=int, default=None, help="contrast-set queries")
    parser.add_argument("--pool", type=int, default=None, help="recall pool (5 captions each)")
    parser.add_argument("--block", type=int, default=None, help="queries per block")
    parser.add_argument("--device", default="cpu", help="torch device of the blocked scoring")
    args = parser.parse_args()
    images = args.images or (5000 if args.quick else 20000)
    queries = args.queries or (1000 if args.quick else 2000)
    pool = args.pool or (1000 if args.quick else 5000)
    accelerator = (
        f", {torch.cuda.get_device_name(args.device)}" if args.device.startswith("cuda") else ""
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, NumPy {np.__version__}, torch {torch.__version__} "
        f"({torch.get_num_threads()} threads){accelerator}; d={DIM}"
    )
    _fixed_mmap_threshold()
    bench_contrast(images, queries, args.block, args.device)
    bench_recall(pool, 5)


if __name__ == "__main__":
    main()
