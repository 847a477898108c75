"""The files of every task's results: folder names of models (:func:`model_slug`), JSON
values (:func:`jsonable`), and reading a ``benchmark.json`` back (:func:`read_benchmark`,
:func:`benchmark_file`, :func:`read_task_benchmark`)."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contrastkit.errors import DataFormatError
from contrastkit.results import AuditReport, Result, ZeroShotResult, load_result

__all__ = [
    "SLUG_READABLE_CHARS",
    "a_task",
    "benchmark_file",
    "jsonable",
    "model_slug",
    "read_benchmark",
    "read_task_benchmark",
]


#: Longest readable part of a folder name made by :func:`model_slug` (before its hash).
SLUG_READABLE_CHARS = 64


def model_slug(spec: str) -> str:
    """A folder-safe name for a model spec, distinct for distinct specs.

    The readable part is the spec with every run of characters other than letters,
    digits, ``.``, ``_`` and ``-`` turned into ``-``: ``open_clip:ViT-B-32/openai`` ->
    ``open_clip-ViT-B-32-openai``, ``hf-clip:openai/clip-vit-base-patch32`` ->
    ``hf-clip-openai-clip-vit-base-patch32``; a local path contributes only its last two
    parts. That alone is the name when it renders the spec whole: a registry model or Hub
    id, ``PREFIX:NAME`` or ``PREFIX:A/B``. Otherwise ``-`` and the first 8 hex digits of
    the sha256 of the whole spec are appended, so two specs that differ only in what the
    readable part drops (``open_clip:x1/ckpt/m`` and ``open_clip:x2/ckpt/m``, two
    checkpoints in folders of the same name) get different folders: when the target names
    a local path (it exists, starts with ``/``, ``.`` or ``~``, or has more than one
    ``/``), holds another character (a space, ``:``, ``@`` ...), or the readable part is
    longer than :data:`SLUG_READABLE_CHARS` (then cut there).
    """
    spec = spec.strip()
    prefix, _, target = spec.partition(":")
    path = Path(target).expanduser()
    exists = bool(target) and path.exists()
    readable = re.sub(
        r"[^A-Za-z0-9._-]+",
        "-",
        f"{prefix}-{'-'.join(path.resolve().parts[-2:]) if exists else target}",
    ).strip("-.")
    lossy = (
        exists
        or target.startswith(("/", ".", "~"))
        or target.count("/") > 1
        or re.search(r"[^A-Za-z0-9._/-]", target) is not None
        or len(readable) > SLUG_READABLE_CHARS
    )
    if not lossy:
        return readable
    digest = hashlib.sha256(spec.encode("utf-8")).hexdigest()[:8]
    return f"{readable[:SLUG_READABLE_CHARS].rstrip('-.')}-{digest}"


def jsonable(value: Any) -> Any:
    """``value`` with non-finite floats as ``None`` and numpy scalars as Python ones."""
    if isinstance(value, Mapping):
        return {str(key): jsonable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(item) for item in value]
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def read_benchmark(path: str | Path) -> Result:
    """The typed result (:func:`contrastkit.results.load_result`) of a benchmark file
    or of the output folder holding it (a VisoGender, contrast-set or stereotype
    ``benchmark.json``, or a contrast set's ``harness_results.json``).

    Raises:
        DataFormatError: no such file, invalid JSON, an unknown task, a value of the
            wrong type, or a result that is no evaluation's (an audit, a zero-shot
            disparity analysis).
    """
    path = Path(path)
    if not path.exists():
        raise DataFormatError(path, None, None, "no such benchmark file")
    result = load_result(path)
    if isinstance(result, AuditReport | ZeroShotResult):
        raise DataFormatError(
            path, None, "task",
            f"{a_task(result.task)} result, not a benchmark (`contrastkit report` compares the "
            "benchmark.json of evaluations)",
        )  # fmt: skip
    return result


def a_task(task: str) -> str:
    """``an audit``, ``a contrast``."""
    return f"{'an' if task[:1] in 'aeiou' else 'a'} {task}"


def benchmark_file(path: str | Path) -> Path:
    """The ``benchmark.json`` that ``path`` names: the file itself, or the one in the
    output folder ``path``.

    Raises:
        DataFormatError: there is no such file.
    """
    path = Path(path)
    if path.is_dir():
        path = path / "benchmark.json"
    if not path.is_file():
        raise DataFormatError(path, None, None, "no such benchmark file")
    return path


def read_task_benchmark(path: str | Path, task: str) -> tuple[Path, dict[str, Any]] | None:
    """The benchmark file of :func:`benchmark_file` and its JSON object when it records
    ``task``; ``None`` when it is another task's (how each task's reader tells its own
    files apart).

    Raises:
        DataFormatError: no such file, or not a JSON object.
    """
    from contrastkit.records import read_json_object

    file = benchmark_file(path)
    data = read_json_object(file, "a benchmark object")
    return (file, data) if data.get("task") == task else None
