"""Deprecated: the GenSynth Sec. 4.3 quality checks moved to :mod:`contrastkit.builders.quality`,
beside the builders that run them; this path is the same module for one release."""

from contrastkit.moved import moved

moved(__name__, "contrastkit.builders.quality")
