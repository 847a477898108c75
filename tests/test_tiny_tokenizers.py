"""The tokenizers every tiny model is built with (contrastkit.tiny.tokenizers): what the
pronoun tests rely on (" his" one token, " their" several) and the vocabulary sizes the
model configs are given."""

from __future__ import annotations

from pathlib import Path

from contrastkit.tiny.tokenizers import (
    byte_bpe_tokenizer,
    bytes_to_unicode,
    letters,
    wordpiece_tokenizer,
)


def test_the_byte_table_is_a_bijection_onto_printable_characters() -> None:
    table = bytes_to_unicode()
    assert sorted(table) == list(range(256))
    assert len(set(table.values())) == 256
    assert all(char.isprintable() and not char.isspace() for char in table.values())
    assert table[ord(" ")] == "Ġ"


def test_byte_bpe_keeps_his_and_her_whole_and_splits_their(tmp_path: Path) -> None:
    tokenizer = byte_bpe_tokenizer(tmp_path, ("<image>",), bos_token="</s>", eos_token="</s>")
    assert tokenizer.tokenize(" his") == ["Ġhis"]
    assert tokenizer.tokenize(" her") == ["Ġher"]
    assert tokenizer.tokenize(" their") == ["Ġthe", "i", "r"]
    assert tokenizer.tokenize("The doctor") == ["The", "Ġ", "d", "o", "c", "t", "o", "r"]
    assert tokenizer.convert_tokens_to_ids(["<pad>", "</s>", "<unk>"]) == [0, 1, 2]
    image = tokenizer.convert_tokens_to_ids("<image>")
    assert image == len(tokenizer) - 1 and tokenizer.decode([image]) == "<image>"
    text = "Ünïcödé and émojis 🙂"  # any bytes round-trip
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False)["input_ids"]) == text
    assert (tmp_path / "vocab.json").is_file() and (tmp_path / "merges.txt").is_file()


def test_wordpiece_size_covers_every_id_and_unknown_words_split_into_letters(
    tmp_path: Path,
) -> None:
    from transformers import BertTokenizer

    size = wordpiece_tokenizer(tmp_path, ("[DEC]", "doctor", "the", "a"))
    tokenizer = BertTokenizer.from_pretrained(tmp_path)
    lines = (tmp_path / "vocab.txt").read_text(encoding="utf-8").splitlines()
    assert size == len(lines) == 5 + 4 + 2 * len(letters()) + 4
    # "a" is a word and a letter: two lines, one entry; the embedding still needs every line
    assert len(tokenizer.vocab) == size - 1 and max(tokenizer.vocab.values()) == size - 1
    assert tokenizer.tokenize("The Doctor") == ["the", "doctor"]
    assert tokenizer.tokenize("their") == ["the", "##i", "##r"]
    assert tokenizer.convert_tokens_to_ids("[DEC]") == 5
    assert tokenizer("doctor")["input_ids"] == [2, 6, 3]  # [CLS] doctor [SEP]
