"""`contrastkit export harness --format lmms-eval`: the task YAML lmms-eval reads, its
self-contained utils.py, the README's commands and the exported answer rule."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import datasets
import pytest
import yaml

from contrastkit.builders.harness import HarnessExportConfig, export_harness
from contrastkit.harness_key import KEY_FILE, parse_choice, read_key
from lmms_eval_samples import import_utils, loss_text


class FunctionLoader(yaml.SafeLoader):
    """PyYAML loader that reads lmms-eval's ``!function module.name`` tag."""


FunctionLoader.add_constructor(
    "!function", lambda loader, node: ("!function", loader.construct_scalar(node))
)


def functions(value: Any) -> list[str]:
    if isinstance(value, tuple) and value and value[0] == "!function":
        return [value[1]]
    if isinstance(value, dict):
        return [name for item in value.values() for name in functions(item)]
    if isinstance(value, list):
        return [name for item in value for name in functions(item)]
    return []


def test_the_lmms_eval_task_yaml_parses_and_names_functions_of_its_utils(
    lmms: Path, tmp_path: Path
) -> None:
    utils = import_utils(lmms)
    text = (lmms / "utils.py").read_text()
    assert "contrastkit" not in re.sub(r'""".*?"""', "", text, flags=re.S)  # self-contained
    tasks = {}
    for name in ("contrastkit_visogender", "contrastkit_visogender_reversed"):
        config = yaml.load((lmms / f"{name}.yaml").read_text(), Loader=FunctionLoader)
        assert config["task"] == name and config["output_type"] == "generate_until"
        named = functions(config)
        assert {"utils.doc_to_visual", "utils.doc_to_text", "utils.process_results"} <= set(named)
        for function in named:
            module, attribute = function.split(".")
            assert module == "utils" and callable(getattr(utils, attribute))
        data = lmms / config["dataset_kwargs"]["data_files"][config["test_split"]]
        assert data.is_file()  # relative to the task folder
        tasks[name] = datasets.load_dataset(
            "parquet", data_files={"test": str(data)}, cache_dir=str(tmp_path / "hf")
        )["test"]
    group = yaml.load((lmms / "contrastkit_visogender_all.yaml").read_text(), Loader=FunctionLoader)
    assert group["task"] == list(tasks)
    doc = tasks["contrastkit_visogender"][0]
    key = read_key(lmms).by_index()[doc["index"]]
    [image] = utils.doc_to_visual(doc)
    assert image.mode == "RGB" and image.size[1] == 40
    prompt = utils.doc_to_text(doc, {"pre_prompt": "", "post_prompt": "\nAnswer with a letter."})
    assert prompt.startswith(doc["question"] + "\nA. ")
    assert all(f"{letter}. {text}" in prompt for letter, text in key.options.items())
    assert utils.doc_to_choice(doc) == ["A", "B", "C"]
    assert utils.doc_to_target(doc) == key.answer
    right = utils.process_results(doc, [f"{key.answer}. {key.options[key.answer]}"])
    wrong = utils.process_results(doc, ["I am not sure."])
    assert right["accuracy"] == {"index": doc["index"], "letter": key.answer, "correct": True}
    assert wrong["accuracy"]["letter"] is None
    # output_type: multiple_choice: lmms-eval 0.7.3 passes each option's (loss, is_greedy)
    # as text; the lowest loss wins (lmms-eval's own rule), a tie is unparseable
    losses = [loss_text(2.3, False), loss_text(0.357, True), loss_text(1.6, False)]
    assert utils.process_results(doc, losses)["accuracy"]["letter"] == "B"
    tie = [loss_text(1.0986122886681098, False)] * 3
    assert utils.process_results(doc, tie)["accuracy"]["letter"] is None
    for bad in (losses[:2], [*losses[:2], "(0.1 False)"], [*losses[:2], "B"]):
        with pytest.raises(ValueError, match=r"one \(loss, is_greedy\) pair per option"):
            utils.process_results(doc, bad)
    assert utils.aggregate_accuracy([right["accuracy"], wrong["accuracy"]]) == 0.5
    assert (
        utils.aggregate_unparseable([right["unparseable_rate"], wrong["unparseable_rate"]]) == 0.5
    )


def test_the_task_yaml_is_the_configuration_lmms_eval_reads(
    small: dict[str, Path], tmp_path: Path
) -> None:
    """Issue 33: the task YAMLs are dumped by pyyaml, so a task whose name YAML reads as
    something else (``no`` is false, ``null`` is nothing) stays the string it is; the
    functions are plain ``!function utils.<name>`` tags, as lmms-eval's own YAMLs write
    them; and the generated ``utils.py`` scores the task's real first item."""
    out = tmp_path / "no"
    export_harness(
        HarnessExportConfig(source=small["OO"], format="lmms-eval", out=out, seed=3, name="no")
    )
    text = (out / "no.yaml").read_text()
    assert text.startswith("# lmms-eval task written by contrastkit ")
    assert "\ndoc_to_visual: !function utils.doc_to_visual\n" in text
    assert '\n    pre_prompt: ""\n' in text
    config = yaml.load(text, Loader=FunctionLoader)
    post_prompt = "\nAnswer with the option's letter from the given choices directly."
    assert config == {
        "task": "no",
        "dataset_path": "parquet",
        "dataset_kwargs": {"data_files": {"test": "data/no.parquet"}},
        "test_split": "test",
        "output_type": "generate_until",
        **{
            name: ("!function", f"utils.{name}")
            for name in ("doc_to_visual", "doc_to_text", "doc_to_target", "doc_to_choice")
        },
        "generation_kwargs": {
            "max_new_tokens": 16, "temperature": 0, "do_sample": False, "num_beams": 1
        },
        "process_results": ("!function", "utils.process_results"),
        "metric_list": [
            {"metric": "accuracy", "aggregation": ("!function", "utils.aggregate_accuracy"),
             "higher_is_better": True},
            {"metric": "unparseable_rate",
             "aggregation": ("!function", "utils.aggregate_unparseable"),
             "higher_is_better": False},
        ],
        "lmms_eval_specific_kwargs": {"default": {"pre_prompt": "", "post_prompt": post_prompt}},
        "metadata": {"version": 1, "contrastkit_key": KEY_FILE},
    }  # fmt: skip
    group = yaml.load((out / "no_all.yaml").read_text(), Loader=FunctionLoader)
    assert group == {"group": "no_all", "task": ["no", "no_reversed"]}
    assert yaml.load((out / "no_reversed.yaml").read_text(), Loader=FunctionLoader)["task"] == (
        "no_reversed"
    )
    null = export_harness(
        HarnessExportConfig(
            source=small["OO"], format="lmms-eval", out=tmp_path / "null", name="null",
            reversed_copy=False,
        )
    )  # fmt: skip
    assert null.files[0] == "null.yaml"
    loaded = yaml.load((tmp_path / "null" / "null.yaml").read_text(), Loader=FunctionLoader)
    assert loaded["task"] == "null"
    utils = import_utils(out)
    [doc] = datasets.load_dataset(
        "parquet", data_files={"test": str(out / "data/no.parquet")}, cache_dir=str(tmp_path / "hf")
    )["test"].select([0])
    key = read_key(out).by_index()[doc["index"]]
    kwargs = config["lmms_eval_specific_kwargs"]["default"]
    prompt = utils.doc_to_text(doc, kwargs)
    assert prompt.startswith(doc["question"] + "\nA. ") and prompt.endswith(post_prompt)
    answer = f"The answer is ({key.answer})."
    assert utils.process_results(doc, [answer])["accuracy"]["correct"] is True
    [image] = utils.doc_to_visual(doc)
    assert image.mode == "RGB"


def test_the_lmms_eval_readme_runs_llava_hf_and_says_when_multiple_choice_works(
    lmms: Path,
) -> None:
    """Issue 31: the export's README runs lmms-eval 0.7.3's `llava_hf` (the `llava` model
    needs the LLaVA repository's package) from any folder, and says that scoring by
    log-likelihood needs `--force_simple` and a simple model class."""
    text = (lmms / "README.md").read_text()
    [command] = [line for line in text.splitlines() if line.startswith("python -m lmms_eval")]
    assert f"--include_path {lmms} " in command and " --model llava_hf " in command
    assert "--model_args pretrained=llava-hf/llava-1.5-7b-hf " in command
    assert "decord" in text and "device=cpu,device_map=cpu" in text
    assert "from this folder" not in text.lower()
    log_likelihood = text[text.index("output_type: multiple_choice") :]
    assert "--force_simple" in log_likelihood and "transformers 4" in log_likelihood
    assert "lowest loss" in log_likelihood
    assert "from this folder" not in (lmms / "contrastkit_visogender.yaml").read_text().lower()


def test_the_exported_answer_rule_is_contrastkits(lmms: Path) -> None:
    utils = import_utils(lmms)
    options = {"A": "their", "B": "her", "C": "his"}
    answers = [
        "B",
        "(C)",
        "C.",
        "**A**",
        "A. their",
        "Answer: B",
        "The answer is (C).",
        "option A",
        "The doctor and her patient.",
        "his or her",
        "D",
        "a",
        "",
        "I think it is their",
        "HIS",
        "none",
        "The answer is D",
        "The answer is a dog",
    ]
    ours = [parse_choice(a, options) for a in answers]
    assert [utils.parse_choice(a, options) for a in answers] == ours
    assert ours == [
        "B",
        "C",
        "C",
        "A",
        "A",
        "B",
        "C",
        "A",
        "B",
        None,
        None,
        None,
        None,
        "A",
        "C",
        None,
        None,
        None,
    ]
