"""GenSynth stage 2: the KNN filter over embedded person crops (Sec. 4.2, Eq. 4-5)."""

from __future__ import annotations

import hashlib
import io
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal, Protocol, TypedDict, runtime_checkable

import numpy as np
from PIL import Image

from contrastkit.builders.coco import SourceImage
from contrastkit.builders.gensynth.merging import clean_after_kill
from contrastkit.builders.gensynth.summary import (
    Progress,
    load_image,
    person_crop,
    update_summary,
)
from contrastkit.builders.manifest import (
    MANIFEST,
    EditImage,
    EditRecord,
    Manifest,
    edit_image,
    holds_build_lock,
    read_sources,
    with_scores,
)
from contrastkit.curation.knn_filter import (
    KnnFilterSettings,
    knn_filter,
)
from contrastkit.errors import DataFormatError, StateError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.io import atomic_write_bytes
from contrastkit.pipeline.embed import iter_embeddings
from contrastkit.pipeline.sources import DecodeFailure

__all__ = [
    "SHARD_ROWS",
    "CropEmbedder",
    "FilterSettings",
    "PersonCrop",
    "embed_build",
    "read_embeddings",
    "run_filter_stage",
]


@dataclass(frozen=True)
class PersonCrop:
    """The person box of ``source`` cut from the image at ``path`` (the source photo, or
    one of its edits): a picklable image source, so the crop can be cut by whichever
    process embeds it (the image pipeline's workers, or a Ray actor). ``onto``: the
    source photo a mask-composite edit at ``path`` is put onto
    (:class:`~contrastkit.builders.manifest.EditImage`); ``None`` for a whole image."""

    path: Path
    source: SourceImage
    onto: Path | None = None

    def __call__(self) -> Image.Image:
        if self.onto is None:
            return person_crop(load_image(self.path), self.source)
        return person_crop(EditImage(self.path, self.onto)(), self.source)


@runtime_checkable
class CropEmbedder(Protocol):
    """An image encoder that runs elsewhere, e.g. on a Ray actor pool
    (:class:`contrastkit.builders.gensynth.ray.RayCropEmbedder`): the filter
    stage hands it the crops the cache lacks and checkpoints what comes back."""

    @property
    def spec(self) -> str:
        """The encoder's model spec (names its embedding cache)."""
        ...

    def embed_crops(
        self, crops: Sequence[PersonCrop], batch_size: int
    ) -> Iterator[tuple[range, np.ndarray]]:
        """``(positions, unit-norm embeddings)`` of ``crops``, ``batch_size`` at a time,
        in order (as :func:`~contrastkit.pipeline.embed.iter_embeddings`)."""
        ...


def _encoder_name(encoder: ImageTextScorer | CropEmbedder) -> str:
    return str(encoder.spec)


#: Embeddings per checkpoint file: a crash loses at most this many.
SHARD_ROWS = 4096


def _shard_folder(out: Path, name: str) -> Path:
    return out / "embeddings" / hashlib.sha256(name.encode()).hexdigest()[:16]


def read_embeddings(out: str | Path, encoder: str) -> dict[str, np.ndarray]:
    """Every embedding a build folder holds for ``encoder`` (a model spec), by key
    (``real:<source>``, ``edit:<edit>``): the checkpoint shards
    ``embeddings/<encoder hash>/shard-*.npz``, and ``embeddings.npz`` of earlier
    versions. Shards of another encoder are ignored.

    Raises:
        DataFormatError: a shard that cannot be read.
    """
    out = Path(out)
    found: dict[str, np.ndarray] = {}
    files = [out / "embeddings.npz", *sorted(_shard_folder(out, encoder).glob("shard-*.npz"))]
    for path in files:
        if not path.exists():
            continue
        try:
            with np.load(path, allow_pickle=False) as data:
                if str(data["encoder"]) == encoder:
                    found.update(zip(data["keys"].tolist(), data["vectors"], strict=True))
        except (OSError, ValueError, KeyError) as error:
            raise DataFormatError(path, None, None, f"not an embeddings file ({error})") from error
    return found


def _write_shard(out: Path, name: str, keys: list[str], vectors: list[np.ndarray]) -> None:
    folder = _shard_folder(out, name)
    folder.mkdir(parents=True, exist_ok=True)
    number = len(list(folder.glob("shard-*.npz")))
    buffer = io.BytesIO()
    np.savez(
        buffer,
        encoder=np.array(name),
        keys=np.array(keys),
        vectors=np.stack(vectors).astype(np.float32),
    )
    atomic_write_bytes(folder / f"shard-{number:05d}.npz", buffer.getvalue())


def _embed_cached(
    out: Path,
    encoder: ImageTextScorer | CropEmbedder,
    loaders: dict[str, PersonCrop],
    batch_size: int,
    progress: Progress | None,
) -> np.ndarray:
    """Embeddings of the crops ``loaders`` cut, in its key order, reusing those the
    folder holds for the same encoder (:func:`read_embeddings`). New ones are
    checkpointed every :data:`SHARD_ROWS` rows, so a crash loses at most one shard's
    work."""
    keys = list(loaders)
    name = _encoder_name(encoder)
    cached = read_embeddings(out, name)
    missing = [key for key in keys if key not in cached]

    def located(failure: DecodeFailure) -> Exception:
        return DataFormatError(out, None, missing[failure.index], failure.message)

    pending_keys: list[str] = []
    pending: list[np.ndarray] = []
    crops = [loaders[k] for k in missing]
    if isinstance(encoder, CropEmbedder):  # elsewhere (a Ray actor pool); written here
        batches = encoder.embed_crops(crops, batch_size)
    else:  # the crops are cut and decoded in the image pipeline's workers
        batches = iter_embeddings(encoder, crops, batch_size=batch_size, on_error=located)
    for indices, vectors in batches:
        chunk = missing[indices.start : indices.stop]
        if vectors.shape[0] != len(chunk):
            raise ValueError(f"the encoder returned {vectors.shape[0]} rows for {len(chunk)}")
        cached.update(zip(chunk, vectors, strict=True))
        pending_keys += chunk
        pending += list(vectors)
        if len(pending_keys) >= SHARD_ROWS:
            _write_shard(out, name, pending_keys, pending)
            pending_keys, pending = [], []
        if progress:
            progress(len(keys) - len(missing) + indices.stop, len(keys))
    if pending_keys:
        _write_shard(out, name, pending_keys, pending)
    return np.stack([cached[k] for k in keys]).astype(np.float32)


class AcceptanceRate(TypedDict):
    """How many edits of a group there are, how many the filter accepted, the share."""

    edits: int
    accepted: int
    rate: float


class EmbedEntry(TypedDict):
    """The ``embed`` entry of a build summary (:func:`embed_build`)."""

    encoder: str
    real_crops: int
    edits: int


class FilterEntry(TypedDict):
    """The ``filter`` entry of a build summary (:func:`run_filter_stage`)."""

    encoder: str
    encoder_random_weights: bool
    real_crops: int
    edits: int
    k: int
    k_effective: int
    tau_real: float
    tau_gender: float
    backend: Literal["faiss", "numpy", "torch"]
    device: Literal["cpu", "cuda"]
    gpus: int
    accepted: int
    acceptance_rate: float
    mean_p_real: float
    mean_p_gender: float
    by_target: dict[str, AcceptanceRate]
    by_text_guidance_scale: dict[str, AcceptanceRate]
    by_instruction: dict[str, AcceptanceRate]


def _rates(
    records: Sequence[EditRecord], key: Callable[[EditRecord], str]
) -> dict[str, AcceptanceRate]:
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


def _embed_records(
    out: Path,
    records: Sequence[EditRecord],
    encoder: ImageTextScorer | CropEmbedder,
    batch_size: int,
    progress: Progress | None,
) -> tuple[list[str], dict[str, SourceImage], np.ndarray]:
    """Embed (or read from the cache) the person crop of every source with edits, then
    of every edit: the source ids in order, the sources by id, the vectors (``R`` then
    ``S``)."""
    sources = {s.source_id: s for s in read_sources(out)}
    used = list(dict.fromkeys(r.source_id for r in records))
    unknown = [s for s in used if s not in sources]
    if unknown:
        raise DataFormatError(out / "sources.jsonl", None, None, f"no source {unknown[0]!r}")

    loaders = {f"real:{s}": PersonCrop(sources[s].path, sources[s]) for s in used}
    for r in records:
        image = edit_image(out, r, sources[r.source_id])
        loaders[f"edit:{r.edit_id}"] = (
            PersonCrop(image, sources[r.source_id])
            if isinstance(image, Path)
            else PersonCrop(image.path, sources[r.source_id], onto=image.source)
        )
    return used, sources, _embed_cached(out, encoder, loaders, batch_size, progress)


@holds_build_lock("contrastkit build gensynth")
def embed_build(
    out: str | Path,
    encoder: ImageTextScorer | CropEmbedder,
    *,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> EmbedEntry:
    """The embedding half of the filter stage: embed the real person crops and the edits
    of a build folder into its embedding cache (``embeddings/<encoder hash>/``), without
    the KNN decisions. A shard worker runs it on its shard folder
    (:mod:`contrastkit.builders.gensynth.shards`), so that the filter stage on the merged
    build embeds nothing again.

    Returns:
        ``{"encoder", "real_crops", "edits"}`` (also stored under ``embed`` in
        ``build_summary.json``).
    """
    out = Path(out)
    records = Manifest(out).read()
    if not records:
        raise StateError(f"{out / MANIFEST}: no finished edits (run the edit stage first)")
    used, _, _ = _embed_records(out, records, encoder, batch_size, progress)
    summary: EmbedEntry = {
        "encoder": _encoder_name(encoder),
        "real_crops": len(used),
        "edits": len(records),
    }
    update_summary(out, "embed", summary)
    return summary


#: The KNN filter's settings (GenSynth Sec. 4.2, Eq. 4-5; the paper's by default): the
#: filter stage takes the curation filter's own settings.
FilterSettings = KnnFilterSettings


@holds_build_lock("contrastkit build gensynth")
def run_filter_stage(
    out: str | Path,
    encoder: ImageTextScorer | CropEmbedder,
    settings: FilterSettings | None = None,
    *,
    batch_size: int = 32,
    progress: Progress | None = None,
) -> FilterEntry:
    """Score every edit of the manifest with the KNN filter (GenSynth Sec. 4.2, Eq. 4-5).

    ``R`` is the person crop of every source that has edits (labelled with the source's
    caption gender), ``S`` the same box cut from every edited image (labelled with its
    target gender). When ``R ∪ S`` has ``K`` or fewer points, ``K`` is lowered to
    ``|R ∪ S| - 1`` and the summary says so (``k_effective``). Embeddings are cached in
    checkpoint shards per encoder (``embeddings/<encoder hash>/shard-*.npz``, at most
    :data:`SHARD_ROWS` rows each), so a rerun only embeds new edits and a crash loses at
    most one shard.

    Args:
        out: the build folder.
        encoder: the image encoder of the crops (here, or a :class:`CropEmbedder`).
        settings: ``K``, the thresholds and the search (default: the paper's).
        batch_size: crops per forward pass.
        progress: called with (embedded, total) as the crops are embedded.

    Returns:
        The filter summary (also stored under ``filter`` in ``build_summary.json``).
    """
    settings = FilterSettings() if settings is None else settings
    k = settings.k
    out = Path(out)
    clean_after_kill(out, "run the filter stage")
    manifest = Manifest(out)
    records = manifest.read()
    if not records:
        raise StateError(f"{manifest.path}: no finished edits (run the edit stage first)")
    used, sources, vectors = _embed_records(out, records, encoder, batch_size, progress)
    real, synthetic = vectors[: len(used)], vectors[len(used) :]
    k_effective = min(k, len(vectors) - 1)
    result = knn_filter(
        real,
        [sources[s].label for s in used],
        synthetic,
        [r.target for r in records],
        replace(settings, k=k_effective),
    )
    scored = [
        with_scores(r, float(pr), float(pg), bool(ok))
        for r, pr, pg, ok in zip(
            records, result.p_real, result.p_gender, result.accepted, strict=True
        )
    ]
    manifest.rewrite(scored)
    summary: FilterEntry = {
        "encoder": _encoder_name(encoder),
        "encoder_random_weights": bool(getattr(encoder, "random_weights", False)),
        "real_crops": len(used),
        "edits": len(scored),
        "k": k,
        "k_effective": k_effective,
        "tau_real": settings.tau_real,
        "tau_gender": settings.tau_gender,
        **result.search.summary(),  # backend, device, gpus: the search that ran
        "accepted": int(result.accepted.sum()),
        "acceptance_rate": float(result.accepted.mean()),
        "mean_p_real": float(result.p_real.mean()),
        "mean_p_gender": float(result.p_gender.mean()),
        "by_target": _rates(scored, lambda r: r.target),
        "by_text_guidance_scale": _rates(scored, lambda r: f"{r.text_guidance_scale:g}"),
        "by_instruction": _rates(scored, lambda r: str(r.instruction)),
    }
    why = "made before the latest filter stage"
    update_summary(out, "filter", summary, outdated={"select": why, "quality": why, "context": why})
    return summary
