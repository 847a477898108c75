"""Experiment 3 of the zero-shot disparity paper (seed 003, Appendix A.3): language bias
from hand-made word2vec / GloVe files and from a tiny OpenCLIP text encoder, sign
agreement with the AP differences, the Fig. 3-4 consistency colours, and the figures."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from scipy import stats

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.evaluators.tasks.zero_shot.consistency import (
    consistency_colours,
    consistency_counts,
)
from contrastkit.evaluators.tasks.zero_shot.plots import (
    ComparedDifferences,
    ConceptDifferences,
    FigureText,
    plot_consistency,
    plot_group_map,
    plot_top_differences,
)
from contrastkit.evaluators.tasks.zero_shot.words import (
    MAN_TERMS,
    MODIFIERS,
    WOMAN_TERMS,
    BiasMethod,
    KeyedWordVectors,
    LanguageSection,
    WordVectors,
    concept_words,
    language_bias,
    language_markdown,
    load_word_vectors,
    model_word_vectors,
    sign_agreement,
)
from contrastkit.models.registry import load_scorer

# Hand-made 3-d vectors. Man terms: man (1,0,0) and he (1,0,1); woman terms: woman
# (0,1,0) and she (0,2,0). Concepts: necktie (3,4,0) -> unit (0.6, 0.8, 0); tennis (1,0,0)
# and racket (0,0,1) average to (0.5, 0, 0.5); knob (0,1,0); handle (2,0,0).
ROWS = [
    ("man", "1 0 0"),
    ("he", "1 0 1"),
    ("woman", "0 1 0"),
    ("she", "0 2 0"),
    ("necktie", "3 4 0"),
    ("tennis", "1 0 0"),
    ("racket", "0 0 1"),
    ("knob", "0 1 0"),
    ("handle", "2 0 0"),
    ("dog", "0 0 5"),
]
MAN, WOMAN = ("man", "he"), ("woman", "she")
R2 = math.sqrt(2)

# necktie: cos to man 0.6, to he 0.6/sqrt(2); to woman and she 0.8.
NECKTIE = ((0.6 + 0.6 / R2) / 2, 0.8)
# tennis racket: unit (1/sqrt2, 0, 1/sqrt2): cos to man 1/sqrt2, to he 1; to women 0.
TENNIS_RACKET = ((1 / R2 + 1.0) / 2, 0.0)
# knob handle: mean (1, 0.5, 0) -> unit (2, 1, 0)/sqrt5: man 2/sqrt5, he 2/sqrt10;
# woman and she 1/sqrt5.
KNOB_HANDLE = ((2 / math.sqrt(5) + 2 / math.sqrt(10)) / 2, 1 / math.sqrt(5))
# knob alone: (0, 1, 0): cos 0 to both man terms, 1 to both woman terms.
KNOB = (0.0, 1.0)


def _word2vec_text(path: Path) -> Path:
    path.write_text(f"{len(ROWS)} 3\n" + "".join(f"{w} {v}\n" for w, v in ROWS), "utf-8")
    return path


def _glove(path: Path) -> Path:
    path.write_text("".join(f"{w} {v}\n" for w, v in ROWS), "utf-8")
    return path


@pytest.fixture(scope="module")
def vector_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The same vectors as word2vec text, GloVe text and word2vec binary (saved by gensim;
    given a .txt name to show the format is read from the content)."""
    from gensim.models import KeyedVectors

    folder = tmp_path_factory.mktemp("vectors")
    text = _word2vec_text(folder / "vectors.w2v.txt")
    glove = _glove(folder / "glove.6B.3d.txt")
    keyed = KeyedVectors.load_word2vec_format(str(text))
    binary = folder / "vectors-binary.txt"
    keyed.save_word2vec_format(str(binary), binary=True)
    return {"word2vec-text": text, "glove-text": glove, "word2vec-binary": binary}


@pytest.mark.parametrize("kind", ["word2vec-text", "glove-text", "word2vec-binary"])
def test_language_bias_equals_hand_computed_cosines(
    vector_files: dict[str, Path], kind: str
) -> None:
    vectors = load_word_vectors(vector_files[kind])
    assert isinstance(vectors, WordVectors)
    assert vectors.format == kind and len(vectors) == len(ROWS)
    assert str(vector_files[kind]) in vectors.source

    biases = language_bias(
        ["necktie.n.01", "tennis_racket.n.01", "knob.n.02", "knob.n.01"],
        vectors,
        BiasMethod(MAN, WOMAN),
    )

    assert list(biases) == ["necktie.n.01", "tennis_racket.n.01", "knob.n.02", "knob.n.01"]
    for concept, (man, woman) in {
        "necktie.n.01": NECKTIE,
        "tennis_racket.n.01": TENNIS_RACKET,
        "knob.n.02": KNOB_HANDLE,
        "knob.n.01": KNOB,
    }.items():
        bias = biases[concept]
        assert bias.man == pytest.approx(man, abs=1e-6)
        assert bias.woman == pytest.approx(woman, abs=1e-6)
        assert bias.bias == pytest.approx(man - woman, abs=1e-6)
    assert biases["necktie.n.01"].bias == pytest.approx(-0.287868, abs=1e-6)
    assert biases["tennis_racket.n.01"].words == ("tennis", "racket")
    assert biases["knob.n.02"].modifier == "knob handle"
    assert biases["knob.n.02"].words == ("knob", "handle")
    assert biases["knob.n.01"].modifier is None


def test_concept_words_lemmas_phrases_and_modifiers() -> None:
    assert concept_words("necktie.n.01") == ("necktie",)
    assert concept_words("electric_refrigerator.n.01") == ("electric", "refrigerator")
    assert concept_words("hot dog") == ("hot", "dog")
    assert concept_words("great-aunt.n.01") == ("great-aunt",)
    assert concept_words("helmet.n.02") == ("protective", "helmet")
    assert concept_words("helmet.n.01") == ("helmet",)
    assert concept_words("bat.n.05", {"bat.n.05": "baseball bat"}) == ("baseball", "bat")
    assert MODIFIERS["knob.n.02"] == "knob handle"


def test_user_modifiers_change_the_words_looked_up(vector_files: dict[str, Path]) -> None:
    vectors = load_word_vectors(vector_files["word2vec-text"])
    biases = language_bias(["knob.n.02"], vectors, BiasMethod(MAN, WOMAN, modifiers={}))
    assert biases["knob.n.02"].bias == pytest.approx(KNOB[0] - KNOB[1])
    biases = language_bias(
        ["handle"], vectors, BiasMethod(MAN, WOMAN, modifiers={"handle": "tennis racket"})
    )
    assert biases["handle"].bias == pytest.approx(TENNIS_RACKET[0] - TENNIS_RACKET[1])


def test_missing_words_are_reported_never_zero(vector_files: dict[str, Path]) -> None:
    vectors = load_word_vectors(vector_files["glove-text"])
    biases = language_bias(["hot_dog.n.01", "sofa", "necktie"], vectors, BiasMethod(MAN, WOMAN))

    hot_dog = biases["hot_dog.n.01"]
    assert hot_dog.bias is None and hot_dog.man is None and hot_dog.woman is None
    assert hot_dog.missing == ("hot",)  # "dog" has a vector: no average over what is left
    assert "'hot'" in (hot_dog.reason or "") and "glove" in (hot_dog.reason or "")
    assert biases["sofa"].missing == ("sofa",)
    assert biases["necktie"].bias is not None
    assert hot_dog.to_dict()["bias"] is None and hot_dog.to_dict()["missing"] == ["hot"]


def test_a_gender_term_without_a_vector_is_a_config_error(
    vector_files: dict[str, Path],
) -> None:
    vectors = load_word_vectors(vector_files["word2vec-text"])
    with pytest.raises(ConfigError, match=r"man_terms.*'boy'"):
        language_bias(["necktie"], vectors, BiasMethod(("man", "boy"), WOMAN))
    with pytest.raises(ConfigError, match="woman_terms"):
        language_bias(["necktie"], vectors, BiasMethod(MAN, ()))
    with pytest.raises(ConfigError, match="male"):  # the default sets are not in the file
        language_bias(["necktie"], vectors)


def test_default_term_sets_are_caliskan_et_al() -> None:
    assert {"female", "woman", "girl"} <= set(WOMAN_TERMS)  # named in Appendix A.3
    assert len(MAN_TERMS) == len(WOMAN_TERMS) == 8
    assert not set(MAN_TERMS) & set(WOMAN_TERMS)


def test_words_are_looked_up_lower_case_and_as_phrase_tokens(tmp_path: Path) -> None:
    path = tmp_path / "phrases.txt"
    path.write_text("man 1 0\nwoman 0 1\ntennis_racket 1 1\nhot 1 0\ndog 0 1\n", "utf-8")
    vectors = load_word_vectors(path)
    assert isinstance(vectors, KeyedWordVectors)
    np.testing.assert_array_equal(vectors.vector("Man"), [1.0, 0.0])
    assert vectors.vector("racket") is None
    by_word = language_bias(["tennis_racket"], vectors, BiasMethod(("man",), ("woman",)))
    assert by_word["tennis_racket"].missing == ("tennis", "racket")
    whole = language_bias(
        ["tennis_racket"], vectors, BiasMethod(("man",), ("woman",), whole_phrases=True)
    )
    assert whole["tennis_racket"].words == ("tennis racket",)
    assert whole["tennis_racket"].bias == pytest.approx(0.0)


def test_missing_and_malformed_vector_files_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"nope\.bin does not exist"):
        load_word_vectors(tmp_path / "nope.bin")
    with pytest.raises(ConfigError, match="is a folder"):
        load_word_vectors(tmp_path)
    short = tmp_path / "short.txt"
    short.write_text("5 2\nman 1 0\n", "utf-8")
    with pytest.raises(DataFormatError, match=r"short\.txt: cannot be read as a word2vec-text"):
        load_word_vectors(short)
    prose = tmp_path / "prose.txt"
    prose.write_text("these are not vectors\n", "utf-8")
    with pytest.raises(DataFormatError) as caught:
        load_word_vectors(prose)
    assert caught.value.path == str(prose) and caught.value.line == 1
    glove = _glove(tmp_path / "g.txt")
    with pytest.raises(ConfigError, match="no word2vec header"):
        load_word_vectors(glove, binary=True)


def test_without_gensim_the_error_says_how_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "gensim", None)
    with pytest.raises(ConfigError, match=re.escape('pip install "contrastkit[words]"')):
        load_word_vectors(_glove(tmp_path / "g.txt"))


def test_limit_reads_the_first_vectors(vector_files: dict[str, Path]) -> None:
    vectors = load_word_vectors(vector_files["word2vec-binary"], limit=4)
    assert len(vectors) == 4 and vectors.vector("necktie") is None
    with pytest.raises(ConfigError, match="limit"):
        load_word_vectors(vector_files["word2vec-binary"], limit=0)


# --------------------------------------------------------------------------- model


def test_model_word_vectors_are_the_scorers_own_text_embeddings(tiny_clip_spec: str) -> None:
    scorer = load_scorer(tiny_clip_spec)
    vectors = model_word_vectors(scorer)
    assert isinstance(vectors, WordVectors)
    assert tiny_clip_spec in vectors.source

    np.testing.assert_allclose(vectors.vector("necktie"), scorer.encode_texts(["necktie"])[0])
    biases = language_bias(["necktie.n.01", "tennis_racket.n.01"], vectors, BiasMethod(MAN, WOMAN))
    man, woman = scorer.encode_texts(list(MAN)), scorer.encode_texts(list(WOMAN))
    necktie = scorer.encode_texts(["necktie"])[0].astype(np.float64)
    expected = np.mean(man @ necktie) - np.mean(woman @ necktie)
    assert biases["necktie.n.01"].bias == pytest.approx(expected, abs=1e-5)
    pair = scorer.encode_texts(["tennis", "racket"]).astype(np.float64).mean(0)
    pair /= np.linalg.norm(pair)
    expected = np.mean(man @ pair) - np.mean(woman @ pair)
    assert biases["tennis_racket.n.01"].bias == pytest.approx(expected, abs=1e-5)

    whole = language_bias(
        ["tennis_racket.n.01"], vectors, BiasMethod(MAN, WOMAN, whole_phrases=True)
    )
    phrase = scorer.encode_texts(["tennis racket"])[0]
    expected = np.mean(man @ phrase) - np.mean(woman @ phrase)
    assert whole["tennis_racket.n.01"].bias == pytest.approx(expected, abs=1e-5)

    prompted = model_word_vectors(scorer, template="a photo of a {}.")
    np.testing.assert_allclose(
        prompted.vector("dog"), scorer.encode_texts(["a photo of a dog."])[0]
    )
    with pytest.raises(ConfigError, match="template"):
        model_word_vectors(scorer, template="a photo")


# --------------------------------------------------------------------------- agreement


def test_sign_agreement_counts_and_matches_scipy() -> None:
    language = {"a": 0.1, "b": -0.2, "c": 0.3, "d": -0.1, "e": None, "g": math.nan}
    disparity = {"a": 5.0, "b": -3.0, "c": -2.0, "d": -8.0, "e": 2.0, "f": 1.0, "g": 4.0}

    agreement = sign_agreement(language, disparity)

    assert agreement.n == 4 and agreement.agree == 3 and agreement.share == 0.75
    assert agreement.concepts == ("a", "b", "c", "d")
    assert agreement.agreeing == ("a", "b", "d")
    x, y = [0.1, -0.2, 0.3, -0.1], [5.0, -3.0, -2.0, -8.0]
    pearson, spearman = stats.pearsonr(x, y), stats.spearmanr(x, y)
    assert agreement.pearson_r == pytest.approx(pearson.statistic)
    assert agreement.pearson_p == pytest.approx(pearson.pvalue)
    assert agreement.spearman_rho == pytest.approx(spearman.statistic)
    assert agreement.spearman_p == pytest.approx(spearman.pvalue)
    assert agreement.reason is None
    assert agreement.to_dict()["agreeing"] == ["a", "b", "d"]


def test_sign_agreement_with_fewer_than_three_concepts_or_constant_values() -> None:
    small = sign_agreement({"a": 0.1, "b": -0.1}, {"a": 1.0, "b": 2.0})
    assert small.n == 2 and small.agree == 1 and small.share == 0.5
    assert small.pearson_r is None and small.spearman_p is None
    assert "at least 3" in (small.reason or "")
    empty = sign_agreement({"a": 0.1}, {"b": 1.0})
    assert empty.n == 0 and empty.share is None
    flat = sign_agreement({"a": 0.1, "b": 0.1, "c": 0.1}, {"a": 1.0, "b": -2.0, "c": 3.0})
    assert flat.pearson_r is None and "language bias" in (flat.reason or "")
    zero = sign_agreement({"a": 0.0, "b": 1.0, "c": 2.0}, {"a": 1.0, "b": 1.0, "c": 3.0})
    assert zero.agree == 2  # a zero agrees with no sign


def test_language_markdown_reports_agreement_missing_and_top_concepts(
    vector_files: dict[str, Path],
) -> None:
    vectors = load_word_vectors(vector_files["word2vec-text"])
    biases = language_bias(
        ["necktie.n.01", "tennis_racket.n.01", "knob.n.02", "knob.n.01", "hot_dog"],
        vectors,
        BiasMethod(MAN, WOMAN),
    )
    ap = {"necktie.n.01": -4.0, "tennis_racket.n.01": 6.0, "knob.n.02": -1.0, "knob.n.01": -2.0}
    agreement = sign_agreement({c: b.bias for c, b in biases.items()}, ap)

    text = language_markdown(
        biases,
        agreement,
        LanguageSection(disparity=ap, vectors_name=vectors.source, method=BiasMethod(MAN, WOMAN)),
    )

    assert text.startswith("## Experiment 3")
    assert "man terms (man, he)" in text and "woman terms (woman, she)" in text
    assert "Caliskan" not in text  # only said of the default sets
    assert "Caliskan" in language_markdown(biases, agreement)
    assert "3 of 4 concepts (75%) have the same sign" in text
    assert f"Pearson r = {agreement.pearson_r:.3f} (p = {agreement.pearson_p:.3f})" in text
    assert "these p-values are rough" in text  # 4 concepts
    assert "hot_dog (hot)" in text and "4 of 5 concepts have a language bias" in text
    rows = [line for line in text.splitlines() if line.startswith("| ")][1:]
    assert rows[0].startswith("| knob.n.01 | knob | 0.000 | 1.000 | -1.000 | -2.00 | yes |")
    assert any(row.startswith("| knob.n.02 | knob handle |") and "| no |" in row for row in rows)


# --------------------------------------------------------------------------- consistency


def test_consistency_colours_follow_fig_3_and_4() -> None:
    vg = {"g": 6.0, "g2": -6.0, "r": 6.0, "y1": 6.0, "y2": -1.0, "edge": 5.0, "only_vg": 9.0}
    coco = {"g": 7.0, "g2": -10.0, "r": -6.0, "y1": 2.0, "y2": 8.0, "edge": 9.0, "nan": 1.0}
    vg["nan"] = math.nan

    colours = consistency_colours(vg, coco)

    assert colours == {
        "g": "green",
        "g2": "green",
        "r": "red",
        "y1": "yellow",
        "y2": "yellow",
        "edge": "yellow",  # 5 is not above 5
    }
    assert consistency_counts(colours) == {"green": 2, "red": 1, "yellow": 3}
    loose = consistency_colours(vg, coco, threshold=0.5)
    assert loose["y1"] == "green" and loose["edge"] == "green" and loose["y2"] == "red"
    assert consistency_colours(vg, coco, threshold=20.0)["g2"] == "yellow"
    with pytest.raises(ConfigError, match="threshold"):
        consistency_colours(vg, coco, threshold=-1.0)


# --------------------------------------------------------------------------- plots


def _svg_text(path: Path) -> str:
    return path.read_text("utf-8")


def _check_written(paths: list[Path], stem: Path) -> str:
    assert paths == [stem.with_suffix(".png"), stem.with_suffix(".svg")]
    with Image.open(paths[0]) as png:
        assert png.width > 400 and png.height > 300
    return _svg_text(paths[1])


def test_top_differences_plot_shows_the_top_concepts_and_alignment(tmp_path: Path) -> None:
    diffs = {f"concept{i}.n.01": float(i - 12) for i in range(25)}
    diffs["undefined.n.01"] = math.nan
    intervals = {c: (v - 2.0, v + 2.0) for c, v in diffs.items()}
    language = {c: (0.05 if v > 0 else -0.05) for c, v in diffs.items()}
    language["concept0.n.01"] = 0.1  # opposite sign to its -12
    language.pop("concept24.n.01")  # no word vector

    stem = tmp_path / "plots" / "top_differences"
    svg = _check_written(
        plot_top_differences(
            stem,
            ConceptDifferences(diffs, intervals, language),
            FigureText("tiny model on VG", "NOTE LINE"),
            top=5,
        ),
        stem,
    )

    for shown in ("concept0.n.01", "concept1.n.01", "concept24.n.01", "concept23.n.01"):
        assert shown in svg
    assert "concept12.n.01" not in svg and "undefined" not in svg
    assert "top 5 of 25 concepts" in svg and "NOTE LINE" in svg
    assert "language bias has the same sign" in svg and "opposite sign" in svg
    assert "no word vector" in svg and "error bars: bootstrap interval" in svg

    plain = _check_written(
        plot_top_differences(tmp_path / "plain", ConceptDifferences(diffs), FigureText("t")),
        tmp_path / "plain",
    )
    assert "favours images of men" in plain and "language bias" not in plain
    assert "error bars" not in plain


def test_group_map_and_consistency_plots(tmp_path: Path) -> None:
    svg = _check_written(
        plot_group_map(
            tmp_path / "map",
            {"men": 0.412, "women": 0.405},
            FigureText("mAP per group", note="random weights"),
            counts={"men": 120, "women": 80},
        ),
        tmp_path / "map",
    )
    assert "0.412" in svg and "0.405" in svg and "n = 120 images" in svg
    assert "random weights" in svg

    vg = {"necktie": 12.0, "dress": -9.0, "hair": 7.0, "cup": 1.0, "only_vg": 4.0}
    coco = {"necktie": 8.0, "dress": -11.0, "hair": -6.0, "cup": 9.0}
    svg = _check_written(
        plot_consistency(
            tmp_path / "consistency", ComparedDifferences(vg, coco, ("Visual Genome", "COCO"))
        ),
        tmp_path / "consistency",
    )
    assert "4 concepts in both Visual Genome and COCO" in svg
    assert "green (2)" in svg and "red (1)" in svg and "yellow (1)" in svg
    assert "necktie" in svg and "only_vg" not in svg and "threshold ±5" in svg
