"""Tiny models with real architectures and random weights, built from configs.

They let the whole pipeline run on a machine with no model cached and no network: tests,
benchmarks and ``contrastkit quickstart`` build them, save them with the libraries' own
``save_pretrained`` / ``state_dict`` and load them back through the same loading code a
user's real model takes. Their outputs are meaningless as measurements.
"""
