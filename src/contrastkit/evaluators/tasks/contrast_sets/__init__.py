"""``contrastkit evaluate contrast``: retrieval bias and pair preference of image-text
models on GenSynth / GenSwap contrast sets (GenSynth Sec. 5).

The contrast task's folder: the set's format and loading (:mod:`.data`), how a model
scores a set (:mod:`.scoring`; a caption scorer's score matrix in :mod:`.captions`), the
summary over queries and its intervals (:mod:`.outcomes`), the files and reports
(:mod:`.report`) and the task (:mod:`.task`); its typed result is
:class:`contrastkit.results.contrast.ContrastResult`.
"""

from contrastkit.evaluators.tasks.contrast_sets.task import (
    CONTRAST,
    ContrastSets,
    ContrastTaskSettings,
)

__all__ = ["TASK", "ContrastSets", "ContrastTaskSettings"]

#: The task, as the registry finds it.
TASK = CONTRAST
