"""One task per model folder: ``contrastkit evaluate`` writes each model's results into
``OUT/<model>/`` under the same names for every task (``benchmark.json``, ``report.md``,
``plots/``), so a second task evaluated into the same ``--out`` would replace the first
one's files and leave its raw files and plots beside the new results.

:func:`require_one_task` refuses that before anything is scored (the error names both
tasks and suggests another ``--out``); :func:`require_unmixed` is what ``contrastkit
report`` checks of each results folder it is given, for folders an older contrastkit
mixed up. A folder of one task (a rerun, a resume) is never refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path

from contrastkit.errors import ConfigError, DataFormatError

__all__ = ["OWN_SUBFOLDER", "RAW_FILES", "folder_tasks", "require_one_task", "require_unmixed"]

#: The raw files each built-in task writes into a model folder, by task.
RAW_FILES: dict[str, tuple[str, ...]] = {
    "visogender": ("raw_resolution.jsonl", "raw_retrieval.jsonl", "raw_retrieval_flipped.jsonl"),
    "contrast": ("raw_contrast.jsonl", "raw_contrast_scores.jsonl"),
    "stereotype": ("raw_stereotype.jsonl",),
    "decisions": ("raw_decisions.jsonl",),
}

#: Sub-folders of a model folder that hold no task's results of ``evaluate``.
_OTHER_FOLDERS = frozenset({"zero_shot", "plots", "_data"})

#: Tasks whose files go into a sub-folder of their own in the model folder (the
#: zero-shot analysis: ``MODEL/zero_shot/``): they share no file name with another
#: task, so the model folder may hold another task's results.
OWN_SUBFOLDER = {"zero-shot": "zero_shot"}


def _benchmark_task(path: Path) -> str | None:
    """The task a ``benchmark.json`` records (``None``: unreadable, or none recorded)."""
    from contrastkit.records import read_json

    try:
        data = read_json(path)  # bounded (records.MAX_JSON_BYTES)
    except (OSError, ValueError):  # DataFormatError is a ValueError
        return None
    if not isinstance(data, dict):
        return None
    task = data.get("task")
    if isinstance(task, str):
        return task
    if any(isinstance(key, str) and key.startswith("visogender_") for key in data):
        return "visogender"
    return None


def folder_tasks(folder: Path) -> dict[str, Path]:
    """The tasks whose results ``folder`` holds, each with a file that shows it: the
    task its ``benchmark.json`` records, and the task of each raw file of
    :data:`RAW_FILES` in it."""
    found: dict[str, Path] = {}
    benchmark = folder / "benchmark.json"
    if benchmark.is_file():
        task = _benchmark_task(benchmark)
        if task is not None:
            found[task] = benchmark
    for task, names in RAW_FILES.items():
        for name in names:
            if task not in found and (folder / name).is_file():
                found[task] = folder / name
    return found


def _result_folders(folder: Path) -> Iterable[Path]:
    """``folder`` and its sub-folders that may hold a task's results (one per data
    folder when a task evaluated several)."""
    yield folder
    if folder.is_dir():
        for child in sorted(folder.iterdir()):
            if child.is_dir() and child.name not in _OTHER_FOLDERS:
                yield child


def require_one_task(out: Path, folders: Sequence[str], task: str) -> None:
    """Refuse to evaluate ``task`` into ``out`` when a model folder of ``folders``
    (names under ``out``) already holds another task's results.

    Raises:
        ConfigError: naming the folder, the task it holds (and the file that shows it),
            the task asked for, and what to do instead.
    """
    if task in OWN_SUBFOLDER:
        return
    for name in folders:
        for place in _result_folders(out / name):
            others = {t: p for t, p in folder_tasks(place).items() if t != task}
            if others:
                other, shown = next(iter(others.items()))
                raise ConfigError(
                    f"{out / name} already holds the results of task {other} ({shown.name}); "
                    f"evaluating task {task} into the same --out would replace its "
                    f"benchmark.json, report.md and plots: give another --out (e.g. "
                    f"--out {out.name or 'results'}-{task})"
                )


def require_unmixed(path: Path) -> None:
    """Refuse a results folder (or the folder of a ``benchmark.json``) that holds the
    files of more than one task (an older contrastkit evaluated a second task into the
    same folder): its ``benchmark.json`` may not be the results its plots and raw files
    belong to.

    Raises:
        DataFormatError: naming the folder and the tasks found in it.
    """
    folder = path if path.is_dir() else path.parent
    found = folder_tasks(folder)
    if len(found) > 1:
        listed = ", ".join(f"{task} ({file.name})" for task, file in found.items())
        raise DataFormatError(
            folder, None, None,
            f"holds the results of {len(found)} tasks: {listed}; a second task was "
            "evaluated into the same folder and replaced the first one's benchmark.json "
            "and report.md: evaluate each task into its own --out, then report those",
        )  # fmt: skip
