"""``contrastkit evaluate stereotype``: VLStereoSet-style stereotype probing (Zhou et al.
2022) of image-text models on a probe set: vlrs, vlbs and ivlas with bootstrap
intervals, the reference models IDM / BIM / RAM, and the lmss / vlss shifts (Fig. 4).

A task folder on the task protocol (:mod:`contrastkit.evaluators.engine`): the task
(:mod:`.task`), how a batch of probe rows is scored (:mod:`.scoring`), the metrics
(:mod:`.metrics`), the ``benchmark.json`` they make (:mod:`.benchmark`), and the reports
and plot (:mod:`.report`); its typed result is
:class:`contrastkit.results.stereotype.StereotypeResult` (harness answers to a probe
set's export are read into it too). :data:`TASK` is what the task registry finds
(:mod:`contrastkit.evaluators.tasks.registry`).

Example (Python)::

    from contrastkit.evaluators.job import EvaluateConfig, evaluate

    evaluate(EvaluateConfig(
        data=("build/vlss",), models=("open_clip:ViT-B-32/openai",), out="results",
        task="stereotype",
    ))
"""

from contrastkit.evaluators.tasks.stereotype_probing.task import (
    StereotypeProbing,
    StereotypeSettings,
)

__all__ = ["TASK", "StereotypeProbing", "StereotypeSettings"]

#: The task, as the registry finds it.
TASK = StereotypeProbing()
