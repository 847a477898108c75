"""Deprecated: moved to :mod:`contrastkit.builders.stages` (builders may load
models since the model registry sits below them); the same module for one release."""

from contrastkit.moved import moved

moved(__name__, "contrastkit.builders.stages")
