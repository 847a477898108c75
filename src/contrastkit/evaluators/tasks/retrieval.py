"""Moved to :mod:`contrastkit.evaluators.tasks.visogender.retrieval` (the VisoGender task
folder); this path is kept for one release."""

from typing import TYPE_CHECKING

from contrastkit.moved import moved

if TYPE_CHECKING:  # for type checkers, which do not follow moved(): the same names
    from contrastkit.evaluators.tasks.visogender.retrieval import *  # noqa: F403
    from contrastkit.evaluators.tasks.visogender.retrieval import (
        CONTEXT_SECTIONS as CONTEXT_SECTIONS,
    )
    from contrastkit.evaluators.tasks.visogender.retrieval import (
        by_query as by_query,
    )

moved(__name__, "contrastkit.evaluators.tasks.visogender.retrieval")
