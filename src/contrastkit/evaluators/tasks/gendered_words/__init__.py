"""``contrastkit evaluate gendered-words``: how often a captioning model's description of
each version of a contrast-set source carries a masculine or a feminine word (GenSynth
Tab. 4), and how often it flips with the edit, with bootstrap intervals.

A task folder: the task (:mod:`.task`), its typed result (:mod:`.result`) and its
report and figure (:mod:`.report`); :data:`TASK` is what the task registry finds
(:mod:`contrastkit.evaluators.tasks.registry`).

Example (Python)::

    from contrastkit.evaluators.job import EvaluateConfig, evaluate
    from contrastkit.evaluators.tasks.gendered_words import GenderedWordsSettings

    evaluate(EvaluateConfig(
        data=("exports/gensynth",), models=("blip:Salesforce/blip-image-captioning-base",),
        out="results", task="gendered-words",
        task_settings=GenderedWordsSettings(max_new_tokens=20),
    ))
"""

from contrastkit.evaluators.tasks.gendered_words.result import GenderedWordsResult, VersionRates
from contrastkit.evaluators.tasks.gendered_words.task import GenderedWords, GenderedWordsSettings

__all__ = ["TASK", "GenderedWords", "GenderedWordsResult", "GenderedWordsSettings", "VersionRates"]

#: The task, as the registry finds it.
TASK = GenderedWords()
