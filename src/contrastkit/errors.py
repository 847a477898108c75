"""The errors contrastkit raises on purpose: one small hierarchy.

Everything a user can cause or fix — a malformed file, an option that cannot work, a
model that is not on this machine, a build folder in an unexpected state, a folder that
cannot be written — is a :class:`ContrastkitError`. The command line reports those as one
line and exits 2; any other exception is a bug and surfaces with its traceback.

The input errors (:class:`DataFormatError`, :class:`ConfigError`,
:class:`ModelNotFoundError`) are also :class:`ValueError`\\ s, as scikit-learn's
validation errors are, so ``except ValueError`` in existing code keeps catching them;
:class:`ResourceError` is also an :class:`OSError`.
"""

from __future__ import annotations

from pathlib import Path

__all__ = [
    "ConfigError",
    "ContrastkitError",
    "DataFormatError",
    "ModelNotFoundError",
    "ResourceError",
    "StateError",
]


class ContrastkitError(Exception):
    """Base of every error raised on purpose: the message says what to fix.

    ``label`` is how the command line introduces the message.
    """

    label = "error"


class ConfigError(ContrastkitError, ValueError):
    """An option or config value that cannot work (a negative K, an unknown task, a
    missing ``--coco`` for the edit stage)."""


class DataFormatError(ContrastkitError, ValueError):
    """Malformed input, located precisely.

    Attributes:
        path: the file.
        line: 1-based physical line number (the header is line 1), or ``None`` for
            whole-file problems.
        field: the column or field name at fault, or ``None``.
        reason: what is wrong, in words.
    """

    def __init__(self, path: str | Path, line: int | None, field: str | None, reason: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.reason = reason
        super().__init__(self._render())

    def __reduce__(self) -> tuple[type[DataFormatError], tuple[str, int | None, str | None, str]]:
        return (type(self), (self.path, self.line, self.field, self.reason))

    def _render(self) -> str:
        where = self.path if self.line is None else f"{self.path}:{self.line}"
        what = f" field {self.field!r}:" if self.field else ""
        return f"{where}:{what} {self.reason}"


class ModelNotFoundError(ContrastkitError, ValueError):
    """A model spec names weights that are neither a local path nor in the local cache,
    or a folder that does not hold a loadable model. The message says how to get them;
    the loader's own error is chained as ``__cause__``."""

    label = "model not found"


class StateError(ContrastkitError):
    """Files a job keeps between runs are not in a state it can continue from: a build
    folder made with other settings, a state database of another schema, a lock held by
    another run, a file changed while the job ran."""

    label = "state error"


class ResourceError(ContrastkitError, OSError):
    """The machine, not the input: a folder that cannot be written, a full disk, a
    missing permission. Raised before long work starts where it can be checked."""

    label = "environment error"
