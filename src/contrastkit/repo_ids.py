"""The one rule for Hugging Face Hub dataset ids, shared by ``publish`` and by
``evaluate --data hf:USER/NAME``.

Follows ``huggingface_hub.utils.validate_repo_id``: ``NAMESPACE/NAME``, each part made of
ASCII letters, digits, ``-``, ``_`` and ``.``, starting with a letter or digit, at most 96
characters; no ``--`` or ``..``; not ending in ``.git``.
"""

from __future__ import annotations

import re

from contrastkit.errors import ConfigError

__all__ = ["check_repo_id", "is_repo_id"]

_PART = r"[A-Za-z0-9][A-Za-z0-9_.-]{0,95}"
_REPO_ID = re.compile(rf"^{_PART}/{_PART}$")


def is_repo_id(text: str) -> bool:
    """Whether ``text`` is a valid ``NAMESPACE/NAME`` dataset id."""
    return (
        bool(_REPO_ID.match(text))
        and len(text) <= 96 * 2 + 1
        and "--" not in text
        and ".." not in text
        and not text.endswith(".git")
    )


def check_repo_id(text: str, option: str = "repo_id") -> str:
    """Return ``text`` if it is a valid dataset id.

    Raises:
        ConfigError: naming ``option`` and the rule.
    """
    if not is_repo_id(text):
        raise ConfigError(
            f"{option} {text!r}: expected USER/NAME or ORG/NAME (letters, digits, - _ ., "
            "no '--' or '..')"
        )
    return text
