"""Deprecated: the model registry and adapters moved to :mod:`contrastkit.models` (builders,
the audit and the evaluators all use them); ``contrastkit.evaluators.models.X`` is
``contrastkit.models.X``, the same module, for one release."""

from contrastkit.moved import moved_package

moved_package(__name__, "contrastkit.models")
