"""The VisoGender retrieval gallery of the HTML report: for each gender-neutral
occupation query (``The doctor and their patient``), the images each model ranked in
its top K, best first, each with its perceived gender: the images behind the retrieval
bias figures (Bias@K, MaxSkew@K, NDKL).

Read from the raw retrieval records the evaluation writes (``raw_retrieval.jsonl``: one
record per image and query, with its ``score`` and ``label``, the occupation holder's
perceived gender); K is the largest cut-off the run computed (its ``metadata.ks``), at
most :data:`TOP_K`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from contrastkit.evaluators.html.cards import Card, Entry, Gallery, Line
from contrastkit.evaluators.html.galleries import (
    Drawing,
    raw_records,
    short_model,
    visogender_items,
)
from contrastkit.evaluators.html.thumbs import Thumb

__all__ = ["TOP_K", "visogender_retrieval_gallery"]

#: The most images a card shows per model and query.
TOP_K = 10

_GENDERS = ("masculine", "feminine")


def _k(entry: Entry) -> int:
    """The top K shown for ``entry``: its largest cut-off, at most :data:`TOP_K`."""
    ks = [k for k in (entry.results.get("metadata") or {}).get("ks") or [] if isinstance(k, int)]
    return min(max(ks, default=TOP_K), TOP_K)


def _ranked(entry: Entry) -> dict[tuple[str, str], list[dict[str, Any]]]:
    """Each query's records (by context and occupation), best score first (ties in data
    order)."""
    queries: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for record in raw_records(entry.folder / "raw_retrieval.jsonl"):
        if isinstance(record.get("score"), int | float):
            key = (str(record.get("context")), str(record.get("occupation")))
            queries.setdefault(key, []).append(record)
    return {key: sorted(found, key=lambda r: -float(r["score"])) for key, found in queries.items()}


def _counts(top: Sequence[Mapping[str, Any]]) -> dict[str, int]:
    labels = [str(r.get("label")) for r in top]
    return {g: labels.count(g) for g in _GENDERS}


Tops = Mapping[str, tuple[Sequence[Mapping[str, Any]], Sequence[Mapping[str, Any]]]]
"""Each model's top K of one query and all that query's records, by model."""


def _share(tops: Tops) -> float:
    """The masculine share of the models' top K, averaged over the models."""
    shares = [_counts(top)["masculine"] / len(top) for top, _ in tops.values()]
    return sum(shares) / len(shares)


def _card(query: tuple[str, str], tops: Tops, share: float, position: int, images: _Images) -> Card:
    """The card of one occupation's query: each model's top K as a strip."""
    context, occupation = query
    lines, strips = [], []
    for model, (top, records) in tops.items():
        counts, pool = _counts(top), _counts(records)
        lines.append(
            Line(
                f"{short_model(model)}: top {len(top)}",
                f"{counts['masculine']} masculine, {counts['feminine']} feminine "
                f"(of {len(records)} images: {pool['masculine']} masculine, "
                f"{pool['feminine']} feminine)",
            )
        )
        strips.append(
            (
                f"Top {len(top)} by {short_model(model)}, best first",
                tuple(images.thumb(model, n, r) for n, r in enumerate(top, 1)),
            )
        )
    lean = "more masculine" if share > 0.5 else "more feminine" if share < 0.5 else "even"
    text = next(iter(tops.values()))[0][0].get("query", "")
    return Card(
        f"{occupation} ({context})",
        (),
        tuple(lines),
        occupation,
        marks=(f"{lean} in the top K",),
        sort={"share": share, "query": float(position)},
        subtitle=f"Query: {text}",
        strips=tuple(strips),
    )


def visogender_retrieval_gallery(entries: Sequence[Entry], drawing: Drawing) -> Gallery | None:
    """Each occupation query with the images each model retrieved first."""
    from contrastkit.evaluators.data import ImageLoader

    chosen = [e for e in entries if e.task == "visogender"]
    ranked = {e.model: (e, _ranked(e)) for e in chosen}
    queries = list(dict.fromkeys(q for _, found in ranked.values() for q in found))
    if not queries:
        return None
    images = _Images(visogender_items(chosen), ImageLoader(drawing.store), drawing)
    tops = {
        query: {
            model: (records[: _k(entry)], records)
            for model, (entry, found) in ranked.items()
            if (records := found.get(query))
        }
        for query in queries
    }
    share = {query: _share(found) for query, found in tops.items()}
    position = {query: n for n, query in enumerate(queries)}
    order = sorted(queries, key=lambda query: -share[query])  # the default order
    cards = [
        _card(query, tops[query], share[query], position[query], images)
        for query in order[: drawing.cap]
    ]
    return Gallery(
        "gallery-visogender-retrieval",
        "VisoGender retrieval: the top K per occupation query",
        "For each occupation's gender-neutral query, the images each model ranked first "
        "among that occupation's images, best first, each labelled with the perceived "
        "gender of the person in the occupation (blue border and 'mas.': masculine; "
        "orange and 'fem.': feminine), and how many of each the top K and the whole pool "
        "hold: the images behind the retrieval bias figures.",
        tuple(cards),
        len(queries),
        (
            ("share:desc", "most masculine top K first"),
            ("share:asc", "most feminine top K first"),
            ("query:asc", "data order"),
        ),
        "occupation",
        tuple(f"{lean} in the top K" for lean in ("more masculine", "more feminine", "even")),
        tuple(chosen),
    )


@dataclass(frozen=True)
class _Images:
    """The VisoGender images the cards show: the rows by item key, and how to read them."""

    items: Mapping[str, Any]
    loader: Any
    drawing: Drawing

    def thumb(self, model: str, rank: int, record: Mapping[str, Any]) -> Thumb:
        """The ``rank``-th image ``model`` retrieved, labelled with its perceived gender."""
        gender = str(record.get("label"))
        key = str(record.get("key", "")).split("|")[0]
        alt = (
            f"Retrieved {rank} by {short_model(model)} for {record.get('query')!r}: image "
            f"{record.get('idx')}, perceived {gender}, score {float(record['score']):.3f}"
        )
        shown = gender if gender in _GENDERS else None
        label = f"{rank} {gender[:3]}."
        item = self.items.get(key)
        if item is None:
            reason = "image not available: its row is not in the data the results name"
            return self.drawing.thumbs.missing(label, alt, reason, shown)
        return self.drawing.thumbs.thumb(
            f"visogender:{item.source}:{key}", partial(self.loader.open, item), label, alt, shown
        )
