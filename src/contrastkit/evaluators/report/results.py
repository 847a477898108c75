"""Benchmark JSON: the names other modules import from here. The files of every task
(folder names of models, JSON values, reading a ``benchmark.json`` back) are in
:mod:`.files`; the VisoGender benchmark (building it from a scored run, reading it back,
its headline numbers) moved to :mod:`contrastkit.evaluators.tasks.visogender.benchmark`
(the VisoGender task folder). Its old names here still work, with a
:class:`DeprecationWarning`, and import that folder only when asked for."""

from contrastkit.evaluators.report.files import (
    SLUG_READABLE_CHARS,
    benchmark_file,
    jsonable,
    model_slug,
    read_benchmark,
    read_task_benchmark,
)
from contrastkit.moved import moved_names

__all__ = [
    "SLUG_READABLE_CHARS",
    "benchmark_file",
    "jsonable",
    "model_slug",
    "read_benchmark",
    "read_task_benchmark",
]

_VISOGENDER = "contrastkit.evaluators.tasks.visogender.benchmark"

#: The VisoGender benchmark, which moved to its task folder: its old names here.
__getattr__ = moved_names(
    __name__,
    {
        name: _VISOGENDER
        for name in (
            "benchmark",
            "headline",
            "load_benchmark",
            "read_visogender_benchmark",
            "retrieval_warnings",
        )
    },
)
