"""A missing model fails before slow work: no image URL is fetched for a model that is not
on this machine (issue 31)."""

from __future__ import annotations

from pathlib import Path

import pytest

from contrastkit.curation.urls import CheckConfig
from contrastkit.errors import ModelNotFoundError
from contrastkit.evaluators.job import EvaluateConfig, evaluate
from contrastkit.models import locate_model
from eval_data import write_small_dataset
from loopback import LoopbackServer, noise_jpeg, static


def test_a_missing_model_fails_before_any_url_is_fetched(tmp_path: Path) -> None:
    with LoopbackServer({}) as server:
        folder = tmp_path / "data"
        write_small_dataset(folder, url_for=lambda n, _: server.url(f"/photos/{n}.jpg"))
        for n in range(40):
            server.routes[f"/photos/{n}.jpg"] = static(noise_jpeg(n))
        missing = tmp_path / "no-such-model"
        with pytest.raises(ModelNotFoundError, match="no-such-model"):
            evaluate(
                EvaluateConfig(
                    data=(str(folder),),
                    models=(f"hf-clip:{missing}",),
                    out=tmp_path / "results",
                    store=tmp_path / "store",
                    fetch=True,
                    network=CheckConfig(allowed_networks=("127.0.0.0/8",), retries=0),
                )
            )
        assert sum(server.hits.values()) == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("hf-clip:/no/such/folder", "model folder /no/such/folder does not exist"),
        ("blip:./nowhere", "model folder ./nowhere does not exist"),
        ("vlm:./nowhere?protocol=multiple-choice", "model folder ./nowhere does not exist"),
        ("hf-clip:no-org/not-cached-model", "not in the Hugging Face cache"),
        ("open_clip:ViT-B-32/no-such-checkpoint.pt", "checkpoint file not found"),
    ],
)
def test_a_model_is_located_without_loading_it(
    spec: str, message: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ModelNotFoundError, match=message):
        locate_model(spec)


def test_a_saved_model_folder_is_located(tmp_path: Path) -> None:
    (tmp_path / "clip").mkdir()
    locate_model(f"hf-clip:{tmp_path / 'clip'}")  # a folder: found (loading checks the rest)
