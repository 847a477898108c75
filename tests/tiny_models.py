"""Tiny models with real architectures (random weights), saved to a folder and returned as
the model spec the registry loads them by.

Each builder writes everything the loader needs (weights, config, tokenizer files, image
processor) into ``folder`` and returns a spec string for
:func:`contrastkit.models.load_model`. Models are seeded, so a builder writes the
same weights every time; all build in well under a second on a CPU.

The word-piece vocabulary has no ``their``: it splits into ``the`` + ``##ir``, and the
byte-level BPE vocabulary of the BLIP-2 model splits `` their`` into several pieces too, so
multi-token continuations are exercised.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from contrastkit.tiny.clip import IMAGE_SIZE, open_clip_config, tiny_open_clip
from contrastkit.tiny.configs import blip_text_config, vision_config
from contrastkit.tiny.tokenizers import byte_bpe_tokenizer, letters, wordpiece_tokenizer

#: Words the tiny tokenizers know as whole tokens (their is missing on purpose).
WORDS = (
    "the",
    "a",
    "and",
    "his",
    "her",
    "doctor",
    "patient",
    "teacher",
    "student",
    "board",
    "clipboard",
    "lawyer",
    "client",
    "desk",
    "baker",
    "customer",
    "photo",
    "of",
)
__all__ = ["IMAGE_SIZE", "tiny_open_clip"]  # re-exported for the tests


def _clip_bpe_files(folder: Path) -> tuple[Path, Path]:
    """A CLIP-style BPE ``vocab.json`` + ``merges.txt`` covering lower-case words."""
    vocab: dict[str, int] = {"<|startoftext|>": 0, "<|endoftext|>": 1}
    for letter in letters():
        vocab[letter] = len(vocab)
    for letter in letters():
        vocab[letter + "</w>"] = len(vocab)
    merges = ["#version: 0.2", "t h", "th e</w>", "a n", "an d</w>", "h i", "hi s</w>"]
    for merge in merges[1:]:
        vocab["".join(merge.split())] = len(vocab)
    vocab_path = folder / "vocab.json"
    merges_path = folder / "merges.txt"
    vocab_path.write_text(json.dumps(vocab), encoding="utf-8")
    merges_path.write_text("\n".join(merges) + "\n", encoding="utf-8")
    return vocab_path, merges_path


def _folder(folder: Path, name: str) -> Path:
    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    return path


def tiny_open_clip_checkpoint(folder: Path, arch: str = "contrastkit-tiny-clip") -> str:
    """Registers the tiny architecture under ``arch`` with OpenCLIP and saves a checkpoint
    file; spec ``open_clip:ARCH/CHECKPOINT`` (the checkpoint-path form)."""
    import open_clip

    path = _folder(folder, "tiny-open-clip-checkpoint")
    config_path = path / f"{arch}.json"
    config_path.write_text(json.dumps(open_clip_config()), encoding="utf-8")
    open_clip.add_model_config(config_path)
    torch.manual_seed(1)
    model = open_clip.CLIP(**open_clip_config())  # type: ignore[arg-type]
    checkpoint = path / "tiny.pt"
    torch.save(model.state_dict(), checkpoint)
    return f"open_clip:{arch}/{checkpoint}"


def _save_clip_tokenizer(path: Path) -> None:
    from transformers import CLIPTokenizer

    vocab, merges = _clip_bpe_files(path)
    CLIPTokenizer(str(vocab), str(merges)).save_pretrained(path)


def _clip_text_vision(hidden: int = 32) -> tuple[dict[str, object], dict[str, object]]:
    text = {
        "vocab_size": 80,
        "hidden_size": hidden,
        "intermediate_size": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "max_position_embeddings": 32,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "pad_token_id": 1,
    }
    return text, vision_config(hidden)


def tiny_hf_clip(folder: Path, name: str = "tiny-hf-clip") -> str:
    """A transformers ``CLIPModel`` folder with tokenizer and image processor; spec
    ``hf-clip:FOLDER``."""
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel

    path = _folder(folder, name)
    torch.manual_seed(0)
    text, vision = _clip_text_vision()
    config = CLIPConfig(text_config=text, vision_config=vision, projection_dim=32)
    CLIPModel(config).eval().save_pretrained(path)
    _save_clip_tokenizer(path)
    size = {"shortest_edge": IMAGE_SIZE}
    crop = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    CLIPImageProcessor(size=size, crop_size=crop).save_pretrained(path)
    return f"hf-clip:{path}"


def tiny_siglip(folder: Path, name: str = "tiny-siglip") -> str:
    """A transformers ``SiglipModel`` folder; spec ``hf-clip:FOLDER``."""
    from transformers import SiglipConfig, SiglipImageProcessor, SiglipModel

    path = _folder(folder, name)
    torch.manual_seed(0)
    text, vision = _clip_text_vision()
    config = SiglipConfig(text_config=text, vision_config=vision)
    SiglipModel(config).eval().save_pretrained(path)
    _save_clip_tokenizer(path)
    SiglipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    return f"hf-clip:{path}"


def _bert_tokenizer(path: Path, extra: tuple[str, ...] = ()) -> int:
    """Save a word-piece tokenizer (``extra``, :data:`WORDS`, ``##ir``, letters) into
    ``path``; return its vocabulary size."""
    return wordpiece_tokenizer(path, (*extra, *WORDS, "##ir"))


def tiny_blip(folder: Path, name: str = "tiny-blip") -> str:
    """A transformers ``BlipForConditionalGeneration`` folder; spec ``blip:FOLDER``."""
    from transformers import BlipConfig, BlipForConditionalGeneration, BlipImageProcessor

    path = _folder(folder, name)
    vocab_size = _bert_tokenizer(path, extra=("[DEC]",))
    torch.manual_seed(0)
    config = BlipConfig(
        text_config=blip_text_config(vocab_size, bos_token_id=5),  # [DEC]
        vision_config=vision_config(),
        projection_dim=32,
    )
    BlipForConditionalGeneration(config).eval().save_pretrained(path)
    BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    return f"blip:{path}"


def tiny_git(folder: Path, name: str = "tiny-git") -> str:
    """A transformers ``GitForCausalLM`` folder; spec ``git:FOLDER``."""
    from transformers import CLIPImageProcessor, GitConfig, GitForCausalLM

    path = _folder(folder, name)
    vocab_size = _bert_tokenizer(path)
    torch.manual_seed(0)
    config = GitConfig(
        vision_config=vision_config(),
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=64,
        bos_token_id=2,  # [CLS]
        eos_token_id=3,  # [SEP]
        pad_token_id=0,
    )
    GitForCausalLM(config).eval().save_pretrained(path)
    size = {"shortest_edge": IMAGE_SIZE}
    crop = {"height": IMAGE_SIZE, "width": IMAGE_SIZE}
    CLIPImageProcessor(size=size, crop_size=crop).save_pretrained(path)
    return f"git:{path}"


def tiny_blip2(folder: Path, name: str = "tiny-blip2") -> str:
    """A transformers ``Blip2ForConditionalGeneration`` (OPT decoder) folder with a GPT-2
    style tokenizer; spec ``blip2:FOLDER``."""
    from transformers import Blip2Config, Blip2ForConditionalGeneration, BlipImageProcessor

    path = _folder(folder, name)
    vocab_size = _gpt2_tokenizer(path) + 1
    torch.manual_seed(0)
    config = Blip2Config(
        vision_config=vision_config(layers=1),
        qformer_config=_qformer_config(max_position_embeddings=32),
        text_config=_opt_text_config(vocab_size, max_positions=64),
        num_query_tokens=4,
        image_token_index=vocab_size - 1,
    )
    Blip2ForConditionalGeneration(config).eval().save_pretrained(path)
    BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    return f"blip2:{path}"


# --- encoder-decoder captioners (BLIP-2 FLAN-T5, InstructBLIP) -------------------------


def _t5_tokenizer(path: Path) -> int:
    """A T5 (SentencePiece-style Unigram) tokenizer built from a word list, saved to
    ``path``; `` his`` / `` her`` are one piece each, `` their`` three (``▁the i r``).
    Returns the tokenizer's size."""
    from transformers import T5Tokenizer

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0)]
    words = (*WORDS, "short", "image", "caption", "The", "A")
    pieces += [(f"▁{word}", -2.0) for word in dict.fromkeys(words)]
    pieces.append(("▁", -3.0))
    chars = "".join(letters()) + "".join(letters()).upper() + ".,:'-"
    pieces += [(char, -5.0) for char in chars]
    tokenizer = T5Tokenizer(vocab=pieces, extra_ids=0)
    tokenizer.save_pretrained(path)
    return len(tokenizer)


def _t5_text_config(vocab_size: int) -> dict[str, object]:
    """A one-layer FLAN-T5 style language model (gated GELU, untied head)."""
    return {
        "model_type": "t5",
        "vocab_size": vocab_size,
        "d_model": 32,
        "d_kv": 8,
        "d_ff": 37,
        "num_layers": 1,
        "num_decoder_layers": 1,
        "num_heads": 4,
        "relative_attention_num_buckets": 8,
        "relative_attention_max_distance": 16,
        "feed_forward_proj": "gated-gelu",
        "initializer_factor": 0.2,  # logits of a few units, like a trained model
        "tie_word_embeddings": False,
        "decoder_start_token_id": 0,
        "pad_token_id": 0,
        "eos_token_id": 1,
    }


def _opt_text_config(vocab_size: int, max_positions: int = 96) -> dict[str, object]:
    """A two-layer OPT language model (decoder-only, like Vicuna)."""
    return {
        "model_type": "opt",
        "vocab_size": vocab_size,
        "hidden_size": 32,
        "ffn_dim": 37,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "word_embed_proj_dim": 32,
        "max_position_embeddings": max_positions,
        "bos_token_id": 1,
        "eos_token_id": 1,
        "pad_token_id": 0,
    }


def _gpt2_tokenizer(path: Path) -> int:
    """Save the byte-level BPE tokenizer (BOS/EOS ``</s>``, BOS prepended) into ``path``;
    return its size."""
    tokenizer = byte_bpe_tokenizer(path, bos_token="</s>", eos_token="</s>", add_bos_token=True)
    tokenizer.save_pretrained(path)
    return len(tokenizer)


def _qformer_config(**extra: object) -> dict[str, object]:
    return {
        "vocab_size": 64,
        "hidden_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "intermediate_size": 37,
        "encoder_hidden_size": 32,
        "max_position_embeddings": 64,
        **extra,
    }


def tiny_blip2_t5(folder: Path, name: str = "tiny-blip2-t5") -> str:
    """A transformers ``Blip2ForConditionalGeneration`` with a FLAN-T5 style
    encoder-decoder language model and a T5 (Unigram) tokenizer, marked random; spec
    ``blip2:FOLDER``."""
    from transformers import Blip2Config, Blip2ForConditionalGeneration, BlipImageProcessor

    from contrastkit.tiny.marker import mark_random_weights

    path = _folder(folder, name)
    vocab_size = _t5_tokenizer(path) + 1  # + the image placeholder token
    torch.manual_seed(0)
    config = Blip2Config(
        vision_config=vision_config(layers=1),
        qformer_config=_qformer_config(),
        text_config=_t5_text_config(vocab_size),
        num_query_tokens=4,
        image_token_index=vocab_size - 1,
    )
    Blip2ForConditionalGeneration(config).eval().save_pretrained(path)
    BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    mark_random_weights(path, "tiny BLIP-2 with a FLAN-T5 style language model")
    return f"blip2:{path}"


def tiny_instructblip(folder: Path, language: str = "t5", name: str | None = None) -> str:
    """A transformers ``InstructBlipForConditionalGeneration`` whose language model is
    FLAN-T5 style (``language="t5"``) or OPT (``"opt"``, decoder-only like Vicuna), with
    its Q-Former's own word-piece tokenizer in ``qformer_tokenizer/`` (where
    ``InstructBlipProcessor`` keeps it), marked random; spec ``instructblip:FOLDER``."""
    from transformers import (
        BlipImageProcessor,
        InstructBlipConfig,
        InstructBlipForConditionalGeneration,
    )

    from contrastkit.tiny.marker import mark_random_weights

    path = _folder(folder, name or f"tiny-instructblip-{language}")
    if language == "t5":
        vocab_size = _t5_tokenizer(path) + 1
        text_config = _t5_text_config(vocab_size)
    else:
        vocab_size = _gpt2_tokenizer(path) + 1
        text_config = _opt_text_config(vocab_size)
    qformer_path = path / "qformer_tokenizer"
    qformer_path.mkdir(exist_ok=True)
    qformer_vocab_size = _bert_tokenizer(qformer_path, extra=("short", "image", "caption", ":"))
    torch.manual_seed(0)
    config = InstructBlipConfig(
        vision_config=vision_config(layers=1),
        qformer_config=_qformer_config(vocab_size=qformer_vocab_size, pad_token_id=0),
        text_config=text_config,
        num_query_tokens=4,
        image_token_index=vocab_size - 1,
    )
    InstructBlipForConditionalGeneration(config).eval().save_pretrained(path)
    BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    mark_random_weights(path, f"tiny InstructBLIP with a {language.upper()} language model")
    return f"instructblip:{path}"
