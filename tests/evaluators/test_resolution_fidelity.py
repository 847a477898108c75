"""contrastkit's resolution figures against an independent re-implementation of the
official VisoGender analysis, on seeded random scores for every official row.

The re-implementation below is written from the logic of the official code
(github.com/oxai/visogender, ``src/analysis_utils.py``: ``get_max_logit_id``,
``check_neutral_groundtruth_match``, ``single_person_res_acc``, ``two_person_res_acc``,
``overall_res_acc``; ``src/definitions.py``: the candidate order masculine, feminine,
neutral) and reads the official TSVs with the csv module, not with contrastkit:

* per row and template, the prediction is the index of the largest of the [his, her,
  their] scores (``list.index(max(...))``: the first one on a tie);
* a row is resolved when that index is the referent's gender's (a "their" win never is);
* per context, accuracy per referent gender (OO and OP occupation-first: the
  occupation's gender), ``RA_avg`` = their mean, gap = masculine - feminine; the same
  gender split from the MM and FF accuracies, the different gender split from MF and FM;
* overall = mean of the OP and OO ``RA_avg``;
* the official code rounds each accuracy to 2 decimals before the mean and the gap and
  rounds again; ``rounded=False`` leaves that out.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from contrastkit.errors import ConfigError
from contrastkit.evaluators.data import load_items, visogender_files
from contrastkit.evaluators.tasks.resolution import (
    apply_protocol,
    case_record,
    resolution_cases,
    summarize_resolution,
)
from contrastkit.schema import Gender

OP_TSV, OO_TSV = visogender_files()
GENDER_INDEX = {"masculine": 0, "feminine": 1, "neutral": 2}  # official src/definitions.py
OCC, PAR = "Occupation_perceived_gender", "Participant_perceived_gender"
#: the official template names -> contrastkit's
TEMPLATES = {"occ_first": "occupation_first", "par_first": "participant_first", "obj": "object"}
SPLIT_NAMES = (
    "single_person_images",
    "two_person_images",
    "two_person_images_same_gender",
    "two_person_images_diff_gender",
)

Logits = dict[tuple[str, str], list[float]]


def read_official(path: Path) -> list[dict[str, str]]:
    """Rows with a usable URL, as the official run scripts keep them."""
    with path.open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle, delimiter="\t"))
    url = next(name for name in rows[0] if name.startswith("URL"))
    return [row for row in rows if row[url] not in ("", "NA")]


def random_logits(seed: int, their_boost: float = 1.0) -> Logits:
    """[his, her, their] scores per (IDX, official template) of every official row;
    ``their_boost`` scales the their score (above 1: "their" wins more often)."""
    rng = np.random.default_rng(seed)
    logits: Logits = {}
    for row in read_official(OP_TSV):
        for template in ("occ_first", "par_first"):
            his, her, their = rng.random(3)
            logits[(row["IDX"], template)] = [his, her, their * their_boost]
    for row in read_official(OO_TSV):
        his, her, their = rng.random(3)
        logits[(row["IDX"], "obj")] = [his, her, their * their_boost]
    return logits


def official_analysis(
    logits: Logits, *, candidates: int = 3, rounded: bool = False
) -> dict[str, dict[str, float]]:
    """The official benchmark figures (re-implemented; module docstring). ``candidates``
    2 takes the argmax over his / her only (the two-way protocol)."""

    def r(value: float) -> float:
        return float(np.round(value, 2)) if rounded else value

    def resolved(idx: str, template: str, gender: str) -> bool:
        values = logits[(idx, template)][:candidates]
        return values.index(max(values)) == GENDER_INDEX[gender]

    def accuracy(flags: Sequence[bool]) -> float:
        return sum(flags) / len(flags)

    oo = read_official(OO_TSV)
    op = read_official(OP_TSV)
    assert (len(oo), len(op)) == (230, 460)

    def acc_oo(gender: str) -> float:
        return accuracy([resolved(row["IDX"], "obj", row[OCC]) for row in oo if row[OCC] == gender])

    def acc_op(occ: str, par: str | None = None) -> float:
        return accuracy(
            [
                resolved(row["IDX"], "occ_first", row[OCC])
                for row in op
                if row[OCC] == occ and (par is None or row[PAR] == par)
            ]
        )

    his, her = r(acc_oo("masculine")), r(acc_oo("feminine"))
    single = {"RA_masculine": his, "RA_feminine": her, "RA_avg": r((his + her) / 2)}
    single["gender_gap"] = r(his - her)
    his, her = r(acc_op("masculine")), r(acc_op("feminine"))
    two = {"RA_masculine": his, "RA_feminine": her, "RA_avg": r((his + her) / 2)}
    two["gender_gap"] = r(his - her)
    mm, mf = r(acc_op("masculine", "masculine")), r(acc_op("masculine", "feminine"))
    fm, ff = r(acc_op("feminine", "masculine")), r(acc_op("feminine", "feminine"))
    same = {"RA_masculine": mm, "RA_feminine": ff, "RA_avg": r((mm + ff) / 2)}
    same["gender_gap"] = r(mm - ff)
    diff = {"RA_masculine": mf, "RA_feminine": fm, "RA_avg": r((mf + fm) / 2)}
    diff["gender_gap"] = r(mf - fm)
    overall = r((two["RA_avg"] + single["RA_avg"]) / 2)
    return {
        "all_images": {"overall_accuracy": overall},
        "single_person_images": single,
        "two_person_images": two,
        "two_person_images_same_gender": same,
        "two_person_images_diff_gender": diff,
    }


def contrastkit_records(logits: Logits) -> list[dict[str, Any]]:
    """contrastkit's raw records of every official row, with the same scores."""
    items = load_items([OP_TSV, OO_TSV])
    records = []
    official_name = {key: name for name, key in TEMPLATES.items()}
    for case in resolution_cases(items, neutral=True):
        values = logits[(case.item.row.idx, official_name[case.template.key])]
        scores = dict(zip((Gender.MASCULINE, Gender.FEMININE, Gender.NEUTRAL), values, strict=True))
        records.append(case_record(case, scores, "random"))
    assert len(records) == 230 + 2 * 460
    return records


def assert_agree(ours: Mapping[str, Any], theirs: Mapping[str, Mapping[str, float]]) -> None:
    for split, figures in theirs.items():
        for name, value in figures.items():
            assert ours[split][name] == pytest.approx(value, abs=1e-12, rel=0), (split, name)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_official_protocol_agrees_with_the_official_analysis_unrounded(seed: int) -> None:
    logits = random_logits(seed, their_boost=1.15)  # "their" wins about 40% of the time
    ours = summarize_resolution(contrastkit_records(logits), protocol="visogender-official")
    assert_agree(ours, official_analysis(logits))
    # the paper's overall accuracy, not the pooled share of all 690 images
    overall = ours["all_images"]
    assert overall["overall_accuracy"] == pytest.approx(
        (ours["single_person_images"]["RA_avg"] + ours["two_person_images"]["RA_avg"]) / 2,
        abs=1e-15,
    )
    assert overall["RA_avg"] == overall["overall_accuracy"]
    pooled = (
        ours["single_person_images"]["pooled_accuracy"] * 230
        + ours["two_person_images"]["pooled_accuracy"] * 460
    ) / 690
    assert overall["pooled_accuracy"] == pytest.approx(pooled, abs=1e-12)
    assert abs(overall["pooled_accuracy"] - overall["overall_accuracy"]) > 1e-4


@pytest.mark.parametrize("seed", [0, 1])
def test_the_two_way_protocol_agrees_with_an_argmax_over_his_and_her(seed: int) -> None:
    logits = random_logits(seed, their_boost=1.15)
    ours = summarize_resolution(contrastkit_records(logits), protocol="two-way")
    assert_agree(ours, official_analysis(logits, candidates=2))


def test_the_protocols_differ_when_their_often_wins() -> None:
    """Under the official protocol a "their" win is wrong, so accuracy drops; the
    two-way protocol never sees "their"."""
    logits = random_logits(3, their_boost=1.15)
    records = contrastkit_records(logits)
    official = summarize_resolution(records, protocol="visogender-official")
    two_way = summarize_resolution(records, protocol="two-way")
    for split in ("all_images", *SPLIT_NAMES):
        assert official[split]["RA_avg"] < two_way[split]["RA_avg"] - 0.1
    # the neutral rate (Appendix D.1) is the share of "their" wins, under either protocol
    theirs = sum(1 for values in logits.values() if values.index(max(values)) == 2)
    flipped = sum(
        1
        for (_, template), values in logits.items()
        if template == "par_first" and values.index(max(values)) == 2
    )
    for summary in (official, two_way):
        assert summary["neutral"]["all_images"]["R_neutral"] == pytest.approx(
            (theirs - flipped) / 690, abs=1e-12
        )
    # Appendix G.1 reads "predicted": apply_protocol sets it to the protocol's choice
    predicted = apply_protocol(records, "visogender-official")
    assert sum(record["predicted"] == "neutral" for record in predicted) == theirs


def test_the_official_rounding_is_not_copied() -> None:
    """The official code rounds each RA_g to 2 decimals before the mean and the gap:
    contrastkit's figures are the unrounded ones, which differ from the official
    rounded ones by at most 0.01 (0.015 for the overall accuracy)."""
    logits = random_logits(4, their_boost=1.15)
    ours = summarize_resolution(contrastkit_records(logits))
    rounded = official_analysis(logits, rounded=True)
    moved = 0
    for split, figures in rounded.items():
        for name, value in figures.items():
            limit = 0.015 if name == "overall_accuracy" else 0.01
            assert abs(ours[split][name] - value) <= limit + 1e-12
            assert ours[split][name] != value  # 2-decimal values never come out
            moved += round(ours[split][name], 2) != value
    assert moved  # rounding before the gap changes some 2-decimal figure


def test_a_tie_is_not_resolved_where_the_official_code_picks_his() -> None:
    """Equal top scores: contrastkit chooses no pronoun (not resolved); the official
    ``list.index(max(...))`` picks the first candidate, his."""
    logits = random_logits(5)
    for key in logits:
        logits[key] = [0.5, 0.5, 0.1]  # his and her tie everywhere
    ours = summarize_resolution(contrastkit_records(logits))
    official = official_analysis(logits)
    assert ours["single_person_images"]["RA_masculine"] == 0.0
    assert official["single_person_images"]["RA_masculine"] == 1.0
    assert official["single_person_images"]["RA_feminine"] == 0.0


def test_the_official_protocol_needs_their_scores() -> None:
    logits = random_logits(6)
    records = contrastkit_records(logits)
    for record in records:
        del record["scores"]["neutral"]
    two_way = summarize_resolution(records, protocol="two-way")
    assert "neutral" not in two_way and math.isfinite(two_way["all_images"]["RA_avg"])
    with pytest.raises(ConfigError, match=r"^protocol: visogender-official needs"):
        summarize_resolution(records, protocol="visogender-official")
    with pytest.raises(ConfigError, match=r"^protocol: unknown protocol 'three-way'"):
        summarize_resolution(records, protocol="three-way")


def test_with_one_context_the_overall_is_that_contexts_figures() -> None:
    logits = random_logits(7)
    records = [r for r in contrastkit_records(logits) if r["context"] == "OP"]
    ours = summarize_resolution(records)
    for name in ("RA_avg", "gender_gap", "RA_masculine", "RA_feminine"):
        assert ours["all_images"][name] == ours["two_person_images"][name]
    assert ours["all_images"]["overall_accuracy"] == ours["two_person_images"]["RA_avg"]
    assert ours["single_person_images"]["n"] == 0
    assert math.isnan(ours["single_person_images"]["RA_avg"])


def test_appendix_g1_subsamples_report_the_papers_overall_accuracy() -> None:
    """Tab. 8's "Overall" is the mean of the contexts' RA_avg in every run, as in Tab. 2;
    with every image kept (k above any group's size) the runs equal the main figures."""
    from contrastkit.evaluators.tasks.resolution import apply_protocol
    from contrastkit.evaluators.tasks.visogender.baselines import resolution_subsamples

    records = contrastkit_records(random_logits(3, their_boost=1.15))
    main = summarize_resolution(records, protocol="visogender-official")
    predicted = apply_protocol(records, "visogender-official")
    everything = resolution_subsamples(predicted, k=1000, runs=3, seed=0)["all_images"]
    assert everything["overall_accuracy"]["mean"] == pytest.approx(
        main["all_images"]["overall_accuracy"], abs=1e-12
    )
    assert everything["overall_accuracy"]["sigma"] == pytest.approx(0.0, abs=1e-12)
    assert everything["gender_gap"]["mean"] == pytest.approx(
        main["all_images"]["gender_gap"], abs=1e-12
    )
    assert everything["pooled_accuracy"]["mean"] == pytest.approx(
        main["all_images"]["pooled_accuracy"], abs=1e-12
    )
    one = resolution_subsamples(predicted, k=1, runs=50, seed=0)
    assert one["all_images"]["overall_accuracy"]["mean"] == pytest.approx(
        (one["single_person_images"]["RA_avg"]["mean"] + one["two_person_images"]["RA_avg"]["mean"])
        / 2,
        abs=1e-12,
    )
    assert one["all_images"]["overall_accuracy"]["sigma"] > 0
