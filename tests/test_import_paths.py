"""The ``"module:function"`` strings of the built-in registries (issue 45: 70 of them in
kinds.py, models/families.py, curation/editor_families.py and evaluators/tasks/
registry.py; 64 once the built-in kinds named the light functions of their own layer
directly, 59 once the contrast task became a task folder) are out of reach of mypy and
of the import contracts. These tests hold them to both: each one imports
(``contrastkit.plugins.resolve``), and each names a module its registry's module may
import by the layer order of pyproject.toml, or is listed below with the reason it
cannot. The rest stay strings because they name modules that are heavy to import
(torch, transformers, diffusers, datasets, jinja2) or above the registry's layer, and
the tables must import nothing heavy (``contrastkit --help``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import tomllib

import contrastkit
from contrastkit import kinds
from contrastkit.curation import editor_families
from contrastkit.errors import ConfigError
from contrastkit.evaluators.tasks import registry as tasks
from contrastkit.models import families
from contrastkit.plugins import resolve
from contrastkit.registry import Registry

PYPROJECT = Path(contrastkit.__file__).parent.parent.parent / "pyproject.toml"

#: Each registry and the fields of its records that take an import path.
REGISTRIES: list[tuple[Registry[Any], tuple[str, ...]]] = [
    (kinds.REGISTRY, ("detect", "url_table", "export", "features", "card", "builds")),
    (families.REGISTRY, ("loader", "check", "locate")),
    (editor_families.REGISTRY, ("arguments", "check")),
    (tasks.REGISTRY, ("run", "read", "headline", "compare", "compare_plots")),
]

_KIND_EXPORT = (
    "the export of a built-in kind is the export job's (contrastkit.builders), which "
    "reads the kind registry (builders/export.py imports contrastkit.kinds: "
    "detect_source, kinds()): a direct reference would be an import cycle, and would "
    "load the builders at every start-up"
)

#: (registry module, named module): why a module low in the layers names one above it.
#: Each is resolved lazily, only when that kind is exported or its URLs are checked.
ABOVE_ITS_LAYER = {
    ("contrastkit.kinds", "contrastkit.builders.export"): _KIND_EXPORT,
    ("contrastkit.kinds", "contrastkit.curation.integrity"): (
        "the reader of a probe set's URL rows is the URL checks' (curation/integrity.py), "
        "and curation reads the kind registry (curation/maintenance/job.py: "
        "detect_kind): a direct reference would be an import cycle"
    ),
}


def built_in_paths() -> list[tuple[str, str, str, str]]:
    """``(registry module, record, field, path)`` for every import path of a built-in
    record (those registered by contrastkit, task folders included)."""
    found = []
    for registry, names in REGISTRIES:
        for record in registry.all().values():
            if record.source != "contrastkit":
                continue
            owner = type(record).__module__
            for name in names:
                value = getattr(record, name)
                if isinstance(value, str):
                    found.append((owner, f"{registry.what} {registry.key(record)!r}", name, value))
    return found


def layers() -> list[list[set[str]]]:
    """The layer contract of pyproject.toml, top first: each layer a list of groups
    (``|`` separates groups that may not import each other, ``:`` the modules of one)."""
    config = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["importlinter"]
    [contract] = [c for c in config["contracts"] if c["type"] == "layers"]
    return [
        [{name.strip() for name in group.split(":")} for group in layer.split("|")]
        for layer in contract["layers"]
    ]


def place(module: str, order: list[list[set[str]]]) -> tuple[int, int]:
    """(layer, group) of ``contrastkit.TOP...``."""
    top = module.split(".")[1]
    for index, layer in enumerate(order):
        for group, names in enumerate(layer):
            if top in names:
                return index, group
    raise AssertionError(f"{module}: not in a layer of pyproject.toml")


def may_name(owner: str, named: str, order: list[list[set[str]]]) -> bool:
    """Whether module ``owner`` may import ``named`` by the layer contract: the same
    top-level module or group, or a lower layer."""
    if owner.split(".")[1] == named.split(".")[1]:
        return True
    (owner_layer, owner_group), (layer, group) = place(owner, order), place(named, order)
    return layer > owner_layer or (layer == owner_layer and group == owner_group)


def test_there_are_import_paths_to_check() -> None:
    found = built_in_paths()
    assert len(found) >= 55  # 59 now: what is left to check is not nothing
    assert {owner for owner, *_ in found} == {
        "contrastkit.kinds", "contrastkit.models.families",
        "contrastkit.curation.editor_families", "contrastkit.evaluators.tasks.registry",
    }  # fmt: skip


def test_every_import_path_of_a_built_in_record_imports() -> None:
    broken = []
    for _, record, field, path in built_in_paths():
        try:
            resolve(path, record)
        except ConfigError as error:
            broken.append(f"{record}.{field}: {error}")
    assert broken == [], "\n".join(broken)


def test_every_import_path_keeps_to_the_layers() -> None:
    order = layers()
    above = set()
    for owner, record, field, path in built_in_paths():
        named = path.partition(":")[0]
        if not may_name(owner, named, order):
            above.add((owner, named, f"{record}.{field} = {path}"))
    unlisted = sorted(
        where for owner, named, where in above if (owner, named) not in ABOVE_ITS_LAYER
    )
    assert unlisted == [], "a module names one above its layer; fix it or list it with why"
    assert {(owner, named) for owner, named, _ in above} == set(ABOVE_ITS_LAYER), "stale entry"


def test_the_layer_rule_is_read_right() -> None:
    order = layers()
    assert may_name("contrastkit.kinds", "contrastkit.data_cards", order)  # one group
    assert may_name("contrastkit.models.families", "contrastkit.errors", order)  # below
    assert may_name("contrastkit.models.families", "contrastkit.models.vlm", order)
    assert not may_name("contrastkit.kinds", "contrastkit.models.vlm", order)  # above
    assert not may_name("contrastkit.evaluators.x", "contrastkit.builders.y", order)  # a | b
    with pytest.raises(AssertionError, match="not in a layer"):
        place("contrastkit.nowhere", order)


def test_a_path_that_does_not_import_or_reaches_up_is_found(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    planted = kinds.DatasetKind("odd", "an odd folder", "odd folders", "contrastkit.kinds:nowhere",
                                url_table="contrastkit.models.vlm:load_vlm")  # fmt: skip
    monkeypatch.setitem(kinds.REGISTRY.records, "odd", planted)
    with pytest.raises(AssertionError, match=r"dataset kind 'odd'\.detect: .*kinds:nowhere"):
        test_every_import_path_of_a_built_in_record_imports()
    with pytest.raises(AssertionError, match="names one above its layer"):
        test_every_import_path_keeps_to_the_layers()
