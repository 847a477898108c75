"""Benchmark JSON: the names other modules import from here. The files of every task
(folder names of models, JSON values, reading a ``benchmark.json`` back) are in
:mod:`.files`; the VisoGender benchmark (building it from a scored run, reading it back,
its headline numbers) moved to :mod:`contrastkit.evaluators.tasks.visogender.benchmark`
(the VisoGender task folder)."""

from contrastkit.evaluators.report.files import (
    SLUG_READABLE_CHARS,
    benchmark_file,
    jsonable,
    model_slug,
    read_benchmark,
    read_task_benchmark,
)
from contrastkit.evaluators.tasks.visogender.benchmark import (
    benchmark,
    headline,
    load_benchmark,
    read_visogender_benchmark,
    retrieval_warnings,
)

__all__ = [
    "SLUG_READABLE_CHARS",
    "benchmark",
    "benchmark_file",
    "headline",
    "jsonable",
    "load_benchmark",
    "model_slug",
    "read_benchmark",
    "read_task_benchmark",
    "read_visogender_benchmark",
    "retrieval_warnings",
]
