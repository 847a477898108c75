"""GenSynth stage 2: the KNN filter over embedded person crops (Sec. 4.2, Eq. 4-5)."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.gensynth.summary import (
    Progress,
    load_image,
    person_crop,
    update_summary,
)
from contrastkit.builders.manifest import EditRecord, Manifest, read_sources, with_scores
from contrastkit.curation.knn_filter import (
    DEFAULT_K,
    DEFAULT_TAU_GENDER,
    DEFAULT_TAU_REAL,
    Backend,
    Device,
    knn_filter,
)
from contrastkit.errors import DataFormatError, StateError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.io import atomic_write_bytes
from contrastkit.pipeline.embed import iter_embeddings
from contrastkit.pipeline.sources import DecodeFailure

__all__ = ["run_filter_stage"]


def _encoder_name(encoder: ImageTextScorer) -> str:
    return str(encoder.spec)


def _embed_cached(
    out: Path,
    encoder: ImageTextScorer,
    keys: list[str],
    loaders: dict[str, Callable[[], Image.Image]],
    batch_size: int,
    progress: Progress | None,
) -> np.ndarray:
    """Embeddings for ``keys``, reusing ``embeddings.npz`` rows made by the same encoder."""
    path = out / "embeddings.npz"
    name = _encoder_name(encoder)
    cached: dict[str, np.ndarray] = {}
    if path.exists():
        with np.load(path, allow_pickle=False) as data:
            if str(data["encoder"]) == name:
                cached = dict(zip(data["keys"].tolist(), data["vectors"], strict=True))
    missing = [key for key in keys if key not in cached]

    def located(failure: DecodeFailure) -> Exception:
        return DataFormatError(out, None, missing[failure.index], failure.message)

    # the crops are cut and decoded in the image pipeline's workers
    for indices, vectors in iter_embeddings(
        encoder, [loaders[k] for k in missing], batch_size=batch_size, on_error=located
    ):
        chunk = missing[indices.start : indices.stop]
        if vectors.shape[0] != len(chunk):
            raise ValueError(f"the encoder returned {vectors.shape[0]} rows for {len(chunk)}")
        cached.update(zip(chunk, vectors, strict=True))
        if progress:
            progress(len(keys) - len(missing) + indices.stop, len(keys))
    if missing:
        buffer = io.BytesIO()
        all_keys = sorted(cached)
        np.savez(
            buffer,
            encoder=np.array(name),
            keys=np.array(all_keys),
            vectors=np.stack([cached[k] for k in all_keys]).astype(np.float32),
        )
        atomic_write_bytes(path, buffer.getvalue())
    return np.stack([cached[k] for k in keys]).astype(np.float32)


def _rates(records: Sequence[EditRecord], key: Callable[[EditRecord], str]) -> dict[str, Any]:
    totals: Counter[str] = Counter()
    accepted: Counter[str] = Counter()
    for record in records:
        totals[key(record)] += 1
        accepted[key(record)] += bool(record.accepted)
    return {
        name: {"edits": totals[name], "accepted": accepted[name],
               "rate": accepted[name] / totals[name]}
        for name in sorted(totals)
    }  # fmt: skip


def run_filter_stage(
    out: str | Path,
    encoder: ImageTextScorer,
    *,
    k: int = DEFAULT_K,
    tau_real: float = DEFAULT_TAU_REAL,
    tau_gender: float = DEFAULT_TAU_GENDER,
    backend: Backend = "auto",
    device: Device = "auto",
    batch_size: int = 32,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Score every edit of the manifest with the KNN filter (GenSynth Sec. 4.2, Eq. 4-5).

    ``R`` is the person crop of every source that has edits (labelled with the source's
    caption gender), ``S`` the same box cut from every edited image (labelled with its
    target gender). When ``R ∪ S`` has ``K`` or fewer points, ``K`` is lowered to
    ``|R ∪ S| - 1`` and the summary says so (``k_effective``). Embeddings are cached in
    ``embeddings.npz`` per encoder, so a rerun only embeds new edits.

    Returns:
        The filter summary (also stored under ``filter`` in ``build_summary.json``).
    """
    out = Path(out)
    manifest = Manifest(out)
    records = manifest.read()
    if not records:
        raise StateError(f"{manifest.path}: no finished edits (run the edit stage first)")
    sources = {s.source_id: s for s in read_sources(out)}
    used = list(dict.fromkeys(r.source_id for r in records))
    unknown = [s for s in used if s not in sources]
    if unknown:
        raise DataFormatError(out / "sources.jsonl", None, None, f"no source {unknown[0]!r}")

    def real_loader(source: SourceImage) -> Callable[[], Image.Image]:
        return lambda: person_crop(load_image(source.path), source)

    def edit_loader(record: EditRecord) -> Callable[[], Image.Image]:
        return lambda: person_crop(load_image(out / record.path), sources[record.source_id])

    loaders = {f"real:{s}": real_loader(sources[s]) for s in used}
    loaders |= {f"edit:{r.edit_id}": edit_loader(r) for r in records}
    keys = list(loaders)
    vectors = _embed_cached(out, encoder, keys, loaders, batch_size, progress)
    real, synthetic = vectors[: len(used)], vectors[len(used) :]
    k_effective = min(k, len(vectors) - 1)
    result = knn_filter(
        real,
        [sources[s].label for s in used],
        synthetic,
        [r.target for r in records],
        k=k_effective,
        tau_real=tau_real,
        tau_gender=tau_gender,
        backend=backend,
        device=device,
    )
    scored = [
        with_scores(r, float(pr), float(pg), bool(ok))
        for r, pr, pg, ok in zip(
            records, result.p_real, result.p_gender, result.accepted, strict=True
        )
    ]
    manifest.rewrite(scored)
    summary = {
        "encoder": _encoder_name(encoder),
        "real_crops": len(used),
        "edits": len(scored),
        "k": k,
        "k_effective": k_effective,
        "tau_real": tau_real,
        "tau_gender": tau_gender,
        **result.search.summary(),  # backend, device, gpus: the search that ran
        "accepted": int(result.accepted.sum()),
        "acceptance_rate": float(result.accepted.mean()),
        "mean_p_real": float(result.p_real.mean()),
        "mean_p_gender": float(result.p_gender.mean()),
        "by_target": _rates(scored, lambda r: r.target),
        "by_text_guidance_scale": _rates(scored, lambda r: f"{r.text_guidance_scale:g}"),
        "by_instruction": _rates(scored, lambda r: str(r.instruction)),
    }
    update_summary(out, "filter", summary)
    return summary
