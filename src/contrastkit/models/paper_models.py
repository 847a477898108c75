"""The models of the VisoGender paper (Hall et al. 2023, Sec. 4 and Tables 2, 3 and 5) as
contrastkit specs, for the ones a public checkpoint exists for, and why not for the others.

The paper evaluates six dual encoders ("VLEs", all ViT-B/32: "For all VLEs, we use
ViT-B/32 encoders") and two captioning models; its official code
(``oxai/visogender``, ``src/clip_set_up.py`` and ``src/captioning_set_up.py``) names the
checkpoints of CLIP (``clip.load("ViT-B/32")``), BLIP-2 (``Salesforce/blip2-opt-2.7b``)
and BLIP (``Salesforce/blip-image-captioning-large``, set up in the code but not a row of
the tables). The ImageNet zero-shot accuracies Table 2 reports identify the others:
OpenCLIP's LAION-400M ViT-B/32 reached 62.9 % (tag ``laion400m_e32``); SLIP (34.3),
DeCLIP (43.2) and FILIP (39.5) are exactly the ViT-B/32 YFCC-15M models of the
CLIP-Benchmark (Cui et al. 2022, ``Sense-GVT/DeCLIP``), whose weights are Google Drive
files for that repository's own model code.

:data:`VISOGENDER_MODELS` is the table; ``docs/models.md`` renders it and
``contrastkit models list --paper visogender`` prints it. This module imports nothing
heavy (no torch, no open_clip): it is data.
"""

from __future__ import annotations

from dataclasses import dataclass

from contrastkit.text import escape_cell, table_header, table_row

__all__ = ["PAPERS", "VISOGENDER_MODELS", "PaperModel", "markdown_table", "paper_models"]


@dataclass(frozen=True)
class PaperModel:
    """One model of a paper's tables.

    Attributes:
        name: the model's name as the paper's table prints it ("OpenCLIP 2B").
        tables: the tables it is a row of (``("2", "3", "5")``), empty when it only
            appears in the paper's code.
        kind: ``"dual"`` (a dual encoder, "VLE") or ``"captioning"``.
        spec: the contrastkit spec that loads the checkpoint, or ``None`` when none can.
        note: which checkpoint and how it was identified, or why it cannot be loaded.
        imagenet_zero_shot: the ImageNet zero-shot top-1 accuracy (%) the paper reports
            (Table 2's last column), when it does.
        alternatives: other specs for the same or a closely related checkpoint.
    """

    name: str
    tables: tuple[str, ...]
    kind: str
    spec: str | None
    note: str
    imagenet_zero_shot: float | None = None
    alternatives: tuple[str, ...] = ()

    @property
    def loadable(self) -> bool:
        """Whether a contrastkit spec loads it."""
        return self.spec is not None


def _yfcc_model(name: str, accuracy: float, extra: str) -> PaperModel:
    """A dual encoder of Table 2 that is one of the CLIP-Benchmark's ViT-B/32 YFCC-15M
    models (SLIP, DeCLIP, FILIP): not loadable, and why."""
    note = (
        f"Not loadable: the paper's {name} is the ViT-B/32 trained on YFCC-15M of the "
        f"CLIP-Benchmark (Cui et al. 2022; its reported {accuracy} % ImageNet zero-shot "
        "accuracy is that model zoo's), whose only weights are Google Drive files for the "
        "Sense-GVT/DeCLIP repository's own model code: no OpenCLIP pretrained tag, no Hugging "
        "Face Hub checkpoint, and contrastkit does not implement that code's architecture or "
        f"checkpoint layout. {extra}"
    )
    return PaperModel(
        name=name,
        tables=("2", "3", "5"),
        kind="dual",
        spec=None,
        note=note,
        imagenet_zero_shot=accuracy,
    )


#: VisoGender's models, in the order of its Table 2 (then BLIP, from its code).
VISOGENDER_MODELS: tuple[PaperModel, ...] = (
    PaperModel(
        name="CLIP",
        tables=("2", "3", "4", "5"),
        kind="dual",
        spec="open_clip:ViT-B-32/openai",
        note=(
            "OpenAI CLIP ViT-B/32, the checkpoint the official code loads with "
            'clip.load("ViT-B/32"); OpenCLIP serves the same weights (QuickGELU, set '
            "from the tag). The transformers port is the alternative."
        ),
        imagenet_zero_shot=63.2,
        alternatives=("hf-clip:openai/clip-vit-base-patch32",),
    ),
    PaperModel(
        name="OpenCLIP 2B",
        tables=("2", "3", "5"),
        kind="dual",
        spec="open_clip:ViT-B-32/laion2b_s34b_b79k",
        note=(
            "OpenCLIP ViT-B/32 trained on LAION-2B. The paper does not name the tag, and "
            "its 66.2 % lies between OpenCLIP's two LAION-2B ViT-B/32 checkpoints "
            "(laion2b_s34b_b79k: 66.56 %, laion2b_e16: 65.65 % in OpenCLIP's results "
            "table); the spec is the longer-trained laion2b_s34b_b79k, laion2b_e16 the "
            "alternative."
        ),
        imagenet_zero_shot=66.2,
        alternatives=("open_clip:ViT-B-32/laion2b_e16",),
    ),
    PaperModel(
        name="OpenCLIP 400M",
        tables=("2", "3", "5"),
        kind="dual",
        spec="open_clip:ViT-B-32/laion400m_e32",
        note=(
            "OpenCLIP ViT-B/32 trained on LAION-400M, 32 epochs (62.9 % ImageNet, as the "
            "paper reports; QuickGELU, set from the tag). laion400m_e31 is the 31-epoch "
            "checkpoint."
        ),
        imagenet_zero_shot=62.9,
        alternatives=("open_clip:ViT-B-32/laion400m_e31",),
    ),
    _yfcc_model(
        "SLIP",
        34.3,
        (
            "SLIP's own release (facebookresearch/SLIP) has ViT-S/16, B/16 and L/16 "
            "YFCC-15M checkpoints, none of them ViT-B/32, and none in OpenCLIP or "
            "transformers format either."
        ),
    ),
    _yfcc_model(
        "DeCLIP",
        43.2,
        (
            "Converting its state dict to an OpenCLIP ViT-B-32 checkpoint (then "
            "open_clip:ViT-B-32/PATH) might work but is untested."
        ),
    ),
    _yfcc_model(
        "FILIP",
        39.5,
        (
            "FILIP also scores an image-text pair by token-wise late interaction "
            "(each token's best match, averaged), not by the cosine of two pooled "
            "embeddings, so it is no ImageTextScorer even once converted."
        ),
    ),
    PaperModel(
        name="BLIP-2",
        tables=("2", "4"),
        kind="captioning",
        spec="blip2:Salesforce/blip2-opt-2.7b",
        note=(
            "BLIP-2 with OPT-2.7b, the checkpoint the official code loads. contrastkit "
            "scores whole continuations (several tokens where the tokenizer splits a "
            "pronoun); the official code reads the logit of one token. The FLAN-T5 "
            "variants load too (alternatives; the prefix goes to the encoder)."
        ),
        alternatives=(
            "blip2:Salesforce/blip2-flan-t5-xl",
            "instructblip:Salesforce/instructblip-flan-t5-xl",
        ),
    ),
    PaperModel(
        name="GIT",
        tables=("2",),
        kind="captioning",
        spec="git:microsoft/git-large",
        note=(
            'GIT-Large ("for GIT we use the GIT-Large model"); the paper does not say '
            "whether a fine-tuned variant was used: git-large-coco is the COCO "
            "captioning one."
        ),
        alternatives=("git:microsoft/git-large-coco",),
    ),
    PaperModel(
        name="BLIP",
        tables=(),
        kind="captioning",
        spec="blip:Salesforce/blip-image-captioning-large",
        note=(
            "Not a row of the paper's tables: the official code sets it up "
            "(src/captioning_set_up.py) next to BLIP-2."
        ),
    ),
)

#: Paper name (as ``--paper`` takes it) -> its models.
PAPERS: dict[str, tuple[PaperModel, ...]] = {"visogender": VISOGENDER_MODELS}


def paper_models(paper: str) -> tuple[PaperModel, ...]:
    """The models of ``paper`` (one of :data:`PAPERS`).

    Raises:
        ConfigError: an unknown paper (the message lists the known ones).
    """
    from contrastkit.errors import ConfigError

    key = paper.strip().lower()
    if key not in PAPERS:
        raise ConfigError(f"paper: unknown paper {paper!r}; known: {', '.join(PAPERS)}")
    return PAPERS[key]


def markdown_table(models: tuple[PaperModel, ...]) -> str:
    """``models`` as the markdown table ``docs/models.md`` shows (a test keeps the page
    and this data equal)."""
    lines = table_header(
        ["model", "tables", "kind", "spec", "also", "ImageNet 0-shot (paper)", "note"]
    )
    for model in models:
        spec = f"`{model.spec}`" if model.spec else "**not loadable**"
        also = ", ".join(f"`{alt}`" for alt in model.alternatives)
        accuracy = "" if model.imagenet_zero_shot is None else f"{model.imagenet_zero_shot:.1f}"
        tables = ", ".join(model.tables) or "code only"
        cells = [model.name, tables, model.kind, spec, also, accuracy, escape_cell(model.note)]
        lines.append(table_row(cells))
    return "\n".join(lines) + "\n"
