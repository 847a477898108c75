"""Jobs that combine both sides of contrastkit: building datasets and scoring models.

``builders`` and ``evaluators`` never import each other; a job that needs both lives
here, and the command line calls it:

* :func:`contrastkit.apps.gensynth.build_gensynth` — the GenSynth build (edit, KNN
  filter, selection) with its Sec. 4.3 quality checks;
* :func:`contrastkit.apps.genswap.build_genswap` — the GenSwap face-swap baseline with
  the same checks;
* :func:`contrastkit.apps.quickstart.quickstart` — the whole workflow, offline, in one
  call.

Each job takes one frozen config dataclass and returns a typed result; modules are
imported on use, so importing this package is cheap.
"""
