"""Python API mistakes get the config error, not an AttributeError from deep inside
(issue 47.6)."""

from __future__ import annotations

import numpy as np
import pytest

from contrastkit.errors import ConfigError
from contrastkit.evaluators.bootstrap import BootstrapSettings
from contrastkit.evaluators.stereotype import stereotype_benchmark
from contrastkit.evaluators.stereotype_metrics import stereotype_summary


@pytest.mark.parametrize("bootstrap", [0, 1000, True, None])
def test_a_number_of_resamples_as_bootstrap_is_a_config_error_saying_how_to_write_it(
    bootstrap: object,
) -> None:
    with pytest.raises(ConfigError, match=r"^bootstrap: a BootstrapSettings") as raised:
        stereotype_benchmark([], model="m", data=["d"], bootstrap=bootstrap)  # type: ignore[arg-type]
    if bootstrap == 1000 and bootstrap is not True:
        assert "BootstrapSettings(resamples=1000)" in str(raised.value)
    with pytest.raises(ConfigError, match="BootstrapSettings"):
        stereotype_summary(
            np.zeros((1, 3)),
            ["anti-stereotype"],
            ["gender"],
            bootstrap=bootstrap,  # type: ignore[arg-type]
        )
    summary = stereotype_summary(
        np.zeros((1, 3)), ["anti-stereotype"], ["gender"], bootstrap=BootstrapSettings()
    )
    assert summary["overall"]["n"] == 1
