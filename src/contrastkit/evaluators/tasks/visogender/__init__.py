"""The VisoGender task (Hall et al. 2023): resolution (which pronoun a model picks for an
image's referent, Sec. 3.5), retrieval (how the perceived genders share the top of an
occupation's ranked images, Sec. 3.4) and flipped retrieval (the participant-subject
queries of Tab. 5), with the analyses of Appendices D, F and G.

* :mod:`.resolution`, :mod:`.retrieval`, :mod:`.flipped`, :mod:`.multiple_choice` — the
  cases, queries, raw records and summaries of each part;
* :mod:`.settings` — :class:`~.settings.EvalConfig`, what the run computes;
* :mod:`.scoring` — scoring a dataset with a model once, raw files kept for resume;
* :mod:`.benchmark` — the typed result of a scored run
  (:class:`~contrastkit.results.VisoGenderResult`, ``visogender_result``; its JSON is the
  ``benchmark.json`` of Appendix J), reading a file back, and its headline numbers;
  :mod:`.report` — its markdown reports;
* :mod:`.task` — the task on the engine (:mod:`contrastkit.evaluators.engine`):
  :class:`~.task.VisoGender`, its ``TASK``; :mod:`.evaluate` — ``contrastkit evaluate
  visogender``, the engine's run of it: one folder per model and a comparison of all;
* :mod:`.resolution_plots`, :mod:`.retrieval_plots`, :mod:`.labour_plots`,
  :mod:`.flipped_report`, :mod:`.multiple_choice_report` — its own report sections and
  plots (the shared toolkit stays in :mod:`contrastkit.evaluators.report`).

The engine runs it (:func:`~contrastkit.evaluators.engine.run.run_task` of
:data:`.task.TASK`), but this package's ``__init__`` does not name that ``TASK``: the
registry keeps its built-in ``visogender`` row, whose ``run`` is the engine's run of the
task and whose readers give ``contrastkit report`` each file's results object as it
always has (a row made from the task would give the typed result instead).
"""
