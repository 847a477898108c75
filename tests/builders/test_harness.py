"""`contrastkit export harness`: VLMEvalKit TSVs and lmms-eval task folders of the sets."""

from __future__ import annotations

import base64
import io
import json
from pathlib import Path
from typing import Any

import datasets
import numpy as np
import pandas as pd
import pytest
from PIL import Image
from typer.testing import CliRunner

from contrastkit.builders.export import contrast_features
from contrastkit.builders.harness import HarnessExportConfig, export_harness
from contrastkit.cli import app
from contrastkit.errors import ConfigError, DataFormatError, StateError
from contrastkit.harness_key import KEY_FILE, read_key
from contrastkit.probes import ProbeRow, write_probes
from contrastkit.tsv import read_visogender_tsv

MCQ_COLUMNS = ["index", "image", "question", "A", "B", "C", "D", "answer", "category"]


def vlmeval_images(frame: pd.DataFrame) -> dict[int, str]:
    """The base64 image of every row, resolving a reference to an earlier row's index as
    VLMEvalKit does (a value of at most 64 characters is another row's index)."""
    by_index = {str(i): str(v) for i, v in zip(frame["index"], frame["image"], strict=True)}
    resolved = {}
    for index, value in by_index.items():
        if len(value) <= 64:
            assert len(by_index[value]) > 64
            value = by_index[value]
        resolved[int(index)] = value
    return resolved


def test_the_vlmevalkit_tsv_has_the_mcq_columns_and_the_right_answers(
    vlmeval: Path, small: dict[str, Path]
) -> None:
    frame = pd.read_csv(vlmeval / "contrastkit_visogender.tsv", sep="\t")
    assert list(frame.columns[: len(MCQ_COLUMNS)]) == MCQ_COLUMNS
    op = read_visogender_tsv(small["OP"]).rows
    oo = read_visogender_tsv(small["OO"]).rows
    # OP rows ask occupation-first and participant-first questions, OO rows one
    assert len(frame) == 2 * len(op) + len(oo)
    assert frame["D"].isna().all()
    assert set(frame["split"]) == {"main"}
    first = op[0]  # the first question: occupation-first, about the occupation's gender
    row = frame.iloc[0]
    assert row["question"] == (
        f"Complete the description of the image: 'The {first.occupation} and ___ "
        f"{first.participant}.'"
    )
    pronoun = {"masculine": "his", "feminine": "her"}[first.occupation_gender.value]
    assert row[row["answer"]] == pronoun
    assert sorted(row[["A", "B", "C"]]) == ["her", "his", "their"]
    assert row["category"] == (
        f"OP:{first.occupation_gender.value}-{first.participant_gender.value}"  # type: ignore[union-attr]
    )
    flipped = frame.iloc[1]  # participant-first: the participant's gender decides
    assert flipped["question"].startswith(
        f"Complete the description of the image: 'The "
        f"{first.participant} and ___ {first.occupation}"
    )
    want = {"masculine": "his", "feminine": "her"}[first.participant_gender.value]  # type: ignore[union-attr]
    assert flipped[flipped["answer"]] == want
    assert flipped["category"].startswith("OP-flipped:")
    oo_rows = frame[frame["category"].str.startswith("OO:")]
    assert len(oo_rows) == len(oo)
    for (_, item), source in zip(oo_rows.iterrows(), oo, strict=True):
        pronoun = {"masculine": "his", "feminine": "her"}[source.occupation_gender.value]
        assert item[item["answer"]] == pronoun
        assert item["l2-category"] == source.occupation


def test_the_base64_images_decode_to_the_row_images(vlmeval: Path, small: dict[str, Path]) -> None:
    frame = pd.read_csv(vlmeval / "contrastkit_visogender.tsv", sep="\t")
    images = vlmeval_images(frame)
    key = read_key(vlmeval)
    references = sum(len(str(v)) <= 64 for v in frame["image"])
    assert references == len(read_visogender_tsv(small["OP"]).rows)  # the 2nd question of OP
    folder = small["OP"].parent
    for item in key.items[:6] + key.items[-3:]:
        if item.split != "main":
            continue
        decoded = Image.open(io.BytesIO(base64.b64decode(images[item.index])))
        assert decoded.format == "JPEG"
        with Image.open(folder / item.annotations["image"]) as original:
            want = np.asarray(original.convert("RGB"), dtype=np.float64)
        got = np.asarray(decoded.convert("RGB"), dtype=np.float64)
        assert got.shape == want.shape
        assert np.abs(got - want).mean() < 3  # JPEG at quality 95, 4:4:4


def test_the_reversed_copy_asks_the_same_questions_with_the_options_reversed(
    vlmeval: Path,
) -> None:
    main = pd.read_csv(vlmeval / "contrastkit_visogender.tsv", sep="\t")
    flipped = pd.read_csv(vlmeval / "contrastkit_visogender_reversed.tsv", sep="\t")
    assert len(main) == len(flipped)
    assert set(flipped["split"]) == {"reversed"}
    assert not set(main["index"]) & set(flipped["index"])  # one key for both files
    key = read_key(vlmeval).by_index()
    for (_, a), (_, b) in zip(main.iterrows(), flipped.iterrows(), strict=True):
        assert key[a["index"]].pair == b["index"] and key[b["index"]].pair == a["index"]
        assert a["question"] == b["question"]
        assert list(a[["A", "B", "C"]]) == list(b[["C", "B", "A"]])
        assert a[a["answer"]] == b[b["answer"]]
    assert len(vlmeval_images(flipped)) == len(flipped)  # its own images, not main's


def test_option_order_is_seeded_per_item(small: dict[str, Path], tmp_path: Path) -> None:
    def orders(seed: int, sources: tuple[Path, ...]) -> dict[str, tuple[str, ...]]:
        out = tmp_path / f"seed{seed}-{len(sources)}"
        export_harness(
            HarnessExportConfig(
                source=sources, format="vlmevalkit", out=out, seed=seed, reversed_copy=False
            )
        )
        return {item.row: tuple(item.labels.values()) for item in read_key(out).items}

    both = orders(3, (small["OP"], small["OO"]))
    assert both == orders(3, (small["OP"], small["OO"]))
    only_oo = orders(3, (small["OO"],))  # an item's order does not depend on the others
    assert all(both[row] == order for row, order in only_oo.items())
    other = orders(4, (small["OP"], small["OO"]))
    assert other != both
    firsts = {order[0] for order in both.values()}
    assert firsts == {"masculine", "feminine", "neutral"}  # shuffled, not fixed


def test_a_missing_image_is_an_error_or_listed_with_skip_missing(
    small: dict[str, Path], tmp_path: Path
) -> None:
    table = read_visogender_tsv(small["OO"])
    lines = small["OO"].read_text().splitlines()
    lines[1] = lines[1].replace(table.rows[0].url, "gone.png")
    broken = small["OO"].parent / "broken_OO.tsv"
    broken.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataFormatError) as error:
        export_harness(HarnessExportConfig(source=broken, format="vlmevalkit", out=tmp_path / "x"))
    assert error.value.line == 2 and "gone.png" in str(error.value)
    assert not (tmp_path / "x").exists()
    result = export_harness(
        HarnessExportConfig(
            source=broken, format="vlmevalkit", out=tmp_path / "x", skip_missing=True
        )
    )
    assert [entry["row"] for entry in result.skipped] == [f"OO:{table.rows[0].idx}"]
    assert result.items["main"] == len(table.rows) - 1
    assert f"OO:{table.rows[0].idx}" in (tmp_path / "x" / "README.md").read_text()
    assert read_key(tmp_path / "x").skipped[0]["reason"].startswith("image file not found")


def test_urls_are_read_from_the_image_store(tmp_path: Path, small: dict[str, Path]) -> None:
    from contrastkit.store import ImageMeta, ImageStore

    store = ImageStore(tmp_path / "store")
    table = read_visogender_tsv(small["OO"])
    lines = small["OO"].read_text().splitlines()
    url = "https://images.example.org/one.png"
    lines[1] = lines[1].replace(table.rows[0].url, url)
    tsv = tmp_path / "urls_OO.tsv"
    tsv.write_text("\n".join(lines[:2]) + "\n")  # one row, its image a URL
    with pytest.raises(DataFormatError, match="no image store"):
        export_harness(HarnessExportConfig(source=tsv, format="vlmevalkit", out=tmp_path / "a"))
    data = (small["OO"].parent / table.rows[0].url).read_bytes()
    with Image.open(io.BytesIO(data)) as opened:
        width, height = opened.size
    store.put(data, ImageMeta(format="PNG", width=width, height=height, phash="0" * 16), url=url)
    export_harness(
        HarnessExportConfig(
            source=tsv, format="vlmevalkit", out=tmp_path / "a", store=tmp_path / "store"
        )
    )
    frame = pd.read_csv(tmp_path / "a" / "contrastkit_visogender.tsv", sep="\t")
    first = Image.open(io.BytesIO(base64.b64decode(frame["image"][0])))
    assert first.size == Image.open(io.BytesIO(data)).size


def contrast_export(folder: Path, sources: int = 2) -> Path:
    rows: dict[str, list[Any]] = {name: [] for name in contrast_features()}
    for s in range(sources):
        for gender, colour in (("masculine", (200, 10, 60)), ("feminine", (60, 10, 200))):
            word = "man" if gender == "masculine" else "woman"
            values = {
                "source_id": str(s),
                "gender": gender,
                "image": Image.new("RGB", (24, 24), colour),
                "edit_id": f"{s}-{gender}",
                "method": "gensynth",
                "source_label": "masculine",
                "captions": [f"A {word} riding bike {s}.", f"A {word} outside."],
                "neutral_captions": [f"A person riding bike {s}.", "A person outside."],
                "original_captions": [f"A man riding bike {s}."],
                "box": [0.0, 0.0, 9.0, 9.0],
                "p_real": 0.5,
                "p_gender": 0.9,
                "instruction": "x",
                "text_guidance_scale": 9.5,
                "image_guidance_scale": 1.5,
                "steps": 2,
                "seed": s,
                "donor": None,
            }
            for name in rows:
                rows[name].append(values[name])
    data = datasets.Dataset.from_dict(rows, features=contrast_features())
    datasets.DatasetDict({"test": data}).save_to_disk(str(folder / "saved" / "contrast"))
    return folder


def test_a_contrast_set_asks_which_versions_caption_fits(tmp_path: Path) -> None:
    source = contrast_export(tmp_path / "contrast")
    out = tmp_path / "out"
    result = export_harness(HarnessExportConfig(source=source, format="vlmevalkit", out=out))
    assert result.set_kind == "contrast" and result.items == {"main": 4, "reversed": 4}
    frame = pd.read_csv(out / "contrastkit_contrast.tsv", sep="\t")
    key = read_key(out).by_index()
    for _, row in frame.iterrows():
        item = key[row["index"]]
        s, gender = item.annotations["source_id"], item.annotations["gender"]
        assert sorted(row[["A", "B", "C"]]) == sorted(
            [f"A man riding bike {s}.", f"A woman riding bike {s}.", f"A person riding bike {s}."]
        )
        word = "man" if gender == "masculine" else "woman"
        assert row[row["answer"]] == f"A {word} riding bike {s}."
        assert row["category"] == f"contrast:{gender}"
        image = Image.open(io.BytesIO(base64.b64decode(row["image"]))).convert("RGB")
        assert (
            image.getpixel((12, 12))[0] > 150
            if gender == "masculine"
            else image.getpixel((12, 12))[2] > 150
        )


def test_a_stereotype_probe_set_asks_which_caption_the_image_shows(
    small: dict[str, Path], tmp_path: Path
) -> None:
    image = tmp_path / "img.png"  # a probe set names files inside its own folder
    image.write_bytes(sorted(small["OO"].parent.glob("img_*.png"))[0].read_bytes())
    rows = [
        ProbeRow(
            id=f"p{n}",
            image=str(image),
            category="profession",
            target="nurse",
            context="The nurse is BLANK.",
            stereotype_term="caring",
            anti_stereotype_term="rude",
            unrelated_term="blue",
            stereotype_caption="The nurse is caring.",
            anti_stereotype_caption="The nurse is rude.",
            unrelated_caption="The nurse is blue.",
            label=label,
            neutral_stereotype_caption="",
            neutral_anti_stereotype_caption="",
        )
        for n, label in enumerate(("stereotype", "anti-stereotype"))
    ]
    probes = tmp_path / "probes.tsv"
    write_probes(rows, probes)
    out = tmp_path / "out"
    result = export_harness(HarnessExportConfig(source=probes, format="lmms-eval", out=out))
    assert result.set_kind == "stereotype" and result.items["main"] == 2
    key = read_key(out)
    answers = {item.row: item.options[item.answer] for item in key.items if item.split == "main"}
    assert answers == {"probe p0": "The nurse is caring.", "probe p1": "The nurse is rude."}
    assert {item.labels[item.answer] for item in key.items} == {"stereotype", "anti-stereotype"}


def test_config_and_output_folder_errors(small: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="format"):
        HarnessExportConfig(source=small["OP"], format="helm", out=tmp_path / "o")
    with pytest.raises(ConfigError, match="name"):
        HarnessExportConfig(
            source=small["OP"], format="vlmevalkit", out=tmp_path / "o", name="my set"
        )
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("mine")
    with pytest.raises(StateError, match="not a harness export"):
        export_harness(HarnessExportConfig(source=small["OO"], format="vlmevalkit", out=busy))
    assert (busy / "notes.txt").read_text() == "mine"


def test_the_command_line_exports_and_says_where(small: dict[str, Path], tmp_path: Path) -> None:
    out = tmp_path / "cli"
    result = CliRunner().invoke(
        app,
        [
            "export",
            "harness",
            str(small["OO"]),
            "--format",
            "lmms-eval",
            "--out",
            str(out),
            "--no-reversed",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = len(read_visogender_tsv(small["OO"]).rows)
    assert f"contrastkit_visogender (main): {rows} items" in result.output
    assert "README.md" in result.output
    assert (out / KEY_FILE).is_file() and not (
        out / "contrastkit_visogender_reversed.yaml"
    ).exists()
    again = CliRunner().invoke(
        app,
        [
            "export",
            "harness",
            str(small["OO"]),
            "--format",
            "vlmevalkit",
            "--out",
            str(out),
            "--json",
        ],
    )
    assert again.exit_code == 0, again.output
    printed = json.loads(again.output)
    assert printed["items"] == {"main": rows, "reversed": rows}
    assert read_key(out).harness == "vlmevalkit"  # the earlier export was replaced
    bad = CliRunner().invoke(
        app, ["export", "harness", str(small["OO"]), "--format", "x", "--out", str(tmp_path / "y")]
    )
    assert bad.exit_code == 2 and "format" in bad.output


def test_a_visogender_export_folder_with_embedded_images(
    small: dict[str, Path], tmp_path: Path
) -> None:
    from contrastkit.builders.export import ExportVisoGenderConfig, export_visogender
    from contrastkit.store import ImageMeta, ImageStore

    store = ImageStore(tmp_path / "store")
    tsvs = []
    for context in ("OP", "OO"):
        lines = small[context].read_text().splitlines()
        for n, row in enumerate(read_visogender_tsv(small[context]).rows, start=1):
            url = f"https://img.example.org/{context}/{row.idx}.png"
            data = (small[context].parent / row.url).read_bytes()
            with Image.open(io.BytesIO(data)) as opened:
                width, height = opened.size
            store.put(
                data, ImageMeta(format="PNG", width=width, height=height, phash="0" * 16), url=url
            )
            lines[n] = lines[n].replace(row.url, url)
        tsvs.append(tmp_path / f"urls_{context}.tsv")
        tsvs[-1].write_text("\n".join(lines) + "\n")
    exported = tmp_path / "hf"
    export_visogender(ExportVisoGenderConfig(files=tuple(tsvs), out=exported, store=store.root))
    out = tmp_path / "out"
    result = export_harness(HarnessExportConfig(source=exported, format="vlmevalkit", out=out))
    direct = export_harness(
        HarnessExportConfig(
            source=tuple(tsvs), format="vlmevalkit", out=tmp_path / "direct", store=store.root
        )
    )
    assert result.items == direct.items
    ours = pd.read_csv(out / "contrastkit_visogender.tsv", sep="\t")
    theirs = pd.read_csv(tmp_path / "direct" / "contrastkit_visogender.tsv", sep="\t")
    columns = ["question", "A", "B", "C", "answer", "category", "l2-category"]
    assert ours.sort_values("question")[columns].values.tolist() == (
        theirs.sort_values("question")[columns].values.tolist()
    )
    first = read_key(out).items[0]
    want = next(i for i in read_key(tmp_path / "direct").items if i.row == first.row)
    a = vlmeval_images(ours)[first.index]
    b = vlmeval_images(theirs)[want.index]
    assert a == b  # the same image, encoded the same way


def test_the_bundled_sets_read_the_default_store(
    small: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from contrastkit.evaluators.data import visogender_files
    from contrastkit.store import ImageMeta, ImageStore

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    store = ImageStore(tmp_path / "cache" / "contrastkit" / "images")
    oo = read_visogender_tsv(visogender_files()[1]).rows[0]
    data = (small["OO"].parent / "img_000.png").read_bytes()
    with Image.open(io.BytesIO(data)) as opened:
        width, height = opened.size
    store.put(data, ImageMeta(format="PNG", width=width, height=height, phash="0" * 16), url=oo.url)
    result = export_harness(
        HarnessExportConfig(
            source="visogender", format="vlmevalkit", out=tmp_path / "out", skip_missing=True
        )
    )
    assert result.items["main"] == 1  # only the image the store holds
    item = read_key(tmp_path / "out").items[0]
    assert item.row == f"OO:{oo.idx}|object"
    official = sum(len(read_visogender_tsv(path).rows) for path in visogender_files())
    assert len(result.skipped) == official - 1  # every other official row, listed
