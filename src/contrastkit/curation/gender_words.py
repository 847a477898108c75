"""Deprecated: moved to :mod:`contrastkit.gender_words` (the word lists are shared by
probe sets, builders and the audit, below the curation layer)."""

from contrastkit.moved import moved

moved(__name__, "contrastkit.gender_words")
