"""Moved to :mod:`contrastkit.evaluators.tasks.visogender.outputs` (the VisoGender task
folder); this path is kept for one release."""

from contrastkit.moved import moved

moved(__name__, "contrastkit.evaluators.tasks.visogender.outputs")
