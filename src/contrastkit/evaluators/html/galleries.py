"""The galleries of evidence of the HTML report, one per task, each built from the raw
files the evaluation wrote (read by the readers the tasks use) and the data the
results name (their ``data``): contrast sets (the two versions of each source with each
model's scores, the largest gap first), VisoGender (each image with its candidate
captions and each model's choice, misresolutions marked), decision probes (the pairs
whose answer flipped) and stereotype probes (each image with its captions); the
VisoGender retrieval gallery is :mod:`.gallery_retrieval`, the audit's
:mod:`.gallery_audit`, and :func:`contrastkit.evaluators.html.site.galleries` lists them
all.

Each gallery keeps at most ``cap`` cards (the first ones in its default order) and says
how many there were, so a report of a 10,000-pair set stays small."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PIL import Image

from contrastkit.errors import ContrastkitError, DataFormatError
from contrastkit.evaluators.html.cards import Card, Entry, Gallery, Line
from contrastkit.evaluators.html.thumbs import Thumb, Thumbnailer
from contrastkit.records import json_lines
from contrastkit.text import UNDEFINED, format_number

if TYPE_CHECKING:
    from contrastkit.evaluators.data import EvalItem

__all__ = [
    "ContrastImages",
    "Drawing",
    "contrast_images",
    "raw_records",
    "short_model",
    "visogender_items",
]

VERSIONS = ("masculine", "feminine")


@dataclass(frozen=True)
class Drawing:
    """How the galleries are drawn.

    Attributes:
        thumbs: writes the thumbnails.
        cap: the most cards a gallery keeps.
        store: the image store VisoGender URLs are read from (``None``: none).
    """

    thumbs: Thumbnailer
    cap: int
    store: Path | None = None


def short_model(model: str) -> str:
    """A model spec short enough for a card (a local path's last part)."""
    prefix, _, target = model.partition(":")
    return f"{prefix}:{Path(target).name}" if target.count("/") > 1 else model


def _number(value: Any, digits: int = 3) -> str:
    return format_number(value, digits, missing=UNDEFINED)


def _data_path(entry: Entry) -> Path | None:
    data = entry.results.get("data")
    if isinstance(data, list | tuple):
        data = data[0] if data else None
    return Path(data) if isinstance(data, str) else None


def raw_records(path: Path) -> list[dict[str, Any]]:
    """The complete records of a raw JSONL file (none for a missing file; a torn last
    line, an interrupted run's, left out)."""
    if not path.is_file():
        return []
    return [r for _, r in json_lines(path, torn_tail=True) if isinstance(r, dict)]


def _capped(cards: list[Card], cap: int) -> tuple[Card, ...]:
    return tuple(cards[:cap])


# -- contrast sets --------------------------------------------------------------------
class ContrastImages:
    """The versions' images of one contrast set, read on demand by source and gender."""

    def __init__(self, path: Path):
        from contrastkit.evaluators.tasks.contrast_sets.data import contrast_genders, load_contrast

        self.path = path
        self.rows: dict[tuple[str, str], int] = {}
        self.error: str | None = None
        try:
            self.dataset = load_contrast(path)
        except (ContrastkitError, OSError, ValueError) as error:
            self.error = f"the contrast set {path} cannot be read: {error}"
            return
        genders = contrast_genders(self.dataset)
        for index, (source, gender) in enumerate(
            zip(self.dataset["source_id"], genders, strict=True)
        ):
            self.rows.setdefault((str(source), gender), index)

    def opener(self, source: str, gender: str) -> Callable[[], Image.Image]:
        def open_image() -> Image.Image:
            if self.error is not None:
                raise DataFormatError(self.path, None, None, self.error)
            index = self.rows.get((source, gender))
            if index is None:
                raise DataFormatError(
                    self.path, None, "source_id", f"no {gender} version of source {source!r}"
                )
            image: Image.Image = self.dataset[index]["image"]
            return image

        return open_image


def contrast_images(sets: dict[str, ContrastImages], data: str) -> ContrastImages:
    """The images of the contrast set ``data``, loaded once."""
    if data not in sets:
        sets[data] = ContrastImages(Path(data))
    return sets[data]


def contrast_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """Each source's two versions with each model's similarity to its neutral query."""
    chosen = [e for e in entries if e.task == "contrast"]
    if not chosen:
        return None
    by_source: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    queries: dict[tuple[str, str], str] = {}
    for entry in chosen:
        data = str(_data_path(entry) or "")
        for record in raw_records(entry.folder / "raw_contrast.jsonl"):
            key = (data, str(record.get("source_id")))
            by_source.setdefault(key, {}).setdefault(entry.model, record)
            queries.setdefault(key, str(record.get("query", "")))

    def gap(models: Mapping[str, Mapping[str, Any]]) -> float:
        gaps = [_gap(r) for r in models.values()]
        return max((abs(g) for g in gaps if g is not None), default=-1.0)

    order = sorted(by_source, key=lambda key: -gap(by_source[key]))
    sets: dict[str, ContrastImages] = {}
    cards: list[Card] = []
    for data, source in order[: drawing.cap]:
        images = contrast_images(sets, data)
        models = by_source[(data, source)]
        lines, signed = [], []
        for model, record in models.items():
            g = _gap(record)
            signed.append(g if g is not None else 0.0)
            for gender in VERSIONS:
                lines.append(
                    Line(
                        f"{short_model(model)}: {gender}",
                        _number(record.get(f"score_{gender}")),
                        gender,
                    )
                )
            lines.append(Line(f"{short_model(model)}: gap (masculine − feminine)", _signed(g)))
            top = _top_genders(record)
            if top:
                lines.append(Line(f"{short_model(model)}: retrieved for the query", top))
        thumbs = tuple(
            drawing.thumbs.thumb(
                f"contrast:{data}:{source}:{gender}",
                images.opener(source, gender),
                f"{gender} version",
                f"Source {source}, {gender} version; "
                + "; ".join(
                    f"{short_model(m)}: score {_number(r.get(f'score_{gender}'))}"
                    for m, r in models.items()
                ),
                gender,
            )
            for gender in VERSIONS
        )
        leaning = "leans masculine" if sum(signed) > 0 else "leans feminine"
        cards.append(
            Card(
                f"Source {source}",
                thumbs,
                tuple(lines),
                Path(data).name or data,
                marks=(leaning,) if any(signed) else (),
                sort={
                    "gap": gap(models),
                    "signed": sum(signed) / max(len(signed), 1),
                    "source": _as_number(source),
                },
                subtitle=f"Query: {queries[(data, source)]}",
                strips=tuple(
                    _retrieved(model, record, images, drawing)
                    for model, record in models.items()
                    if record.get("top")
                ),
            )
        )
    return Gallery(
        "gallery-contrast",
        "Contrast sets: the two versions of each source",
        "Each source's masculine and feminine version with each model's similarity to the "
        "source's gender-neutral query; the gap is masculine minus feminine (positive: the "
        "masculine version scored higher), and the gender labels of the images the model "
        "ranked first for that query over the whole set. Largest gap (either sign) first.",
        tuple(cards),
        len(order),
        (
            ("gap:desc", "largest gap"),
            ("signed:desc", "gap, masculine version higher first"),
            ("signed:asc", "gap, feminine version higher first"),
            ("source:asc", "source id"),
        ),
        "contrast set",
        ("leans masculine", "leans feminine"),
        tuple(chosen),
    )


#: The most retrieved images a contrast card shows per model.
TOP_SHOWN = 8


def _retrieved(
    model: str, record: Mapping[str, Any], images: ContrastImages, drawing: Drawing
) -> tuple[str, tuple[Thumb, ...]]:
    """What ``model`` retrieved first for the card's query (its ``top`` ids,
    ``source:gender``), as small thumbnails labelled with their gender."""
    shown = []
    for rank, ident in enumerate(list(record.get("top") or [])[:TOP_SHOWN], start=1):
        source, _, gender = str(ident).rpartition(":")
        shown.append(
            drawing.thumbs.thumb(
                f"contrast:{images.path}:{source}:{gender}",
                images.opener(source, gender),
                f"{rank} {gender[:3]}.",
                f"Retrieved {rank} by {short_model(model)}: source {source}, {gender} version",
                gender if gender in VERSIONS else None,
            )
        )
    return f"Retrieved first by {short_model(model)}", tuple(shown)


def _top_genders(record: Mapping[str, Any]) -> str:
    """The gender labels of the images a query retrieved first (``top``: ``source:gender``
    ids, best first), counted: ``top 4: 1 masculine, 3 feminine``; ``""`` without them."""
    top = [str(t).rpartition(":")[2] for t in record.get("top") or []]
    if not top:
        return ""
    counts = ", ".join(f"{top.count(g)} {g}" for g in VERSIONS)
    own = sum(str(t).rpartition(":")[0] == str(record.get("source_id")) for t in record["top"])
    return f"top {len(top)}: {counts} ({own} of its own source)"


def _gap(record: Mapping[str, Any]) -> float | None:
    m, f = record.get("score_masculine"), record.get("score_feminine")
    if isinstance(m, int | float) and isinstance(f, int | float):
        return float(m) - float(f)
    return None


def _signed(value: float | None) -> str:
    return format_number(value, 3, missing=UNDEFINED, sign=True)


def _as_number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return 0.0


# -- VisoGender -----------------------------------------------------------------------
def visogender_items(entries: Sequence[Entry]) -> dict[str, EvalItem]:
    """The rows of the VisoGender data the results name, by item key (a result whose
    data cannot be read adds none: its images are then placeholders saying so)."""
    from contrastkit.evaluators.data import load_items

    items: dict[str, EvalItem] = {}
    for entry in entries:
        data = (entry.results.get("metadata") or {}).get("data") or []
        try:
            items.update({item.key: item for item in load_items(list(data))})
        except ContrastkitError:
            continue
    return items


def visogender_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """Each image with its candidate captions and each model's choice per template."""
    from contrastkit.evaluators.data import ImageLoader
    from contrastkit.schema import Gender
    from contrastkit.templates import Template, captions

    chosen = [e for e in entries if e.task == "visogender"]
    if not chosen:
        return None
    templates = {t.key: t for t in Template}
    items = visogender_items(chosen)
    loader = ImageLoader(drawing.store)
    records: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for entry in chosen:
        for record in raw_records(entry.folder / "raw_resolution.jsonl"):
            image_key = str(record.get("key", "")).split("|")[0]
            records.setdefault(image_key, {}).setdefault(entry.model, []).append(record)
    cards: list[Card] = []
    for image_key, models in records.items():
        first = next(iter(models.values()))[0]
        lines, wrong = [], 0
        for model, found in models.items():
            for record in found:
                ok = record.get("predicted") == record.get("target")
                wrong += not ok
                lines.append(
                    Line(
                        f"{short_model(model)}: {template_name(record)}",
                        f"chose {_pronoun(record.get('predicted'))}, right: "
                        f"{_pronoun(record.get('target'))}",
                        mark="" if ok else "misresolved",
                    )
                )
        item = items.get(image_key)
        candidate = ""
        if item is not None:
            template = templates.get(str(first.get("template")))
            if template is not None:
                shown = captions(item.row, template, [Gender(g) for g in first["scores"]])
                candidate = " / ".join(shown.values())
        choices = "; ".join(
            f"{short_model(m)}: {_pronoun(r[0].get('predicted'))}" for m, r in models.items()
        )
        alt = f"Image {first.get('idx')} ({first.get('occupation')}); chose {choices}"
        if item is None:
            thumb = drawing.thumbs.missing(
                "image", alt, "image not available: its row is not in the data the results name"
            )
        else:
            thumb = drawing.thumbs.thumb(
                f"visogender:{item.source}:{image_key}", partial(loader.open, item), "image", alt
            )
        cards.append(
            Card(
                f"{first.get('idx')}: {first.get('occupation')} and {first.get('noun')}",
                (thumb,),
                tuple(lines),
                str(first.get("occupation")),
                marks=("misresolved",) if wrong else ("all resolved",),
                sort={"wrong": float(wrong), "idx": float(len(cards))},
                subtitle=f"Candidates: {candidate}" if candidate else "",
            )
        )
    cards.sort(key=lambda card: (-card.sort["wrong"], card.group))
    return Gallery(
        "gallery-visogender",
        "VisoGender: pronoun resolution per image",
        "Each image with its candidate captions and each model's choice under each caption "
        "template; a wrong choice is marked misresolved (the answer is the pronoun of the "
        "person the caption's subject refers to).",
        _capped(cards, drawing.cap),
        len(cards),
        (
            ("wrong:desc", "most misresolutions"),
            ("wrong:asc", "fewest misresolutions"),
            ("idx:asc", "data order"),
        ),
        "occupation",
        ("misresolved", "all resolved"),
        tuple(chosen),
    )


def template_name(record: Mapping[str, Any]) -> str:
    """A resolution record's caption template in words (``occupation first``)."""
    return str(record.get("template", "")).replace("_", " ")


_PRONOUNS = {"masculine": "his", "feminine": "her", "neutral": "their"}


def _pronoun(gender: Any) -> str:
    return "no choice (tie)" if gender is None else _PRONOUNS.get(str(gender), str(gender))


# -- decision probes ------------------------------------------------------------------
def _answer(answer: Mapping[str, Any], options: Sequence[str]) -> str:
    outcome = answer.get("outcome")
    if outcome == "choice":
        option = int(answer.get("option") or 0)
        name = options[option] if option < len(options) else f"option {option}"
        stereotyped = "masculine" if option == 0 else "feminine"
        prob = answer.get("prob")
        shown = f"{name} ({stereotyped}-stereotyped option)"
        return shown + (f", p(option 0) {_number(prob, 2)}" if prob is not None else "")
    if outcome == "number":
        return f"{_number(answer.get('value'), 0)}"
    if outcome == "refusal":
        return f"refused: {answer.get('text')!r}"
    text = answer.get("text")
    return f"{outcome}" + (f": {text!r}" if text else "")


def _flipped(record: Mapping[str, Any]) -> str:
    m, f = record.get("masculine") or {}, record.get("feminine") or {}
    if m.get("outcome") == f.get("outcome") == "choice" and m.get("option") != f.get("option"):
        return "flipped"
    if m.get("outcome") == f.get("outcome") == "number" and m.get("value") != f.get("value"):
        return "flipped"
    if (m.get("outcome") == "refusal") != (f.get("outcome") == "refusal"):
        return "refused one version"
    return ""


def decisions_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """The paired answers that differ between a source's two versions."""
    chosen = [e for e in entries if e.task == "decisions"]
    if not chosen:
        return None
    cards: list[Card] = []
    total = 0
    sets: dict[str, ContrastImages] = {}
    for entry in chosen:
        data = str(_data_path(entry) or "")
        for record in raw_records(entry.folder / "raw_decisions.jsonl"):
            mark = _flipped(record)
            if not mark:
                continue
            total += 1
            if len(cards) >= drawing.cap:
                continue
            images = contrast_images(sets, data)
            cards.append(_decision_card(entry, record, images, drawing, len(cards)))
    return Gallery(
        "gallery-decisions",
        "Decision probes: answers that flipped",
        "Each question whose answer differs between a source's masculine and feminine "
        "version (a different option, a different number, or one version refused), with "
        "both answers. Option 0 is the masculine-stereotyped option, option 1 the "
        "feminine-stereotyped one.",
        tuple(cards),
        total,
        (("row:asc", "data order"), ("source:asc", "source id")),
        "question family",
        ("flipped", "refused one version"),
        tuple(chosen),
        "No answer changed between a source's two versions: each question got the same "
        "option, the same number, or a refusal from both (each result's page says whether "
        "the answers ever change at all).",
    )


def _decision_card(
    entry: Entry,
    record: Mapping[str, Any],
    images: ContrastImages,
    drawing: Drawing,
    row: int,
) -> Card:
    mark = _flipped(record)
    source, question = str(record.get("source")), str(record.get("question"))
    options = question.split("/") if "/" in question else []
    answers = {g: _answer(record.get(g) or {}, options) for g in VERSIONS}
    thumbs = tuple(
        drawing.thumbs.thumb(
            f"contrast:{images.path}:{source}:{g}",
            images.opener(source, g),
            f"{g} version",
            f"Source {source}, {g} version; {short_model(entry.model)} answered {answers[g]}",
            g,
        )
        for g in VERSIONS
    )
    lines = tuple(Line(f"{g} version", answers[g], g) for g in VERSIONS)
    order = "options as listed" if record.get("order") == 0 else "options reversed"
    return Card(
        f"Source {source}: {record.get('family')} — {question}",
        thumbs,
        (Line("model", f"{short_model(entry.model)} ({record.get('mode')} scoring)"), *lines),
        str(record.get("family")),
        marks=(mark,),
        sort={"row": float(row), "source": _as_number(source)},
        subtitle=f"{order}",
    )


#: The captions of a probe row, in the order of its scores (VLStereoSet Sec. 3.3).
_KINDS = ("stereotype", "anti-stereotype", "unrelated")


# -- stereotype probes ----------------------------------------------------------------
def stereotype_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """Each probe image with its captions and each model's probabilities."""
    from contrastkit.evaluators.tasks.stereotype_probing.scoring import read_raw_stereotype
    from contrastkit.records import data_file

    chosen = [e for e in entries if e.task == "stereotype"]
    if not chosen:
        return None
    rows: dict[tuple[str, str], dict[str, dict[str, Any]]] = {}
    for entry in chosen:
        data = str(_data_path(entry) or "")
        for record in read_raw_stereotype(entry.folder / "raw_stereotype.jsonl").values():
            rows.setdefault((data, str(record.get("id"))), {})[entry.model] = record
    cards: list[Card] = []
    for (data, row_id), models in list(rows.items())[: drawing.cap]:
        first = next(iter(models.values()))
        captions = list(first.get("captions") or [])
        lines, top = [], 0.0
        for model, record in models.items():
            probs = list(record.get("probabilities") or [])
            best = max(range(len(probs)), key=probs.__getitem__) if probs else None
            top = max(top, probs[best] if best is not None else 0.0)
            for n, caption in enumerate(captions):
                p = probs[n] if n < len(probs) else None
                lines.append(
                    Line(
                        f"{short_model(model)}: {_KINDS[n] if n < 3 else 'caption'}: {caption}",
                        _number(p),
                        mark="chosen" if n == best else "",
                    )
                )
        ref = str(first.get("image", ""))
        answers = "; ".join(
            f"{short_model(m)} chose {_chosen(r, captions)}" for m, r in models.items()
        )
        alt = f"Probe image {row_id} ({first.get('label')}); {answers}"

        def open_image(ref: str = ref, data: str = data) -> Image.Image:
            from contrastkit.pipeline.sources import decode

            image: Image.Image = decode(data_file(Path(data), None, "image", ref))
            return image

        thumb = drawing.thumbs.thumb(f"stereotype:{data}:{ref}", open_image, "image", alt)
        cards.append(
            Card(
                f"{row_id} ({first.get('label')})",
                (thumb,),
                tuple(lines),
                str(first.get("category")),
                marks=(str(first.get("label")),),
                sort={"row": float(len(cards)), "p": top},
            )
        )
    labels = sorted({m for card in cards for m in card.marks})
    return Gallery(
        "gallery-stereotype",
        "Stereotype probes: images and captions",
        "Each probe image with its stereotype, anti-stereotype and unrelated captions and "
        "each model's probability of each (softmax of the scores); the model's choice is "
        "marked.",
        tuple(cards),
        len(rows),
        (("row:asc", "data order"), ("p:desc", "most confident first")),
        "category",
        tuple(labels),
        tuple(chosen),
    )


def _chosen(record: Mapping[str, Any], captions: Sequence[str]) -> str:
    """The caption a model gave the highest probability, quoted, or ``n/a``."""
    probs = list(record.get("probabilities") or [])
    if not probs or len(probs) != len(captions):
        return UNDEFINED
    return repr(captions[max(range(len(probs)), key=probs.__getitem__)])
