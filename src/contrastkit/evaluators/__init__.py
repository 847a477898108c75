"""Score models on contrastkit datasets (VisoGender, Hall et al. 2023, Sec. 3.4-3.5;
GenSynth contrast sets, Sec. 5).

* :mod:`.job` — the jobs: :func:`~.job.evaluate` (one :class:`~.job.EvaluateConfig`, what
  ``contrastkit evaluate`` runs) and :func:`~.job.compare_results` (``contrastkit report``).
* :mod:`.models` — one registry of model specs; dual encoders (OpenCLIP, transformers
  CLIP/SigLIP) and captioning models (BLIP, GIT, BLIP-2), placed by a
  :class:`~contrastkit.config.ModelConfig`.
* :mod:`.data` — rows and their images: local files, the image store, HF datasets;
  :mod:`.hub` — Hub datasets (``hf:USER/NAME``) as local copies.
* :mod:`.tasks` — the resolution and retrieval tasks; :mod:`.contrast` — contrast sets.
* :mod:`.metrics` — pure metric functions (resolution accuracy and gap, Bias@K, Skew@K,
  NDKL); :mod:`.stats` — Appendix F and G statistics.
* :mod:`.runner` — batched, cached, resumable scoring; :mod:`.report` — benchmark JSON,
  markdown and plots.

It never imports the builders package: evaluators and builders meet through datasets
and :mod:`contrastkit.interfaces`.
"""
