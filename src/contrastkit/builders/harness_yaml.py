"""lmms-eval's task YAML (:mod:`contrastkit.builders.harness`): the configuration of one
task (:func:`task_config`) and the dumper that writes it as lmms-eval's own YAMLs are
written (:func:`dump_yaml`; :class:`TaskFunction` as a ``!function`` tag).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TypedDict

import yaml

from contrastkit.harness_key import KEY_FILE

__all__ = ["LMMS_POST_PROMPT", "Metric", "TaskConfig", "TaskFunction", "dump_yaml", "task_config"]

#: The instruction lmms-eval's prompt ends with (VLMEvalKit adds its own).
LMMS_POST_PROMPT = "Answer with the option's letter from the given choices directly."


@dataclass(frozen=True)
class TaskFunction:
    """A function of the export's ``utils.py`` that a task YAML names: lmms-eval reads
    ``!function utils.<name>`` (its YAML loader imports it)."""

    name: str

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"not a function name: {self.name!r}")


class _TaskDumper(yaml.SafeDumper):  # type: ignore[misc]  # pyyaml has no type hints here
    """``yaml.safe_dump`` plus the two things lmms-eval's task YAMLs are written with:
    :class:`TaskFunction` as a plain ``!function utils.<name>`` tag, and a sequence indented
    under its key. An empty string or one holding a line break is double-quoted
    (``pre_prompt: ""``, ``post_prompt: "\\nAnswer ..."``), as the prompts of lmms-eval's
    own tasks are; every other string is quoted only where YAML needs it (a task named
    ``no`` or ``null`` stays a string)."""

    def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
        super().increase_indent(flow, False)

    def choose_scalar_style(self) -> str:
        # pyyaml quotes every scalar with a tag of its own ('utils.name'); lmms-eval's
        # YAMLs write the dotted name plain, which is safe for an identifier
        if self.event.tag == "!function":
            return ""
        return str(super().choose_scalar_style())


def _represent_function(dumper: yaml.SafeDumper, function: TaskFunction) -> yaml.Node:
    return dumper.represent_scalar("!function", f"utils.{function.name}")


def _represent_str(dumper: yaml.SafeDumper, text: str) -> yaml.Node:
    if not text or "\n" in text:
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style='"')
    return dumper.represent_str(text)


_TaskDumper.add_representer(TaskFunction, _represent_function)
_TaskDumper.add_representer(str, _represent_str)


def dump_yaml(data: Mapping[str, object]) -> str:
    """``data`` as lmms-eval YAML (:class:`_TaskDumper`; keys in order, no line folded)."""
    return str(
        yaml.dump(data, Dumper=_TaskDumper, sort_keys=False, allow_unicode=True, width=1 << 20)
    )


class Metric(TypedDict):
    """A metric of an lmms-eval task: its name, how it is aggregated, its direction."""

    metric: str
    aggregation: TaskFunction
    higher_is_better: bool


class TaskConfig(TypedDict):
    """The configuration of one lmms-eval task (:func:`task_config`), as its YAML holds
    it."""

    task: str
    dataset_path: str
    dataset_kwargs: dict[str, dict[str, str]]
    test_split: str
    output_type: str
    doc_to_visual: TaskFunction
    doc_to_text: TaskFunction
    doc_to_target: TaskFunction
    doc_to_choice: TaskFunction
    generation_kwargs: dict[str, int | bool]
    process_results: TaskFunction
    metric_list: list[Metric]
    lmms_eval_specific_kwargs: dict[str, dict[str, str]]
    metadata: dict[str, int | str]


def task_config(task: str, data_file: str) -> TaskConfig:
    """The configuration of one lmms-eval task (``data_file`` relative to the folder)."""
    return {
        "task": task,
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": {"test": data_file}},
        "test_split": "test",
        "output_type": "generate_until",
        "doc_to_visual": TaskFunction("doc_to_visual"),
        "doc_to_text": TaskFunction("doc_to_text"),
        "doc_to_target": TaskFunction("doc_to_target"),
        "doc_to_choice": TaskFunction("doc_to_choice"),
        "generation_kwargs": {
            "max_new_tokens": 16,
            "temperature": 0,
            "do_sample": False,
            "num_beams": 1,
        },
        "process_results": TaskFunction("process_results"),
        "metric_list": [
            {
                "metric": "accuracy",
                "aggregation": TaskFunction("aggregate_accuracy"),
                "higher_is_better": True,
            },
            {
                "metric": "unparseable_rate",
                "aggregation": TaskFunction("aggregate_unparseable"),
                "higher_is_better": False,
            },
        ],
        "lmms_eval_specific_kwargs": {
            "default": {"pre_prompt": "", "post_prompt": "\n" + LMMS_POST_PROMPT}
        },
        "metadata": {"version": 1, "contrastkit_key": KEY_FILE},
    }
