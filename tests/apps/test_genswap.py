"""The GenSwap job from Python: face swaps, then the same Sec. 4.3 checks as GenSynth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from contrastkit.builders.genswap_job import GenSwapConfig, build_genswap
from contrastkit.config import ModelConfig
from contrastkit.errors import ConfigError


@pytest.mark.slow
def test_genswap_job_with_quality_checks(
    coco_dir: Path, face_bank: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    config = GenSwapConfig(
        coco=coco_dir, faces=face_bank, out=tmp_path / "swap", limit=2, min_box_side=64,
        embedder=tiny_clip_spec, model=ModelConfig(device="cpu"),
    )  # fmt: skip
    result = build_genswap(config)
    assert result.swap["swapped"] == 4 and result.sources_kept == 2
    assert result.quality is not None and result.quality["contrast_set"]["images"] == 4
    assert json.loads(result.summary_path.read_text())["quality"] == result.quality
    # Without an embedder: no checks, and the old ones are dropped with the new swap.
    again = build_genswap(GenSwapConfig(coco_dir, face_bank, tmp_path / "swap", limit=2,
                                        min_box_side=64))  # fmt: skip
    assert again.quality is None and "quality" not in again.summary
    assert again.swap["skipped_finished"] == 4 and again.swap["swapped"] == 0


def test_genswap_config_checks_its_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="pool_limit: must be >= 1"):
        GenSwapConfig(tmp_path, tmp_path, tmp_path, pool_limit=0)
    with pytest.raises(ConfigError, match="must start with one of"):
        GenSwapConfig(tmp_path, tmp_path, tmp_path, embedder="clip")
