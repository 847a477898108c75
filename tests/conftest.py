"""Shared fixtures: the official VisoGender files and small files written for a test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contrastkit.evaluators.data import visogender_files


def _share_the_cores() -> None:
    """Under pytest-xdist (``-n auto``, the default in pyproject.toml), give each worker
    its share of the cores for torch and its child processes, so two workers on two
    cores do not each run two threads. An ``OMP_NUM_THREADS`` set by the caller wins
    (the resume test is checked under 1 and 2)."""
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers <= 1 or "OMP_NUM_THREADS" in os.environ:
        return
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // workers)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)


_share_the_cores()

OFFICIAL_OP, OFFICIAL_OO = visogender_files()  # the package data of contrastkit
EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.fixture
def official_op() -> Path:
    """The official VisoGender OP annotations (460 rows, CRLF, no final newline)."""
    return OFFICIAL_OP


@pytest.fixture
def official_oo() -> Path:
    """The official VisoGender OO annotations (230 rows, CRLF, no final newline)."""
    return OFFICIAL_OO


@pytest.fixture(scope="session")
def coco_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A COCO-format folder of shipped public-domain photos (see tests/coco_fixture.py).
    Session-scoped: tests must not write into it."""
    from contrastkit.samples import write_coco

    return write_coco(tmp_path_factory.mktemp("coco"))


@pytest.fixture(scope="session")
def tiny_editor_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A saved tiny InstructPix2Pix pipeline (random weights; see tests/tiny_editor.py)."""
    from contrastkit.tiny.editor import tiny_instruct_pix2pix

    folder = tmp_path_factory.mktemp("tiny_ip2p")
    assert tiny_instruct_pix2pix(folder) == f"ip2p:{folder / 'tiny-instruct-pix2pix'}"
    return folder / "tiny-instruct-pix2pix"


@pytest.fixture(scope="session")
def face_detector() -> object:
    """facenet-pytorch MTCNN on the CPU (weights ship with the package)."""
    from contrastkit.curation.faces import FaceDetector

    return FaceDetector("cpu")


@pytest.fixture(scope="session")
def face_bank(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A FairFace-style labelled bank made of face crops of the shipped photos."""
    from contrastkit.samples import photo

    folder = tmp_path_factory.mktemp("faces")
    crops = {
        "astronaut.png": ("astronaut", (160, 40, 290, 195)),
        "camera.png": ("camera", (180, 100, 275, 210)),
        "hopper.png": ("grace_hopper", (150, 95, 380, 365)),
    }
    for name, (source, box) in crops.items():
        photo(source).crop(box).save(folder / name)
    (folder / "labels.csv").write_text(
        "file,age,gender,race\n"
        "astronaut.png,40-49,Female,White\n"
        "hopper.png,more than 70,Female,White\n"
        "camera.png,20-29,Male,Indian\n"
        "camera.png,10-19,Male,Indian\n"
    )
    return folder / "labels.csv"


@pytest.fixture(scope="session")
def tiny_clip_spec(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Spec of a tiny saved OpenCLIP model (random weights; tests/tiny_models.py)."""
    from tiny_models import tiny_open_clip

    return tiny_open_clip(tmp_path_factory.mktemp("clip"))


@pytest.fixture(scope="session")
def tiny_quickstart(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder in which ``contrastkit quickstart --out build/quickstart --tiny`` ran (in
    this process, as tests/test_docs.py runs the docs' commands; offline, its own datasets
    cache): the quickstart's folder is ``build/quickstart`` inside it, and nothing else is
    there. Session-scoped: tests read it or copy it, never write into it; the tests that
    use it share the ``xdist_group`` "tiny_quickstart", so one worker makes it once."""
    from typer.testing import CliRunner

    from contrastkit.cli import app

    folder = tmp_path_factory.mktemp("tiny-quickstart")
    cache = tmp_path_factory.mktemp("tiny-quickstart-hf-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        patch.setenv("HF_DATASETS_CACHE", str(cache))
        patch.setenv("HF_HUB_OFFLINE", "1")
        result = CliRunner().invoke(app, ["quickstart", "--out", "build/quickstart", "--tiny"])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    assert result.exit_code == 0, result.output[-3000:]
    assert [p.name for p in folder.iterdir()] == ["build"]
    return folder


@pytest.fixture(scope="session")
def ray_local() -> Iterator[Any]:
    """One local Ray instance (4 logical CPUs: a 2-actor pool never holds them all) for
    every test that asks for it; the jobs find it initialised and use it. Those tests
    are in the ``xdist_group`` "ray", so one worker starts it once (a start takes
    several seconds) and stops it at the end of the session."""
    ray = pytest.importorskip("ray", reason='needs Ray: pip install "contrastkit[ray]"')
    ray.init(address="local", num_cpus=4, include_dashboard=False, log_to_driver=False)
    yield ray
    ray.shutdown()


#: Fixture scopes whose value is shared by the tests of one module (or class).
_SHARED_SCOPES = frozenset({"module", "class", "package"})


def _uses_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        defs[-1].scope in _SHARED_SCOPES
        for name in item.fixturenames  # type: ignore[attr-defined]
        if (defs := info.name2fixturedefs.get(name))
    )


try:  # pytest >= 9: a node's id is a NodeId (nodes keep it in ``_id``)
    from _pytest.nodeid import NodeId
except ImportError:  # pytest 8: pytest-xdist names the groups itself
    NodeId = None  # type: ignore[assignment,misc]


def _name_the_group(item: pytest.Item) -> None:
    """What pytest-xdist does for ``--dist loadgroup``: the test's id gains
    ``@GROUP``, from which the scheduler groups the tests. pytest-xdist 3.8 writes it to
    ``item._nodeid``, which pytest 9 no longer reads (the id is ``item._id``), so without
    this every ``xdist_group`` is ignored and the tests of a group spread over the workers."""
    names = sorted({str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
                    for mark in item.iter_markers("xdist_group")})  # fmt: skip
    if names and "@" not in item.nodeid.rsplit("]", 1)[-1]:
        group = "_".join(names)
        item._id = NodeId.parse(f"{item.nodeid}@{group}")  # type: ignore[attr-defined,union-attr]


def _named_where_marked(items: list[pytest.Item]) -> None:
    """Refuse a test marked ``model_outputs`` in a file that does not name the mark:
    .ci/run's second pass collects only the files that name it (grep), and would miss
    such a test."""
    texts: dict[Path, str] = {}
    for item in items:
        if item.get_closest_marker("model_outputs") is None:
            continue
        path = Path(item.path)
        if path not in texts:
            texts[path] = path.read_text(encoding="utf-8")
        if "model_outputs" not in texts[path]:
            raise pytest.UsageError(
                f"{item.nodeid} is marked model_outputs but its file does not name the mark; "
                ".ci/run's second pass collects only the files that do"
            )


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the xdist_group marks
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules that hold a slow test run first (each module's tests stay together, in
    order), so that on several xdist workers the long end-to-end runs start early and the
    many short tests fill in around them instead of one long test finishing last.

    The tests of a module that use a module-scoped fixture (a build, a model, a report
    made once and read by several tests) run on one worker (an ``xdist_group`` named
    after the module, unless they have a group already): spread over the workers, each
    worker would make the fixture again. ``--dist loadgroup`` hands out the largest
    groups first."""
    _named_where_marked(items)
    for item in items:
        if _uses_a_module_fixture(item) and not item.get_closest_marker("xdist_group"):
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))
    if getattr(config.option, "loadgroup", False) and NodeId is not None:
        for item in items:
            _name_the_group(item)
    slow_modules = {item.module for item in items if item.get_closest_marker("slow")}
    order = {id(item): n for n, item in enumerate(items)}
    items.sort(key=lambda item: (item.module not in slow_modules, order[id(item)]))
