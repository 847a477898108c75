"""Tiny image-text-matching models (real architectures, random weights), saved as model
folders the registry loads: ``blip-itm:FOLDER`` (``BlipForImageTextRetrieval``) and
``vilt:FOLDER`` (``ViltForImageAndTextRetrieval``).

Each folder holds what ``save_pretrained`` writes (config, weights), a word-piece
tokenizer over a small vocabulary (whole words for the usual probe captions, plus letters
and ``##`` letters, so any lower-case text tokenizes) and the image processor, and carries
the random-weights marker (:mod:`contrastkit.tiny.marker`): every report of these models
says its figures are a pipeline check. Hidden size 32, two layers, 32-pixel images: a few
hundred thousand parameters, built and run in well under a second on a CPU.
"""

from __future__ import annotations

from pathlib import Path

from contrastkit.tiny.configs import IMAGE_SIZE, blip_text_config, vision_config
from contrastkit.tiny.marker import mark_random_weights
from contrastkit.tiny.tokenizers import WORDPIECE_PUNCTUATION, wordpiece_tokenizer

__all__ = ["IMAGE_SIZE", "WORDS", "tiny_blip_itm", "tiny_vilt"]

#: Words the tiny tokenizers know whole (anything else splits into letters).
WORDS = (
    "my", "the", "a", "is", "was", "are", "he", "she", "they", "sister", "brother",
    "sibling", "mother", "father", "parent", "man", "woman", "person", "people",
    "caring", "rude", "kind", "strong", "weak", "hi", "nurse", "engineer", "chess",
    "player", "smart", "lazy", "photo", "of", "and",
)  # fmt: skip


def _tokenizer(path: Path) -> int:
    """Save a word-piece tokenizer over :data:`WORDS` into ``path``; return its size."""
    return wordpiece_tokenizer(path, WORDS, (*WORDPIECE_PUNCTUATION, "!", "?"))


def tiny_blip_itm(folder: Path, name: str = "tiny-blip-itm", seed: int = 0) -> str:
    """Write a tiny ``BlipForImageTextRetrieval`` folder under ``folder/name`` and return
    its spec, ``blip-itm:FOLDER``. Seeded: the same weights every time."""
    import torch
    from transformers import BlipConfig, BlipForImageTextRetrieval, BlipImageProcessor

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    vocab_size = _tokenizer(path)
    torch.manual_seed(seed)
    config = BlipConfig(
        text_config=blip_text_config(vocab_size, bos_token_id=2),
        vision_config=vision_config(),
        projection_dim=32,
    )
    BlipForImageTextRetrieval(config).save_pretrained(path)
    BlipImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}).save_pretrained(path)
    mark_random_weights(path, "tiny BLIP ITM model (contrastkit.tiny.itm)")
    return f"blip-itm:{path}"


def tiny_vilt(
    folder: Path, name: str = "tiny-vilt", seed: int = 0, initializer_range: float = 0.02
) -> str:
    """Write a tiny ``ViltForImageAndTextRetrieval`` folder under ``folder/name`` and
    return its spec, ``vilt:FOLDER``. Its image processor keeps ViLT's aspect-preserving
    resize (shorter side 32 pixels, sides multiples of 8) and pads with a pixel mask.

    ``initializer_range``: the standard deviation of the random weights. At ViLT's
    0.02 the tiny model scores every caption of an image alike (differences near float32
    rounding, 1e-9 to 1e-7); a larger one makes its scores depend on the image and text
    well above rounding, as a test that compares figures across CPUs needs."""
    import torch
    from transformers import ViltConfig, ViltForImageAndTextRetrieval, ViltImageProcessor

    path = Path(folder) / name
    path.mkdir(parents=True, exist_ok=True)
    vocab_size = _tokenizer(path)
    torch.manual_seed(seed)
    config = ViltConfig(
        vocab_size=vocab_size,
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=4,
        intermediate_size=37,
        max_position_embeddings=32,
        image_size=IMAGE_SIZE,
        patch_size=8,
        max_image_length=-1,
        initializer_range=initializer_range,
    )
    ViltForImageAndTextRetrieval(config).save_pretrained(path)
    processor = ViltImageProcessor(size={"shortest_edge": IMAGE_SIZE}, size_divisor=8)  # type: ignore[call-arg]
    processor.save_pretrained(path)
    mark_random_weights(path, "tiny ViLT retrieval model (contrastkit.tiny.itm)")
    return f"vilt:{path}"
