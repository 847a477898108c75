"""The stereotype probing task on the task protocol: the probe rows of the data as
items, each batch scored by :func:`~.scoring.score_batch`, the records aggregated into
the typed :class:`~contrastkit.results.stereotype.StereotypeResult` by
:func:`~.benchmark.stereotype_benchmark`; the engine does the rest (the images through
the image store, resume, the files)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from contrastkit.errors import DataFormatError
from contrastkit.evaluators.engine import Item, RunContext
from contrastkit.evaluators.tasks.stereotype_probing.scoring import (
    IMAGE,
    ProbeScorer,
    StereotypeSettings,
    probe_item,
)
from contrastkit.results.stereotype import StereotypeResult

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from PIL import Image

    from contrastkit.evaluators.data import EvalItem, ImageLoader
    from contrastkit.probes import ProbeRow

__all__ = ["StereotypeProbing", "StereotypeSettings"]


def _dataset_opener(row: ProbeRow, source: Path, loader: ImageLoader) -> Callable[[], Image.Image]:
    """An image stored in a saved dataset, opened by ``loader`` when its batch is
    scored."""
    from contrastkit.evaluators.engine.images import ImageView

    view: ImageView | None = None

    def open_image() -> Image.Image:
        return loader.open(cast("EvalItem", view))

    item = probe_item(row, source, open_image)
    view = ImageView(item, IMAGE, row.image_ref, row.dataset_index, row.dataset_split)
    return open_image


def _check_ids(rows: Sequence[ProbeRow], paths: Sequence[Path]) -> None:
    ids: dict[str, str] = {}
    for row in rows:
        where = f"{row.source}:{row.line}" if row.line else str(row.source)
        if row.id in ids:
            raise DataFormatError(
                row.source or paths[0], row.line, "id",
                f"id {row.id!r} also in {ids[row.id]}: probe sets evaluated together need "
                "distinct ids",
            )  # fmt: skip
        ids[row.id] = where


class StereotypeProbing(ProbeScorer):
    """VLStereoSet's stereotype scores of image-text models on a probe set (its batches
    scored as :class:`~.scoring.ProbeScorer` scores them)."""

    capabilities = frozenset({"captions"})
    result = StereotypeResult
    options = ("images", "network", "bootstrap")

    def items(
        self, paths: Sequence[Path], settings: StereotypeSettings, split: str | None
    ) -> Iterable[Item]:
        from contrastkit.probes import load_probe_set

        rows: list[ProbeRow] = []
        for path in paths:
            rows.extend(load_probe_set(path, split=split))
        if not rows:
            where = ", ".join(map(str, paths))
            raise DataFormatError(where, None, None, "the probe set has no rows")
        _check_ids(rows, paths)
        from contrastkit.evaluators.data import ImageLoader

        loader = ImageLoader(None)  # one for every row: a dataset's column is read once
        items = []
        for row in rows:
            source = Path(row.source) if row.source else paths[0]
            if row.dataset_index is not None:
                items.append(probe_item(row, source, _dataset_opener(row, source, loader)))
            else:
                items.append(probe_item(row, source, row.image_ref))
        return items

    def aggregate(
        self, records: Sequence[Mapping[str, Any]], context: RunContext[StereotypeSettings]
    ) -> StereotypeResult:
        from contrastkit.evaluators.outcome import skipped_rows_json
        from contrastkit.evaluators.tasks.stereotype_probing.benchmark import (
            stereotype_benchmark,
        )

        benchmark = stereotype_benchmark(
            records, model=context.model, data=context.data, bootstrap=context.bootstrap
        )
        benchmark["metadata"]["skip_missing"] = context.skip_missing
        benchmark["skipped_rows"] = skipped_rows_json(context.skipped_rows)
        return StereotypeResult.from_json(benchmark)

    def render(self, result: StereotypeResult) -> str:
        from contrastkit.evaluators.tasks.stereotype_probing.report import stereotype_markdown

        return stereotype_markdown(result.to_json())

    def report(self, result: StereotypeResult, figures: Sequence[Path]) -> str:
        return self.render(result)  # the report as it always was: its own plot links

    def figures(self, result: StereotypeResult) -> Mapping[str, Figure]:
        from contrastkit.evaluators.tasks.stereotype_probing.report import (
            PLOT_STEM,
            shifting_figure,
        )

        return {PLOT_STEM: shifting_figure(result.to_json())}

    def file_names(self) -> Mapping[str, str]:
        from contrastkit.evaluators.tasks.stereotype_probing.report import PLOT_STEM

        return {f"plot_{PLOT_STEM}_png": "plot", f"plot_{PLOT_STEM}_svg": "plot_svg"}

    def compare(self, results: Sequence[StereotypeResult]) -> str:
        from contrastkit.evaluators.tasks.stereotype_probing.report import (
            stereotype_comparison_markdown,
        )

        return stereotype_comparison_markdown([result.to_json() for result in results])

    def headline(self, result: StereotypeResult) -> Mapping[str, Any]:
        from contrastkit.evaluators.tasks.stereotype_probing.benchmark import (
            stereotype_headline,
        )

        return stereotype_headline(result.to_json())

    def summary(self, result: StereotypeResult) -> Mapping[str, Any]:
        return self.headline(result)  # the headline as it is: the console reads its figures

    def refusal(self, model: str, lacking: Sequence[str]) -> str:
        return (
            f"models: {model} is a captioning model: it scores pronoun continuations, not "
            "captions; stereotype probing takes dual encoders (open_clip:, hf-clip: ...) "
            "and image-text-matching models (blip-itm:, vilt:)"
        )
