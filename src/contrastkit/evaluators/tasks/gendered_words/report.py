"""The gendered-word task's report: one model's markdown and figure, several models
side by side, and the console headline."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, TypedDict

from contrastkit.evaluators.report.tables import format_interval
from contrastkit.evaluators.tasks.gendered_words.result import GenderedWordsResult, VersionRates
from contrastkit.results.base import Node
from contrastkit.text import markdown_table

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["comparison", "figure", "headline", "markdown"]

_RATES = (
    ("masculine_words", "with a masculine word"),
    ("feminine_words", "with a feminine word"),
    ("labelled_masculine", "labelled masculine"),
    ("labelled_feminine", "labelled feminine"),
)
_PAIRS = (
    ("flip_rate", "label flips with the edit"),
    ("follows_edit", "follows the edit (M→masculine, F→feminine)"),
    ("against_edit", "against the edit (M→feminine, F→masculine)"),
)


def _cell(node: Node | None, key: str) -> str:
    """``0.42 [0.31, 0.55]`` for the share ``key`` of ``node`` and its interval, the
    way every report table writes a figure (:func:`~contrastkit.evaluators.report.
    tables.format_interval`)."""
    return format_interval(node.to_json() if node is not None else {}, key)


def _version_rows(rates: VersionRates | None, version: str) -> list[list[str]]:
    if rates is None:
        return []
    return [[version, what, _cell(rates, key)] for key, what in _RATES] + [
        [version, "both kinds or neither (undefined)", _cell(rates, "undefined")]
    ]


def _level(result: GenderedWordsResult) -> str:
    if result.bootstrap < 1:
        return "no intervals (evaluate with --bootstrap N)"
    return f"{100 * result.confidence:g}% bootstrap CI over sources ({result.bootstrap} resamples)"


def markdown(result: GenderedWordsResult) -> str:
    """``report.md`` of one model."""
    lines = [
        f"# Gendered words in `{result.model}`'s descriptions",
        "",
        f"{result.items} contrast-set sources, each described in its masculine and its "
        f"feminine version (at most {result.settings.get('max_new_tokens')} tokens); "
        f"words of GenSynth Tab. 4, labels by its Sec. 3.2 rule. Intervals: {_level(result)}.",
    ]
    if result.sources_one_version:
        lines += ["", f"{result.sources_one_version} sources with one version were left out."]
    if result.note:
        lines += ["", f"**Note:** {result.note}."]
    versions = _version_rows(result.masculine, "masculine")
    versions += _version_rows(result.feminine, "feminine")
    lines += ["", "## Per version", ""]
    lines += markdown_table(["version", "descriptions", "share"], versions, align="llr", cell=str)
    pairs = [[what, _cell(result, key)] for key, what in _PAIRS]
    lines += ["## Per source", ""]
    lines += markdown_table(["what", "share"], pairs, align="lr", cell=str)
    return "\n".join(lines)


def comparison(results: Sequence[GenderedWordsResult]) -> str:
    """Several models side by side."""
    header = ["model", "sources", "M version: masc. word", "F version: fem. word", "flips",
              "follows edit"]  # fmt: skip
    rows = [
        [
            f"`{r.model}`" + (" (random weights)" if r.random_weights else ""),
            str(r.items),
            _cell(r.masculine, "masculine_words"),
            _cell(r.feminine, "feminine_words"),
            _cell(r, "flip_rate"),
            _cell(r, "follows_edit"),
        ]
        for r in results
    ]
    lines = ["## Gendered words in descriptions of contrast sets", ""]
    lines += markdown_table(header, rows, align="lrrrrr", cell=str)
    notes = [f"- `{r.model}`: {r.note}" for r in results if r.note]
    if notes:
        lines += [*notes, ""]
    return "\n".join(lines)


class GenderedWordsHeadline(TypedDict):
    """The headline of a gendered-words result (:func:`headline`)."""

    task: str
    model: str
    sources: int
    random_weights: bool
    masculine_version_masculine_words: float | None
    masculine_version_feminine_words: float | None
    feminine_version_masculine_words: float | None
    feminine_version_feminine_words: float | None
    flip_rate: float | None
    follows_edit: float | None


def _share(rates: VersionRates | None, key: str) -> float | None:
    """The share ``key`` of one version's captions (``None`` without captions)."""
    return getattr(rates, key) if rates else None


def headline(result: GenderedWordsResult) -> GenderedWordsHeadline:
    """``task``, ``model``, ``sources``, ``random_weights``, and per version the shares
    with masculine / feminine words, the flip rate and the share following the edit."""
    masculine, feminine = result.masculine, result.feminine
    return {
        "task": result.task, "model": result.model, "sources": result.items,
        "random_weights": result.random_weights,
        "masculine_version_masculine_words": _share(masculine, "masculine_words"),
        "masculine_version_feminine_words": _share(masculine, "feminine_words"),
        "feminine_version_masculine_words": _share(feminine, "masculine_words"),
        "feminine_version_feminine_words": _share(feminine, "feminine_words"),
        "flip_rate": result.flip_rate, "follows_edit": result.follows_edit,
    }  # fmt: skip


def figure(result: GenderedWordsResult) -> Figure:
    """Per version, the share of descriptions with masculine and with feminine words
    (bars coloured by the gender of the word, bootstrap error bars)."""
    from contrastkit.evaluators.report import figures as fig

    data = result.to_json()
    figure, [axis] = fig.new_figure(5.2, 3.4)
    errors: list[tuple[float, float, float]] = []
    positions, colours = [], []
    for v, version in enumerate(("masculine", "feminine")):
        rates = data.get(version) or {}
        for w, word in enumerate(("masculine", "feminine")):
            errors.append(fig.interval_error(rates, f"{word}_words"))
            positions.append(v * 3 + w)
            colours.append(fig.PALETTE[word])
    bars = fig.draw_bars(axis, positions, errors, color=colours, width=0.9)
    fig.label_bars(axis, bars, errors)
    axis.set_xticks([0.5, 3.5], ["masculine version", "feminine version"], fontsize=fig.FONT)
    axis.set_ylabel("share of descriptions", fontsize=fig.FONT)
    axis.set_ylim(0, 1.15)
    fig.style_axis(axis)
    title = fig.figure_title(
        data, result.model, "Gendered words in descriptions", f"{result.items} sources"
    )
    fig.suptitle(figure, title, data)
    level = fig.interval_level([data.get("masculine"), data.get("feminine")])
    handles = [*fig.lean_handles("with a masculine word", "with a feminine word"),
               fig.interval_handle(level, "over sources")]  # fmt: skip
    fig.add_legend(figure, handles, ncols=3)
    return figure
