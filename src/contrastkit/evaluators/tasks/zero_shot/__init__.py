"""Per-concept zero-shot disparities by perceived gender (the zero-shot disparities
paper): AP and calibration gaps, and their echo in word embeddings.

* :mod:`.groups` — Visual Genome and COCO folders: perceived-gender groups (the paper's
  Table 1 synsets and caption terms), the single-group and ``min_images`` filters, the
  COCO -> Visual Genome synset table.
* :mod:`.predictions` — bring-your-own predictions (JSONL / Parquet scores or hits).
* :mod:`.metrics` — AP and ECE per concept and group, their differences, bootstrap
  intervals (pure numpy / scikit-learn).
* :mod:`.words` — Experiment 3: language bias of the concepts and its sign agreement.
* :mod:`.consistency` — the cross-dataset colouring of Fig. 3-4.
* :mod:`.cache` — image and prompt embeddings kept between runs (reruns and resumes).
* :mod:`.result` — the typed ``disparity.json``
  (:class:`~contrastkit.results.ZeroShotResult`) an analysis makes.
* :mod:`.plots` — the figures; :mod:`.report` — ``disparity.json`` and ``report.md``,
  written from the typed result.
* :mod:`.job` — :func:`~.job.zero_shot_disparity`, what ``contrastkit evaluate
  zero-shot`` runs.
* :mod:`.task` — the analysis as a task of the engine (:class:`~.task.ZeroShot`) and
  the task registry's ``zero-shot`` row (what :func:`contrastkit.evaluators.job.evaluate`
  runs on a Visual Genome or COCO folder, and the reader of ``disparity.json`` as the
  typed result); :mod:`.comparison` — its
  headline and several results side by side (``contrastkit report``).
"""
