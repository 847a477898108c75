"""Tokenizers for the tiny models, written from small vocabularies (nothing is downloaded).

Two kinds, shared by every tiny builder (:mod:`contrastkit.tiny.vlm`,
:mod:`contrastkit.tiny.itm` and the test-only builders in ``tests/tiny_models.py``):

* a byte-level BPE (GPT-2 style, :func:`byte_bpe_tokenizer`): every byte is a token and
  the merges :data:`BYTE_BPE_MERGES` make `` his``, `` her``, `` and`` and ``The`` whole
  tokens, while `` their`` stays three (``Ġthe`` + ``i`` + ``r``), so multi-token
  continuations are exercised;
* a word-piece vocabulary (BERT style, :func:`wordpiece_tokenizer`): the special tokens,
  the given whole words, then letters and ``##`` letters, so any lower-case text
  tokenizes.

The token order is fixed, so a seeded builder writes the same model every time.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

__all__ = [
    "BYTE_BPE_MERGES",
    "WORDPIECE_PUNCTUATION",
    "byte_bpe_tokenizer",
    "bytes_to_unicode",
    "letters",
    "wordpiece_tokenizer",
    "write_byte_bpe_files",
    "write_wordpiece_vocab",
]

#: BPE merges: " his", " her", " and", "The" whole; " their" stays ``Ġthe`` + ``i`` + ``r``.
BYTE_BPE_MERGES = (
    "Ġ t", "Ġt h", "Ġth e", "Ġ h", "Ġh i", "Ġhi s", "Ġh e", "Ġhe r", "Ġ a", "Ġa n", "Ġan d",
    "T h", "Th e",
)  # fmt: skip

#: Punctuation tokens a word-piece vocabulary ends with unless told otherwise.
WORDPIECE_PUNCTUATION = (".", ",", "'", "-")


def letters() -> list[str]:
    """The lower-case letters ``a`` to ``z``."""
    return [chr(code) for code in range(ord("a"), ord("z") + 1)]


def bytes_to_unicode() -> dict[int, str]:
    """GPT-2's reversible byte -> printable character table."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("¡"), ord("¬") + 1))
        + list(range(ord("®"), ord("ÿ") + 1))
    )
    codes = printable[:]
    extra = 0
    for byte in range(256):
        if byte not in printable:
            printable.append(byte)
            codes.append(256 + extra)
            extra += 1
    return dict(zip(printable, [chr(code) for code in codes], strict=True))


def write_byte_bpe_files(folder: Path) -> tuple[Path, Path]:
    """Write a byte-level BPE ``vocab.json`` (``<pad>`` 0, ``</s>`` 1, ``<unk>`` 2, the 256
    byte characters, the merged tokens) and ``merges.txt`` (:data:`BYTE_BPE_MERGES`) into
    ``folder``; return their paths."""
    vocab: dict[str, int] = {"<pad>": 0, "</s>": 1, "<unk>": 2}
    for char in bytes_to_unicode().values():
        vocab.setdefault(char, len(vocab))
    for merge in BYTE_BPE_MERGES:
        vocab.setdefault("".join(merge.split()), len(vocab))
    vocab_path = folder / "vocab.json"
    merges_path = folder / "merges.txt"
    vocab_path.write_text(json.dumps(vocab), encoding="utf-8")
    merges_path.write_text("#version: 0.2\n" + "\n".join(BYTE_BPE_MERGES) + "\n", "utf-8")
    return vocab_path, merges_path


def byte_bpe_tokenizer(folder: Path, specials: Sequence[str] = (), **kwargs: Any) -> Any:
    """A ``GPT2Tokenizer`` over the files :func:`write_byte_bpe_files` writes into
    ``folder`` (``<unk>`` and ``<pad>`` set; ``kwargs`` such as ``bos_token`` passed on),
    with ``specials`` added as special tokens. Not saved: the caller saves it (or the
    processor holding it)."""
    from transformers import GPT2Tokenizer

    vocab, merges = write_byte_bpe_files(folder)
    tokenizer = GPT2Tokenizer(
        str(vocab), str(merges), unk_token="<unk>", pad_token="<pad>", **kwargs
    )
    if specials:
        tokenizer.add_special_tokens({"additional_special_tokens": list(specials)})
    return tokenizer


def write_wordpiece_vocab(
    folder: Path, words: Sequence[str], punctuation: Sequence[str] = WORDPIECE_PUNCTUATION
) -> Path:
    """Write a word-piece ``vocab.txt`` into ``folder``: ``[PAD]`` 0, ``[UNK]`` 1,
    ``[CLS]`` 2, ``[SEP]`` 3, ``[MASK]`` 4, then ``words``, letters, ``##`` letters and
    ``punctuation``; return its path."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    tokens += letters() + [f"##{letter}" for letter in letters()]
    tokens += punctuation
    path = folder / "vocab.txt"
    path.write_text("\n".join(tokens) + "\n", encoding="utf-8")
    return path


def wordpiece_tokenizer(
    folder: Path, words: Sequence[str], punctuation: Sequence[str] = WORDPIECE_PUNCTUATION
) -> int:
    """Save a lower-casing ``BertTokenizer`` over :func:`write_wordpiece_vocab`'s
    vocabulary into ``folder``; return the number of lines of its ``vocab.txt`` (the
    embedding size a model needs: a word also among the letters keeps both lines)."""
    from transformers import BertTokenizer

    vocab = write_wordpiece_vocab(folder, words, punctuation)
    BertTokenizer(str(vocab), do_lower_case=True).save_pretrained(folder)
    return len(vocab.read_text(encoding="utf-8").splitlines())
