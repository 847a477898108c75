"""What truly spans every layer: the quickstart, which builds, exports, publishes (dry
run) and evaluates in one call (:func:`contrastkit.apps.quickstart.quickstart`).

The GenSynth and GenSwap builds, their Sec. 4.3 quality checks and their Ray actor pools
live with the builders (:mod:`contrastkit.builders.gensynth.job`,
:mod:`contrastkit.builders.genswap_job`, :mod:`contrastkit.builders.quality`) now that
the model registry (:mod:`contrastkit.models`) sits below them; their old paths here are
deprecated aliases for one release.
"""
