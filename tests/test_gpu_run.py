"""The dry parts of the GPU benchmark run (bench/gpu, issue 48), without network or GPU:
the wheel list pins versions whose recorded wheels install on CPython 3.12 / manylinux
x86-64 and whose requirements the carried wheels and the GPU machine meet, the scripts
parse, and every step of ``run.sh`` names a bench script that exists and whose argparse
accepts the flags the step passes (read from the script's source, nothing imported)."""

from __future__ import annotations

import argparse
import ast
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
GPU = ROOT / "bench" / "gpu"
RUN = GPU / "run.sh"


def _wheels() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_wheels", GPU / "wheels.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_wheels"] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


wheels = _wheels()


def _steps(*options: str) -> list[tuple[str, int, list[str]]]:
    """``run.sh --list``'s steps: name, timeout, the arguments of python."""
    listed = subprocess.run(
        ["bash", str(RUN), "--list", *options], capture_output=True, text=True, check=True
    ).stdout
    steps = []
    for line in listed.splitlines():
        name, timeout, command = line.split("|")
        steps.append((name, int(timeout), command.split()))
    return steps


def _constant(tree: ast.Module, name: str) -> object:
    """The literal value of ``name`` in a module, followed through ``from M import name``
    into contrastkit's sources (a script's ``choices=NAME``), nothing imported."""
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
        if isinstance(target, ast.Name) and target.id == name and node.value is not None:
            return ast.literal_eval(node.value)
    for node in ast.walk(tree):  # a re-export, lazy ones (under TYPE_CHECKING) included
        if isinstance(node, ast.ImportFrom) and any(a.name == name for a in node.names):
            module = ROOT / "src" / Path(*(node.module or "").split("."))
            path = module / "__init__.py" if module.is_dir() else module.with_suffix(".py")
            return _constant(ast.parse(path.read_text(encoding="utf-8")), name)
    raise AssertionError(f"{name}: no literal definition found")


def _parser(script: Path) -> argparse.ArgumentParser:
    """The script's command line, rebuilt from its ``add_argument`` calls."""
    types = {"int": int, "float": float, "str": str, "Path": Path}
    parser = argparse.ArgumentParser(prog=script.name, add_help=False)
    tree = ast.parse(script.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        options: dict[str, object] = {}
        for keyword in node.keywords:
            value = keyword.value
            if keyword.arg in {"action", "nargs"}:
                options[keyword.arg] = ast.literal_eval(value)
            elif keyword.arg == "type" and isinstance(value, ast.Name):
                options["type"] = types[value.id]
            elif keyword.arg == "choices":
                named = isinstance(value, ast.Name)
                options["choices"] = _constant(tree, value.id) if named else ast.literal_eval(value)
        parser.add_argument(*(ast.literal_eval(a) for a in node.args), **options)  # type: ignore[arg-type]
    return parser


def _accepts(script: Path, flags: list[str]) -> None:
    try:
        _parser(script).parse_args(flags)
    except SystemExit:
        pytest.fail(f"{script.relative_to(ROOT)} refuses {' '.join(flags)}")


def test_the_scripts_parse() -> None:
    for script in ("run.sh", "prepare.sh", "rehearsal-env.sh"):
        subprocess.run(["bash", "-n", str(GPU / script)], check=True)


def test_the_wheel_list_pins_one_version_of_each_package_the_machine_lacks() -> None:
    pins = wheels.read_list(wheels.WHEEL_LIST)
    device = wheels.read_list(wheels.DEVICE_LIST)
    assert all(pin.version is not None for pin in pins.values())
    assert not set(pins) & set(device)
    missing_on_the_machine = {  # issue 48: what the GPU machines lack
        "open-clip-torch", "diffusers", "datasets", "faiss-cpu", "facenet-pytorch",
        "imagehash", "ftfy", "pycocotools",
    }  # fmt: skip
    assert missing_on_the_machine <= set(pins)
    assert str(pins["facenet-pytorch"].version) == "2.5.3"
    assert {"torch", "torchvision", "transformers", "huggingface-hub"} <= set(device)


def test_the_recorded_wheels_install_on_the_machine_and_meet_every_requirement() -> None:
    """wheels.lock.json (written by prepare.sh) holds one cp312-installable wheel per pin,
    each requirement met by a carried wheel or by the machine, within the carry limit."""
    recorded = wheels.read_lock()
    pins = wheels.read_list(wheels.WHEEL_LIST)
    problems = wheels.check_wheels(recorded, pins, wheels.read_list(wheels.DEVICE_LIST))
    assert problems == [], "run bench/gpu/prepare.sh and commit wheels.lock.json:\n" + "\n".join(
        problems
    )
    assert len(recorded) == len(pins)


def test_the_checker_refuses_what_would_break_the_install() -> None:
    pins = wheels.read_list(wheels.WHEEL_LIST)
    device = wheels.read_list(wheels.DEVICE_LIST)
    good = wheels.read_lock()
    hub_2 = wheels.Wheel("ftfy-6.3.1-py3-none-any.whl", "0", 1, ("huggingface-hub>=2",))
    problems = wheels.check_wheels([*good[1:], hub_2], pins, device)
    assert any("huggingface-hub>=2: 1.33.0 is on the machine" in p for p in problems)
    assert any("a second version of ftfy" in p for p in problems)
    dropped = pins[str(wheels.parse_wheel_filename(good[0].file)[0])]
    assert f"{dropped.name}=={dropped.version}: no wheel" in problems
    arm = wheels.Wheel("pycocotools-2.0.11-cp312-abi3-manylinux_2_17_aarch64.whl", "0", 1, ())
    cp311 = wheels.Wheel("pywavelets-1.10.0-cp311-cp311-manylinux_2_28_x86_64.whl", "0", 1, ())
    for wheel in (arm, cp311):
        assert any("no tag for CPython 3.12" in p for p in wheels.check_wheels([wheel], {}, {}))
    big = [wheels.Wheel(w.file, w.sha256, 10 * 2**20, w.requires) for w in good]
    assert any("MiB a call carries" in p for p in wheels.check_wheels(big, pins, device))


@pytest.mark.parametrize(
    "options",
    [("--device", "cuda"), ("--device", "cpu", "--smoke"), ("--device", "cuda", "--smoke")],
)
def test_every_step_names_a_script_that_accepts_its_flags(options: tuple[str, ...]) -> None:
    for name, _, command in _steps(*options):
        if command[:2] == ["-m", "pytest"]:
            nodes = [arg for arg in command if "::" in arg]
            assert nodes, name
            for node in nodes:
                path, function = node.split("::")
                source = (ROOT / path).read_text(encoding="utf-8")
                defined = {
                    f.name for f in ast.walk(ast.parse(source)) if isinstance(f, ast.FunctionDef)
                }
                assert function in defined, node
                assert "cuda.is_available()" in source, f"{path}: no CUDA skip"
            continue
        script = ROOT / command[0]
        assert script.is_file(), f"{name}: {command[0]} does not exist"
        _accepts(script, command[1:])


def test_the_rehearsal_runs_the_same_steps_and_the_gpu_run_fits_in_8_minutes() -> None:
    cuda, smoke = _steps("--device", "cuda"), _steps("--device", "cpu", "--smoke")
    assert [s[0] for s in cuda] == [s[0] for s in smoke]
    install = 40  # seconds: the wheels, the project, the machine's description
    assert sum(timeout for _, timeout, _ in cuda) + install <= 8 * 60
    commands = {name: " ".join(command) for name, _, command in cuda}
    assert "--skip-official" in commands["eval"]
    assert "--sizes 196197" in commands["knn"]
    assert "--resolutions 256" in commands["edit-256"]
    assert "--resolutions 512" in commands["edit-512"]


def test_a_bad_device_is_refused() -> None:
    run = subprocess.run(
        ["bash", str(RUN), "--device", "tpu", "--list"], capture_output=True, text=True
    )
    assert run.returncode == 2
    assert "--device must be cuda or cpu" in run.stderr
