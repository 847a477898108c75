"""Context clusters of gender-neutral captions (GenSynth Sec. 3.3, Fig. 1, Tab. 6).

For every labelled image (masculine or feminine by Sec. 3.2; Tab. 6's clusters are of
COCO's person images) each gender-neutral caption is embedded, the caption embeddings
of the image are averaged (``f_n = (1/K) sum_k f_n^k``), and the image features are
grouped into ``M`` clusters (default 20) by K-means (:func:`kmeans`: k-means++ seeding,
Lloyd iterations, the best of ``n_init`` seeded restarts). Per cluster:

* the **male over-representation factor** ``ΔM``: the percentage of masculine images in
  the cluster minus the percentage of masculine images among all clustered images, in
  percentage points (Fig. 1, Tab. 6; positive: men over-represented);
* the **salient words**: the terms whose mean TF-IDF weight over the cluster's images
  most exceeds their mean weight over all clustered images (one document per image,
  its neutral captions joined, TF-IDF fitted on all clustered images), function words
  (:data:`contrastkit.audit.text.STOPWORDS`) left out: what sets the cluster apart. The
  paper uses LDA topics; this is the documented, deterministic stand-in;
* a **2-D map**: the first two principal components of the image features (the paper
  shows t-SNE), each image coloured by its cluster's factor;
* the **members**: given each image's id (and file), the first
  :attr:`ClusterSettings.members` images of the cluster in data order, each with its
  label, so a reader can look at the images behind a factor (``size`` says how many the
  cluster holds in all).

**Embeddings.** The paper embeds captions with RoBERTa. ``text_encoder`` is a local
Hugging Face ``transformers`` model folder (any encoder ``AutoModel`` loads; nothing is
downloaded), and a caption's embedding is the mean of its last hidden states over its
tokens. Without one the embedding is **LSA**: TF-IDF of the captions reduced by a seeded
truncated SVD (:func:`contrastkit.audit.text.lsa`, 100 dimensions) — a bag-of-words
stand-in the report names as such.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np

from contrastkit.audit.data import AuditImage
from contrastkit.audit.text import STOPWORDS, Tfidf, lsa
from contrastkit.errors import ConfigError, ModelNotFoundError

__all__ = [
    "LSA_DIMENSIONS",
    "ClusterSettings",
    "MemberFile",
    "cluster_member",
    "context_clusters",
    "encode_captions",
    "image_features",
    "kmeans",
    "pca_2d",
]

#: Dimensions of the LSA fallback embedding.
LSA_DIMENSIONS = 100


def encode_captions(
    texts: Sequence[str], folder: Path, *, batch_size: int = 64, device: str = "cpu"
) -> np.ndarray:
    """Mean-pooled last hidden states of a local ``transformers`` encoder, one row per
    text (float64).

    Raises:
        ModelNotFoundError: ``folder`` is not a folder ``AutoModel`` / ``AutoTokenizer``
            load from (nothing is downloaded), the loader's error chained.
    """
    import torch
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    if not folder.is_dir():
        raise ModelNotFoundError(f"text encoder {folder}: no such folder (a local model folder)")
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModel.from_pretrained(str(folder), local_files_only=True)
    except (OSError, ValueError, KeyError) as error:
        raise ModelNotFoundError(
            f"text encoder {folder}: not a transformers model folder with a tokenizer ({error})"
        ) from error
    model.eval().to(device)
    parts = []
    with torch.inference_mode():
        for start in range(0, len(texts), batch_size):
            batch = tokenizer(
                list(texts[start : start + batch_size]), padding=True, truncation=True,
                max_length=128, return_tensors="pt",
            ).to(device)  # fmt: skip
            hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            pooled = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1.0)
            parts.append(pooled.double().cpu().numpy())
    width = int(getattr(model.config, "hidden_size", 0))
    return np.concatenate(parts) if parts else np.zeros((0, width))


def image_features(
    captions: Sequence[Sequence[str]],
    *,
    text_encoder: Path | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> tuple[np.ndarray, str]:
    """Per-image features: the mean embedding of each image's captions, and a
    description of the embedding (``"transformers:FOLDER"`` or ``"lsa"``)."""
    flat = [text for image in captions for text in image]
    owner = np.repeat(np.arange(len(captions)), [len(image) for image in captions])
    if any(len(image) == 0 for image in captions):
        raise ConfigError("every clustered image needs at least one caption")
    if text_encoder is not None:
        vectors = encode_captions(flat, Path(text_encoder), device=device)
        name = f"transformers:{text_encoder}"
    else:
        vectors = lsa(Tfidf.fit(flat).transform(flat), LSA_DIMENSIONS, seed=seed)
        name = "lsa"
    sums = np.zeros((len(captions), vectors.shape[1]))
    np.add.at(sums, owner, vectors)
    features: np.ndarray = sums / np.bincount(owner, minlength=len(captions))[:, None]
    return features, name


def kmeans(
    points: np.ndarray, clusters: int, *, seed: int = 0, n_init: int = 10, max_iter: int = 300
) -> tuple[np.ndarray, np.ndarray]:
    """K-means (Lloyd) with k-means++ seeding; the best (lowest within-cluster sum of
    squares) of ``n_init`` starts drawn from ``default_rng(seed)``.

    Returns:
        ``(assignment, centres)``: the cluster of each point and the ``(clusters, d)``
        centres. Clusters are renumbered by decreasing size (ties: lower old number).
    """
    data = np.asarray(points, dtype=np.float64)
    n = data.shape[0]
    if not 1 <= clusters <= n:
        raise ConfigError(f"clusters must be between 1 and the {n} points, not {clusters}")
    rng = np.random.default_rng(seed)
    squared = (data**2).sum(axis=1)
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(n_init):
        centres = data[[int(rng.integers(n))]]
        first = centres[0]
        distance = np.maximum(squared - 2 * data @ first + (first**2).sum(), 0)
        while centres.shape[0] < clusters:
            total = distance.sum()
            pick = int(rng.choice(n, p=distance / total)) if total > 0 else int(rng.integers(n))
            centres = np.vstack([centres, data[pick]])
            new = np.maximum(squared - 2 * data @ data[pick] + squared[pick], 0)
            distance = np.minimum(distance, new)
        assignment = np.full(n, -1)
        for _ in range(max_iter):
            d2 = squared[:, None] - 2 * data @ centres.T + (centres**2).sum(axis=1)[None, :]
            new_assignment = np.argmin(d2, axis=1)
            if np.array_equal(new_assignment, assignment):
                break
            assignment = new_assignment
            for c in range(clusters):
                members = assignment == c
                if members.any():
                    centres[c] = data[members].mean(axis=0)
        d2 = squared[:, None] - 2 * data @ centres.T + (centres**2).sum(axis=1)[None, :]
        assignment = np.argmin(d2, axis=1)
        inertia = float(np.maximum(d2[np.arange(n), assignment], 0).sum())
        if best is None or inertia < best[0] - 1e-12:
            best = (inertia, assignment.copy(), centres.copy())
    assert best is not None
    _, assignment, centres = best
    sizes = np.bincount(assignment, minlength=clusters)
    order = np.lexsort((np.arange(clusters), -sizes))
    renumber = np.empty(clusters, dtype=np.int64)
    renumber[order] = np.arange(clusters)
    return renumber[assignment], centres[order]


def pca_2d(points: np.ndarray) -> np.ndarray:
    """The first two principal-component coordinates of ``points`` (signs fixed so the
    largest-magnitude loading of each component is positive); zeros past the rank."""
    data = np.asarray(points, dtype=np.float64)
    centred = data - data.mean(axis=0)
    _, s, vt = np.linalg.svd(centred, full_matrices=False)
    result = np.zeros((data.shape[0], 2))
    for i in range(min(2, vt.shape[0])):
        if s[i] <= 0:
            continue
        component = vt[i] * np.sign(vt[i][np.argmax(np.abs(vt[i]))])
        result[:, i] = centred @ component
    return result


@dataclass(frozen=True)
class ClusterSettings:
    """How :func:`context_clusters` clusters.

    Attributes:
        clusters: ``M``; fewer when there are fewer labelled images.
        text_encoder: a local ``transformers`` model folder; ``None``: LSA.
        seed: seeds K-means (and the LSA's SVD).
        top_words: salient words per cluster.
        device: where the text encoder runs.
        members: the most members listed per cluster (data order).
    """

    clusters: int = 20
    text_encoder: Path | None = None
    seed: int = 0
    top_words: int = 10
    device: str = "cpu"
    members: int = 16


class MemberFile(TypedDict):
    """An image of the audited data as a cluster lists it: its id and its file relative to
    the data's folder (``None``: no file there); a listed member adds its ``label``."""

    image: str
    file: str | None


def cluster_member(image: AuditImage, folder: Path) -> MemberFile:
    """An image's entry in its cluster's ``members``: ``image`` (its id) and ``file`` (its
    file relative to the audited data's folder, ``None`` when it has no file there: a
    contrast set's images live in its dataset, under their id ``source:gender``)."""
    file = None
    if image.path is not None:
        try:
            file = Path(image.path).relative_to(folder).as_posix()
        except ValueError:  # not under the folder: never named
            file = None
    return {"image": image.image_id, "file": file}


def context_clusters(
    captions: Sequence[Sequence[str]],
    labels: Sequence[str],
    settings: ClusterSettings | None = None,
    members: Sequence[MemberFile] | None = None,
) -> dict[str, Any]:
    """Cluster the labelled images by their neutral captions (module docstring).

    Args:
        captions: each image's gender-neutral captions.
        labels: each image's label; only ``masculine`` / ``feminine`` images are used.
        settings: ``M``, the text encoder, the seed, the salient words and the members
            listed per cluster (default: :class:`ClusterSettings`).
        members: each image's member entry (``image``: its id; ``file``: its file
            relative to the data's folder, or ``None``); ``None``: no members listed.

    Returns:
        ``embedding`` (``lsa`` or ``transformers:FOLDER``), ``M``, ``images``,
        ``masculine_share`` (overall, among clustered images), ``clusters`` (per
        cluster: ``cluster``, ``size``, ``masculine``, ``feminine``, ``masculine_share``,
        ``factor_pp``, ``words``, and with ``members`` given, ``members``: at most
        ``settings.members`` entries, each with its ``label``; the section then says
        ``members_per_cluster``), and the per-image ``points`` (``x``, ``y``,
        ``cluster``, ``label``) for the map; or ``{"skipped": reason}``.
    """
    settings = settings or ClusterSettings()
    seed = settings.seed
    names = np.asarray(labels, dtype=object)
    keep = np.flatnonzero((names == "masculine") | (names == "feminine"))
    if keep.size < 2:
        return {"skipped": f"needs at least 2 labelled images, found {keep.size}"}
    kept = [list(captions[int(i)]) for i in keep]
    kept_labels = names[keep]
    features, embedding = image_features(
        kept, text_encoder=settings.text_encoder, seed=seed, device=settings.device
    )
    # No more clusters than distinct points (a small set, or images that share their
    # captions, as a contrast set's two versions of one photo do), and none left empty.
    distinct = len(np.unique(np.round(features, 9), axis=0))
    assignment, _ = kmeans(features, min(settings.clusters, keep.size, distinct), seed=seed)
    used = np.unique(assignment)
    assignment = np.searchsorted(used, assignment)
    m = int(used.size)
    masculine = kept_labels == "masculine"
    overall = float(masculine.mean())
    documents = [" ".join(texts) for texts in kept]
    vectorizer = Tfidf.fit(documents)
    weights = vectorizer.transform(documents)
    terms = vectorizer.terms
    allowed = np.array([term not in STOPWORDS for term in terms], dtype=bool)
    overall_weight = np.asarray(weights.mean(axis=0)).ravel()
    rows = []
    for c in range(m):
        inside = assignment == c
        lift = np.asarray(weights[inside].mean(axis=0)).ravel() - overall_weight
        mean_weight = np.where(allowed, lift, -1.0)
        order = np.lexsort((np.arange(mean_weight.size), -mean_weight))
        share = float(masculine[inside].mean())
        rows.append(
            {
                "cluster": c,
                "size": int(inside.sum()),
                "masculine": int((inside & masculine).sum()),
                "feminine": int((inside & ~masculine).sum()),
                "masculine_share": share,
                "factor_pp": 100.0 * (share - overall),
                "words": [terms[i] for i in order[: settings.top_words] if mean_weight[i] > 0],
            }
        )
        if members is not None:
            listed = np.flatnonzero(inside)[: settings.members]
            rows[-1]["members"] = [
                {**members[int(keep[i])], "label": str(kept_labels[i])} for i in listed
            ]
    xy = pca_2d(features)
    listing = {} if members is None else {"members_per_cluster": settings.members}
    return {
        "embedding": embedding,
        "M": m,
        "images": int(keep.size),
        "masculine_share": overall,
        **listing,
        "clusters": rows,
        "points": {
            "x": xy[:, 0].tolist(),
            "y": xy[:, 1].tolist(),
            "cluster": assignment.tolist(),
            "label": kept_labels.tolist(),
        },
    }
