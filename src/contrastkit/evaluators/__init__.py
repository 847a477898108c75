"""Score models on contrastkit datasets (VisoGender, Hall et al. 2023, Sec. 3.4-3.5).

* :mod:`.models` — one registry of model specs; dual encoders (OpenCLIP, transformers
  CLIP/SigLIP) and captioning models (BLIP, GIT, BLIP-2).
* :mod:`.data` — rows and their images: local files, the image store, HF datasets.
* :mod:`.tasks` — the resolution and retrieval tasks.
* :mod:`.metrics` — pure metric functions (resolution accuracy and gap, Bias@K, Skew@K,
  NDKL); :mod:`.stats` — Appendix F and G statistics.
* :mod:`.runner` — batched, cached, resumable scoring; :mod:`.report` — benchmark JSON,
  markdown and plots.

It never imports ``contrastkit.builders``: evaluators and builders meet through datasets.
"""
