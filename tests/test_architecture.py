"""The layer rules of docs/architecture.md, held against the code: the import contracts
of pyproject.toml, no import cycle between modules (function-level imports count), no
module reaching into another's private names."""

from __future__ import annotations

import ast
import fnmatch
import re
from pathlib import Path

import grimp
import tomllib

import contrastkit

ROOT = Path(contrastkit.__file__).parent
PYPROJECT = ROOT.parent.parent / "pyproject.toml"


def _graph() -> grimp.ImportGraph:
    return grimp.build_graph("contrastkit", exclude_type_checking_imports=True)


def _cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def test_the_import_contracts_hold() -> None:
    from importlinter.cli import lint_imports

    assert lint_imports(config_filename=str(PYPROJECT)) == 0  # prints what is broken


def test_every_top_level_module_is_in_a_layer() -> None:
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    [layers] = [c for c in config["contracts"] if c["type"] == "layers"]
    placed = {
        name.strip() for layer in layers["layers"] for name in layer.replace("|", ":").split(":")
    }
    modules = {
        path.stem if path.is_file() else path.name
        for path in ROOT.iterdir()
        if (path.suffix == ".py" and not path.stem.startswith("__"))
        or (path.is_dir() and (path / "__init__.py").is_file())
    }
    assert modules - placed == set(), "place each new module in a layer of pyproject.toml"
    assert placed - modules == set(), "a layer names a module that does not exist"


def test_no_import_cycle() -> None:
    graph = _graph()
    edges = {m: set(graph.find_modules_directly_imported_by(m)) for m in graph.modules}
    assert _cycles(edges) == []


def test_the_cycle_finder_finds_cycles() -> None:
    edges = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}, "e": {"e"}}
    assert _cycles(edges) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def _private_imports() -> set[tuple[str, str]]:
    """(importing file, module:name) for every ``from contrastkit.x import _name`` where
    ``contrastkit.x`` is not the file's own module."""
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        own = ".".join(("contrastkit", *path.relative_to(ROOT).with_suffix("").parts))
        own = own.removesuffix(".__init__")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or not node.module:
                continue
            if not node.module.startswith("contrastkit") or node.module == own:
                continue
            for alias in node.names:
                if alias.name.startswith("_") and not alias.name.startswith("__"):
                    found.add((str(path.relative_to(ROOT)), f"{node.module}:{alias.name}"))
    return found


def test_no_module_imports_another_modules_private_names() -> None:
    assert _private_imports() == set(), "make the name public, or move it"


# -- generated files come from templates ----------------------------------------------

#: A line of Python source: a statement keyword at the start of a line.
_PYTHON_LINE = re.compile(
    r"^[ \t]*(?:def \w+\(|class \w+[(:]|import \w|from [\w.]+ import |return\b|@\w)", re.M
)


def _python_in_f_strings() -> set[str]:
    """``file:line`` of every f-string whose literal text holds lines of Python source."""
    found = set()
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.JoinedStr):
                continue
            text = "".join(
                str(part.value) if isinstance(part, ast.Constant) else "{}" for part in node.values
            )
            if len(_PYTHON_LINE.findall(text)) >= 2:
                found.add(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_f_string_holds_python_source() -> None:
    """Python source the package writes (the lmms-eval ``utils.py`` of a harness export)
    comes from a jinja2 template shipped as package data, not from an f-string, where
    every brace of the code must be doubled and the code cannot be read as code."""
    assert _python_in_f_strings() == set(), "render it from a template (contrastkit.text)"


def test_the_finder_of_python_in_f_strings_finds_it(tmp_path: Path) -> None:
    source = 'def f(x):\n    return f"""import io\n\ndef g():\n    return {x}\n"""\n'
    tree = ast.parse(source)
    [joined] = [node for node in ast.walk(tree) if isinstance(node, ast.JoinedStr)]
    text = "".join(str(p.value) if isinstance(p, ast.Constant) else "{}" for p in joined.values)
    assert len(_PYTHON_LINE.findall(text)) == 3
    assert not _PYTHON_LINE.findall("Run `python -m lmms_eval` from any folder; returns 0.")


def test_every_template_is_package_data() -> None:
    """The wheel carries every ``*.j2`` template: a pattern of pyproject's package-data
    matches it (a template left out renders in a checkout and fails once installed)."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))
    patterns = config["tool"]["setuptools"]["package-data"]["contrastkit"]
    templates = [path.relative_to(ROOT).as_posix() for path in ROOT.rglob("*.j2")]
    assert any(name.startswith("builders/harness_templates/") for name in templates)
    missing = [t for t in templates if not any(fnmatch.fnmatch(t, p) for p in patterns)]
    assert missing == []


# -- size limits -----------------------------------------------------------------------

#: The most lines a Python file of the project may have (issue 33; functions are held to
#: ruff's C901 <= 15 and PLR0913 <= 5 by pyproject's lint settings).
MAX_LINES = 600

#: The folders of the project's own Python files, beside src/contrastkit.
_PROJECT_FOLDERS = ("src", "tests", "bench", "examples", "docs")


def _long_files(root: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """``path: lines`` of every ``*.py`` file under ``root``'s project folders over
    ``limit`` lines."""
    found = {}
    for folder in _PROJECT_FOLDERS:
        for path in sorted((root / folder).rglob("*.py")):
            lines = len(path.read_text(encoding="utf-8").splitlines())
            if lines > limit:
                found[path.relative_to(root).as_posix()] = lines
    return found


def test_no_python_file_is_over_600_lines() -> None:
    """A file past 600 lines holds more than one subject: split it along a seam (a
    package with submodules, its public names re-exported from where they were)."""
    assert _long_files(PYPROJECT.parent) == {}, "split the file"


def test_the_line_counter_finds_a_long_file(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "long.py").write_text("x = 1\n" * 601, encoding="utf-8")
    (tmp_path / "tests" / "short.py").write_text("x = 1\n" * 600, encoding="utf-8")
    assert _long_files(tmp_path) == {"tests/long.py": 601}


#: Names the ``typing`` module has only from Python 3.11 on. The package supports 3.10
#: (pyproject.toml's requires-python): there they come from ``typing_extensions``.
_NEWER_TYPING = frozenset({
    "LiteralString", "Never", "NotRequired", "Required", "Self", "TypeVarTuple", "Unpack",
    "assert_never", "assert_type", "dataclass_transform", "reveal_type",
})  # fmt: skip


def _newer_typing_names(root: Path) -> list[str]:
    """``path:line name`` of every name of :data:`_NEWER_TYPING` taken from ``typing``
    (``from typing import X`` or ``typing.X``) in the ``*.py`` files under ``root``."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module == "typing":
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
                names = [node.attr] if node.value.id == "typing" else []
            else:
                continue
            found += [f"{where}:{node.lineno} {name}" for name in names if name in _NEWER_TYPING]
    return found


def test_no_module_takes_a_typing_name_python_3_10_lacks() -> None:
    project = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]
    assert project["requires-python"] == ">=3.10"  # raise it, and this test may go
    assert _newer_typing_names(ROOT) == [], "import it from typing_extensions"


def test_the_typing_check_finds_a_newer_name(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "from typing import Any, NotRequired\nimport typing\nx: typing.Self\n", encoding="utf-8"
    )
    (tmp_path / "b.py").write_text("from typing_extensions import NotRequired\n", encoding="utf-8")
    assert _newer_typing_names(tmp_path) == ["a.py:1 NotRequired", "a.py:3 Self"]
