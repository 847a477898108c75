"""GenSynth: synthetic gender contrast sets from COCO (seeds/001, Sec. 4, Appendix A).

Three stages, each runnable alone on a build folder (layout:
:mod:`contrastkit.builders.manifest`):

1. :func:`run_edit_stage` (Sec. 4.1, App. A.2, Tab. 7): select the COCO sources
   (:func:`contrastkit.builders.coco.select_sources`), crop each person box, edit it
   with every instruction for each target gender at each text guidance scale
   (:mod:`contrastkit.curation.editing`), paste the edit back and record it in the
   manifest. Finished edits are skipped on a rerun.
2. :func:`run_filter_stage` (Sec. 4.2, Eq. 4-5, App. A.3): embed the real person crops
   ``R`` and the edited crops ``S`` with one image encoder, compute ``P_R``, ``P_G`` and
   the decisions (:func:`contrastkit.curation.knn_filter.knn_filter`) and write them
   into the manifest, with acceptance rates in the build summary.
3. :func:`run_select_stage` (Sec. 4.2, 4.3): keep sources with an accepted edit of each
   gender, draw one per gender, write the contrast set with gender-adjusted captions, and
   (given a CLIP-like scorer) the quality checks of Sec. 4.3 / Tab. 2: zero-shot gender
   accuracy and text-to-image recall@1/5/10.
"""

from __future__ import annotations

import io
import json
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from contrastkit.builders.coco import SourceImage, read_coco, select_sources
from contrastkit.builders.manifest import (
    CONTRAST_SET,
    SUMMARY,
    EditRecord,
    Manifest,
    read_contrast_set,
    read_sources,
    remove_stale_temp_files,
    with_scores,
    write_contrast_set,
    write_image,
    write_sources,
)
from contrastkit.curation.editing import (
    CropPlacement,
    Editor,
    EditSettings,
    EditSpec,
    crop_for_editing,
    paste_back,
    plan_edits,
)
from contrastkit.curation.gender_words import to_gender
from contrastkit.curation.knn_filter import (
    DEFAULT_K,
    DEFAULT_TAU_GENDER,
    DEFAULT_TAU_REAL,
    Backend,
    knn_filter,
    select_edits,
)
from contrastkit.errors import DataFormatError
from contrastkit.interfaces import ImageTextScorer
from contrastkit.io import atomic_write_bytes, atomic_write_text
from contrastkit.schema import Gender

__all__ = [
    "DEFAULT_ZERO_SHOT_PROMPTS",
    "EditStageReport",
    "Progress",
    "load_image",
    "person_crop",
    "quality_checks",
    "quality_report",
    "read_summary",
    "recall_at_k",
    "run_edit_stage",
    "run_filter_stage",
    "run_select_stage",
    "update_summary",
    "zero_shot_accuracy",
]

#: Called with (finished, total) as work progresses.
Progress = Callable[[int, int], None]

#: Zero-shot gender prompts (Sec. 4.3 does not print its prompts).
DEFAULT_ZERO_SHOT_PROMPTS: dict[Gender, str] = {
    Gender.MASCULINE: "a photo of a man",
    Gender.FEMININE: "a photo of a woman",
}


def load_image(path: Path) -> Image.Image:
    """An RGB image, or a :class:`DataFormatError` naming the file."""
    try:
        with Image.open(path) as image:
            return image.convert("RGB")
    except FileNotFoundError:
        raise DataFormatError(path, None, None, "image file not found") from None
    except OSError as error:
        raise DataFormatError(path, None, None, f"not a readable image ({error})") from None


def person_crop(image: Image.Image, source: SourceImage) -> Image.Image:
    """The person box of ``source`` cut from ``image`` (the original or an edit)."""
    return image.crop(source.box.xyxy(image.width, image.height))


def read_summary(folder: Path) -> dict[str, Any]:
    """``build_summary.json`` of a build folder (``{}`` before any stage)."""
    path = folder / SUMMARY
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise DataFormatError(path, exc.lineno, None, f"invalid JSON: {exc.msg}") from None
    return data if isinstance(data, dict) else {}


def update_summary(folder: Path, key: str, value: Any) -> dict[str, Any]:
    """Set one stage's entry of ``build_summary.json`` (atomically); return the summary."""
    summary = read_summary(folder)
    summary[key] = value
    atomic_write_text(folder / SUMMARY, json.dumps(summary, indent=2, ensure_ascii=False) + "\n")
    return summary


# -- stage 1: edit ------------------------------------------------------------------------


@dataclass(frozen=True)
class EditStageReport:
    """What an edit run did: sources, planned edits, skipped (already finished), edited."""

    sources: int
    planned: int
    skipped_finished: int
    edited: int
    removed_temp_files: int
    selection: dict[str, int]
    settings: dict[str, Any]
    editor: str


def run_edit_stage(
    coco_dir: str | Path,
    out: str | Path,
    editor: Editor,
    settings: EditSettings,
    *,
    split: str | None = None,
    limit: int | None = None,
    min_box_side: float = 0.0,
    edits_per_call: int = 16,
    progress: Progress | None = None,
) -> EditStageReport:
    """Edit the person of every selected COCO source (GenSynth Sec. 4.1, App. A.2).

    Each finished edit is written (``edits/<source>/<edit>.png``, temporary file and
    rename) and then appended to the manifest with an fsync; edits already in the
    manifest with their image on disk are skipped, so a killed run resumes where it
    stopped and never repeats a finished edit.

    Args:
        coco_dir, split, limit, min_box_side: the sources (:func:`select_sources`).
        out: the build folder.
        editor: an :class:`~contrastkit.curation.editing.Editor` (InstructPix2Pix).
        settings: instructions, scales, steps, resolution, seed ...
        edits_per_call: how many pending edits go to the editor at once (the editor
            batches those that share guidance settings).
        progress: called with (finished, total) after each edit.
    """
    if edits_per_call < 1:
        raise ValueError(f"edits_per_call must be >= 1, not {edits_per_call}")
    out = Path(out)
    selection = select_sources(read_coco(coco_dir, split), min_box_side=min_box_side, limit=limit)
    out.mkdir(parents=True, exist_ok=True)
    removed = remove_stale_temp_files(out)
    write_sources(out, selection.sources)
    manifest = Manifest(out)
    records = manifest.read()
    kept = [r for r in records if (out / r.path).is_file()]
    if len(kept) != len(records):
        manifest.rewrite(kept)  # an image went missing: that edit is to be redone
    done = {r.edit_id for r in kept}
    planned = [(s, spec) for s in selection.sources for spec in plan_edits(s.source_id, settings)]
    pending = [(s, spec) for s, spec in planned if spec.edit_id not in done]
    total, finished = len(planned), len(planned) - len(pending)
    if progress:
        progress(finished, total)
    cache: dict[str, tuple[Image.Image, Image.Image, CropPlacement]] = {}
    for start in range(0, len(pending), edits_per_call):
        window = pending[start : start + edits_per_call]
        in_window = {source.source_id for source, _ in window}
        cache = {key: value for key, value in cache.items() if key in in_window}
        for source, _ in window:
            if source.source_id not in cache:
                original = load_image(source.path)
                crop, placement = crop_for_editing(
                    original,
                    source.box.xyxy(original.width, original.height),
                    settings.resolution,
                    settings.margin,
                )
                cache[source.source_id] = (original, crop, placement)
        inputs = [cache[source.source_id][1] for source, _ in window]
        edited = editor.edit(inputs, [spec for _, spec in window])
        for (source, spec), result in zip(window, edited, strict=True):
            original, _, placement = cache[source.source_id]
            relative = f"edits/{source.source_id}/{spec.edit_id}.png"
            write_image(out / relative, paste_back(original, result, placement, settings.feather))
            manifest.append(_record(source, spec, relative, editor.name))
            finished += 1
            if progress:
                progress(finished, total)
    report = EditStageReport(
        sources=len(selection.sources),
        planned=total,
        skipped_finished=total - len(pending),
        edited=len(pending),
        removed_temp_files=removed,
        selection=selection.counts,
        settings=settings.to_json(),
        editor=editor.name,
    )
    update_summary(out, "edit", asdict(report))
    return report


def _record(source: SourceImage, spec: EditSpec, path: str, editor: str) -> EditRecord:
    return EditRecord(
        edit_id=spec.edit_id,
        source_id=source.source_id,
        method="instruct-pix2pix",
        target=spec.target.value,
        source_label=source.label.value,
        box=source.box.as_list(),
        seed=spec.seed,
        path=path,
        editor=editor,
        instruction=spec.instruction,
        text_guidance_scale=spec.text_guidance_scale,
        image_guidance_scale=spec.image_guidance_scale,
        steps=spec.steps,
    )


# -- stage 2: filter ----------------------------------------------------------------------


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
    for start in range(0, len(missing), batch_size):
        chunk = missing[start : start + batch_size]
        vectors = np.asarray(encoder.encode_images([loaders[k]() for k in chunk]), np.float32)
        if vectors.shape[0] != len(chunk):
            raise ValueError(f"the encoder returned {vectors.shape[0]} rows for {len(chunk)}")
        cached.update(zip(chunk, vectors, strict=True))
        if progress:
            progress(len(keys) - len(missing) + start + len(chunk), len(keys))
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
    backend: Backend = "faiss",
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
        raise ValueError(f"{manifest.path}: no finished edits (run the edit stage first)")
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
        "backend": backend,
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


# -- stage 3: select and quality checks ---------------------------------------------------


def zero_shot_accuracy(image_embeddings: np.ndarray, prompt_embeddings: np.ndarray,
                       labels: Sequence[int]) -> float:  # fmt: skip
    """Share of images whose most similar prompt (dot product of L2-normalised
    embeddings, CLIP's zero-shot rule) is the one of their label (GenSynth Sec. 4.3)."""
    if len(labels) == 0:
        raise ValueError("no images to classify")
    predicted = np.argmax(image_embeddings @ prompt_embeddings.T, axis=1)
    return float(np.mean(predicted == np.asarray(labels)))


def recall_at_k(
    text_embeddings: np.ndarray,
    owners: Sequence[int],
    query_images: np.ndarray,
    pool: np.ndarray,
    ks: Sequence[int] = (1, 5, 10),
    *,
    pool_index: Sequence[int] | None = None,
) -> dict[int, float]:
    """Text-to-image recall@K of GenSynth Sec. 4.3:
    ``R@K = 1/(N n) Σ_i Σ_j 1(I_i ∈ R_i^j(K))``.

    Caption ``j`` of image ``i`` (``owners[j] = i``) searches ``pool ∪ {I_i}`` by
    Euclidean distance; it is a hit when fewer than ``K`` pool images are strictly
    closer than ``I_i`` (ties go to the query image). When the pool already holds the
    query images, ``pool_index[i]`` gives the pool row of ``I_i`` so it is not counted
    as its own competitor.

    Args:
        text_embeddings: (T, d) caption embeddings.
        owners: for each caption, the row of its image in ``query_images``.
        query_images: (N, d) embeddings of the images the captions describe.
        pool: (P, d) embeddings of the other images.
        ks: the cut-offs.
    """
    owners_array = np.asarray(owners, dtype=np.int64)
    if len(owners_array) != len(text_embeddings):
        raise ValueError(f"{len(owners_array)} owners for {len(text_embeddings)} captions")
    if len(owners_array) == 0:
        raise ValueError("no captions to retrieve with")
    own = np.sum((text_embeddings - query_images[owners_array]) ** 2, axis=1)
    others = (
        np.sum(text_embeddings**2, axis=1)[:, None]
        - 2.0 * text_embeddings @ pool.T
        + np.sum(pool**2, axis=1)[None, :]
    )
    if pool_index is not None:
        rows = np.asarray(pool_index, dtype=np.int64)[owners_array]
        valid = rows >= 0
        others[np.arange(len(rows))[valid], rows[valid]] = np.inf
    closer = np.sum(others < own[:, None] - 1e-9, axis=1)
    return {k: float(np.mean(closer < k)) for k in ks}


def _normalized(array: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    out: np.ndarray = (array / np.maximum(norms, 1e-12)).astype(np.float32)
    return out


def quality_checks(
    model: ImageTextScorer,
    images: Sequence[Image.Image],
    genders: Sequence[Gender],
    captions: Sequence[Sequence[str]],
    pool: Sequence[Image.Image] | None = None,
    *,
    prompts: dict[Gender, str] | None = None,
    ks: Sequence[int] = (1, 5, 10),
) -> dict[str, Any]:
    """Sec. 4.3 / Tab. 2 quality checks of a set of images with a CLIP-like model.

    * zero-shot gender accuracy: each image is classified between the masculine and the
      feminine prompt (:data:`DEFAULT_ZERO_SHOT_PROMPTS`);
    * text-to-image recall@K: every caption of image ``i`` retrieves from ``pool ∪ {I_i}``
      (:func:`recall_at_k`); with no pool, the images themselves are the pool.
    """
    prompts = prompts or DEFAULT_ZERO_SHOT_PROMPTS
    order = list(Gender.binary())
    image_emb = _normalized(np.asarray(model.encode_images(list(images)), np.float32))
    prompt_emb = _normalized(np.asarray(model.encode_texts([prompts[g] for g in order])))
    accuracy = zero_shot_accuracy(image_emb, prompt_emb, [order.index(g) for g in genders])
    texts = [c for group in captions for c in group]
    owners = [i for i, group in enumerate(captions) for _ in group]
    text_emb = _normalized(np.asarray(model.encode_texts(texts), np.float32))
    if pool is None:
        recall = recall_at_k(text_emb, owners, image_emb, image_emb, ks,
                             pool_index=range(len(images)))  # fmt: skip
        pool_size = len(images)
    else:
        pool_emb = _normalized(np.asarray(model.encode_images(list(pool)), np.float32))
        recall = recall_at_k(text_emb, owners, image_emb, pool_emb, ks)
        pool_size = len(pool) + 1
    return {
        "images": len(images),
        "captions": len(texts),
        "zero_shot_gender_accuracy": accuracy,
        "zero_shot_prompts": {g.value: prompts[g] for g in order},
        "retrieval_pool_size": pool_size,
        **{f"recall@{k}": value for k, value in recall.items()},
    }


def run_select_stage(
    out: str | Path,
    *,
    seed: int = 0,
    model: ImageTextScorer | None = None,
    pool: Sequence[Path] | None = None,
    prompts: dict[Gender, str] | None = None,
) -> dict[str, Any]:
    """Keep the sources with an accepted edit of each gender, draw one per gender
    (seeded per source), write ``contrast_set.jsonl`` with gender-adjusted captions and,
    given a CLIP-like ``model``, run the Sec. 4.3 quality checks (:func:`quality_report`).

    Returns:
        The select summary (also stored under ``select`` in ``build_summary.json``).
    """
    out = Path(out)
    records = Manifest(out).read()
    if not records:
        raise ValueError(f"{out / 'manifest.jsonl'}: no finished edits (run the edit stage)")
    unscored = [r.edit_id for r in records if r.accepted is None]
    if unscored:
        raise ValueError(
            f"{len(unscored)} edits have no filter decision (e.g. {unscored[0]}): run the "
            "filter stage first"
        )
    sources = {s.source_id: s for s in read_sources(out)}
    picks = select_edits(
        [r.source_id for r in records],
        [r.target for r in records],
        [bool(r.accepted) for r in records],
        seed=seed,
    )
    chosen = {s: {g: records[i] for g, i in per.items()} for s, per in picks.items()}
    items = write_contrast_set(out, chosen, sources)
    sources_with_edits = len({r.source_id for r in records})
    summary: dict[str, Any] = {
        "seed": seed,
        "sources_with_edits": sources_with_edits,
        "sources_kept": len(chosen),
        "images": len(items),
        "source_keep_rate": len(chosen) / sources_with_edits,
        "kept_by_source_label": dict(Counter(sources[s].label.value for s in chosen)),
    }
    if model is not None:
        summary["quality"] = quality_report(out, model, pool=pool, prompts=prompts)
    update_summary(out, "select", summary)
    return summary


def quality_report(
    out: str | Path,
    model: ImageTextScorer,
    *,
    pool: Sequence[Path] | None = None,
    prompts: dict[Gender, str] | None = None,
) -> dict[str, Any]:
    """The Sec. 4.3 / Tab. 2 quality checks of a build folder, by :func:`quality_checks`:

    * ``contrast_set``: the selected edits with their gender-adjusted captions (Tab. 2's
      GenSynth / GenSwap rows);
    * ``original``: the source images of all edited sources with their own captions and
      caption labels ("Original");
    * ``all_edits``: every edit in the manifest before selection ("unfilt.").

    ``pool``: image files to retrieve among (the paper: COCO val 5k); by default each
    set retrieves among its own images.
    """
    out = Path(out)
    records = Manifest(out).read()
    sources = {s.source_id: s for s in read_sources(out)}
    pool_images = [load_image(p) for p in pool] if pool else None
    report: dict[str, Any] = {}
    contrast = out / CONTRAST_SET
    items = read_contrast_set(contrast) if contrast.exists() else []
    if items:
        report["contrast_set"] = quality_checks(
            model,
            [load_image(out / i.image) for i in items],
            [Gender(i.gender) for i in items],
            [i.captions for i in items],
            pool_images,
            prompts=prompts,
        )
    edited = list(dict.fromkeys(r.source_id for r in records))
    if edited:
        report["original"] = quality_checks(
            model,
            [load_image(sources[s].path) for s in edited],
            [sources[s].label for s in edited],
            [list(sources[s].captions) for s in edited],
            pool_images,
            prompts=prompts,
        )
        report["all_edits"] = quality_checks(
            model,
            [load_image(out / r.path) for r in records],
            [Gender(r.target) for r in records],
            [[to_gender(c, Gender(r.target)) for c in sources[r.source_id].captions]
             for r in records],
            pool_images,
            prompts=prompts,
        )  # fmt: skip
    return report
