"""Moved to :mod:`contrastkit.evaluators.tasks.decision_probes.report`
(the decisions task folder); this path is kept for one release."""

from typing import TYPE_CHECKING

from contrastkit.moved import moved

if TYPE_CHECKING:  # what type checkers see of the old path: the new module's names
    from contrastkit.evaluators.tasks.decision_probes.report import *  # noqa: F403

moved(__name__, "contrastkit.evaluators.tasks.decision_probes.report")
