"""Moved to :mod:`contrastkit.evaluators.tasks.visogender.resolution` (the VisoGender task
folder); this path is kept for one release."""

from typing import TYPE_CHECKING

from contrastkit.moved import moved

if TYPE_CHECKING:  # for type checkers, which do not follow moved(): the same names
    from contrastkit.evaluators.tasks.visogender.resolution import *  # noqa: F403
    from contrastkit.evaluators.tasks.visogender.resolution import (
        MAIN_TEMPLATES as MAIN_TEMPLATES,
    )
    from contrastkit.evaluators.tasks.visogender.resolution import (
        case_record as case_record,
    )

moved(__name__, "contrastkit.evaluators.tasks.visogender.resolution")
