"""Word vectors for Experiment 3 of the zero-shot disparity paper (Sec. 3.3 and
Appendix A.3): where the vector of a concept's word and of each gendered term comes from.

Two sources, both behind :class:`WordVectors`:

* a word2vec (text or binary) or GloVe file, read through gensim's ``KeyedVectors``
  (:func:`load_word_vectors`; ``pip install "contrastkit[words]"``): the paper used
  word2vec trained on Google News;
* the text encoder of the very model under test (:func:`model_word_vectors`), which the
  paper did not do, so a model's own language bias can be set beside its own AP gaps.

:mod:`.words` measures the language bias with them.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from contrastkit.errors import ConfigError, DataFormatError

if TYPE_CHECKING:
    from contrastkit.interfaces import ImageTextScorer

__all__ = [
    "WORDS_INSTALL_HINT",
    "KeyedWordVectors",
    "ModelWordVectors",
    "WordVectors",
    "load_word_vectors",
    "model_word_vectors",
    "require_gensim",
]

#: How to install the optional dependency that reads word vector files.
WORDS_INSTALL_HINT = 'pip install "contrastkit[words]"'


@runtime_checkable
class WordVectors(Protocol):
    """Where word vectors come from: a file (:class:`KeyedWordVectors`), a model's text
    encoder (:class:`ModelWordVectors`), or anything with these members.

    ``vector(word)`` is the word's vector, or ``None`` when there is none (never a zero
    vector in its place); ``name`` is a short name for reports; ``source`` says where the
    vectors come from (a file path, a model spec).
    """

    @property
    def name(self) -> str:
        """A short name for reports."""
        ...

    @property
    def source(self) -> str:
        """Where the vectors come from."""
        ...

    def vector(self, word: str) -> np.ndarray | None:
        """The vector of ``word`` (1-d), or ``None`` when it has none."""
        ...


def require_gensim(field: str = "word_vectors") -> None:
    """Raise :class:`ConfigError` naming ``field`` unless gensim can be imported (checked
    without importing it): for a job's config validation, before long work starts."""
    try:
        found = importlib.util.find_spec("gensim") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(
            f"{field}: reading word2vec / GloVe files needs gensim: {WORDS_INSTALL_HINT}"
        )


@dataclass(frozen=True)
class KeyedWordVectors:
    """Vectors read from a word2vec or GloVe file (gensim ``KeyedVectors``).

    A word is looked up as given, then with spaces as underscores (word2vec's phrase
    tokens: ``New_York``), then lower-cased (GloVe files are lower case).
    """

    keyed: Any  # gensim.models.KeyedVectors
    path: Path
    format: str  # "word2vec-binary", "word2vec-text" or "glove-text"

    @property
    def name(self) -> str:
        """The file's name."""
        return self.path.name

    @property
    def source(self) -> str:
        """The file and its format."""
        return f"{self.format} file {self.path}"

    def __len__(self) -> int:
        return len(self.keyed)

    def vector(self, word: str) -> np.ndarray | None:
        """The word's vector (float64 copy), or ``None`` when the file has none."""
        for key in dict.fromkeys((word, word.replace(" ", "_"), word.lower())):
            if key in self.keyed:
                return np.array(self.keyed[key], dtype=np.float64)
        return None


class ModelWordVectors:
    """A dual encoder's own text embeddings as word vectors: the text of a word is
    ``template.format(word)``, encoded by ``scorer.encode_texts`` (unit norm), and cached
    per word. Every word has a vector."""

    def __init__(self, scorer: ImageTextScorer, template: str = "{}") -> None:
        if "{}" not in template:
            raise ConfigError(f"template: must contain {{}} for the word, not {template!r}")
        self.scorer = scorer
        self.template = template
        self._cache: dict[str, np.ndarray] = {}

    @property
    def name(self) -> str:
        """``text encoder of SPEC``."""
        return f"text encoder of {self.scorer.spec}"

    @property
    def source(self) -> str:
        """The model spec (and the template when it is not the bare word)."""
        spec = self.scorer.spec
        return spec if self.template == "{}" else f"{spec}, text {self.template!r}"

    def prefetch(self, words: Iterable[str]) -> None:
        """Encode the words not cached yet in one batched call."""
        missing = [w for w in dict.fromkeys(words) if w not in self._cache]
        if not missing:
            return
        rows = self.scorer.encode_texts([self.template.format(w) for w in missing])
        for word, row in zip(missing, rows, strict=True):
            self._cache[word] = np.asarray(row, dtype=np.float64)

    def vector(self, word: str) -> np.ndarray:
        """The encoder's unit-norm embedding of the word's text (float64)."""
        if word not in self._cache:
            self.prefetch([word])
        return self._cache[word].copy()

    def __repr__(self) -> str:
        return f"ModelWordVectors({self.scorer.spec!r}, template={self.template!r})"


def model_word_vectors(scorer: ImageTextScorer, *, template: str = "{}") -> ModelWordVectors:
    """Word vectors from the text encoder of the model under test (what the paper did not
    do: it used word2vec): each word or phrase is encoded as ``template.format(word)``
    (default the bare word) and cached, so the language bias of the same model whose AP
    gaps are measured can be compared with them."""
    return ModelWordVectors(scorer, template)


def _sniff(path: Path, binary: bool | None) -> tuple[bool, bool]:
    """``(binary, has_header)`` of a vector file from its first two lines."""
    from gensim import utils

    with utils.open(str(path), "rb") as handle:
        first = handle.readline(1 << 20)
        second = handle.readline(1 << 20)
    if not first.strip():
        raise DataFormatError(path, 1, None, "empty: not a word2vec or GloVe vector file")
    try:
        tokens = first.decode("utf-8").split()
    except UnicodeDecodeError as exc:
        raise DataFormatError(
            path, 1, None, "not a word2vec or GloVe file: the first line is not UTF-8 text"
        ) from exc
    header = len(tokens) == 2 and all(t.isdigit() for t in tokens)
    if not header:
        if binary:
            raise ConfigError(
                f"binary: {path} has no word2vec header line 'COUNT DIMENSION', so it cannot "
                "be a binary word2vec file (a GloVe file is text: leave binary unset)"
            )
        if len(tokens) < 2 or not all(_is_float(t) for t in tokens[1:]):
            raise DataFormatError(
                path,
                1,
                None,
                "neither a word2vec header 'COUNT DIMENSION' nor a GloVe row 'WORD V1 V2 ...'",
            )
        return False, False
    if binary is not None:
        return binary, True
    dimension = int(tokens[1])
    try:
        row = second.decode("utf-8").split()
    except UnicodeDecodeError:
        return True, True
    text = len(row) == dimension + 1 and all(_is_float(t) for t in row[1:])
    return not text, True


def _is_float(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def load_word_vectors(
    path: Path, *, binary: bool | None = None, limit: int | None = None
) -> KeyedWordVectors:
    """Read a word vector file through gensim ``KeyedVectors.load_word2vec_format``.

    Formats: word2vec binary (``GoogleNews-vectors-negative300.bin``, the paper's), word2vec
    text (a ``COUNT DIMENSION`` header, then ``WORD V1 ... VD`` rows) and GloVe text (the
    rows without a header, read with ``no_header=True``); gzip / bz2 compressed files by
    their suffix. The format is recognised from the content: a first line of two integers
    is a word2vec header, and the second line tells text rows from binary ones.

    Args:
        path: the vector file.
        binary: force binary (``True``) or text (``False``) word2vec; ``None`` sniffs it.
        limit: read only the first ``limit`` vectors (the most frequent words in the
            Google News file), to save memory; ``None`` reads all.

    Raises:
        ConfigError: the file does not exist or is a folder; gensim is not installed (the
            message says ``pip install "contrastkit[words]"``); ``binary=True`` for a file
            without a word2vec header; ``limit`` below 1.
        DataFormatError: the file is not a readable word2vec / GloVe file (gensim's error
            chained).
    """
    path = Path(path)
    require_gensim("word_vectors")
    if limit is not None and limit < 1:
        raise ConfigError(f"limit: must be at least 1 (or None for all vectors), not {limit}")
    if not path.exists():
        raise ConfigError(
            f"word_vectors: {path} does not exist; pass a word2vec (.bin or .txt) or GloVe "
            "(.txt) vector file, such as GoogleNews-vectors-negative300.bin"
        )
    if path.is_dir():
        raise ConfigError(f"word_vectors: {path} is a folder, not a word vector file")
    from gensim.models import KeyedVectors

    try:
        is_binary, header = _sniff(path, binary)
    except OSError as exc:
        raise DataFormatError(path, None, None, f"cannot be read: {exc}") from exc
    kind = "word2vec-binary" if is_binary else "word2vec-text" if header else "glove-text"
    try:
        keyed = KeyedVectors.load_word2vec_format(
            str(path), binary=is_binary, no_header=not header, limit=limit
        )
    except (ValueError, UnicodeDecodeError, EOFError, OSError, AssertionError) as exc:
        raise DataFormatError(
            path, None, None, f"cannot be read as a {kind} vector file: {exc}"
        ) from exc
    if len(keyed) == 0:
        raise DataFormatError(path, None, None, f"holds no vectors ({kind})")
    return KeyedWordVectors(keyed, path, kind)
