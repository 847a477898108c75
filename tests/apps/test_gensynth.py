"""The GenSynth job from Python: one config, every stage, the Sec. 4.3 checks, resuming,
and errors reported before long work starts."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from contrastkit.apps.gensynth import GenSynthConfig, Stage, build_gensynth
from contrastkit.config import ModelConfig
from contrastkit.curation.editing import EditSettings
from contrastkit.errors import ConfigError, ModelNotFoundError, ResourceError, StateError
from contrastkit.samples import photo

EDIT = EditSettings(text_guidance_scales=(9.5,), steps=2, resolution=32)


class Recorder:
    """A progress factory that remembers every stage and its last update."""

    def __init__(self) -> None:
        self.seen: dict[str, tuple[int, int]] = {}

    @contextmanager
    def __call__(self, label: str, total: int | None = None) -> Iterator[Callable[..., None]]:
        self.seen[label] = (0, 0)

        def update(done: int, total: int) -> None:
            self.seen[label] = (done, total)

        yield update


@pytest.mark.slow
def test_the_whole_build_from_python_then_one_stage_again(
    coco_dir: Path, tiny_editor_dir: Path, tiny_clip_spec: str, tmp_path: Path
) -> None:
    instructions = tmp_path / "instructions.csv"
    instructions.write_text(
        "gender,instruction\nfeminine,Turn into a woman\nmasculine,Turn into a man\n"
    )
    pool = tmp_path / "pool"
    pool.mkdir()
    for name in ("camera", "astronaut", "grace_hopper"):
        photo(name).resize((64, 64)).save(pool / f"{name}.png")
    config = GenSynthConfig(
        out=tmp_path / "build", coco=coco_dir, limit=2, min_box_side=64,
        editor=str(tiny_editor_dir), embedder=tiny_clip_spec, edit=EDIT,
        instructions=instructions, k=3, tau_real=-1, tau_gender=-1, pool=pool, pool_limit=2,
        model=ModelConfig(device="cpu", batch_size=4),
    )  # fmt: skip
    progress = Recorder()
    result = build_gensynth(config, progress=progress)
    assert result.stages == ("edit", "filter", "select")
    assert progress.seen == {"editing": (4, 4), "embedding": (6, 6)}  # 2 sources x 2 edits
    assert result.sources_kept == 2 and result.contrast_set == config.out / "contrast_set.jsonl"
    assert result.summary["edit"]["settings"]["instructions"] == {
        "feminine": ["Turn into a woman"], "masculine": ["Turn into a man"]
    }  # fmt: skip
    assert result.quality is not None and list(result.quality) == [
        "contrast_set", "original", "all_edits"
    ]  # fmt: skip
    assert result.quality["contrast_set"]["retrieval_pool_size"] == 3  # 2 pool images + own
    stored = json.loads(result.summary_path.read_text())
    assert stored["quality"] == result.quality == result.summary["quality"]

    # The select stage alone, without checks: nothing is edited or embedded again, and
    # the checks of the earlier selection are dropped with it.
    again = build_gensynth(
        GenSynthConfig(out=config.out, stage="select", quality=False)  # type: ignore[arg-type]
    )
    assert again.stages == ("select",) and again.sources_kept == 2 and again.quality is None
    assert "quality" not in again.summary and again.summary["edit"] == result.summary["edit"]

    # The checks on a sample: at most 3 images per set, drawn with the edit seed.
    sampled = build_gensynth(
        GenSynthConfig(out=config.out, stage="select", embedder=tiny_clip_spec,  # type: ignore[arg-type]
                       quality_sample=3, model=ModelConfig(device="cpu", batch_size=4))
    )  # fmt: skip
    assert sampled.quality is not None
    sizes = {name: (q["images"], q["sampled_from"]) for name, q in sampled.quality.items()}
    assert sizes == {"contrast_set": (3, 4), "original": (2, 2), "all_edits": (3, 4)}


def test_a_sample_of_a_labeled_set_is_seeded_ordered_and_bounded() -> None:
    from contrastkit.builders.gensynth import LabeledImages
    from contrastkit.schema import Gender

    images = LabeledImages(
        tuple(Path(f"{i}.png") for i in range(10)),
        tuple(Gender.MASCULINE if i % 2 else Gender.FEMININE for i in range(10)),
        tuple((f"caption {i}",) for i in range(10)),
    )
    picked = images.sample(4, seed=1)
    assert len(picked.images) == 4 and picked == images.sample(4, seed=1)
    assert picked != images.sample(4, seed=2)
    numbers = [int(p.stem) for p in picked.images]
    assert numbers == sorted(numbers)
    assert [picked.captions[k] for k in range(4)] == [(f"caption {i}",) for i in numbers]
    assert picked.genders == tuple(images.genders[i] for i in numbers)
    assert images.sample(None) is images and images.sample(10) is images


@pytest.mark.slow
def test_errors_come_before_long_work(coco_dir: Path, tiny_clip_spec: str, tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(ResourceError, match="cannot write the GenSynth build folder"):
        build_gensynth(GenSynthConfig(out=tmp_path / "file", coco=coco_dir,
                                      editor=str(tmp_path / "missing")))  # fmt: skip
    with pytest.raises(ModelNotFoundError, match="does not exist"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", coco=coco_dir,
                                      editor=str(tmp_path / "missing")))  # fmt: skip
    with pytest.raises(StateError, match="run the edit stage first"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", stage=Stage.FILTER,
                                      embedder=tiny_clip_spec))  # fmt: skip
    with pytest.raises(ConfigError, match=r"pool .*no such folder"):
        build_gensynth(GenSynthConfig(out=tmp_path / "o", stage=Stage.SELECT,
                                      pool=tmp_path / "no-pool"))  # fmt: skip


def test_the_config_checks_its_fields(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="coco: the edit stage needs --coco"):
        GenSynthConfig(out=tmp_path)
    with pytest.raises(ConfigError, match="stage: 'twice' is not one of"):
        GenSynthConfig(out=tmp_path, stage="twice")  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="k: must be >= 1"):
        GenSynthConfig(out=tmp_path, coco=tmp_path, k=0)
    with pytest.raises(ConfigError, match="quality_sample: must be >= 1"):
        GenSynthConfig(out=tmp_path, stage="select", quality=False, quality_sample=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="captioning model"):
        GenSynthConfig(out=tmp_path, stage=Stage.FILTER, embedder="blip:Salesforce/blip")
    config = GenSynthConfig(out="o", stage="select", quality=False, embedder="blip:x")  # type: ignore[arg-type]
    assert config.stage is Stage.SELECT and config.out == Path("o")  # no embedder needed
