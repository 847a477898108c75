"""Dataset kinds: each fixture kind is recognised, the recorded kind beats sniffing,
mixed data is refused naming each kind, and tasks follow the kind."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrast_data import contrast_export
from contrastkit.errors import ConfigError
from contrastkit.evaluators.tasks.registry import task_for_data, tasks
from contrastkit.kinds import DatasetKind, detect_kind, detect_kinds, kinds, register_kind
from stereoset_data import make_probe_fixture
from zero_shot_data import write_vg


def test_each_kind_is_recognised(tmp_path: Path, official_op: Path) -> None:
    probes = make_probe_fixture(tmp_path / "probes")[2]
    contrast = contrast_export(tmp_path / "contrast", sources=1)
    vg = write_vg(tmp_path / "vg")
    assert detect_kind(probes).name == "stereotype"
    assert detect_kind(contrast).name == "contrast"
    assert detect_kind(vg).name == "zero-shot"
    assert detect_kind(official_op).name == "visogender"
    assert [task_for_data([p]).name for p in (probes, contrast, vg, official_op)] == [
        "stereotype",
        "contrast",
        "zero-shot",  # a registered task since zero-shot joined the registry
        "visogender",
    ]


def test_the_recorded_kind_comes_before_sniffing(tmp_path: Path) -> None:
    folder = contrast_export(tmp_path / "set", sources=1)  # sniffs as a contrast set
    (folder / "build_metadata.json").write_text(json.dumps({"kind": "stereotype"}))
    assert detect_kind(folder).name == "stereotype"
    (folder / "build_metadata.json").write_text(json.dumps({"kind": "something else"}))
    assert detect_kind(folder).name == "contrast"  # unclaimed: sniffed
    (folder / "build_metadata.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match=r"build_metadata\.json"):
        detect_kind(folder)


def test_mixed_data_names_every_kind(tmp_path: Path, official_op: Path) -> None:
    contrast = contrast_export(tmp_path / "contrast", sources=1)
    probes = make_probe_fixture(tmp_path / "probes")[2]
    with pytest.raises(ConfigError) as caught:
        detect_kinds([contrast, official_op, probes])
    message = str(caught.value)
    assert message.startswith(f"data: mixes contrast sets ({contrast}) with VisoGender-style")
    assert str(probes) in message and message.endswith("evaluate them in separate runs")
    with pytest.raises(ConfigError, match="task stereotype needs stereotype probe sets"):
        task_for_data([official_op], "stereotype")


def test_kinds_and_tasks_are_checked_when_registered() -> None:
    assert list(kinds())[-1] == "visogender"  # the fallback is sniffed last
    assert set(tasks()) >= {"visogender", "contrast", "stereotype", "harness"}
    with pytest.raises(ConfigError, match="already registered"):
        register_kind(DatasetKind("contrast", "x", "xs", "m:f"))
    with pytest.raises(ConfigError, match="'module:function'"):
        DatasetKind("x", "x", "xs", "nothing")
    with pytest.raises(ConfigError, match="holds no image URLs"):
        kinds()["contrast"].read_url_table(Path("x"))
