"""docs/pipeline.md says what the mask dilation is a fraction of (issue 47.6): the shorter
side of the integer box covering COCO's float box, up to 2 px longer than COCO's."""

from __future__ import annotations

from pathlib import Path

from contrastkit.builders.coco import Box
from contrastkit.curation.masks import dilation_pixels

PIPELINE = Path(__file__).parents[1] / "docs" / "pipeline.md"


def test_the_dilation_is_a_fraction_of_the_covering_integer_box_as_the_docs_say() -> None:
    box = Box(10.9, 20.9, 100.2, 60.2)  # COCO: shorter side 60.2
    covering = box.xyxy(640, 480)
    assert covering == (10, 20, 112, 82)  # sides 102 and 62: each up to 2 px longer
    assert dilation_pixels(covering, 0.05) == 0.05 * 62
    text = " ".join(PIPELINE.read_text().split())
    assert "the integer pixel box covering COCO's float `bbox`" in text
    assert "up to 2 px longer than COCO's" in text
