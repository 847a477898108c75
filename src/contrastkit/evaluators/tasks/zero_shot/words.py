"""Experiment 3 of the zero-shot disparity paper (seed 003, Sec. 3.3 and Appendix A.3):
does a concept's gender gap in a vision-language model echo a gender bias of the
concept's word in a language model?

The recipe of Appendix A.3, step by step:

1. two sets of gendered terms, following Caliskan et al. (2017): :data:`MAN_TERMS` and
   :data:`WOMAN_TERMS`;
2. a vector for each concept: the synset's lemma (``"refrigerator.n.01"`` ->
   ``refrigerator``); a two-word concept (``"electric_refrigerator.n.01"``, ``"hot dog"``)
   is the average of its words' vectors; an ambiguous synset is replaced by a phrase
   with a modifier from its definition (:data:`MODIFIERS`: ``"knob.n.02"`` -> ``"knob
   handle"``);
3. the cosine similarity of the concept's vector to each gendered term, averaged per set;
4. the concept's *language bias* = mean cosine to the man terms − mean cosine to the woman
   terms: positive when the concept sits closer to "man" than to "woman".

The paper's word vectors were word2vec trained on Google News; any word2vec (text or
binary) or GloVe file is read through gensim's ``KeyedVectors``
(:func:`load_word_vectors`; ``pip install "contrastkit[words]"``). What the paper did not
do: :func:`model_word_vectors` uses the text encoder of the very model under test, so its
own language bias can be set beside its own AP gaps. Both live in :mod:`.word_vectors`
and are importable from here.

:func:`sign_agreement` is the paper's yellow bars in numbers: over the concepts with both
values, how often the language bias and the AP (or ECE) difference have the same sign,
and Pearson's r and Spearman's rho between them with their p-values (``scipy.stats``).
:func:`language_markdown` writes the report section.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any

import numpy as np

from contrastkit.errors import ConfigError
from contrastkit.evaluators.tasks.zero_shot.word_vectors import (
    WORDS_INSTALL_HINT,
    KeyedWordVectors,
    ModelWordVectors,
    WordVectors,
    load_word_vectors,
    model_word_vectors,
    require_gensim,
)
from contrastkit.results.zero_shot import ConceptLanguageBias, SignAgreement
from contrastkit.text import format_number, format_p, markdown_table

__all__ = [
    "MAN_TERMS",
    "MODIFIERS",
    "WOMAN_TERMS",
    "WORDS_INSTALL_HINT",
    "Agreement",
    "BiasMethod",
    "KeyedWordVectors",
    "LanguageBias",
    "LanguageSection",
    "ModelWordVectors",
    "WordVectors",
    "concept_words",
    "language_bias",
    "language_markdown",
    "load_word_vectors",
    "model_word_vectors",
    "require_gensim",
    "sign_agreement",
]

#: Terms of the "man" set: the male attribute words of Caliskan et al. (2017), which
#: Appendix A.3 follows ("each gender group contains multiple related terms").
MAN_TERMS: tuple[str, ...] = ("male", "man", "boy", "brother", "he", "him", "his", "son")

#: Terms of the "woman" set, the female attribute words of Caliskan et al. (2017); A.3
#: names "female", "woman", "girl" among them.
WOMAN_TERMS: tuple[str, ...] = (
    "female",
    "woman",
    "girl",
    "sister",
    "she",
    "her",
    "hers",
    "daughter",
)

#: Ambiguous synsets and the phrase that stands for them, a modifier chosen from the
#: synset's WordNet definition (Appendix A.3). These two are the paper's own examples; the
#: paper does not publish its full table. Extend it for your concepts:
#: ``language_bias(..., BiasMethod(modifiers={**MODIFIERS, "glass.n.02": "drinking glass"}))``.
MODIFIERS: Mapping[str, str] = MappingProxyType(
    {
        "knob.n.02": "knob handle",  # "a round handle"
        "helmet.n.02": "protective helmet",  # "armor plate that protects the head"
    }
)

_SYNSET = re.compile(r"^(?P<lemma>.+)\.(?P<pos>[nvasr])\.(?P<sense>\d+)$")


def concept_words(concept: str, modifiers: Mapping[str, str] = MODIFIERS) -> tuple[str, ...]:
    """The words whose vectors stand for ``concept`` (Appendix A.3).

    The modifier phrase when ``modifiers`` has the concept (exact, then lower-cased key);
    else a synset name's lemma (``"necktie.n.01"`` -> ``necktie``), or the concept itself;
    split into words at underscores and spaces (``"tennis_racket.n.01"`` -> ``tennis``,
    ``racket``). Hyphenated words stay whole (``great-aunt``).
    """
    phrase = modifiers.get(concept)
    if phrase is None:
        phrase = modifiers.get(concept.lower())
    if phrase is None:
        match = _SYNSET.match(concept.strip())
        phrase = match.group("lemma") if match else concept
    return tuple(word for word in re.split(r"[_\s]+", phrase.strip()) if word)


@dataclass(frozen=True)
class LanguageBias:
    """The language bias of one concept (Appendix A.3).

    Attributes:
        concept: the concept as given (a synset name, a COCO class).
        words: the words (or, with ``whole_phrases``, the one phrase) looked up.
        modifier: the modifier phrase used for an ambiguous synset, else ``None``.
        man: mean cosine similarity of the concept's vector to the man terms.
        woman: mean cosine similarity to the woman terms.
        bias: ``man - woman``; > 0: closer to the man terms. ``None`` when a word has no
            vector (``missing``) or the concept's vector is zero (``reason``).
        missing: the words without a vector.
        reason: why ``bias`` is ``None``, in words.
    """

    concept: str
    words: tuple[str, ...]
    modifier: str | None
    man: float | None
    woman: float | None
    bias: float | None
    missing: tuple[str, ...] = ()
    reason: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: ``concept``, ``words``, ``modifier``, ``man``, ``woman``, ``bias``,
        ``missing``, ``reason`` (:meth:`node`'s JSON)."""
        return self.node().to_json()

    def node(self) -> ConceptLanguageBias:
        """As the ``disparity.json`` entry it is written as (:meth:`to_dict`'s keys)."""
        return ConceptLanguageBias(
            concept=self.concept, words=self.words, modifier=self.modifier, man=self.man,
            woman=self.woman, bias=self.bias, missing=self.missing, reason=self.reason,
        )  # fmt: skip

    @classmethod
    def of(cls, node: ConceptLanguageBias) -> LanguageBias:
        """The language bias a ``disparity.json`` entry records."""
        return cls(
            node.concept, node.words, node.modifier, node.man, node.woman, node.bias,
            node.missing, node.reason,
        )  # fmt: skip


def _term_matrix(vectors: WordVectors, terms: Sequence[str], field: str) -> np.ndarray:
    """Unit rows of the terms' vectors; a term without a vector is a ConfigError."""
    if not terms:
        raise ConfigError(f"{field}: needs at least one term")
    rows = []
    for term in terms:
        vector = vectors.vector(term)
        if vector is None:
            raise ConfigError(
                f"{field}: the term {term!r} has no vector in {vectors.source}; pass "
                f"{field} without it (the average would silently change otherwise)"
            )
        norm = float(np.linalg.norm(vector))
        if norm == 0:
            raise ConfigError(f"{field}: the term {term!r} has a zero vector in {vectors.source}")
        rows.append(np.asarray(vector, dtype=np.float64) / norm)
    return np.stack(rows)


@dataclass(frozen=True)
class BiasMethod:
    """How :func:`language_bias` measures a concept (Appendix A.3).

    Attributes:
        man_terms / woman_terms: the gendered term sets (default Caliskan et al. 2017).
        modifiers: phrases for ambiguous synsets (default :data:`MODIFIERS`).
        whole_phrases: look multi-word concepts up as one phrase.
    """

    man_terms: Sequence[str] = MAN_TERMS
    woman_terms: Sequence[str] = WOMAN_TERMS
    modifiers: Mapping[str, str] = field(default_factory=lambda: MODIFIERS)
    whole_phrases: bool = False


def language_bias(
    concepts: Iterable[str], vectors: WordVectors, method: BiasMethod = BiasMethod()
) -> dict[str, LanguageBias]:
    """The language bias of each concept (Appendix A.3): the mean cosine similarity of
    the concept's vector to the man terms minus the mean to the woman terms.

    A concept's vector is the average of its words' vectors (:func:`concept_words`: the
    synset's lemma split at underscores, or its modifier phrase), averaged as they are
    (not normalised first), as "we average the embeddings between the two words" reads.
    With ``method.whole_phrases`` the words are looked up as one phrase instead (a model's
    text encoder encodes "tennis racket" whole; a word2vec file is asked for its phrase
    token ``tennis_racket``).

    A concept with a word the vectors lack gets ``bias=None`` and the word in ``missing``:
    never a silent 0 nor an average over the remaining words.

    Args:
        concepts: concept names (synsets such as ``"necktie.n.01"``, COCO classes).
        vectors: :func:`load_word_vectors` or :func:`model_word_vectors`.
        method: the term sets, the modifier phrases and whether multi-word concepts are
            looked up whole (default: the paper's).

    Returns:
        ``{concept: LanguageBias}`` in the order of ``concepts``.

    Raises:
        ConfigError: an empty term set, or a term without a vector (naming it and the
            vectors' source).
    """
    man_terms, woman_terms = method.man_terms, method.woman_terms
    modifiers, whole_phrases = method.modifiers, method.whole_phrases
    names = list(dict.fromkeys(concepts))
    plan = {}
    for concept in names:
        words = concept_words(concept, modifiers)
        if whole_phrases and len(words) > 1:
            words = (" ".join(words),)
        plan[concept] = words
    prefetch = getattr(vectors, "prefetch", None)
    if callable(prefetch):
        prefetch([*man_terms, *woman_terms, *(w for ws in plan.values() for w in ws)])
    man = _term_matrix(vectors, man_terms, "man_terms")
    woman = _term_matrix(vectors, woman_terms, "woman_terms")
    found: dict[str, LanguageBias] = {}
    for concept in names:
        words = plan[concept]
        modifier = modifiers.get(concept) or modifiers.get(concept.lower())
        looked = {word: vectors.vector(word) for word in words}
        missing = tuple(word for word, vector in looked.items() if vector is None)
        if missing or not words:
            reason = (
                f"no vector for {', '.join(repr(w) for w in missing)} in {vectors.source}"
                if missing
                else "no words in the concept name"
            )
            found[concept] = LanguageBias(
                concept, words, modifier, None, None, None, missing, reason
            )
            continue
        mean = np.mean(np.stack([np.asarray(v, dtype=np.float64) for v in looked.values()]), 0)
        norm = float(np.linalg.norm(mean))
        if norm == 0:
            found[concept] = LanguageBias(
                concept, words, modifier, None, None, None, (), "the concept's vector is zero"
            )
            continue
        unit = mean / norm
        to_man = float(np.mean(man @ unit))
        to_woman = float(np.mean(woman @ unit))
        found[concept] = LanguageBias(concept, words, modifier, to_man, to_woman, to_man - to_woman)
    return found


@dataclass(frozen=True)
class Agreement:
    """How the sign of the language bias agrees with the sign of a disparity (AP or ECE
    difference, oriented so that > 0 concerns the man group as a positive language bias
    does), over the concepts with both values (the paper's yellow bars, Sec. 3.3).

    Attributes:
        n: concepts with both values (finite).
        agree: concepts whose two values have the same sign (a zero agrees with nothing).
        share: ``agree / n`` (``None`` when ``n`` is 0).
        pearson_r / pearson_p, spearman_rho / spearman_p: ``scipy.stats.pearsonr`` and
            ``spearmanr`` of the two values (two-sided p); ``None`` with ``reason`` when
            ``n < 3`` or a side is constant.
        concepts: the concepts compared; agreeing: those that agree.
    """

    n: int
    agree: int
    share: float | None
    pearson_r: float | None
    pearson_p: float | None
    spearman_rho: float | None
    spearman_p: float | None
    reason: str | None = None
    concepts: tuple[str, ...] = field(default=(), repr=False)
    agreeing: tuple[str, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: the attributes, with ``concepts`` and ``agreeing`` as lists
        (:meth:`node`'s JSON)."""
        return self.node().to_json()

    def node(self) -> SignAgreement:
        """As the ``disparity.json`` entry it is written as (:meth:`to_dict`'s keys)."""
        return SignAgreement(
            n=self.n, agree=self.agree, share=self.share, pearson_r=self.pearson_r,
            pearson_p=self.pearson_p, spearman_rho=self.spearman_rho,
            spearman_p=self.spearman_p, reason=self.reason, concepts=self.concepts,
            agreeing=self.agreeing,
        )  # fmt: skip

    @classmethod
    def of(cls, node: SignAgreement) -> Agreement:
        """The agreement a ``disparity.json`` entry records."""
        return cls(
            node.n, node.agree, node.share, node.pearson_r, node.pearson_p, node.spearman_rho,
            node.spearman_p, node.reason, node.concepts, node.agreeing,
        )  # fmt: skip


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        return None
    number = float(value)
    return number if math.isfinite(number) else None


def sign_agreement(
    language: Mapping[str, float | None], disparity: Mapping[str, float | None]
) -> Agreement:
    """Agreement of the signs of ``language`` (concept -> language bias, e.g.
    ``{c: b.bias for c, b in language_bias(...).items()}``) and ``disparity`` (concept ->
    AP or ECE difference, > 0 concerning the man group), over the concepts in both with
    finite values (``None`` and NaN are left out); with Pearson's r and Spearman's rho.
    """
    pairs = [
        (concept, a, b)
        for concept in language
        if concept in disparity
        and (a := _finite(language[concept])) is not None
        and (b := _finite(disparity[concept])) is not None
    ]
    concepts = tuple(c for c, _, _ in pairs)
    agreeing = tuple(c for c, a, b in pairs if a * b > 0)
    n = len(pairs)
    counted = Agreement(
        n=n, agree=len(agreeing), share=len(agreeing) / n if n else None, pearson_r=None,
        pearson_p=None, spearman_rho=None, spearman_p=None, concepts=concepts,
        agreeing=agreeing,
    )  # fmt: skip
    if n < 3:
        reason = f"{n} concept(s) with both values: correlations need at least 3"
        return replace(counted, reason=reason)
    x = np.array([a for _, a, _ in pairs])
    y = np.array([b for _, _, b in pairs])
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        side = "language bias" if np.ptp(x) == 0 else "disparity"
        return replace(counted, reason=f"the {side} is the same for every concept")
    from scipy import stats

    pearson = stats.pearsonr(x, y)
    spearman = stats.spearmanr(x, y)
    return replace(
        counted,
        pearson_r=float(pearson.statistic),
        pearson_p=float(pearson.pvalue),
        spearman_rho=float(spearman.statistic),
        spearman_p=float(spearman.pvalue),
    )


def _cell(value: float | None, digits: int = 3) -> str:
    return format_number(value, digits)


@dataclass(frozen=True)
class LanguageSection:
    """What the Experiment 3 report section (:func:`language_markdown`) says besides the
    biases and their agreement.

    Attributes:
        disparity: concept -> the disparity compared (for the table).
        disparity_name: what the disparity is, with its orientation.
        vectors_name: where the vectors came from (``vectors.source``).
        top: rows of the table.
        heading: the section's heading line.
        method: as given to :func:`language_bias`, for the description of the method.
    """

    disparity: Mapping[str, float | None] | None = None
    disparity_name: str = "AP difference (men − women)"
    vectors_name: str | None = None
    top: int = 15
    heading: str = "## Experiment 3: language bias of the concepts"
    method: BiasMethod = BiasMethod()


def language_markdown(
    biases: Mapping[str, LanguageBias],
    agreement: Agreement,
    section: LanguageSection = LanguageSection(),
) -> str:
    """The report section of Experiment 3: how the language bias was measured, the sign
    agreement with the disparity and its correlations, the concepts without a vector, and
    a table of the ``top`` concepts by absolute language bias (with their disparity and
    whether the signs agree when ``section.disparity`` is given).

    Args:
        biases: :func:`language_bias`'s result.
        agreement: :func:`sign_agreement` of the biases and the disparity.
        section: the disparity and its name, the vectors' name, the table's length, the
            heading and the method measured with.
    """
    disparity, disparity_name = section.disparity, section.disparity_name
    vectors_name, top, heading = section.vectors_name, section.top, section.heading
    man_terms, woman_terms = section.method.man_terms, section.method.woman_terms
    whole_phrases = section.method.whole_phrases
    measured = [b for b in biases.values() if b.bias is not None]
    missing = [b for b in biases.values() if b.bias is None]
    source = f" from {vectors_name}" if vectors_name else ""
    lines = [
        heading,
        "",
        f"Word vectors{source}. Each concept's language bias is its mean cosine similarity "
        f"to the man terms ({', '.join(man_terms)}) minus the mean to the woman terms "
        f"({', '.join(woman_terms)})"
        + (
            ", the sets of Caliskan et al. (2017) the paper follows (Appendix A.3)"
            if tuple(man_terms) == MAN_TERMS and tuple(woman_terms) == WOMAN_TERMS
            else ""
        )
        + "; > 0: the concept's word sits closer to the man terms. "
        + (
            "A multi-word concept is looked up as one phrase"
            if whole_phrases
            else "A two-word concept averages its words' vectors"
        )
        + "; ambiguous synsets use a modifier phrase (knob.n.02 → knob handle).",
        "",
        f"{len(measured)} of {len(biases)} concepts have a language bias.",
        "",
    ]
    if agreement.n:
        lines.append(
            f"**Sign agreement** with the {disparity_name}: {agreement.agree} of "
            f"{agreement.n} concepts ({100 * (agreement.share or 0.0):.0f}%) have the same "
            "sign (the paper's yellow bars; unrelated signs agree half the time)."
        )
    else:
        lines.append(
            f"**Sign agreement**: no concept has both a language bias and a {disparity_name}."
        )
    lines.append("")
    if agreement.pearson_r is not None:
        lines += [
            f"Pearson r = {_cell(agreement.pearson_r)} (p {format_p(agreement.pearson_p)}), "
            f"Spearman ρ = {_cell(agreement.spearman_rho)} (p {format_p(agreement.spearman_p)}), "
            f"n = {agreement.n} concepts (two-sided p-values, scipy.stats)."
            + (
                f" With {agreement.n} concepts these p-values are rough (Spearman's comes "
                "from a t approximation)."
                if agreement.n < 10
                else ""
            ),
            "",
        ]
    elif agreement.reason:
        lines += [f"No correlations: {agreement.reason}.", ""]
    if missing:
        shown = ", ".join(f"{b.concept} ({', '.join(b.missing) or b.reason})" for b in missing[:20])
        more = f", and {len(missing) - 20} more" if len(missing) > 20 else ""
        lines += [
            f"**No language bias** for {len(missing)} "
            f"concept{'' if len(missing) == 1 else 's'} (a word without a vector; "
            f"left out, never counted as 0): {shown}{more}.",
            "",
        ]
    if measured:
        ranked = sorted(measured, key=lambda b: -abs(b.bias or 0.0))[:top]
        header = ["concept", "words", "cos to man terms", "cos to woman terms", "language bias"]
        if disparity is not None:
            header += [disparity_name, "same sign"]
        lines += [
            f"Top {len(ranked)} concepts by absolute language bias:",
            "",
        ]
        agreeing = set(agreement.agreeing)
        compared = set(agreement.concepts)
        rows = []
        for b in ranked:
            row = [b.concept, " ".join(b.words), _cell(b.man), _cell(b.woman), _cell(b.bias)]
            if disparity is not None:
                value = _finite(disparity.get(b.concept))
                same = "yes" if b.concept in agreeing else "no" if b.concept in compared else "–"
                row += [_cell(value, 2), same]
            rows.append(row)
        lines += markdown_table(header, rows)
    return "\n".join(lines)
