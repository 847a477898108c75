"""The dataset-bias audit (GenSynth Sec. 3): planted context is found, shuffled context
is not, the baselines give hand-computed values, and the command runs end to end."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from contrastkit.audit import AuditConfig, audit
from contrastkit.audit.classifier import auc, auc_bootstrap, auc_weighted
from contrastkit.audit.clusters import kmeans
from contrastkit.audit.data import read_coco_captions
from contrastkit.cli import app
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError, DataFormatError

runner = CliRunner()


def _run(data: Path, out: Path, **options: object) -> dict:
    result = audit(AuditConfig(data=data, out=out, **options))  # type: ignore[arg-type]
    on_disk = json.loads(result.json_path.read_text(encoding="utf-8"))
    assert on_disk == result.report
    return result.report


# --- composition ---------------------------------------------------------------------


def test_composition_counts_labels_of_joined_captions(tmp_path: Path) -> None:
    root = tmp_path / "coco"
    (root / "annotations").mkdir(parents=True)
    captions = {
        1: ["A man on a skateboard.", "A person skating."],  # masculine
        2: ["A woman in a kitchen.", "She cooks."],  # feminine
        3: ["A man rides.", "A woman watches."],  # both words in the joined text: undefined
        4: ["A snowman in a field.", "A manhole cover."],  # no whole gendered word: undefined
        5: ["Her dog sleeps next to him."],  # feminine and masculine pronouns: undefined
    }
    images = [{"id": i, "file_name": f"{i}.jpg", "width": 4, "height": 4} for i in captions]
    notes = [
        {"id": 10 * i + j, "image_id": i, "caption": c}
        for i, texts in captions.items()
        for j, c in enumerate(texts)
    ]
    (root / "annotations" / "captions_val2017.json").write_text(
        json.dumps({"images": images, "annotations": notes}), encoding="utf-8"
    )
    report = _run(root, tmp_path / "out", analyses=("composition",))
    section = report["composition"]
    assert section["counts"] == {"masculine": 1, "feminine": 1, "undefined": 3}
    assert section["images"] == 5 and section["captions"] == 9
    assert section["shares"]["undefined"] == pytest.approx(0.6)
    assert section["masculine_share_of_labelled"] == pytest.approx(0.5)
    assert section["paper_counts"] == {"masculine": 1275, "feminine": 539, "undefined": 3186}
    text = (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")
    assert "| undefined | 3 | 60.0% |" in text


def test_composition_of_a_folder_with_instances_matches_the_coco_builder(coco_dir: Path) -> None:
    from contrastkit.builders.coco import read_coco, select_sources

    data = read_coco_captions(coco_dir)
    assert data.has_instances
    counts = select_sources(read_coco(coco_dir)).counts
    labels = data.labels
    assert {g: labels.count(g) for g in ("masculine", "feminine", "undefined")} == {
        g: counts[g] for g in ("masculine", "feminine", "undefined")
    }
    assert all(image.path is not None and image.path.is_file() for image in data.images)


def test_malformed_captions_are_located(tmp_path: Path) -> None:
    root = tmp_path / "coco" / "annotations"
    root.mkdir(parents=True)
    (root / "captions_val2017.json").write_text(
        json.dumps(
            {
                "images": [{"id": 1, "file_name": "1.jpg"}],
                "annotations": [{"id": 1, "image_id": 1, "caption": 7}],
            }
        ),
        encoding="utf-8",
    )
    with pytest.raises(DataFormatError) as caught:
        read_coco_captions(tmp_path / "coco")
    assert caught.value.field == "annotations[0].caption"
    with pytest.raises(DataFormatError):
        read_coco_captions(tmp_path / "missing")


# --- caption classifier ----------------------------------------------------------------


def test_caption_classifier_finds_gender_planted_in_context(planted_coco, tmp_path: Path) -> None:
    report = _run(planted_coco(), tmp_path / "out", analyses=("classifier",))
    found = report["caption_classifier"]
    assert found["auc"] > 0.9
    assert found["interval"][0] > 0.75 and found["interval"][0] <= found["auc"]
    assert found["interval"][1] >= found["auc"]
    assert found["test"] == {"masculine": 18, "feminine": 12}
    assert "skateboard" in found["words"]["masculine"]
    assert "kitchen" in found["words"]["feminine"]
    # the gendered words themselves were neutralised away
    everything = found["words"]["masculine"] + found["words"]["feminine"]
    assert not {"man", "woman", "boy", "girl", "his", "her", "lady"} & set(everything)


def test_caption_classifier_is_at_chance_when_context_is_shuffled(
    planted_coco, tmp_path: Path
) -> None:
    data = planted_coco(masculine=300, feminine=300, undefined=10, shuffled=True)
    found = _run(data, tmp_path / "out", analyses=("classifier",))["caption_classifier"]
    assert 0.4 < found["auc"] < 0.6
    assert found["interval"][0] < 0.5 < found["interval"][1]


def test_the_split_keeps_each_group_whole_and_stratifies_groups_by_their_labels() -> None:
    from contrastkit.audit.classifier import stratified_split

    # 20 sources in both genders, 10 masculine-only and 10 feminine-only ones
    groups = [f"s{i}" for i in range(20) for _ in range(2)] + [f"m{i}" for i in range(10)]
    groups += [f"f{i}" for i in range(10)]
    labels = ["masculine", "feminine"] * 20 + ["masculine"] * 10 + ["feminine"] * 10
    for seed in range(5):
        train, test = stratified_split(labels, 0.3, np.random.default_rng(seed), groups)
        assert sorted([*train, *test]) == list(range(60))
        held = {groups[i] for i in test}
        assert not held & {groups[i] for i in train}  # no source on both sides
        # ceil(0.3 n) of each stratum's n groups: 6 of 20 pairs, 3 of 10 of each single
        assert sum(g.startswith("s") for g in held) == 6
        assert sum(g.startswith("m") for g in held) == sum(g.startswith("f") for g in held) == 3
    # without groups every image is its own: the same draw as one group per image
    alone = stratified_split(labels, 0.3, np.random.default_rng(0))
    single = stratified_split(labels, 0.3, np.random.default_rng(0), list(range(60)))
    assert all(np.array_equal(a, b) for a, b in zip(alone, single, strict=True))
    assert [labels[i] for i in alone[1]].count("masculine") == 9  # ceil(0.3 * 30)


def test_auc_counts_ties_half_and_weights_are_multiplicities() -> None:
    assert auc([0.1, 0.4, 0.35, 0.8], [False, False, True, True]) == pytest.approx(0.75)
    assert auc([1.0, 1.0], [True, False]) == pytest.approx(0.5)
    assert math.isnan(auc([0.3, 0.2], [True, True]))
    rng = np.random.default_rng(5)
    scores = rng.integers(0, 4, 30).astype(float)  # many ties
    positive = rng.random(30) < 0.4
    index = rng.integers(0, 30, size=(3, 30))
    counts = np.stack([np.bincount(row, minlength=30) for row in index])
    weighted = auc_weighted(scores, positive, counts)
    for row, value in zip(index, weighted, strict=True):
        assert value == pytest.approx(auc(scores[row], positive[row]))
    low, high = auc_bootstrap(scores, positive, resamples=200, seed=1)
    assert low <= auc(scores, positive) <= high


# --- clusters -------------------------------------------------------------------------


def test_clusters_show_the_planted_skew(planted_coco, tmp_path: Path) -> None:
    report = _run(planted_coco(), tmp_path / "out", analyses=("clusters",), clusters=3)
    section = report["clusters"]
    assert section["embedding"] == "lsa" and section["M"] == 3
    assert section["images"] == 100 and section["masculine_share"] == pytest.approx(0.6)
    by_word = {row["words"][0]: row for row in section["clusters"]}
    skate = [row for row in section["clusters"] if "skateboard" in row["words"][:3]]
    kitchen = [row for row in section["clusters"] if "kitchen" in row["words"][:3]]
    assert skate and kitchen, by_word
    assert all(row["factor_pp"] == pytest.approx(40.0) for row in skate)  # 100% men vs 60%
    assert all(row["factor_pp"] == pytest.approx(-60.0) for row in kitchen)  # no men
    assert sum(row["size"] for row in section["clusters"]) == 100
    text = (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")
    assert "LSA (TF-IDF + truncated SVD), a bag-of-words stand-in" in text
    assert (tmp_path / "out" / "plots" / "clusters_map.png").read_bytes()[:4] == b"\x89PNG"


def test_clusters_of_shuffled_context_are_near_parity(planted_coco, tmp_path: Path) -> None:
    data = planted_coco(masculine=300, feminine=300, undefined=0, shuffled=True)
    section = _run(data, tmp_path / "out", analyses=("clusters",), clusters=3)["clusters"]
    assert max(abs(row["factor_pp"]) for row in section["clusters"]) < 10


def test_kmeans_recovers_separated_groups_and_is_seeded() -> None:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [10.0, 0.0], [0.0, 10.0]])
    points = np.concatenate(
        [c + rng.normal(0, 0.5, (20 + 10 * i, 2)) for i, c in enumerate(centres)]
    )
    assignment, _ = kmeans(points, 3, seed=1)
    truth = np.repeat([0, 1, 2], [20, 30, 40])
    for group in range(3):
        assert len(set(assignment[truth == group].tolist())) == 1
    assert np.bincount(assignment).tolist() == [40, 30, 20]  # numbered by size
    again, _ = kmeans(points, 3, seed=1)
    assert np.array_equal(assignment, again)
    with pytest.raises(ConfigError):
        kmeans(points, 0)


@pytest.mark.slow
def test_a_local_text_encoder_embeds_the_captions(planted_coco, tmp_path: Path) -> None:
    from transformers import BertConfig, BertModel, BertTokenizer

    folder = tmp_path / "tiny-bert"
    folder.mkdir()
    words = ["person", "child", "skateboard", "ramp", "kitchen", "oven", "beach", "kite", "on"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(str(folder))
    report = _run(
        planted_coco(masculine=12, feminine=8, undefined=2),
        tmp_path / "out",
        analyses=("clusters",),
        clusters=2,
        text_encoder=folder,
    )
    assert report["clusters"]["embedding"] == f"transformers:{folder}"
    assert sum(row["size"] for row in report["clusters"]["clusters"]) == 20
    text = (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")
    assert "bag-of-words stand-in" not in text and "tiny-bert" in text
    from contrastkit.errors import ModelNotFoundError

    with pytest.raises(ModelNotFoundError):
        _run(planted_coco(masculine=3, feminine=3, undefined=0), tmp_path / "o2",
             analyses=("clusters",), text_encoder=tmp_path / "nothing-here")  # fmt: skip


# --- retrieval baselines in the report (the baselines: tests/audit/test_baselines.py) ---


def test_baselines_in_the_report(planted_coco, tmp_path: Path) -> None:
    report = _run(planted_coco(), tmp_path / "out", analyses=("baselines",), balanced=True, runs=2)
    section = report["baselines"]
    assert section["queries"] == 750 and section["labelled_images"] == 100
    assert set(section["models"]) == {"random", "tfidf"}
    for entry in section["models"].values():
        assert set(entry["original"]) == {"bias@5", "bias@10", "maxskew@25", "maxskew@100"}
        assert len(entry["balanced"]["bias@5"]["runs"]) == 2
    assert [s["masculine"] - s["feminine"] for s in section["balanced_sets"]] == [0, 0]
    assert all(s["undefined"] == 40 for s in section["balanced_sets"])  # 50/150 of 120
    # masculine images outnumber feminine ones 60:40, so a random ranking leans masculine
    assert section["models"]["random"]["original"]["bias@5"]["mean"] > 0.1
    # the balanced random model does not
    assert abs(section["models"]["random"]["balanced"]["bias@5"]["mean"]) < 0.1


# --- command line -------------------------------------------------------------------------


@pytest.mark.slow
def test_cli_audit_end_to_end(planted_coco, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["audit", str(planted_coco()), "--out", str(out), "--balanced", "--runs", "2",
         "--clusters", "3", "--resamples", "200"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    assert report["analyses"] == ["composition", "baselines", "classifier", "clusters"]
    assert "image_probe" not in report  # no --image-probe model
    assert "60 masculine, 40 feminine, 50 undefined" in result.output
    assert f"held-out AUC {report['caption_classifier']['auc']:.3f}" in result.output
    text = (out / "audit.md").read_text(encoding="utf-8")
    tfidf = report["baselines"]["models"]["tfidf"]["original"]["maxskew@25"]["mean"]
    assert f"{tfidf:+.3f}" in text
    for name in ("composition", "baselines", "clusters_factor", "clusters_map"):
        assert (out / "plots" / f"{name}.png").read_bytes()[:4] == b"\x89PNG"
        assert f"plots/{name}.png" in text


def test_cli_audit_reports_bad_input(tmp_path: Path) -> None:
    result = runner.invoke(app, ["audit", str(tmp_path / "nothing"), "--out", str(tmp_path)])
    assert result.exit_code == 2 and "no such folder" in result.output
    result = runner.invoke(app, ["audit", str(tmp_path), "--out", str(tmp_path), "--only", "x"])
    assert result.exit_code == 2 and "analyses" in result.output
    result = runner.invoke(app, ["audit", str(tmp_path), "--out", str(tmp_path), "--bias-k", "a"])
    assert result.exit_code == 2 and "--bias-k" in result.output


@pytest.mark.slow
def test_cli_audit_with_a_registry_model(planted_coco, tmp_path: Path) -> None:
    from contrastkit.evaluators.report.plots import RANDOM_WEIGHTS_TITLE
    from contrastkit.tiny.clip import tiny_open_clip

    spec = tiny_open_clip(tmp_path / "models")
    data = planted_coco(masculine=12, feminine=8, undefined=5, with_files=True, with_boxes=True)
    out = tmp_path / "out"
    result = runner.invoke(
        app,
        ["audit", str(data), "--out", str(out), "--only", "composition,baselines,image_probe",
         "--model", spec, "--image-probe", spec, "--balanced", "--runs", "2", "--device",
         "cpu"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    entry = report["baselines"]["models"][spec]
    assert entry["original"]["bias@5"]["n"] == 125  # every caption is a query
    assert len(entry["balanced"]["maxskew@25"]["runs"]) == 2
    assert spec in report["baselines"]["weights_notes"]
    assert "random weights" in (out / "audit.md").read_text(encoding="utf-8")
    # the console and every plot carry the random-weights mark, as evaluate's do
    assert report["random_weights"] is True and list(report["weights_notes"]) == [spec]
    assert f"random weights: {spec} has random weights" in result.output
    assert f"{spec} (random weights)" in result.output  # its row of the table
    svgs = sorted(out.glob("plots/*.svg"))
    assert [p.stem for p in svgs] == ["baselines", "composition"]
    for svg in svgs:
        assert RANDOM_WEIGHTS_TITLE in svg.read_text(encoding="utf-8"), svg.name
    assert "(random weights)" in (out / "plots" / "baselines.svg").read_text(encoding="utf-8")
    # 4 masculine and 3 feminine held out: the probe reports no AUC and embeds nothing
    probe = report["image_probe"]
    assert probe["test"] == {"masculine": 4, "feminine": 3}
    assert probe["masked"] is None and probe["unmasked"] is None and probe["too_small"]
    assert "image probe: held-out AUC not reported: too few held-out images" in result.output


def _encoder_folder(folder: Path) -> Path:
    """A tiny BERT folder (random weights) that embeds the planted captions."""
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir()
    words = ["person", "child", "skateboard", "ramp", "kitchen", "oven", "beach", "kite", "on"]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=32, max_position_embeddings=64,
    )  # fmt: skip
    BertModel(config).save_pretrained(str(folder))
    return folder


@pytest.mark.slow
def test_an_audit_with_a_random_weight_text_encoder_is_marked_on_the_console_and_plots(
    planted_coco, tmp_path: Path
) -> None:
    """A text encoder folder carrying the random-weights marker (contrastkit's tiny
    models) marks the console, audit.md and every plot, even the composition plot that
    used no model; the same folder without the marker marks nothing."""
    from contrastkit.evaluators.report.plots import RANDOM_WEIGHTS_TITLE
    from contrastkit.tiny.marker import MARKER_FILE, mark_random_weights

    data = planted_coco(masculine=12, feminine=8, undefined=2)
    encoder = _encoder_folder(tmp_path / "tiny-bert")
    mark_random_weights(encoder, "tiny BERT")
    outputs = {}
    for marked in (True, False):
        if not marked:
            (encoder / MARKER_FILE).unlink()
        out = tmp_path / f"out-{marked}"
        result = runner.invoke(
            app, ["audit", str(data), "--out", str(out), "--only", "composition,clusters",
                  "--clusters", "2", "--text-encoder", str(encoder)],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        report = json.loads((out / "audit.json").read_text(encoding="utf-8"))
        svgs = sorted(out.glob("plots/*.svg"))
        assert [p.stem for p in svgs] == ["clusters_factor", "clusters_map", "composition"]
        marks = [RANDOM_WEIGHTS_TITLE in p.read_text(encoding="utf-8") for p in svgs]
        outputs[marked] = (report, result.output, marks, (out / "audit.md").read_text("utf-8"))
    report, console, marks, text = outputs[True]
    assert report["random_weights"] is True and list(report["weights_notes"]) == [str(encoder)]
    assert f"random weights: {encoder} has random weights" in console
    assert marks == [True, True, True]
    assert "> **Random weights.** This audit used models with random weights" in text
    report, console, marks, text = outputs[False]
    assert report["random_weights"] is False and report["weights_notes"] == {}
    assert "random weights" not in console and "random weights" not in text.lower()
    assert marks == [False, False, False]


@pytest.mark.slow
@pytest.mark.parametrize("shuffled", [False, True])
def test_image_probe_sees_the_scene_only_when_it_carries_gender(
    planted_coco, tmp_path: Path, shuffled: bool
) -> None:
    from contrastkit.tiny.clip import tiny_open_clip

    spec = tiny_open_clip(tmp_path / "models")
    data = planted_coco(
        masculine=40, feminine=40, undefined=4, shuffled=shuffled, with_files=True,
        with_boxes=True,
    )  # fmt: skip
    report = _run(
        data, tmp_path / "out", analyses=("image_probe",), image_probe=spec,
        model=ModelConfig(device="cpu"), resamples=300,
    )  # fmt: skip
    probe = report["image_probe"]
    assert probe["images"] == {"masculine": 40, "feminine": 40}
    assert probe["test"] == {"masculine": 12, "feminine": 12}
    # unmasked, the person box's colour is the gender
    assert probe["unmasked"]["auc"] > 0.9
    if shuffled:  # the background says nothing about gender
        assert abs(probe["masked"]["auc"] - 0.5) < 0.2
        assert probe["masked"]["interval"][0] < 0.5 < probe["masked"]["interval"][1]
    else:  # skate park backgrounds go with men, kitchens with women
        assert probe["masked"]["auc"] > 0.85
    text = (tmp_path / "out" / "audit.md").read_text(encoding="utf-8")
    assert "person-masked images: held-out AUC" in text


def test_masked_image_blacks_out_the_person_boxes(planted_coco) -> None:
    from contrastkit.audit.image_probe import MaskedImage

    data = planted_coco(masculine=1, feminine=0, undefined=0, with_files=True, with_boxes=True)
    image = read_coco_captions(data).images[0]
    assert image.person_boxes == ((20.0, 16.0, 24.0, 32.0),) and image.path is not None
    masked = np.asarray(MaskedImage(image.path, image.person_boxes)())
    assert masked[16:48, 20:44].max() == 0  # the box
    assert masked[:16].min() > 0 and masked[:, :20].min() > 0  # the scene is kept


def test_a_visogender_set_is_audited_for_its_cells(
    official_op: Path, official_oo: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "visogender"
    folder.mkdir()
    for path in (official_op, official_oo):
        (folder / path.name).write_bytes(path.read_bytes())
    result = runner.invoke(app, ["audit", str(folder), "--out", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "out" / "audit.json").read_text(encoding="utf-8"))
    assert report["format"] == "visogender"
    section = report["composition"]
    assert section["counts"] == {"masculine": 345, "feminine": 345, "undefined": 0}
    unbalanced = [c for c in section["cells"] if not c["balanced"]]
    # the official OO file spells one object two ways, which splits a cell
    assert {c["other"] for c in unbalanced} == {"object: mixing spoon", "object: mixing_spoon"}
    assert report["baselines"] == {"skipped": "a visogender set has no captions"}
    assert "no captions" in result.output


def test_the_report_flags_cutoffs_that_cover_the_data_and_tiny_held_out_sets(
    planted_coco, tmp_path: Path
) -> None:
    """On 8 images Bias@10 and MaxSkew@25 see the whole data, and a 2-image held-out set
    makes the AUC unreadable: the report says both; on 200 images it says neither."""
    small = _run(planted_coco(masculine=4, feminine=4, undefined=0), tmp_path / "small",
                 analyses=("baselines", "classifier"), resamples=50)  # fmt: skip
    assert small["baselines"]["ranked_images"] == 8
    text = (tmp_path / "small" / "audit.md").read_text(encoding="utf-8")
    assert "Bias@10: K reaches the 8 images a query ranks" in text
    assert "Bias@5, 10: K reaches" not in text  # the top 5 of 8 is not the whole data
    assert "MaxSkew@25, 100: K reaches the 8 images" in text
    assert "Too few held-out images to read this AUC" in text

    large = planted_coco(masculine=100, feminine=100, undefined=0)
    _run(large, tmp_path / "large", analyses=("baselines", "classifier"), resamples=50,
         ks_skew=(25,))  # fmt: skip
    text = (tmp_path / "large" / "audit.md").read_text(encoding="utf-8")
    assert "K reaches" not in text and "Too few held-out" not in text


def _tiny_bert_classifier_folder(folder: Path, documents: list[str]) -> Path:
    """A tiny BERT (random weights) with a word-level vocabulary of ``documents``."""
    from transformers import BertConfig, BertModel, BertTokenizer

    words = sorted({w.strip(".,").lower() for d in documents for w in d.split()})
    vocab = list(dict.fromkeys(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]))
    folder.mkdir()
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(str(folder))
    config = BertConfig(
        vocab_size=len(vocab), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=128,
    )  # fmt: skip
    BertModel(config).save_pretrained(str(folder))
    return folder


@pytest.mark.slow
def test_a_fine_tuned_transformer_caption_classifier_finds_planted_context(
    planted, tmp_path: Path
) -> None:
    """The paper's kind of classifier (a fine-tuned encoder; here a tiny random BERT with
    a new two-way head): planted context words are learnt (AUC near 1), shuffled context
    is not (AUC near 0.5); the result says which classifier ran and how."""
    from contrastkit.audit.classifier import (
        FineTunedClassifier,
        ProbeSettings,
        caption_classifier,
    )
    from contrastkit.errors import ModelNotFoundError
    from contrastkit.gender_words import neutralize

    sets = {
        shuffled: planted(masculine=60, feminine=60, undefined=0, shuffled=shuffled,
                          beach_share=0.0)
        for shuffled in (False, True)
    }  # fmt: skip
    documents = {
        shuffled: [" ".join(neutralize(c) for c in caps) for _, _, caps in images]
        for shuffled, images in sets.items()
    }
    folder = _tiny_bert_classifier_folder(tmp_path / "tiny-bert", documents[False])
    aucs = {}
    for shuffled, images in sets.items():
        result = caption_classifier(
            documents[shuffled], [label for label, _, _ in images],
            settings=ProbeSettings(resamples=200),
            classifier=FineTunedClassifier(folder, epochs=8, learning_rate=1e-3),
        )  # fmt: skip
        assert result["classifier"] == "fine-tuned transformers:tiny-bert"
        assert result["fine_tuning"]["epochs"] == 8 and result["words"]["masculine"] == []
        aucs[shuffled] = result["auc"]
    assert aucs[False] > 0.9 and 0.3 < aucs[True] < 0.7, aucs
    with pytest.raises(ModelNotFoundError, match="no such folder"):
        caption_classifier(documents[True], [label for label, _, _ in sets[True]],
                           classifier=FineTunedClassifier(tmp_path / "x"))  # fmt: skip


def test_context_clusters_of_a_small_set_with_shared_captions_have_no_empty_cluster() -> None:
    """The quickstart's export: 6 images, each photo's masculine and feminine versions
    sharing their neutral captions. K-means asked for 20 clusters made empty ones and the
    salient-word step divided by zero (issue 31); now there are at most as many clusters
    as distinct images, none empty."""
    from contrastkit.audit.clusters import ClusterSettings, context_clusters

    photos = [["a person at a desk"], ["a person with a camera"], ["a person on a boat"]]
    captions = [texts for texts in photos for _ in range(2)]
    labels = ["masculine", "feminine"] * 3
    found = context_clusters(captions, labels, ClusterSettings(clusters=20, seed=0))
    assert found["M"] == 3 and found["images"] == 6
    sizes = [row["size"] for row in found["clusters"]]
    assert sorted(sizes) == [2, 2, 2] and all(row["masculine_share"] == 0.5 for row in
                                               found["clusters"])  # fmt: skip
    assert sorted(set(found["points"]["cluster"])) == [0, 1, 2]


def test_a_build_folder_is_refused_with_how_to_audit_it(tmp_path: Path) -> None:
    """``audit`` on a GenSynth build folder said only "expected a COCO folder" (issue
    31); now it says to export the build and audit the export."""
    build = tmp_path / "build"
    build.mkdir()
    (build / "contrast_set.jsonl").write_text("")
    (build / "manifest.jsonl").write_text("")
    result = CliRunner().invoke(app, ["audit", str(build), "--out", str(tmp_path / "a")])
    assert result.exit_code == 2
    shown = " ".join(result.output.split())
    assert "export it first" in shown and "contrastkit export contrast" in shown
