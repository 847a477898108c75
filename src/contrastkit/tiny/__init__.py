"""Tiny models with real architectures and random weights, built from configs.

They let the whole pipeline run on a machine with no model cached and no network: tests,
benchmarks and ``contrastkit quickstart`` build them, save them with the libraries' own
``save_pretrained`` / ``state_dict`` and load them back through the same loading code a
user's real model takes. Their outputs are meaningless as measurements.

Every builder takes a parent folder and writes the model to ``FOLDER/NAME`` (``NAME``
defaults to the model's, ``tiny-open-clip``, ``tiny-llava``, ``tiny-instruct-pix2pix``,
...), and returns the spec that loads it: ``tiny_open_clip(Path("models"))`` gives
``open_clip:models/tiny-open-clip``, ``tiny_instruct_pix2pix(Path("models"))``
``ip2p:models/tiny-instruct-pix2pix``.
"""
