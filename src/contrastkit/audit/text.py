"""Bag-of-words text features shared by the audit's analyses (no model needed).

* :func:`tokenize` splits a text as scikit-learn's ``TfidfVectorizer`` does by default
  (lower-cased, tokens of two or more word characters, ``\\b\\w\\w+\\b``), which is what
  the GenSynth code (``measure_bias.py``) feeds its TF-IDF model.
* :class:`Tfidf` is that vectorizer's default weighting: raw term counts times the
  smoothed inverse document frequency ``idf(t) = ln((1 + n) / (1 + df(t))) + 1``, each
  row scaled to unit L2 norm. Rows are ``scipy.sparse`` CSR matrices.
* :func:`lsa` is latent semantic analysis: a seeded randomized truncated SVD of a TF-IDF
  matrix (Halko et al. 2011), the audit's embedding when no text encoder is given.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

__all__ = ["STOPWORDS", "Tfidf", "lsa", "tokenize"]

_TOKEN: Final[re.Pattern[str]] = re.compile(r"(?u)\b\w\w+\b")

#: Function words left out of the salient words of a cluster (never out of the features).
STOPWORDS: Final[frozenset[str]] = frozenset(
    """
    a an the and or but nor of on in at to for from with without by as into onto upon
    is are was were be been being am has have had do does did it its this that these
    those there here their theirs them they who whom whose which what while some any
    each other another up down out over under off very near next top front behind
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


def tokenize(text: str) -> list[str]:
    """The tokens of ``text``: lower-cased runs of two or more word characters."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True)
class Tfidf:
    """A fitted TF-IDF weighting (scikit-learn ``TfidfVectorizer()`` defaults).

    Attributes:
        vocabulary: term -> column, in sorted term order.
        idf: ``ln((1 + n) / (1 + df)) + 1`` per column.
    """

    vocabulary: dict[str, int]
    idf: np.ndarray

    @classmethod
    def fit(cls, documents: Iterable[str]) -> Tfidf:
        """Learn the vocabulary and the document frequencies of ``documents``."""
        frequency: Counter[str] = Counter()
        n = 0
        for document in documents:
            frequency.update(set(tokenize(document)))
            n += 1
        terms = sorted(frequency)
        df = np.array([frequency[t] for t in terms], dtype=np.float64)
        idf = np.log((1.0 + n) / (1.0 + df)) + 1.0
        return cls({term: i for i, term in enumerate(terms)}, idf)

    @property
    def terms(self) -> list[str]:
        """The terms in column order."""
        return sorted(self.vocabulary, key=self.vocabulary.__getitem__)

    def transform(self, documents: Sequence[str]) -> Any:
        """Unit-L2 TF-IDF rows of ``documents`` (CSR, ``float64``); terms outside the
        vocabulary are ignored, a document without known terms is a row of zeros."""
        from scipy import sparse

        rows: list[int] = []
        cols: list[int] = []
        values: list[float] = []
        for row, document in enumerate(documents):
            counts = Counter(t for t in tokenize(document) if t in self.vocabulary)
            for term, count in counts.items():
                rows.append(row)
                cols.append(self.vocabulary[term])
                values.append(float(count))
        matrix = sparse.csr_matrix(
            (values, (rows, cols)), shape=(len(documents), len(self.vocabulary)), dtype=np.float64
        )
        matrix = matrix @ sparse.diags(self.idf)
        norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
        scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0)
        return sparse.csr_matrix(sparse.diags(scale) @ matrix)


def lsa(matrix: Any, dimensions: int, seed: int = 0, power_iterations: int = 4) -> np.ndarray:
    """Latent semantic analysis: ``matrix`` (documents x terms) projected on its top
    ``dimensions`` right singular vectors, by a seeded randomized SVD (Halko, Martinsson
    and Tropp 2011, Alg. 4.4 with ``power_iterations`` subspace iterations).

    Returns:
        ``(documents, min(dimensions, rank bound))`` float64 coordinates ``U * S``.
    """
    rows, cols = matrix.shape
    rank = max(1, min(dimensions, rows, cols))
    rng = np.random.default_rng(seed)
    width = min(rank + 10, rows, cols)
    basis = np.linalg.qr(np.asarray(matrix @ rng.standard_normal((cols, width))))[0]
    for _ in range(power_iterations):
        basis = np.linalg.qr(np.asarray(matrix.T @ basis))[0]
        basis = np.linalg.qr(np.asarray(matrix @ basis))[0]
    small = np.asarray((matrix.T @ basis).T)  # (width, cols) = basis.T @ matrix
    u, s, _ = np.linalg.svd(small, full_matrices=False)
    coordinates: np.ndarray = (basis @ u[:, :rank]) * s[:rank]
    return coordinates
