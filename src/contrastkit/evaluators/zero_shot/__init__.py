"""Moved to :mod:`contrastkit.evaluators.tasks.zero_shot` (the zero-shot task folder);
this path and its submodules (``contrastkit.evaluators.zero_shot.job`` ...) are kept
for one release."""

from contrastkit.moved import moved_package

moved_package(__name__, "contrastkit.evaluators.tasks.zero_shot")
