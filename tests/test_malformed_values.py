"""Malformed values are located errors, never a crash (issue 44.11): a COCO
``category_id`` that is a list or an object (``evaluate zero-shot``), an integer of
hundreds of digits in a COCO ``bbox`` and in an lmms-eval log-likelihood answer, values
of the wrong type in a ``contrast_set.jsonl`` (``export contrast``), and a key given
twice in one probe JSONL object."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from contrastkit.builders.coco import read_coco
from contrastkit.builders.manifest import contrast_items
from contrastkit.cli import app
from contrastkit.errors import DataFormatError
from contrastkit.evaluators.harness import read_predictions
from contrastkit.evaluators.tasks.zero_shot.groups import GroupingOptions, load_grouped
from contrastkit.harness_key import option_loss, read_key
from contrastkit.probes import COLUMNS, read_probes
from lmms_eval_samples import FOLDER, write_export
from stereoset_data import expected_rows
from zero_shot_data import write_coco

runner = CliRunner()
HUGE = 10**400


def _edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.parametrize(
    "value", [[1], {"id": 1}, HUGE, True, "1"], ids=["list", "object", "huge", "bool", "text"]
)
def test_a_coco_category_id_of_another_type_is_a_located_error(
    value: object, tmp_path: Path, tiny_clip_spec: str
) -> None:
    root = write_coco(tmp_path / "coco")
    instances = root / "annotations" / "instances_val2017.json"

    def change(data: dict[str, Any]) -> None:
        data["annotations"][3]["category_id"] = value

    _edit_json(instances, change)
    with pytest.raises(DataFormatError, match=r"expected an integer id|unknown category") as caught:
        load_grouped(root, GroupingOptions(min_images=1))
    assert (caught.value.path, caught.value.field) == (
        str(instances), "annotations[3].category_id"
    )  # fmt: skip
    result = runner.invoke(app, ["evaluate", "zero-shot", "--data", str(root), "--model",
                                 tiny_clip_spec, "--out", str(tmp_path / "o")])  # fmt: skip
    assert result.exit_code == 2 and "annotations[3].category_id" in result.output, result.output


def test_a_coco_category_listed_with_an_id_of_another_type_is_a_located_error(
    tmp_path: Path,
) -> None:
    root = write_coco(tmp_path / "coco")
    instances = root / "annotations" / "instances_val2017.json"
    _edit_json(instances, lambda data: data["categories"][2].update(id=[3]))
    with pytest.raises(DataFormatError, match="expected an integer id") as caught:
        load_grouped(root, GroupingOptions(min_images=1))
    assert caught.value.field == "categories[2].id"


def test_a_coco_bbox_with_a_400_digit_number_is_a_located_error(tmp_path: Path) -> None:
    from audit.conftest import planted_captions, write_planted_coco

    images = planted_captions(masculine=3, feminine=3, undefined=0, shuffled=False)
    root = write_planted_coco(tmp_path / "coco", images, with_boxes=True)
    instances = root / "annotations" / "instances_val2017.json"
    _edit_json(instances, lambda data: data["annotations"][1]["bbox"].__setitem__(2, HUGE))
    with pytest.raises(DataFormatError, match="not a finite number") as caught:
        read_coco(root, "val2017")
    assert (caught.value.path, caught.value.field) == (str(instances), "annotations[1].bbox")


def test_an_lmms_eval_loss_of_400_digits_is_a_located_error(tmp_path: Path) -> None:
    assert option_loss([HUGE, True]) is None
    assert option_loss([0.5, True]) == 0.5
    key = read_key(write_export(tmp_path / "visogender", tmp_path / "export" / "lmms"))
    main = sorted((FOLDER / "multiple_choice").glob("*_samples_*.jsonl"))[0]
    lines = main.read_text(encoding="utf-8").splitlines()
    record = json.loads(lines[1])
    record["filtered_resps"] = [[0.357, True], [HUGE, False], [2.3, False]]
    path = tmp_path / main.name
    path.write_text("\n".join([lines[0], json.dumps(record), *lines[2:]]) + "\n")
    with pytest.raises(DataFormatError, match="not a \\(loss, is_greedy\\) pair") as caught:
        read_predictions(path, key)
    assert (caught.value.line, caught.value.field) == (2, "filtered_resps[1]")


ITEM: dict[str, Any] = {
    "source_id": "9", "gender": "masculine", "edit_id": "9-m-0", "image": "edits/9-m-0.png",
    "source_image": "coco/train2017/9.jpg", "box": [1.0, 2.0, 30.0, 40.0],
    "captions": ["A man."], "original_captions": ["A woman."], "method": "instruct",
    "p_real": 0.9, "p_gender": 0.8,
}  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("image", 7), ("image", ["edits/9-m-0.png"]), ("edit_id", None), ("gender", {"m": 1}),
        ("source_image", 1.5), ("method", True), ("captions", "A man."), ("captions", [1]),
        ("original_captions", None), ("box", [1, 2, 3]), ("box", [1, 2, "3", 4]),
        ("box", [1, 2, HUGE, 4]), ("p_real", "0.9"), ("p_gender", HUGE),
    ],
    ids=lambda value: value if isinstance(value, str) else type(value).__name__,
)  # fmt: skip
def test_a_contrast_set_value_of_another_type_is_a_located_error(
    field: str, value: object, tmp_path: Path
) -> None:
    path = tmp_path / "contrast_set.jsonl"
    path.write_text(json.dumps(ITEM) + "\n" + json.dumps(ITEM | {field: value}) + "\n")
    with pytest.raises(DataFormatError) as caught:
        list(contrast_items(path))
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)


def test_the_contrast_set_reader_takes_a_well_formed_item(tmp_path: Path) -> None:
    path = tmp_path / "contrast_set.jsonl"
    path.write_text(json.dumps(ITEM | {"p_real": None, "box": [1, 2, 30, 40]}) + "\n")
    [(line, item)] = list(contrast_items(path))
    assert line == 1 and item.box == [1, 2, 30, 40] and item.p_real is None


def test_a_probe_jsonl_with_a_key_given_twice_is_refused(tmp_path: Path) -> None:
    row = expected_rows()[0]
    fields = [f'"{name}": {json.dumps(getattr(row, name))}' for name in COLUMNS]
    # the label twice: which one counts would be up to the parser
    line = "{" + ", ".join([*fields, '"label": "stereotype"']) + "}"
    path = tmp_path / "probes.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match="'label' appears twice") as caught:
        read_probes(path)
    assert (caught.value.path, caught.value.line) == (str(path), 1)
    result = runner.invoke(app, ["validate", str(path)])
    assert "Traceback" not in result.output
