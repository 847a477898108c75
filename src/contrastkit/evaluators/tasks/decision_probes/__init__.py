"""``contrastkit evaluate decisions``: counterfactual decision probes of generative VLMs
on contrast sets (do they treat the two versions of one person alike?).

The decisions task's folder: the figures as pure functions of the paired answers
(:mod:`.metrics`), how one version's answer is read (:mod:`.answers`), how a model is
asked about both versions of every source, with the raw answers reused on a rerun
(:mod:`.asking`), the figures of ``benchmark.json`` and the files of one model
(:mod:`.benchmark`), the reports (:mod:`.report`), the plots (:mod:`.plots`) and the
task on the engine (:mod:`.task`); its typed result is
:class:`contrastkit.results.decisions.DecisionsResult`.
"""

from contrastkit.evaluators.tasks.decision_probes.task import (
    DECISIONS,
    DecisionProbes,
    DecisionSettings,
)

__all__ = ["TASK", "DecisionProbes", "DecisionSettings"]

#: The task, as the registry finds it.
TASK = DECISIONS
