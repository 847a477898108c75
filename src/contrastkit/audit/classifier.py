"""Spurious-correlation classifier on captions (GenSynth Sec. 3.3, after Schwemmer et al.
2020): can the gender label be predicted from gender-neutralised captions alone?

The images with a defined label (Sec. 3.2) are split, seeded, into a training and a
held-out test part by *group* (:func:`stratified_split`): the versions of one source photo
in a contrast set (its masculine and feminine edits, with the same neutral captions) all
fall on one side, and the groups are stratified by their labels; an image without a group
is a group of its own, which makes it a split stratified by label. (Split image by
image, a contrast set's held-out version would be scored by its twin's opposite label in
training: an AUC far below chance, 0.000 on small sets.) Each image is one document, its
gender-neutral captions (Tab. 4) joined. A linear model, L2-regularised logistic
regression (``C = 1``, intercept not penalised, fitted by L-BFGS) on TF-IDF features
fitted on the training documents (:class:`contrastkit.audit.text.Tfidf`), predicts
``masculine`` (1) against ``feminine`` (0). Its held-out ROC AUC, the probability that a
masculine test image scores above a feminine one (ties count half), comes with a
percentile bootstrap interval over the test images
(:mod:`contrastkit.evaluators.bootstrap`). An AUC of 0.5 is chance; the paper reports
78.0% on COCO (BERT-base on neutral captions, train2017 -> val2017): the set leaks gender
through context words.

With fewer than :data:`MIN_TEST_PER_LABEL` (10) held-out images of either label no AUC
is reported (``auc`` and ``interval`` are ``None`` and ``too_small`` says why): at 10 of
each, a classifier at chance still scores anywhere in about 0.24 to 0.76 (the 95% range of
the Mann-Whitney AUC under chance), already near the paper's 0.78; with fewer the
figure cannot tell chance from that leak, and a test set of 1 or 2 images per label gives
0, 0.5 or 1 whatever the data.

The linear model (:class:`LinearClassifier`) is the fast default. The paper's classifier,
a fine-tuned transformer (BERT-base), is the option
``classifier=FineTunedClassifier(DIR)`` (``--caption-model DIR``): a local
``transformers`` folder loaded with ``AutoModelForSequenceClassification`` (a new
two-way head on the encoder; nothing is downloaded) and fine-tuned on the training
documents with AdamW (learning rate 2e-5, weight decay 0.01, batch 16, ``epochs`` 3,
texts cut at 128 tokens, seeded); its held-out score is the softmax probability of
``masculine``. The paper gives no hyperparameters; these are the common BERT fine-tuning
defaults, recorded in the result (``fine_tuning``).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
from numpy.typing import ArrayLike
from typing_extensions import NotRequired

from contrastkit.audit.text import Tfidf
from contrastkit.evaluators.bootstrap import percentile_interval, resample_indices

__all__ = [
    "FINE_TUNING",
    "MIN_TEST_PER_LABEL",
    "CaptionProbe",
    "FineTunedClassifier",
    "HeldOutSplit",
    "LinearClassifier",
    "ProbeSettings",
    "SkippedSection",
    "auc",
    "auc_bootstrap",
    "caption_classifier",
    "fine_tuned_scores",
    "fit_logistic",
    "stratified_split",
    "too_small",
]

#: Fine-tuning settings of the transformer caption classifier (module docstring).
FINE_TUNING = {"learning_rate": 2e-5, "weight_decay": 0.01, "batch_size": 16,
               "max_length": 128}  # fmt: skip

#: Held-out images of each label below which no AUC is reported (module docstring).
MIN_TEST_PER_LABEL = 10


def auc(scores: ArrayLike, positive: ArrayLike) -> float:
    """ROC AUC: ``P(score of a positive > score of a negative)``, ties counting half;
    ``nan`` without positives or negatives."""
    values = auc_weighted(np.asarray(scores, np.float64), np.asarray(positive, bool), None)
    return float(values[0])


def auc_weighted(
    scores: np.ndarray, positive: np.ndarray, weights: np.ndarray | None
) -> np.ndarray:
    """AUC of each row of ``weights`` (``(B, n)`` multiplicities; ``None``: one row of
    ones), computed from one sort of ``scores`` with tied scores grouped."""
    order = np.argsort(scores, kind="stable")
    ranked = scores[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if ranked.size else ranked
    matrix = np.ones((1, scores.size)) if weights is None else np.asarray(weights, np.float64)
    matrix = matrix[:, order]
    is_positive = positive[order]
    pos = np.add.reduceat(matrix * is_positive, starts, axis=1)
    neg = np.add.reduceat(matrix * ~is_positive, starts, axis=1)
    below = np.cumsum(neg, axis=1) - neg
    total = pos.sum(axis=1) * neg.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        result: np.ndarray = np.where(
            total > 0, (pos * (below + 0.5 * neg)).sum(axis=1) / total, np.nan
        )
    return result


def auc_bootstrap(
    scores: ArrayLike,
    positive: ArrayLike,
    *,
    resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap interval of the AUC, resampling the test items with
    replacement (``resamples`` resamples, ``numpy.random.default_rng(seed)``)."""
    values = np.asarray(scores, np.float64)
    labels = np.asarray(positive, bool)
    rng = np.random.default_rng(seed)
    n = values.size
    found = []
    for start in range(0, resamples, 100):
        rows = min(100, resamples - start)
        index = resample_indices(rng, n, rows)
        flat = (index + (np.arange(rows) * n)[:, None]).ravel()
        counts = np.bincount(flat, minlength=rows * n).reshape(rows, n)
        found.append(auc_weighted(values, labels, counts))
    return percentile_interval(np.concatenate(found), level)


def fit_logistic(
    features: Any, target: np.ndarray, c: float = 1.0, max_iterations: int = 1000
) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression: minimise
    ``0.5 |w|^2 + C sum_i log(1 + exp(-y_i' (x_i w + b)))`` (``y' = ±1``; the intercept
    ``b`` unpenalised) with L-BFGS. Returns ``(w, b)``."""
    from scipy.optimize import minimize

    y = np.asarray(target, dtype=np.float64)
    dims = features.shape[1]

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:dims], theta[dims]
        z = np.asarray(features @ w).ravel() + b
        loss = c * float(np.sum(np.logaddexp(0.0, z) - y * z)) + 0.5 * float(w @ w)
        residual = c * (1.0 / (1.0 + np.exp(-z)) - y)
        gradient = np.concatenate([np.asarray(features.T @ residual).ravel() + w, [residual.sum()]])
        return loss, gradient

    found = minimize(
        objective, np.zeros(dims + 1), jac=True, method="L-BFGS-B",
        options={"maxiter": max_iterations},
    )  # fmt: skip
    theta = np.asarray(found.x)
    return theta[:dims], float(theta[dims])


def stratified_split(
    labels: Sequence[str],
    test_fraction: float,
    rng: np.random.Generator,
    groups: Sequence[Hashable] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Train and test indices (sorted), each group whole on one side.

    The items sharing a ``groups`` value (a contrast-set source photo's versions) form
    one group; ``None``: every item is a group of its own. The groups are stratified by
    their labels (the sorted labels of their items, e.g. ``feminine+masculine`` for a
    source in both genders), and of each stratum's ``n`` groups ``ceil(test_fraction *
    n)`` are drawn at random for the test part (at least 1, at most ``n - 1``). Without
    groups this is the split stratified by label, drawn exactly as before groups existed.
    """
    names = np.asarray(labels, dtype=object)
    keys: Sequence[Hashable] = range(names.size) if groups is None else groups
    if len(keys) != names.size:
        raise ValueError(f"{len(keys)} groups for {names.size} labels")
    first: dict[Hashable, int] = {}
    members: dict[int, list[int]] = {}
    for index, key in enumerate(keys):
        members.setdefault(first.setdefault(key, index), []).append(index)
    strata: dict[str, list[int]] = {}
    for head, items in members.items():
        strata.setdefault("+".join(sorted(names[items].tolist())), []).append(head)
    test: list[int] = []
    for stratum in sorted(strata):
        heads = np.asarray(strata[stratum], dtype=np.int64)
        count = min(max(1, math.ceil(test_fraction * heads.size)), heads.size - 1)
        for head in rng.choice(heads, count, replace=False):
            test.extend(members[int(head)])
    test_index = np.sort(np.asarray(test, dtype=np.int64))
    train_index = np.setdiff1d(np.arange(names.size), test_index)
    return train_index, test_index


def too_small(test_counts: Mapping[str, int]) -> str | None:
    """Why a held-out set with ``test_counts`` images per label is too small to read an
    AUC from (fewer than :data:`MIN_TEST_PER_LABEL` of a label), else ``None``."""
    if min(test_counts.values()) >= MIN_TEST_PER_LABEL:
        return None
    counts = ", ".join(f"{count} {label}" for label, count in test_counts.items())
    return (
        f"too few held-out images to read an AUC: {counts}, fewer than "
        f"{MIN_TEST_PER_LABEL} of each label (audit a larger set or raise --test-fraction)"
    )


@dataclass(frozen=True)
class ProbeSettings:
    """The held-out split and the bootstrap interval of the spurious-correlation probes,
    :func:`caption_classifier` and :func:`contrastkit.audit.image_probe.image_probe`.

    Attributes:
        test_fraction: the held-out share of each label's groups.
        seed: seeds the split (``default_rng(seed)``) and the bootstrap (``seed + 1``).
        resamples, level: the bootstrap interval.
    """

    test_fraction: float = 0.3
    seed: int = 0
    resamples: int = 1000
    level: float = 0.95


@dataclass(frozen=True)
class LinearClassifier:
    """The default caption classifier: logistic regression on TF-IDF (module docstring).

    Attributes:
        top_words: how many of the heaviest words per gender to report.
    """

    top_words: int = 10


@dataclass(frozen=True)
class FineTunedClassifier:
    """The paper's kind of caption classifier: a local ``transformers`` model fine-tuned
    on the training documents (:func:`fine_tuned_scores`, module docstring).

    Attributes:
        folder: the local model folder (nothing is downloaded).
        epochs: passes over the training documents.
        device: where to fine-tune (``cpu``, ``cuda``, ...).
        learning_rate: of AdamW; ``None``: the rate of :data:`FINE_TUNING`.
    """

    folder: Path
    epochs: int = 3
    device: str = "cpu"
    learning_rate: float | None = None


class SkippedSection(TypedDict):
    """An analysis the data cannot have, and why."""

    skipped: str


class HeldOutSplit(TypedDict):
    """Whether the split kept groups whole, and how many groups each side holds."""

    grouped: bool
    train_groups: int
    test_groups: int


class CaptionProbe(TypedDict):
    """The ``caption_classifier`` section of an audit (:func:`caption_classifier`):
    ``too_small`` only when the held-out set is; ``classifier`` is set once the model
    has run, ``fine_tuning`` for a fine-tuned transformer."""

    auc: float | None
    interval: list[float] | None
    level: float
    resamples: int
    test_fraction: float
    min_test_per_label: int
    train: dict[str, int]
    test: dict[str, int]
    split: HeldOutSplit
    words: dict[str, list[str]]
    too_small: NotRequired[str]
    classifier: NotRequired[str]
    fine_tuning: NotRequired[dict[str, float]]


def caption_classifier(
    documents: Sequence[str],
    labels: Sequence[str],
    *,
    groups: Sequence[Hashable] | None = None,
    settings: ProbeSettings | None = None,
    classifier: LinearClassifier | FineTunedClassifier | None = None,
) -> CaptionProbe | SkippedSection:
    """Predict the gender label from neutral captions (module docstring).

    Args:
        documents: one per image, its neutral captions joined.
        labels: each image's label; only ``masculine`` and ``feminine`` images are used.
        groups: each image's group (a contrast-set source photo), kept whole on one side
            of the split (:func:`stratified_split`); ``None``: every image its own.
        settings: the split and the bootstrap interval (default: :class:`ProbeSettings`).
        classifier: the linear model (default: :class:`LinearClassifier`) or a
            transformer to fine-tune instead (:class:`FineTunedClassifier`).

    Returns:
        ``auc``, ``interval`` ``[low, high]``, ``level``, ``resamples``, ``train`` and
        ``test`` (image counts per gender), ``split`` (``grouped``: whether any group
        held several images; ``train_groups``, ``test_groups``), ``test_fraction``,
        ``min_test_per_label`` and ``words`` (the terms with the largest weights toward
        ``masculine`` and toward ``feminine``). With fewer than
        :data:`MIN_TEST_PER_LABEL` held-out images of a label, ``auc`` and ``interval``
        are ``None`` and ``too_small`` says why (a fine-tuned model is then not trained).
        ``{"skipped": reason}`` when a gender has fewer than two images.
    """
    settings = settings or ProbeSettings()
    classifier = classifier or LinearClassifier()
    test_fraction, seed = settings.test_fraction, settings.seed
    names = np.asarray(labels, dtype=object)
    keep = np.flatnonzero((names == "masculine") | (names == "feminine"))
    counts = {g: int((names[keep] == g).sum()) for g in ("masculine", "feminine")}
    if min(counts.values()) < 2:
        return {"skipped": f"needs at least 2 images of each gender, found {counts}"}
    kept_docs = [documents[int(i)] for i in keep]
    kept_labels = names[keep]
    kept_groups = None if groups is None else [groups[int(i)] for i in keep]
    train, test = stratified_split(
        kept_labels.tolist(), test_fraction, np.random.default_rng(seed), kept_groups
    )
    target = (kept_labels == "masculine").astype(np.float64)
    test_counts = {g: int((kept_labels[test] == g).sum()) for g in ("masculine", "feminine")}
    unreadable = too_small(test_counts)
    group_of = list(range(keep.size)) if kept_groups is None else kept_groups
    result: CaptionProbe = {
        "auc": None,
        "interval": None,
        "level": settings.level,
        "resamples": settings.resamples,
        "test_fraction": test_fraction,
        "min_test_per_label": MIN_TEST_PER_LABEL,
        "train": {g: int((kept_labels[train] == g).sum()) for g in ("masculine", "feminine")},
        "test": test_counts,
        "split": {
            "grouped": len(set(group_of)) < keep.size,
            "train_groups": len({group_of[int(i)] for i in train}),
            "test_groups": len({group_of[int(i)] for i in test}),
        },
        "words": {"masculine": [], "feminine": []},
    }
    if unreadable is not None:
        result["too_small"] = unreadable
    test_scores = None
    if isinstance(classifier, LinearClassifier):
        vectorizer = Tfidf.fit(kept_docs[i] for i in train)
        features = vectorizer.transform(kept_docs)
        weights, intercept = fit_logistic(features[train], target[train])
        test_scores = np.asarray(features[test] @ weights).ravel() + intercept
        terms = vectorizer.terms
        order = np.argsort(weights, kind="stable")
        top_words = classifier.top_words
        result["words"] = {
            "masculine": [terms[i] for i in order[::-1][:top_words] if weights[i] > 0],
            "feminine": [terms[i] for i in order[:top_words] if weights[i] < 0],
        }
        result["classifier"] = "logistic regression on TF-IDF"
    else:
        if unreadable is None:  # nothing to report from a fine-tuning otherwise
            test_scores = fine_tuned_scores(
                [kept_docs[i] for i in train], target[train] > 0.5,
                [kept_docs[i] for i in test], classifier, seed=seed,
            )  # fmt: skip
        result["classifier"] = f"fine-tuned transformers:{Path(classifier.folder).name}"
        rate = _learning_rate(classifier)
        result["fine_tuning"] = {**FINE_TUNING, "learning_rate": rate,
                                 "epochs": classifier.epochs, "seed": seed}  # fmt: skip
    if unreadable is None and test_scores is not None:
        positive = target[test] > 0.5
        low, high = auc_bootstrap(test_scores, positive, resamples=settings.resamples,
                                  level=settings.level, seed=seed + 1)  # fmt: skip
        result["auc"] = auc(test_scores, positive)
        result["interval"] = [low, high]
    return result


def _learning_rate(classifier: FineTunedClassifier) -> float:
    """The fine-tuning's learning rate: the classifier's, else :data:`FINE_TUNING`'s."""
    rate = classifier.learning_rate
    return FINE_TUNING["learning_rate"] if rate is None else rate


def fine_tuned_scores(
    train_texts: Sequence[str],
    train_masculine: ArrayLike,
    test_texts: Sequence[str],
    classifier: FineTunedClassifier,
    seed: int = 0,
) -> np.ndarray:
    """Fine-tune the local ``transformers`` model in ``classifier.folder`` as a two-way
    sequence classifier on ``train_texts`` (:data:`FINE_TUNING`, ``classifier.epochs``
    on ``classifier.device``, shuffled each epoch with ``seed``) and return the
    probability of ``masculine`` for each of ``test_texts``.

    Raises:
        ModelNotFoundError: ``classifier.folder`` is not a model folder with a tokenizer
            that ``AutoModelForSequenceClassification`` loads locally (nothing is
            downloaded).
    """
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer
    from transformers.utils import logging as hf_logging

    from contrastkit.errors import ModelNotFoundError

    folder, device = Path(classifier.folder), classifier.device
    if not folder.is_dir():
        raise ModelNotFoundError(f"caption model {folder}: no such folder (a local model folder)")
    verbosity, bars = hf_logging.get_verbosity(), hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity(logging.ERROR)  # "newly initialized" head weights: expected
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        torch.manual_seed(seed)
        model = AutoModelForSequenceClassification.from_pretrained(
            str(folder), num_labels=2, local_files_only=True
        )
    except (OSError, ValueError, KeyError) as error:
        raise ModelNotFoundError(
            f"caption model {folder}: not a transformers model folder with a tokenizer ({error})"
        ) from error
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    model.to(device).train()
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=_learning_rate(classifier),
        weight_decay=FINE_TUNING["weight_decay"],
    )  # fmt: skip
    labels = torch.as_tensor(np.asarray(train_masculine, dtype=np.int64))
    size, rng = int(FINE_TUNING["batch_size"]), np.random.default_rng(seed)

    def encode(texts: Sequence[str]) -> Any:
        return tokenizer(list(texts), padding=True, truncation=True,
                         max_length=int(FINE_TUNING["max_length"]),
                         return_tensors="pt").to(device)  # fmt: skip

    for _ in range(classifier.epochs):
        order = rng.permutation(len(train_texts))
        for start in range(0, order.size, size):
            chosen = order[start : start + size]
            batch = encode([train_texts[i] for i in chosen])
            loss = model(**batch, labels=labels[chosen].to(device)).loss
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    model.eval()
    scores = []
    with torch.inference_mode():
        for start in range(0, len(test_texts), size):
            logits = model(**encode(test_texts[start : start + size])).logits
            scores.append(torch.softmax(logits.float(), dim=-1)[:, 1].cpu().numpy())
    return np.concatenate(scores).astype(np.float64) if scores else np.zeros(0)
