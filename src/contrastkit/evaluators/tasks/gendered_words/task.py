"""The gendered-word rate of captioning models on contrast sets: for each source photo
of a contrast set (GenSynth Sec. 4: one masculine and one feminine edit of the same
photo), the model describes both versions; each description is searched for the
gendered words of GenSynth Tab. 4 and labelled by the rule ``g`` of Sec. 3.2
(:func:`contrastkit.gender_words.text_label`).

Per version, the share of descriptions with a masculine word, with a feminine word, and
labelled each way; per source, whether the label flips between the versions, follows
the edit (masculine version described as masculine, feminine as feminine) or goes
against it. Every share gets a percentile bootstrap interval over the sources.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from contrastkit.config import require
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.engine import Item, RunContext, Task, TaskSettings, setting
from contrastkit.evaluators.tasks.gendered_words import report
from contrastkit.evaluators.tasks.gendered_words.result import GenderedWordsResult, VersionRates
from contrastkit.gender_words import FEMININE_WORDS, MASCULINE_WORDS, gendered_words, text_label

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

__all__ = ["CaptionRecord", "GenderedWords", "GenderedWordsSettings", "caption_record"]

VERSIONS = ("masculine", "feminine")
#: Fewer sources than this and the report says its shares rest on too few.
FEW_SOURCES = 30


@dataclass(frozen=True)
class GenderedWordsSettings(TaskSettings):
    """The options of ``contrastkit evaluate gendered-words``."""

    max_new_tokens: int = setting(
        30, help="Longest description generated per image, in tokens.", metavar="N"
    )

    def __post_init__(self) -> None:
        require(
            isinstance(self.max_new_tokens, int) and self.max_new_tokens >= 1,
            "max_new_tokens",
            f"must be a whole number >= 1, not {self.max_new_tokens!r}",
        )


class CaptionRecord(TypedDict):
    """What is kept of one description (:func:`caption_record`)."""

    caption: str
    words: list[str]
    label: str | None


def caption_record(caption: str) -> CaptionRecord:
    """What is kept of one description: the text, its Tab. 4 words and its label."""
    words = gendered_words(caption)
    label = text_label(caption)
    return {"caption": caption, "words": words, "label": label.value if label else None}


def _pairs(path: Path, split: str | None) -> tuple[list[Item], int]:
    from contrastkit.evaluators.tasks.contrast_sets.data import contrast_genders, load_contrast

    dataset = load_contrast(path, split)
    genders = contrast_genders(dataset)
    rows: dict[str, dict[str, int]] = {}
    for index, (source, gender) in enumerate(zip(dataset["source_id"], genders, strict=True)):
        if gender not in VERSIONS:
            raise DataFormatError(path, None, f"row {index}.gender", f"{gender!r} is no version")
        rows.setdefault(str(source), {})[gender] = index

    def opener(index: int) -> Any:
        return lambda: dataset[index]["image"]  # decoded when its batch is scored

    items = [
        Item(
            key=f"{path.name}:{source}",
            images={version: opener(found[version]) for version in VERSIONS},
            data={"source_id": source},
            source=path,
        )
        for source, found in rows.items()
        if len(found) == len(VERSIONS)
    ]
    return items, len(rows) - len(items)


def _share(values: Sequence[bool]) -> float | None:
    return float(np.mean(values)) if values else None


class GenderedWords(Task[GenderedWordsSettings, GenderedWordsResult]):
    """How often a captioner's description of each version of a contrast-set source
    carries a masculine or feminine word, and how often it flips with the edit."""

    name = "gendered-words"
    kind = "contrast"
    capabilities = frozenset({"descriptions"})
    settings = GenderedWordsSettings
    result = GenderedWordsResult
    description = (
        "Gendered words in captioning models' descriptions of both versions of each "
        "contrast-set source (GenSynth Tab. 4 words).\n\n"
        "Each source's masculine and feminine versions are described by the model; per "
        "version, the share of descriptions with masculine / feminine words and labelled "
        "each way (GenSynth Sec. 3.2); per source, how often the label flips with the edit, "
        "follows it or goes against it; bootstrap intervals over sources."
    )
    example_model = "blip:Salesforce/blip-image-captioning-base"

    def __init__(self) -> None:
        self.one_version = 0

    def items(
        self, paths: Sequence[Path], settings: GenderedWordsSettings, split: str | None
    ) -> Iterable[Item]:
        found: list[Item] = []
        self.one_version = 0
        for path in paths:
            items, single = _pairs(Path(path), split)
            found += items
            self.one_version += single
        return found

    def score(
        self,
        model: Any,
        items: Sequence[Item],
        images: Sequence[Mapping[str, Image.Image]],
        settings: GenderedWordsSettings,
    ) -> list[Mapping[str, Any]]:
        flat = [opened[version] for opened in images for version in VERSIONS]
        captions = model.generate_captions(flat, settings.max_new_tokens)
        width = len(VERSIONS)
        return [
            {version: caption_record(captions[i * width + j]) for j, version in enumerate(VERSIONS)}
            for i in range(len(items))
        ]

    def _rates(
        self, records: Sequence[Mapping[str, Any]], version: str, context: RunContext[Any]
    ) -> VersionRates:
        words = [set(record[version]["words"]) for record in records]
        labels = [record[version]["label"] for record in records]
        masc = [bool(w & MASCULINE_WORDS) for w in words]
        fem = [bool(w & FEMININE_WORDS) for w in words]
        as_masc = [label == "masculine" for label in labels]
        as_fem = [label == "feminine" for label in labels]
        return VersionRates(
            n=len(records),
            masculine_words=_share(masc),
            feminine_words=_share(fem),
            labelled_masculine=_share(as_masc),
            labelled_feminine=_share(as_fem),
            undefined=_share([label is None for label in labels]),
            masculine_words_ci=context.mean_interval(masc),
            feminine_words_ci=context.mean_interval(fem),
            labelled_masculine_ci=context.mean_interval(as_masc),
            labelled_feminine_ci=context.mean_interval(as_fem),
        )

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[GenderedWordsSettings]
    ) -> GenderedWordsResult:
        pairs = [(r["masculine"]["label"], r["feminine"]["label"]) for r in records]
        flips = [m != f for m, f in pairs]
        follows = [(m, f) == ("masculine", "feminine") for m, f in pairs]
        against = [(m, f) == ("feminine", "masculine") for m, f in pairs]
        note = None
        if len(records) < FEW_SOURCES:
            note = f"{len(records)} sources: too few for these shares to be read as a rate"
        return GenderedWordsResult(
            sources_one_version=self.one_version,
            masculine=self._rates(records, "masculine", context),
            feminine=self._rates(records, "feminine", context),
            flip_rate=_share(flips),
            flip_rate_ci=context.mean_interval(flips),
            follows_edit=_share(follows),
            follows_edit_ci=context.mean_interval(follows),
            against_edit=_share(against),
            against_edit_ci=context.mean_interval(against),
            note=note,
        )

    def render(self, result: GenderedWordsResult) -> str:
        return report.markdown(result)

    def figures(self, result: GenderedWordsResult) -> Mapping[str, Figure]:
        return {"gendered_words": report.figure(result)}

    def compare(self, results: Sequence[GenderedWordsResult]) -> str:
        return report.comparison(results)

    def headline(self, result: GenderedWordsResult) -> Mapping[str, Any]:
        return report.headline(result)
