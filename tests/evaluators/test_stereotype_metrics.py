"""The VLStereoSet metrics (seeds/002, Sec. 3.4-3.5, Tables 3-4) on hand-computed cases,
the reference models of Table 3, and input validation."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image

from contrastkit.evaluators.bootstrap import NO_BOOTSTRAP, BootstrapSettings
from contrastkit.evaluators.stereotype import stereotype_benchmark
from contrastkit.evaluators.stereotype_metrics import (
    choice_shares,
    group_metrics,
    ivlas,
    lmss,
    reference_summary,
    shift_summary,
    stereotype_summary,
    two_way_log_prob,
    vlbs,
    vlrs,
    vlss,
)
from contrastkit.evaluators.tasks.stereotype import RowBatches, caption_scores, score_rows
from contrastkit.interfaces import CaptionScorer
from contrastkit.probes import ProbeRow

S, A = "stereotype", "anti-stereotype"


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


# -- the reference models: Table 3's rows, exactly -----------------------------------------
@pytest.mark.parametrize(
    ("labels", "categories"),
    [
        # the balanced VLStereoSet (Table 1: 486 / 206 / 322 / 14 images, half of each
        # category anti-stereotypical)
        (
            [S, A] * (486 // 2) + [S, A] * (206 // 2) + [S, A] * (322 // 2) + [S, A] * 7,
            ["gender"] * 486 + ["profession"] * 206 + ["race"] * 322 + ["religion"] * 14,
        ),
        # an unbalanced set: the reference rows do not depend on the composition
        ([A, A, A, S, A], ["gender", "gender", "race", "race", "religion"]),
    ],
)
def test_reference_models_reproduce_table_3(labels: list[str], categories: list[str]) -> None:
    references = reference_summary(labels, categories)
    table3 = {"IDM": (100.00, 0.00, 100.00), "BIM": (100.00, 100.00, 0.00),
              "RAM": (66.67, 33.33, 66.67)}  # fmt: skip
    for name, expected in table3.items():
        groups = [references[name]["overall"], *references[name]["categories"].values()]
        for group in groups:
            shown = tuple(round(group[key], 2) for key in ("vlrs", "vlbs", "ivlas"))
            assert shown == expected, (name, group)
    # exact, not merely rounded: RAM is the expectation of a uniform pick
    ram = references["RAM"]["overall"]
    assert ram["vlrs"] == pytest.approx(200 / 3, abs=1e-12)
    assert ram["vlbs"] == pytest.approx(100 / 3, abs=1e-12)
    assert ram["ivlas"] == pytest.approx(200 / 3, abs=1e-12)
    assert references["IDM"]["overall"]["n"] == len(labels)


def test_reference_vlbs_undefined_without_anti_stereotypical_images() -> None:
    references = reference_summary([S, S, A], ["race", "race", "gender"])
    race = references["IDM"]["categories"]["race"]
    assert race["vlrs"] == 100.0
    assert math.isnan(race["vlbs"]) and math.isnan(race["ivlas"])


def test_ivlas_is_the_harmonic_mean_with_vlbs() -> None:
    # Table 3: CLIP vlrs 88.04, vlbs 45.72 -> ivlas 67.15 (the paper's "vlrb" is vlbs)
    assert ivlas(88.04, 45.72) == pytest.approx(67.15, abs=0.01)
    assert ivlas(85.21, 32.30) == pytest.approx(75.46, abs=0.01)  # ALBEF
    assert ivlas(100.0, 100.0) == 0.0  # BIM
    assert ivlas(0.0, 100.0) == 0.0  # both terms 0: defined, not a division by zero
    assert math.isnan(ivlas(50.0, float("nan")))
    with pytest.raises(ValueError, match="vlbs is a percentage"):
        ivlas(50.0, 120.0)


# -- hand-computed metrics on a constructed set ----------------------------------------------
# rows: (category, label, scores S_s S_a S_i, neutral S'_s S'_a, blank S'_s S'_a)
ROWS: list[tuple[str, str, tuple[float, ...], tuple[float, ...] | None, tuple[float, ...] | None]]
ROWS = [
    ("gender", A, (2.0, 1.0, 0.0), (1.0, 1.0), (0.0, 1.0)),  # picks S_s: lmss/vlss here
    ("gender", A, (0.0, 2.0, 1.0), (2.0, 0.0), (0.0, 0.0)),  # picks S_a
    ("gender", S, (1.0, 0.0, 3.0), (0.0, 0.0), (0.0, 0.0)),  # picks S_i
    ("gender", S, (3.0, 1.0, 0.0), (0.0, 1.0), (1.0, 0.0)),  # picks S_s (stereotypical image)
    ("race", A, (1.0, 0.0, 0.0), None, None),  # picks S_s, no neutral captions
    ("race", S, (0.0, 1.0, 2.0), None, None),  # picks S_i
]
LMSS_1 = math.log(_sigmoid(1.0) / 0.5)  # ln p(S_s|I) / p(S'_s|I) = ln σ(2-1) / σ(1-1)
VLSS_1 = math.log(0.5 / _sigmoid(-1.0))  # ln p(S'_s|I) / p(S'_s|I') = ln σ(0) / σ(0-1)


def _probe_rows() -> list[ProbeRow]:
    rows = []
    for n, (category, label, _, neutral, _) in enumerate(ROWS):
        captions = [f"row {n} caption {part}" for part in ("s", "a", "i")]
        neutrals = [f"row {n} neutral {part}" for part in ("s", "a")] if neutral else ["", ""]
        rows.append(ProbeRow(
            id=f"r{n}", image=f"img{n}.png", category=category, target="t", context="c BLANK",
            stereotype_term="s", anti_stereotype_term="a", unrelated_term="i",
            stereotype_caption=captions[0], anti_stereotype_caption=captions[1],
            unrelated_caption=captions[2], label=label,
            neutral_stereotype_caption=neutrals[0], neutral_anti_stereotype_caption=neutrals[1],
        ))  # fmt: skip
    return rows


class PlantedScorer:
    """A CaptionScorer returning planted scores: by caption for real images, and by
    caption from a second table for the blank (all-white) image."""

    spec = "planted:test"
    score_kind = "planted"
    input_size = (8, 6)

    def __init__(self) -> None:
        self.real: dict[str, float] = {}
        self.blank: dict[str, float] = {}
        self.blank_sizes: set[tuple[int, int]] = set()
        for row, (_, _, scores, neutral, blank) in zip(_probe_rows(), ROWS, strict=True):
            self.real.update(zip(row.captions(), scores, strict=True))
            if neutral is not None and blank is not None:
                self.real.update(zip(row.neutral_captions(), neutral, strict=True))
                self.blank.update(zip(row.neutral_captions(), blank, strict=True))

    def caption_scores(
        self, images: Any, captions: Any
    ) -> np.ndarray:  # the CaptionScorer protocol
        result = []
        for image, row in zip(images, captions, strict=True):
            white = image.getextrema() == ((255, 255),) * 3
            if white:
                self.blank_sizes.add(image.size)
            table = self.blank if white else self.real
            result.append([table[text] for text in row])
        return np.array(result, dtype=np.float64)


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    scorer = PlantedScorer()
    assert isinstance(scorer, CaptionScorer)
    noise = Image.new("RGB", (5, 5), (10, 200, 30))
    records, reused = score_rows(
        _probe_rows(), lambda row: noise, scorer, tmp_path / "raw.jsonl", RowBatches(4)
    )
    assert reused == 0
    assert scorer.blank_sizes == {(8, 6)}  # the blank is white, at the model's input size
    return records


def test_planted_scores_give_hand_computed_metrics(tmp_path: Path) -> None:
    records = _records(tmp_path)
    e = np.exp([2.0, 1.0, 0.0])  # Sec. 3.3: the softmax over the three captions' scores
    np.testing.assert_allclose(records[0]["probabilities"], e / e.sum())
    assert records[4]["neutral_scores"] is None and records[4]["blank_scores"] is None
    benchmark = stereotype_benchmark(
        records, model="planted:test", data=["constructed"], bootstrap=NO_BOOTSTRAP
    )
    gender = benchmark["summary"]["categories"]["gender"]
    race = benchmark["summary"]["categories"]["race"]
    overall = benchmark["summary"]["overall"]
    assert (gender["vlrs"], gender["vlbs"], gender["ivlas"]) == pytest.approx((75.0, 50.0, 60.0))
    assert (race["vlrs"], race["vlbs"], race["ivlas"]) == pytest.approx((50.0, 100.0, 0.0))
    assert overall["vlrs"] == pytest.approx(400 / 6)
    assert overall["vlbs"] == pytest.approx(200 / 3)
    assert overall["ivlas"] == pytest.approx(2 * (400 / 6) * (100 / 3) / (400 / 6 + 100 / 3))
    assert (gender["n"], gender["n_anti_stereotype"], race["n_stereotype"]) == (4, 2, 1)
    shifting = benchmark["shifting"]
    assert shifting["candidates"] == 2  # rows 0 and 4 picked S_s on an anti image
    assert shifting["without_neutral"] == 1  # row 4
    assert shifting["instances"] == [
        {"id": "r0", "category": "gender", "lmss": pytest.approx(LMSS_1),
         "vlss": pytest.approx(VLSS_1)},
    ]  # fmt: skip
    assert shifting["lmss"]["n"] == 1 and shifting["lmss"]["share_positive"] == 1.0
    assert shifting["vlss"]["mean"] == pytest.approx(VLSS_1)
    assert shifting["categories"]["race"]["lmss"]["n"] == 0
    assert benchmark["shifting"]["lmss"]["median"] == pytest.approx(LMSS_1)


def test_raw_records_are_reused_by_a_rerun(tmp_path: Path) -> None:
    first = _records(tmp_path)
    scorer = PlantedScorer()
    calls: list[int] = []
    original = scorer.caption_scores

    def counting(images: Any, captions: Any) -> np.ndarray:
        calls.append(len(images))
        return original(images, captions)

    scorer.caption_scores = counting  # type: ignore[method-assign]
    rows = _probe_rows()
    rows[1] = ProbeRow(**{**rows[1].to_record(), "unrelated_caption": "row 1 caption i"})
    noise = Image.new("RGB", (5, 5))
    again, reused = score_rows(rows, lambda row: noise, scorer, tmp_path / "raw.jsonl")
    assert reused == 6 and not calls and again == first
    edited = rows[0].to_record() | {"stereotype_caption": "row 0 caption s2"}
    scorer.real["row 0 caption s2"] = 5.0
    rows[0] = ProbeRow(**edited)
    again, reused = score_rows(rows, lambda row: noise, scorer, tmp_path / "raw.jsonl")
    assert reused == 5 and again[0]["scores"] == [5.0, 1.0, 0.0]
    lines = (tmp_path / "raw.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 6  # the stale record of the edited row is gone


def test_functions_agree_with_the_summary() -> None:
    scores = np.array([row[2] for row in ROWS])
    labels = [row[1] for row in ROWS]
    neutral = np.array([row[3] or (np.nan, np.nan) for row in ROWS])
    blank = np.array([row[4] or (np.nan, np.nan) for row in ROWS])
    assert vlrs(scores) == pytest.approx(400 / 6)
    assert vlbs(scores, labels) == pytest.approx(200 / 3)
    values = lmss(scores, neutral, labels)
    assert values[0] == pytest.approx(LMSS_1) and np.isnan(values[1:]).all()
    assert vlss(scores, neutral, blank, labels)[0] == pytest.approx(VLSS_1)
    # the scale changes magnitudes, never signs
    scaled = lmss(scores, neutral, labels, scale=100.0)[0]
    assert scaled > 0 and scaled != pytest.approx(LMSS_1)
    assert two_way_log_prob([[1000.0, 0.0]])[0] == pytest.approx(0.0)
    assert two_way_log_prob([[0.0, 1000.0]])[0] == pytest.approx(-1000.0)  # no overflow


def test_ties_count_as_a_random_pick() -> None:
    shares = choice_shares([[1.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    assert shares.tolist() == [[0.5, 0.5, 0.0], [1 / 3, 1 / 3, 1 / 3], [0.0, 0.5, 0.5]]
    assert vlrs([[0.0, 1.0, 1.0]]) == 50.0
    assert vlbs([[1.0, 1.0, 0.0]], [A]) == 50.0
    # a tie is no pick of S_s: lmss / vlss are not defined there
    assert np.isnan(lmss([[1.0, 1.0, 0.0]], [[1.0, 0.0]], [A])).all()


def test_bootstrap_intervals_cover_the_figures_and_follow_the_seed() -> None:
    rng = np.random.default_rng(1)
    scores = rng.normal(size=(60, 3))
    labels = [S, A] * 30
    categories = ["gender"] * 30 + ["race"] * 30
    first = stereotype_summary(scores, labels, categories, bootstrap=BootstrapSettings(300, seed=3))
    again = stereotype_summary(scores, labels, categories, bootstrap=BootstrapSettings(300, seed=3))
    other = stereotype_summary(scores, labels, categories, bootstrap=BootstrapSettings(300, seed=4))
    assert first == again and first != other
    for group in (first["overall"], *first["categories"].values()):
        for key in ("vlrs", "vlbs", "ivlas"):
            interval = group[f"{key}_ci"]
            assert interval["low"] <= group[key] <= interval["high"]
            assert interval["low"] < interval["high"] and interval["level"] == 0.95
    assert "vlrs_ci" not in group_metrics(scores, labels)
    summary = shift_summary([0.5, -0.25, np.nan, 1.0], bootstrap=100)
    assert (summary["n"], summary["median"], summary["share_positive"]) == (3, 0.5, 2 / 3)
    assert summary["mean_ci"]["low"] <= summary["mean"] <= summary["mean_ci"]["high"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: vlrs([[1.0, 2.0]]), r"shape \(n, 3\)"),
        (lambda: vlrs([[1.0, np.nan, 0.0]]), "NaN or infinite"),
        (lambda: vlbs([[1.0, 2.0, 3.0]], [A, S]), "1 rows of scores but 2 labels"),
        (lambda: vlbs([[1.0, 2.0, 3.0]], ["anti"]), r"labels must be one of .*\['anti'\]"),
        (lambda: lmss([[1.0, 2.0, 3.0]], [[1.0]], [A]), r"neutral_scores must have shape"),
        (lambda: lmss([[1.0, 2.0, 3.0]], [[1.0, np.nan]], [A]), "two finite scores, or NaN"),
        (lambda: two_way_log_prob([[1.0, 2.0]], scale=0), "scale must be a positive"),
        (
            lambda: stereotype_summary([[1.0, 2.0, 3.0]], [A], ["g", "h"]),
            "1 rows of scores but 2 categories",
        ),
    ],
)
def test_inputs_are_validated(call: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


def test_caption_scores_of_a_dual_encoder_are_cosines_of_each_image_with_its_captions() -> None:
    class Dual:
        spec = "dual:test"

        def encode_images(self, images: Any) -> np.ndarray:
            return np.array([[1.0, 0.0], [0.0, 1.0]], dtype=np.float32)[: len(images)]

        def encode_texts(self, texts: Any) -> np.ndarray:
            table = {"x": [1.0, 0.0], "y": [0.6, 0.8], "z": [0.0, 1.0]}
            return np.array([table[t] for t in texts], dtype=np.float32)

        def score(self, images: Any, texts: Any) -> np.ndarray:
            return self.encode_images(images) @ self.encode_texts(texts).T

    image = Image.new("RGB", (4, 4))
    scores = caption_scores(Dual(), [image, image], [["x", "y"], ["y", "z"]])
    np.testing.assert_allclose(scores, [[1.0, 0.6], [0.8, 1.0]], rtol=1e-6)
    with pytest.raises(ValueError, match="same number of captions"):
        caption_scores(Dual(), [image, image], [["x"], ["y", "z"]])
