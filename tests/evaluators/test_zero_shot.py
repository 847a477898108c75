"""Zero-shot disparities (the zero-shot disparities paper): groups and filters on
constructed Visual Genome and COCO folders, AP and ECE against scikit-learn and hand
computations, bring-your-own predictions with planted disparities through the whole job."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.metrics import average_precision_score

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.tasks.zero_shot.groups import (
    GroupingOptions,
    caption_group,
    concept_words,
    load_grouped,
    read_concept_map,
)
from contrastkit.evaluators.tasks.zero_shot.job import ZeroShotDisparityConfig, zero_shot_disparity
from contrastkit.evaluators.tasks.zero_shot.metrics import (
    MetricSettings,
    average_precision,
    expected_calibration_error,
    group_metrics,
    weighted_ap,
    weighted_ece,
)
from contrastkit.evaluators.tasks.zero_shot.predictions import load_predictions
from contrastkit.evaluators.tasks.zero_shot.words import MAN_TERMS, WOMAN_TERMS
from zero_shot_data import (
    VG_DROPPED,
    VG_KEPT,
    planted_rows,
    truth_of,
    vg_images,
    vg_single_group,
    write_coco,
    write_jsonl,
    write_vg,
    write_vg_entries,
)


@pytest.fixture(scope="module")
def vg(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_vg(tmp_path_factory.mktemp("vg") / "vg")


@pytest.fixture(scope="module")
def coco(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_coco(tmp_path_factory.mktemp("coco") / "coco")


# --- groups and filters -----------------------------------------------------------------


@pytest.mark.parametrize("without", ["keep", "drop"])
def test_visual_genome_groups_and_concept_filter_keep_exactly_what_passes(
    vg: Path, without: str
) -> None:
    grouped = load_grouped(vg, GroupingOptions(min_images=5, images_without_concepts=without))
    assert grouped.layout == "vg"
    assert grouped.concepts == VG_KEPT  # chair has exactly 5 images per group: kept
    assert not set(VG_DROPPED) & set(grouped.concepts)
    # image 500 (a man and a table) is of one group too, and shows no kept concept
    single = vg_single_group()
    no_concept = [i for i, _, c in single if not c & set(VG_KEPT)]
    showing = {g: sum(1 for i, gg, c in single if gg == g and c & set(VG_KEPT))
               for g in ("men", "women")}  # fmt: skip
    every = {g: sum(1 for _, gg, _ in single if gg == g) for g in ("men", "women")}
    # the paper keeps every single-group image; "drop" leaves out those without a concept
    assert grouped.counts["images"] == (every if without == "keep" else showing)
    assert {r.image_id for r in grouped.images} >= ({"500"} if without == "keep" else set())
    # 3 images show both groups, 2 neither
    assert grouped.counts["dropped"] == {
        "both_groups": 3, "no_group": 2, "no_concept": len(no_concept) * (without == "drop"),
    }  # fmt: skip
    assert grouped.counts["without_concept"] == len(no_concept)
    assert grouped.counts["images_without_concepts"] == without
    assert grouped.concept_images["table.n.02"] == {"men": 9, "women": 4}
    # the group-defining synsets are never concepts
    assert not any(c.startswith(("man.", "woman.", "groom.")) for c in grouped.concept_images)
    # one more image per group needed: chair (5/5) and dress (5 men) drop out
    assert load_grouped(vg, GroupingOptions(min_images=6)).concepts == ("hair.n.01", "necktie.n.01")
    # the paper's default threshold (50) leaves nothing in this small set
    assert load_grouped(vg).concepts == ()


def test_visual_genome_images_may_live_in_images_and_a_missing_one_is_located(
    tmp_path: Path,
) -> None:
    root = write_vg(tmp_path / "vg", folder="images")
    assert load_grouped(root, GroupingOptions(min_images=5)).images[0].path.parent.name == "images"
    kept = load_grouped(root, GroupingOptions(min_images=5)).images[3]
    kept.path.unlink()
    with pytest.raises(DataFormatError, match=f"{kept.image_id}.jpg: image file not found"):
        load_grouped(root, GroupingOptions(min_images=5))


def test_coco_groups_come_from_caption_terms_and_objects_map_to_synsets(
    coco: Path, tmp_path: Path
) -> None:
    grouped = load_grouped(coco, GroupingOptions(min_images=4))
    assert grouped.layout == "coco" and grouped.split == "val2017"
    assert grouped.counts["images"] == {"men": 12, "women": 10}
    assert grouped.counts["dropped"]["both_groups"] == 2
    assert grouped.counts["dropped"]["no_group"] == 1
    # tie -> necktie.n.01, handbag -> bag.n.04; kite (1 / 2) is filtered out
    assert grouped.concepts == ("bag.n.04", "cup.n.01", "necktie.n.01", "person.n.01")
    table = tmp_path / "map.tsv"
    table.write_text("category\tsynset\n# ours\ncup\tmug.n.04\n", encoding="utf-8")
    assert read_concept_map(table) == {"cup": "mug.n.04"}
    mapped = load_grouped(coco, GroupingOptions(min_images=4, concept_map=read_concept_map(table)))
    assert "mug.n.04" in mapped.concepts and "cup.n.01" not in mapped.concepts
    bad = tmp_path / "bad.tsv"
    bad.write_text("cup\tmug.n.04\ttoo many\n", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"bad.tsv:1: expected two tab-separated"):
        read_concept_map(bad)


def test_caption_terms_follow_the_papers_lists() -> None:
    assert caption_group(["The man's hat"]) == {"men"}  # man's -> mans
    assert caption_group(["A photo of hers"]) == {"women"}
    assert caption_group(["The manager and the womanizer"]) == set()  # whole words only
    assert caption_group(["He hands it to her"]) == {"men", "women"}
    assert concept_words("tennis_racket.n.01") == "tennis racket"
    assert concept_words("mug") == "mug"


def test_coco_concept_filter_can_count_another_split(tmp_path: Path) -> None:
    """The paper filters concepts on COCO train and evaluates on val."""
    root = write_coco(tmp_path / "coco", split="train2017", images_dir="unused")
    train = root / "annotations" / "instances_train2017.json"
    data = json.loads(train.read_text(encoding="utf-8"))
    data["annotations"] = [a for a in data["annotations"] if a["category_id"] != 3]
    train.write_text(json.dumps(data), encoding="utf-8")
    write_coco(root, split="val2017")
    assert load_grouped(root, GroupingOptions(min_images=4)).split == "val2017"  # val preferred
    assert "bag.n.04" in load_grouped(root, GroupingOptions(min_images=4)).concepts
    grouped = load_grouped(
        root, GroupingOptions(min_images=4, split="val2017", filter_split="train2017")
    )
    assert "bag.n.04" not in grouped.concepts  # no handbag in train
    assert grouped.counts["filter_split"] == "train2017"
    assert len(grouped.images) == 22  # still the val images
    with pytest.raises(ConfigError, match=r"has no instances_test2017\.json"):
        load_grouped(root, GroupingOptions(split="test2017"))


_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=4)),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(
            st.sampled_from(["image_id", "id", "objects", "synsets", "names"]), inner, max_size=3
        ),
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects=_JSON, image_data=st.one_of(st.none(), _JSON))
def test_any_visual_genome_json_loads_or_is_a_located_error(
    objects: object, image_data: object
) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "objects.json").write_text(json.dumps(objects), encoding="utf-8")
        if image_data is not None:
            (root / "image_data.json").write_text(json.dumps(image_data), encoding="utf-8")
        try:
            grouped = load_grouped(root, GroupingOptions(min_images=1))
        except DataFormatError as error:
            assert Path(error.path).is_relative_to(root)
        else:
            assert grouped.images == ()  # no image files: nothing could be kept


def test_a_folder_of_neither_layout_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a Visual Genome folder"):
        load_grouped(tmp_path)
    (tmp_path / "objects.json").write_text("[{]", encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"objects\.json:1: not valid JSON"):
        load_grouped(tmp_path)


def test_an_image_listed_twice_in_visual_genome_is_a_located_error(tmp_path: Path) -> None:
    """With a model the image was counted twice; with --predictions it was an
    IndexError (issue 30). Now the second entry is named."""
    root = write_vg(tmp_path / "vg")
    objects = json.loads((root / "objects.json").read_text())
    objects.append(objects[1])
    (root / "objects.json").write_text(json.dumps(objects), encoding="utf-8")
    with pytest.raises(DataFormatError, match=r"is listed twice \(first as entry 1\)") as caught:
        load_grouped(root, GroupingOptions(min_images=1))
    assert caught.value.path == str(root / "objects.json")
    assert caught.value.field == "image_id"


# --- images that show no kept concept (issue 31) ------------------------------------------

#: Five images per group: two necktie, two hair, and one (15 / 25) whose only object, a
#: table, is filtered out (one image per group, below min_images=2). Scores per concept.
_WITHOUT = {
    # image: (synsets, necktie score, hair score)
    "11": (["man.n.01", "necktie.n.01"], 0.9, 0.1),
    "12": (["man.n.01", "necktie.n.01"], 0.5, 0.2),
    "13": (["man.n.01", "hair.n.01"], 0.2, 0.9),
    "14": (["man.n.01", "hair.n.01"], 0.1, 0.8),
    "15": (["man.n.01", "table.n.02"], 0.7, 0.95),
    "21": (["woman.n.01", "necktie.n.01"], 0.9, 0.1),
    "22": (["woman.n.01", "necktie.n.01"], 0.5, 0.2),
    "23": (["woman.n.01", "hair.n.01"], 0.2, 0.9),
    "24": (["woman.n.01", "hair.n.01"], 0.1, 0.8),
    "25": (["woman.n.01", "table.n.02"], 0.05, 0.05),
}


def _without_run(tmp_path: Path, without: str | None) -> dict[str, Any]:
    data = write_vg_entries(tmp_path / "vg", [(i, s) for i, (s, _, _) in _WITHOUT.items()])
    rows = [
        {"image_id": i, "concept": c, "score": score}
        for i, (_, necktie, hair) in _WITHOUT.items()
        for c, score in (("necktie.n.01", necktie), ("hair.n.01", hair))
    ]
    path = write_jsonl(tmp_path / "scores.jsonl", rows)
    options = {} if without is None else {"images_without_concepts": without}
    result = zero_shot_disparity(ZeroShotDisparityConfig(
        data=data, predictions=path, out=tmp_path / (without or "default"), min_images=2,
        bootstrap=0, plots=False, **options,
    ))  # fmt: skip
    return {**result.results, "report": result.files["report"].read_text(encoding="utf-8")}


def test_images_without_a_kept_concept_are_negatives_as_in_the_paper_or_dropped(
    tmp_path: Path,
) -> None:
    """The paper keeps every single-group image (Sec. 2.1-2.2); image 15 shows no kept
    concept but outscores a true necktie (0.7 > 0.5) and both true hair images."""
    kept, dropped = _without_run(tmp_path, None), _without_run(tmp_path, "drop")
    assert _without_run(tmp_path, "keep")["concepts"] == kept["concepts"]  # the default
    assert kept["counts"]["images"] == {"men": 5, "women": 5}
    assert dropped["counts"]["images"] == {"men": 4, "women": 4}
    assert kept["counts"]["without_concept"] == dropped["counts"]["without_concept"] == 2
    assert (kept["counts"]["dropped"]["no_concept"], dropped["counts"]["dropped"]["no_concept"]) \
        == (0, 2)  # fmt: skip
    # by hand, men, keeping 15: necktie ranks 11 (+), 15 (-), 12 (+): (1 + 2/3) / 2;
    # hair ranks 15 (-), 13 (+), 14 (+): (1/2 + 2/3) / 2. Women: 25 scores lowest.
    hand_kept = {"necktie.n.01": (1 + 2 / 3) / 2, "hair.n.01": (1 / 2 + 2 / 3) / 2}
    for results, men in ((kept, hand_kept), (dropped, {"necktie.n.01": 1.0, "hair.n.01": 1.0})):
        by_concept = {c["concept"]: c for c in results["concepts"]}
        assert set(by_concept) == set(men)
        for concept, ap in men.items():
            assert by_concept[concept]["ap_men"] == pytest.approx(100 * ap)
            assert by_concept[concept]["ap_women"] == pytest.approx(100.0)
            assert by_concept[concept]["ap_diff"] == pytest.approx(100 * ap - 100)
    # the readings differ: -16.7 and -41.7 AP points against none
    assert kept["map"]["difference"] == pytest.approx(-100 * (1 - (5 / 6 + 7 / 12) / 2))
    assert dropped["map"]["difference"] == 0.0
    assert "2 of the images kept show no kept concept" in kept["report"]
    assert "as in the paper" in kept["report"]
    assert "2 more show no kept concept. All were left out" in dropped["report"]


def test_images_without_concepts_is_checked_and_reaches_the_job_from_the_cli(
    tmp_path: Path,
) -> None:
    from typer.testing import CliRunner

    from contrastkit.cli import app

    with pytest.raises(ConfigError, match="images_without_concepts: unknown value 'ignore'"):
        ZeroShotDisparityConfig(data=tmp_path, predictions=tmp_path / "p.jsonl", out=tmp_path,
                                images_without_concepts="ignore")  # fmt: skip
    expected = _without_run(tmp_path / "lib", "drop")
    data, predictions = tmp_path / "lib" / "vg", tmp_path / "lib" / "scores.jsonl"
    result = CliRunner().invoke(app, [
        "evaluate", "--task", "zero-shot-disparity", "--data", str(data), "--predictions",
        str(predictions), "--out", str(tmp_path / "cli"), "--min-images", "2",
        "--bootstrap", "0", "--images-without-concepts", "drop",
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    saved = json.loads(next((tmp_path / "cli").glob("*/zero_shot/disparity.json")).read_text())
    assert saved["counts"]["images_without_concepts"] == "drop"
    assert saved["concepts"] == expected["concepts"]


# --- metrics -----------------------------------------------------------------------------


def test_ap_equals_scikit_learn_and_a_hand_computation() -> None:
    truth = np.array([1, 0, 1, 0])
    scores = np.array([0.9, 0.8, 0.7, 0.1])
    # thresholds 0.9 (P 1, R 1/2), 0.8 (P 1/2, R 1/2), 0.7 (P 2/3, R 1)
    assert average_precision(truth, scores) == pytest.approx(100 * (0.5 * 1 + 0.5 * 2 / 3))
    rng = np.random.default_rng(0)
    for _ in range(20):
        y = rng.integers(0, 2, 40)
        s = rng.integers(0, 6, 40).astype(float)  # many ties
        w = rng.integers(0, 3, (3, 40)).astype(float)
        if not y.any():
            continue
        assert average_precision(y, s) == pytest.approx(100 * average_precision_score(y, s))
        for row, value in zip(w, weighted_ap(y, s, w), strict=True):
            if (row * y).sum():
                expected = average_precision_score(y, s, sample_weight=row)
                assert value == pytest.approx(100 * expected)
            else:
                assert np.isnan(value)
    assert np.isnan(average_precision(np.zeros(3), np.ones(3)))


def test_ece_by_hand_and_near_zero_when_calibrated() -> None:
    p = np.array([0.1, 0.2, 0.8, 0.9])
    y = np.array([0, 1, 1, 1])
    # 2 bins: (0, .5]: mean p .15, accuracy .5 -> .35 x 2/4; (.5, 1]: .85 vs 1 -> .15 x 2/4
    assert expected_calibration_error(p, y, bins=2) == pytest.approx(25.0)
    # 1 bin: |3/4 - .5|
    assert expected_calibration_error(p, y, bins=1) == pytest.approx(25.0)
    assert expected_calibration_error(np.array([0.0, 1.0]), np.array([0, 1])) == 0.0
    rng = np.random.default_rng(1)
    probs = rng.uniform(size=200_000)
    outcomes = rng.uniform(size=probs.size) < probs
    assert expected_calibration_error(probs, outcomes) < 1.0
    assert expected_calibration_error(probs**3, outcomes) > 15.0  # overconfident "absent"
    weights = np.vstack([np.ones(4), [2, 0, 1, 0]])
    assert weighted_ece(p, y, weights, 2)[0] == pytest.approx(25.0)
    repeated = expected_calibration_error(p[[0, 0, 2]], y[[0, 0, 2]], bins=2)
    assert weighted_ece(p, y, weights, 2)[1] == pytest.approx(repeated)
    with pytest.raises(ConfigError, match="probabilities in"):
        expected_calibration_error(np.array([-0.5, 0.5]), np.array([0, 1]))


def test_group_metrics_give_signed_differences_and_intervals_around_them() -> None:
    rng = np.random.default_rng(2)
    n = 200
    men = np.arange(n) < 120
    truth = rng.integers(0, 2, (n, 2))
    scores = rng.uniform(size=(n, 2))
    scores[men, 0] = truth[men, 0] + 0.1 * rng.uniform(size=men.sum())  # perfect for men
    metrics = group_metrics(truth, scores, men, settings=MetricSettings(bootstrap=200, seed=0))
    assert metrics.ap_men[0] == pytest.approx(100.0)
    assert metrics.ap_diff[0] == pytest.approx(100.0 - metrics.ap_women[0])
    assert metrics.ap_diff[0] > 30
    assert metrics.ap_diff_ci is not None and metrics.map_ci is not None
    low, high = metrics.ap_diff_ci[0]
    assert 0 < low <= metrics.ap_diff[0] <= high
    assert metrics.map_men == pytest.approx(np.mean(metrics.ap_men))
    # resampling is seeded
    again = group_metrics(truth, scores, men, settings=MetricSettings(bootstrap=200, seed=0))
    assert np.array_equal(again.ap_diff_ci, metrics.ap_diff_ci)


# --- bring-your-own predictions -----------------------------------------------------------


def test_predictions_are_read_onto_the_grid_and_errors_are_located(tmp_path: Path) -> None:
    rows = [
        {"image_id": 1, "concept": "a", "score": 0.2},
        {"image_id": "1", "concept": "a", "score": 0.7},  # a second box: the max counts
        {"image_id": "2", "concept": "b", "score": -1.5},
        {"image_id": "9", "concept": "a", "score": 0.1},  # outside the analysis
        {"image_id": "2", "concept": "zebra", "score": 0.4},
    ]
    path = write_jsonl(tmp_path / "p.jsonl", rows)
    predictions = load_predictions(path, ["1", "2", "3"], ["a", "b"])
    assert predictions.scores.tolist() == [[0.7, 0.0], [0.0, -1.5], [0.0, 0.0]]
    assert (predictions.rows, predictions.used) == (5, 3)
    assert (predictions.unknown_images, predictions.unknown_concepts) == (1, 1)
    assert predictions.probabilities is None  # -1.5 is no probability
    assert "not all in [0, 1]" in (predictions.why_no_probabilities or "")
    hits = write_jsonl(tmp_path / "h.jsonl", [
        {"image_id": "1", "concept": "a", "hit": 1, "confidence": 0.8},
        {"image_id": "2", "concept": "a", "hit": 0, "confidence": 0.3},
    ])  # fmt: skip
    loaded = load_predictions(hits, ["1", "2"], ["a"])
    assert loaded.kind == "hit" and loaded.scores.tolist() == [[1.0], [0.0]]
    assert loaded.probabilities is not None and loaded.probabilities.tolist() == [[0.8], [0.3]]
    cases = [
        ('{"image_id": "1", "concept": "a"}\n', r"x.jsonl:1: give exactly one of"),
        ('{"image_id": "1", "concept": "a", "score": 1}\n{"image_id": "1", "concept": "a", '
         '"hit": 1}\n', r"x.jsonl:2: field 'hit': the file mixes"),
        ('{"image_id": "1", "concept": "a", "hit": 2}\n', r"x.jsonl:1: field 'hit': must be 0"),
        ('{"concept": "a", "score": 1}\n', r"x.jsonl:1: field 'image_id': missing"),
        ('\n{"image_id": "1", "concept": "a", "hit": 1, "confidence": 1.5}\n',
         r"x.jsonl:2: field 'confidence': must be in \[0, 1\]"),
        ("not json\n", r"x.jsonl:1: invalid JSON"),
        ("", "has no rows"),
    ]  # fmt: skip
    for text, message in cases:
        (tmp_path / "x.jsonl").write_text(text, encoding="utf-8")
        with pytest.raises(DataFormatError, match=message):
            load_predictions(tmp_path / "x.jsonl", ["1"], ["a"])
    with pytest.raises(DataFormatError, match=r"expected a \.jsonl"):
        load_predictions(write_jsonl(tmp_path / "p.csv", rows), ["1"], ["a"])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.one_of(
            st.text(max_size=40),
            st.dictionaries(
                st.sampled_from(["image_id", "concept", "score", "hit", "confidence", "x"]),
                st.one_of(
                    st.none(),
                    st.booleans(),
                    st.integers(),
                    st.floats(),
                    st.text(max_size=5),
                    st.sampled_from(["1", "a"]),
                    st.integers(min_value=10**300),
                ),
            ).map(json.dumps),
        ),
        max_size=6,
    )
)
def test_any_predictions_file_loads_or_is_a_located_error(lines: list[str]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "p.jsonl"
        path.write_text("\n".join(lines), encoding="utf-8")
        try:
            loaded = load_predictions(path, ["1", "2"], ["a"])
        except DataFormatError as error:
            assert error.path == str(path)
        else:
            assert loaded.scores.shape == (2, 1) and np.isfinite(loaded.scores).all()


def test_parquet_predictions_read_like_jsonl(tmp_path: Path) -> None:
    import pandas as pd

    frame = pd.DataFrame({"image_id": ["1", "2"], "concept": ["a", "a"], "hit": [1, 0],
                          "confidence": [0.9, 0.2]})  # fmt: skip
    frame.to_parquet(tmp_path / "p.parquet")
    loaded = load_predictions(tmp_path / "p.parquet", ["1", "2"], ["a"])
    assert loaded.scores.tolist() == [[1.0], [0.0]]
    assert loaded.probabilities is not None and loaded.probabilities.tolist() == [[0.9], [0.2]]


def _vg_rows(favoured: dict[str, str], seed: int = 0) -> list[dict[str, object]]:
    truth, groups = truth_of(vg_images(), VG_KEPT)
    return planted_rows(truth, groups, favoured=favoured, seed=seed)


def test_planted_disparities_come_out_on_top_with_their_sign(vg: Path, tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "detector.jsonl",
                       _vg_rows({"necktie.n.01": "men", "dress.n.01": "women"}))  # fmt: skip
    # word vectors: necktie sits on the man terms, dress on the woman terms; no hair, chair
    rng = np.random.default_rng(4)
    vectors = {w: rng.normal(size=6) for w in (*MAN_TERMS, *WOMAN_TERMS)}
    vectors["necktie"] = np.mean([vectors[w] for w in MAN_TERMS], axis=0)
    vectors["dress"] = np.mean([vectors[w] for w in WOMAN_TERMS], axis=0)
    words = tmp_path / "vectors.txt"
    words.write_text(
        f"{len(vectors)} 6\n"
        + "".join(f"{w} {' '.join(map(str, v))}\n" for w, v in vectors.items()),
        encoding="utf-8",
    )
    result = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, predictions=path, out=tmp_path / "out", min_images=5, bootstrap=100,
        words=words,
    ))  # fmt: skip
    language = result.results["language"]["file"]
    assert language["concepts"]["necktie.n.01"]["bias"] > 0
    assert language["concepts"]["dress.n.01"]["bias"] < 0
    assert language["concepts"]["hair.n.01"]["bias"] is None  # no vector: left out
    assert (language["agreement"]["ap"]["n"], language["agreement"]["ap"]["agree"]) == (2, 2)
    assert result.folder == tmp_path / "out" / "predictions-detector" / "zero_shot"
    concepts = result.results["concepts"]
    top = {c["concept"]: c for c in concepts[:2]}
    assert set(top) == {"necktie.n.01", "dress.n.01"}
    assert top["necktie.n.01"]["ap_diff"] > 0 and top["necktie.n.01"]["ap_men"] == 100.0
    assert top["dress.n.01"]["ap_diff"] < 0 and top["dress.n.01"]["ap_women"] == 100.0
    for entry in concepts[2:]:
        assert entry["ap_diff"] == 0.0  # perfect in both groups
    low, high = top["necktie.n.01"]["ap_diff_ci"]
    assert low <= top["necktie.n.01"]["ap_diff"] <= high
    # every AP is scikit-learn's on the group's images
    grouped = load_grouped(vg, GroupingOptions(min_images=5))
    scores = load_predictions(path, [r.image_id for r in grouped.images], grouped.concepts).scores
    truth, men = grouped.labels(), grouped.group_mask("men")
    j = grouped.concepts.index("necktie.n.01")
    expected = 100 * average_precision_score(truth[~men, j], scores[~men, j])
    assert top["necktie.n.01"]["ap_women"] == pytest.approx(expected, abs=1e-6)
    saved = json.loads(result.files["json"].read_text(encoding="utf-8"))
    assert saved["task"] == "zero-shot-disparity" and saved["random_weights"] is False
    assert saved["counts"]["concepts_kept"] == 4 and saved["paper_counts"]["images"] == 25215
    assert saved["map"]["men"] == pytest.approx(np.mean([c["ap_men"] for c in concepts]))
    # scores in [0, 1] are probabilities: ECE per concept per group
    assert saved["calibration"]["computed"] is True
    assert all(c["ece_men"] is not None for c in saved["concepts"])
    report = result.files["report"].read_text(encoding="utf-8")
    assert "necktie.n.01" in report and "2 of 4 concepts differ by more than 5 AP points" in report
    assert "Experiment 3: language bias" in report
    assert result.files["ap_differences"].is_file() and result.files["map_by_group"].is_file()


def test_detector_hits_with_confidence_run_through_ap_and_ece(vg: Path, tmp_path: Path) -> None:
    """Binary hits rank for AP (the paper's Detic / LSeg indicators); the confidences are
    calibrated for images of men and overconfident for images of women."""
    rng = np.random.default_rng(5)
    rows = []
    for image_id, group, concepts in vg_single_group():
        for concept in VG_KEPT:
            present = concept in concepts
            if group == "men":
                confidence = 0.95 if present else 0.05
            else:
                confidence = 0.95 if rng.uniform() < 0.5 else 0.05  # confident, often wrong
            rows.append({"image_id": image_id, "concept": concept,
                         "hit": int(confidence > 0.5), "confidence": confidence})  # fmt: skip
    path = write_jsonl(tmp_path / "hits.jsonl", rows)
    result = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, predictions=path, out=tmp_path / "out", min_images=5, bootstrap=0, bins=10,
        plots=False,
    ))  # fmt: skip
    entries = result.results["concepts"]
    assert result.results["calibration"]["computed"] is True
    for entry in entries:
        assert entry["ece_men"] == pytest.approx(5.0)  # 0.95 / 0.05 against 1 / 0
        assert entry["ece_women"] > 20.0
        assert entry["ece_diff"] == pytest.approx(entry["ece_women"] - entry["ece_men"])
        assert entry["ap_men"] == 100.0
    assert "Experiment 2" in result.files["report"].read_text(encoding="utf-8")
    # without confidence: AP only, and the report says why
    bare = write_jsonl(tmp_path / "bare.jsonl", [
        {k: v for k, v in row.items() if k != "confidence"} for row in rows
    ])  # fmt: skip
    plain = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, predictions=bare, out=tmp_path / "out", min_images=5, bootstrap=0,
        plots=False,
    ))  # fmt: skip
    assert plain.results["calibration"]["computed"] is False
    assert "without 'confidence'" in plain.files["report"].read_text(encoding="utf-8")


def test_coco_and_visual_genome_consistency_colours(vg: Path, coco: Path, tmp_path: Path) -> None:
    first = zero_shot_disparity(ZeroShotDisparityConfig(
        data=vg, predictions=write_jsonl(tmp_path / "vg.jsonl", _vg_rows({
            "necktie.n.01": "men", "dress.n.01": "women"})),
        out=tmp_path / "vg-out", min_images=5, bootstrap=0, plots=False,
    ))  # fmt: skip
    grouped = load_grouped(coco, GroupingOptions(min_images=4))
    images = [(r.image_id, r.group, r.concepts) for r in grouped.images]
    truth, groups = truth_of(images, grouped.concepts)
    rows = planted_rows(truth, groups, favoured={"necktie.n.01": "men"}, seed=1)
    result = zero_shot_disparity(ZeroShotDisparityConfig(
        data=coco, predictions=write_jsonl(tmp_path / "coco.jsonl", rows),
        out=tmp_path / "coco-out", min_images=4, bootstrap=0, compare=first.folder,
    ))  # fmt: skip
    assert result.results["concepts"][0]["concept"] == "necktie.n.01"
    consistency = result.results["consistency"]
    colours = {c["concept"]: c["colour"] for c in consistency["concepts"]}
    assert colours == {"necktie.n.01": "green"}  # the only concept in both datasets
    assert result.files["consistency"].is_file()
    assert "green 1" in result.files["report"].read_text(encoding="utf-8")


def test_config_errors_name_the_field(vg: Path, tmp_path: Path) -> None:
    cases = [
        ({}, "model: give exactly one"),
        ({"model": "open_clip:x/random", "predictions": "p.jsonl"}, "model: give exactly one"),
        ({"predictions": "p.jsonl", "calibration": "softmax"}, "calibration: softmax"),
        ({"predictions": "p.jsonl", "calibration": "platt"}, "calibration: unknown mode"),
        ({"predictions": "p.jsonl", "word_source": "model"}, "word_source: the model's own"),
        ({"predictions": "p.jsonl", "word_source": "file"}, "words: give a word-vectors file"),
        ({"predictions": "p.jsonl", "prompt": "a photo"}, "prompt: must contain"),
        ({"predictions": "p.jsonl", "bins": 0}, "bins: must be"),
        ({"predictions": "p.jsonl", "layout": "lvis"}, "layout: choose from"),
    ]
    for extra, message in cases:
        with pytest.raises(ConfigError, match=message):
            ZeroShotDisparityConfig(data=vg, out=tmp_path, **extra)  # type: ignore[arg-type]
    config = ZeroShotDisparityConfig(
        data=vg, out=tmp_path, predictions=tmp_path / "none.jsonl", compare=vg
    )
    with pytest.raises(ConfigError, match="compare: with a predictions file"):
        zero_shot_disparity(config)
    config = ZeroShotDisparityConfig(data=vg, out=tmp_path, predictions=tmp_path / "none.jsonl")
    with pytest.raises(DataFormatError, match="no concept occurs in at least 50 images") as e:
        zero_shot_disparity(config)
    assert "--min-images" in str(e.value)  # the flag a command-line user can change
    config = ZeroShotDisparityConfig(
        data=vg, out=tmp_path, predictions=tmp_path / "none.jsonl", min_images=5
    )
    with pytest.raises(DataFormatError, match=r"none\.jsonl: predictions file not found"):
        zero_shot_disparity(config)
