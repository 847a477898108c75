"""Moved to :mod:`contrastkit.evaluators.tasks.visogender.multiple_choice` (the VisoGender task
folder); this path is kept for one release."""

from typing import TYPE_CHECKING

from contrastkit.moved import moved

if TYPE_CHECKING:  # for type checkers, which do not follow moved(): the same names
    from contrastkit.evaluators.tasks.visogender.multiple_choice import *  # noqa: F403

moved(__name__, "contrastkit.evaluators.tasks.visogender.multiple_choice")
