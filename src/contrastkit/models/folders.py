"""Model targets that are meant as folders: telling a mistyped folder from a Hub id or an
architecture name, and saying which folder does not exist.

A target is *meant as a path* when it cannot be anything else: absolute, starting with
``.`` or ``~``, with more than one ``/`` (a Hub id has one), or whose first part is a
folder on this machine (``build/...`` where ``build`` exists). Nothing here imports torch.
"""

from __future__ import annotations

import difflib
from pathlib import Path

from contrastkit.errors import ModelNotFoundError

__all__ = ["meant_as_path", "missing_folder"]


def meant_as_path(target: str) -> bool:
    """Whether ``target`` can only be a path (see the module docstring)."""
    if not target:
        return False
    first = target.split("/", 1)[0]
    return (
        Path(target).is_absolute()
        or target.startswith((".", "~"))
        or target.count("/") > 1
        or ("/" in target and Path(first).expanduser().is_dir())
    )


def missing_folder(target: str, what: str = "model folder") -> ModelNotFoundError:
    """The error for a folder ``target`` that does not exist: it names the deepest part
    of the path that does exist, what that holds, and the closest name to the one given
    (``did you mean build/models/tiny-open-clip?``)."""
    path = Path(target).expanduser()
    parent = path.parent
    while not parent.is_dir() and parent != parent.parent:
        parent = parent.parent
    message = f"{what} {target} does not exist"
    if parent.is_dir() and str(parent) not in ("", ".") and parent != parent.parent:
        names = sorted(p.name for p in parent.iterdir() if not p.name.startswith("."))
        wanted = path.relative_to(parent).parts[0] if path.is_relative_to(parent) else path.name
        close = difflib.get_close_matches(wanted, names, n=1, cutoff=0.6)
        if close:
            message += f" (did you mean {parent / close[0]}?)"
        elif names:
            shown = ", ".join(names[:10]) + (", ..." if len(names) > 10 else "")
            message += f" ({parent} holds: {shown})"
        else:
            message += f" ({parent} is empty)"
    elif not path.is_absolute() and parent.is_dir():
        message += f" (looked in {Path.cwd()})"
    return ModelNotFoundError(message)
