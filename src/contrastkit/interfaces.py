"""The interfaces builders and evaluators meet at, in a module both may import.

* :class:`ImageTextScorer` — CLIP-like dual encoders (VisoGender Sec. 3.4, "VLEs";
  GenSynth Sec. 4.2 embeds crops with one): a compatibility score ``s(i, t)`` between an
  image and a text, and the unit-norm embeddings behind it.
* :class:`PronounScorer` — captioning models (VisoGender Sec. 3.4, "Captioning models"):
  the probability of a continuation after a partial caption given the image.
* :class:`CaptionScorer` — any model that scores each image against its own candidate
  captions (VLStereoSet Sec. 3.3): image-text-matching heads (the match logit), generative
  models (the caption's log-likelihood); dual encoders are adapted to it by cosine
  similarity.
* :class:`AnswerScorer` — models that answer a question about an image (decision
  probes): the log-probability of each option letter, and a generated answer.
* :class:`CaptionGenerator` — captioning models and generative VLMs that write their own
  description of an image (the ``descriptions`` capability).
* :class:`ImageOpener` and :data:`ImageSource` — where images come from: a path, bytes,
  an object of the image store, a dataset row's decoded image.
* :class:`ProgressFactory` — how a job reports progress, one display per stage: the
  command line passes a rich bar (:func:`contrastkit.cli.common.progress`), a notebook any
  ``contextmanager`` function of the same shape (a tqdm bar, a logger).

Nothing here imports torch: the protocols describe behaviour, the adapters in
``contrastkit.models`` implement it, and a test double or a user's own model
satisfies them structurally.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol, TypeAlias, runtime_checkable

import numpy as np
from PIL import Image

__all__ = [
    "AnswerScorer",
    "CaptionGenerator",
    "CaptionScorer",
    "ImageOpener",
    "ImageSource",
    "ImageTextScorer",
    "ProgressFactory",
    "PronounScorer",
    "caption_width",
    "progress_stage",
]

#: Something an image can be read from: a file path, encoded bytes, or a decoded image.
ImageSource: TypeAlias = "str | Path | bytes | Image.Image"


@runtime_checkable
class ImageOpener(Protocol):
    """Turns the references a dataset holds into decoded images (local files, URLs via the
    image store, dataset ``image`` columns)."""

    def open(self, source: ImageSource) -> Image.Image:
        """The decoded image ``source`` refers to."""
        ...


@runtime_checkable
class ImageTextScorer(Protocol):
    """A CLIP-like dual encoder: images and texts embedded into one space.

    ``encode_images`` / ``encode_texts`` return float32 arrays of shape ``(n, d)`` whose
    rows have unit L2 norm. ``score(images, texts)`` returns the ``(n_images, n_texts)``
    matrix of cosine similarities (dot products of the unit embeddings, in ``[-1, 1]``),
    without the model's temperature (logit scale) or bias: those are monotone, so the
    argmax over captions (resolution) and the ranking of images (retrieval) are the ones
    the model's own logits give.
    """

    spec: str

    def encode_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Unit-norm image embeddings, float32, shape ``(len(images), d)``."""
        ...

    def encode_texts(self, texts: Sequence[str]) -> np.ndarray:
        """Unit-norm text embeddings, float32, shape ``(len(texts), d)``."""
        ...

    def score(self, images: Sequence[Image.Image], texts: Sequence[str]) -> np.ndarray:
        """Cosine similarities, float32, shape ``(len(images), len(texts))``."""
        ...


@runtime_checkable
class PronounScorer(Protocol):
    """A captioning model scored by the log-probability of continuations.

    ``continuation_logprobs(images, prefixes, continuations)`` takes one prefix per image
    ("The doctor and") and the continuations shared by all images (" his", " her",
    " their"); it returns a float64 array of shape ``(len(images), len(continuations))``
    holding ``log p(continuation | image, prefix)``, the sum of the log-probabilities of
    the continuation's tokens, each conditioned on the image, the prefix and the tokens
    before it (VisoGender Sec. 3.4, ``p_cap(t_{N+1} | i, t_1..t_N)`` chained over the
    tokens of a continuation).
    """

    spec: str

    def continuation_logprobs(
        self,
        images: Sequence[Image.Image],
        prefixes: Sequence[str],
        continuations: Sequence[str],
    ) -> np.ndarray:
        """Log-probability of each continuation after each image's prefix."""
        ...


@runtime_checkable
class CaptionScorer(Protocol):
    """A model that scores how well each image matches each of its own candidate captions.

    ``caption_scores(images, captions)`` takes one sequence of candidate captions per image
    (the same number ``k`` for every image) and returns a float64 array of shape
    ``(len(images), k)``: higher means a better match. What the number is depends on the
    model and is stated by its adapter: the match logit of an image-text-matching head
    (BLIP ITM, ViLT), a caption's log-likelihood under a generative model. Scores are
    comparable across the captions of one image, which is all the probing tasks use
    (VLStereoSet Sec. 3.3 turns them into a softmax over the candidates).
    """

    spec: str

    def caption_scores(
        self, images: Sequence[Image.Image], captions: Sequence[Sequence[str]]
    ) -> np.ndarray:
        """Score of each image against each of its candidate captions, ``(n_images, k)``."""
        ...


@runtime_checkable
class AnswerScorer(Protocol):
    """A model that answers a question about an image (decision probes, the ``answers``
    capability): ``letter_logprobs(images, instructions, k)`` returns a float64
    ``(len(images), k)`` array, the log-probability of each of the first ``k`` option
    letters (A, B ...) as the answer to each image's instruction; ``generate_answers``
    the text it generates, at most ``max_new_tokens`` tokens each. A model that does
    only this is loaded for the tasks that ask questions."""

    spec: str

    def letter_logprobs(
        self, images: Sequence[Image.Image], instructions: Sequence[str], k: int
    ) -> np.ndarray:
        """Log-probability of each option letter, ``(n_images, k)``."""
        ...

    def generate_answers(
        self, images: Sequence[Image.Image], instructions: Sequence[str], max_new_tokens: int
    ) -> list[str]:
        """The generated answer to each image's instruction."""
        ...


@runtime_checkable
class CaptionGenerator(Protocol):
    """A model that writes a caption of an image (the ``descriptions`` capability):
    ``generate_captions(images, max_new_tokens)`` returns one string per image, the text
    decoded by greedy search (no sampling, one beam, so the same image always gets the
    same caption, whatever else is in its batch) of at most ``max_new_tokens`` tokens,
    special tokens dropped and surrounding white space stripped (possibly empty).

    What "a caption" is depends on the family: for BLIP and GIT the unconditional caption
    (generated after the start token alone); for BLIP-2 the caption after an empty prompt;
    for InstructBLIP the answer to its captioning instruction
    (:data:`~contrastkit.models.caption_options.DEFAULT_INSTRUCTION`, or the spec's
    ``?instruction=``); for a generative VLM (``vlm:``) its answer to
    :data:`~contrastkit.models.vlm_spec.DESCRIBE_INSTRUCTION` ("Describe the image in one
    sentence.").
    """

    spec: str

    def generate_captions(self, images: Sequence[Image.Image], max_new_tokens: int) -> list[str]:
        """The generated caption of each image."""
        ...


def caption_width(images: Sequence[object], captions: Sequence[Sequence[str]]) -> int:
    """The number ``k`` of candidate captions each image has in a
    :meth:`CaptionScorer.caption_scores` call (0 for no images), checked.

    Raises:
        ValueError: ``captions`` does not have one sequence per image, or the sequences
            differ in length.
    """
    if len(captions) != len(images):
        raise ValueError(
            f"one sequence of captions per image: {len(images)} images, {len(captions)} given"
        )
    widths = {len(row) for row in captions}
    if len(widths) > 1:
        raise ValueError(f"every image needs the same number of captions, not {sorted(widths)}")
    return next(iter(widths), 0)


class ProgressFactory(Protocol):
    """Opens a progress display for one stage of a job: ``progress(label, total)`` is a
    context manager yielding ``update(done, total)`` (``done`` of ``total`` steps of the
    stage are finished; ``total`` may be ``None`` until it is known)."""

    def __call__(
        self, label: str, total: int | None = None
    ) -> AbstractContextManager[Callable[..., None]]: ...


@contextmanager
def progress_stage(
    progress: ProgressFactory | None, label: str, total: int | None = None
) -> Iterator[Callable[..., None]]:
    """The stage's ``update(done, total)`` from ``progress``, or one that does nothing when
    the caller asked for no progress display."""
    if progress is None:
        yield lambda *args, **kwargs: None
        return
    with progress(label, total) as update:
        yield update
