"""How the application jobs report progress: a factory of progress displays, one per stage.

A job calls ``progress(label)`` when a stage starts and uses the context manager it
returns: entering it yields ``update(done, total)``, leaving it ends the stage. The
command line passes :func:`contrastkit.cli.common.progress` (a rich bar on a terminal);
a notebook can pass any ``contextmanager`` function of that shape (a tqdm bar, a logger).
The shape is the evaluation jobs' ``ProgressFactory`` too, so one factory serves all.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import Protocol

__all__ = ["ProgressFactory", "Update", "stage"]

#: ``update(done, total)``: ``done`` of ``total`` steps of the stage are finished.
Update = Callable[[int, int], None]


class ProgressFactory(Protocol):
    """Opens a progress display for one stage of a job: ``progress(label, total)`` is a
    context manager yielding ``update(done, total)``."""

    def __call__(
        self, label: str, total: int | None = None
    ) -> AbstractContextManager[Callable[..., None]]: ...


@contextmanager
def stage(progress: ProgressFactory | None, label: str) -> Iterator[Update]:
    """The stage's ``update(done, total)`` from ``progress``, or one that does nothing."""
    if progress is None:
        yield lambda done, total: None
        return
    with progress(label) as update:
        yield lambda done, total: update(done, total)
