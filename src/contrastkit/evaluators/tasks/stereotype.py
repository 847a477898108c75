"""Moved to :mod:`contrastkit.evaluators.tasks.stereotype_probing.scoring` (the stereotype
task folder); this path is kept for one release."""

from contrastkit.moved import moved

moved(__name__, "contrastkit.evaluators.tasks.stereotype_probing.scoring")
