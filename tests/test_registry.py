"""The one registry type (contrastkit.registry.Registry) on a tiny record type: register,
the error for a taken name, replace, the one order (built-ins, then entry points sorted
by DISTRIBUTION:ENTRY-POINT, then records registered from Python), plugins read once and
lazily through real entry points (``.dist-info`` folders on ``sys.path``), a plugin
claiming a taken name, and a plugin that does not import."""

from __future__ import annotations

import dataclasses
import importlib
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from contrastkit.errors import ConfigError
from contrastkit.registry import Registry
from test_plugin_failures import plugin

GROUP = "contrastkit.test-colours"

#: The record type, in a module of its own so that plugins and the test share one class.
COLOURS = """\
from dataclasses import dataclass

@dataclass(frozen=True)
class Colour:
    name: str
    hex: str = "#000000"
    source: str = "contrastkit"
"""


def distribution(site: Path, name: str, points: dict[str, str], code: str) -> None:
    """Install distribution ``name`` into ``site``: module ``<name>_mod`` (``code``) and
    the entry points ``points`` (``entry-point name: value``) of :data:`GROUP`."""
    module = name.replace("-", "_")
    (site / f"{module}_mod.py").write_text(code, encoding="utf-8")
    info = site / f"{module}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1\n", encoding="utf-8"
    )
    lines = [f"[{GROUP}]", *(f"{point} = {value}" for point, value in points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on ``sys.path`` (holding the ``colours`` module); the modules imported
    from it are forgotten afterwards."""
    folder = tmp_path / "site"
    folder.mkdir()
    (folder / "colours.py").write_text(COLOURS, encoding="utf-8")
    before = set(sys.modules)
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    for name in set(sys.modules) - before:
        del sys.modules[name]


def colour_type() -> Any:
    return importlib.import_module("colours").Colour


def registry(colour: Any, group: str | None = GROUP) -> Registry[Any]:
    built_in = (colour("red", "#ff0000"), colour("green", "#00ff00"))
    return Registry("colour", group, colour, lambda c: c.name, built_in)


def test_register_replace_and_the_error_for_a_taken_name(site: Path) -> None:
    colour = colour_type()
    colours = registry(colour)
    blue = colours.register(colour("blue", source="mine"))
    assert blue.name == "blue" and list(colours) == ["red", "green", "blue"]
    assert colours.register(colour("red", "#ff0000")) == colours["red"]  # the same again
    with pytest.raises(ConfigError) as caught:
        colours.register(colour("red", "#aa0000", source="mine"))
    assert str(caught.value) == (
        "colour 'red' of mine is already registered (by contrastkit); choose another name"
    )
    assert colours["red"].hex == "#ff0000"
    colours.register(colour("red", "#aa0000", source="mine"), replace_existing=True)
    assert colours["red"].hex == "#aa0000"
    assert list(colours) == ["red", "green", "blue"]  # a replaced record keeps its place
    assert colours.get("purple") is None and "purple" not in colours and len(colours) == 3
    with pytest.raises(KeyError):
        colours["purple"]
    with pytest.raises(ConfigError, match="colour: str is not a Colour"):
        colours.register("yellow")


def test_plugins_come_after_the_built_ins_sorted_by_distribution_and_entry_point(
    site: Path,
) -> None:
    colour = colour_type()
    colours = registry(colour)
    # installed after the registry was made: entry points are read on first use
    distribution(site, "zeta-colours", {"sky": "zeta_colours_mod:SKY"}, (
        "from colours import Colour\nSKY = Colour('sky', '#87ceeb')\n"
    ))  # fmt: skip
    distribution(site, "alpha-colours", {
        "warm": "alpha_colours_mod:WARM", "cold": "alpha_colours_mod:COLD",
    }, (
        "from colours import Colour\n"
        "WARM = [Colour('orange'), Colour('amber')]\n"
        "COLD = Colour('ice')\n"
    ))  # fmt: skip
    importlib.invalidate_caches()
    registered = colours.all()
    assert list(registered) == ["red", "green", "ice", "orange", "amber", "sky"]
    assert [c.source for c in registered.values()] == [
        "contrastkit", "contrastkit", "alpha-colours:cold", "alpha-colours:warm",
        "alpha-colours:warm", "zeta-colours:sky",
    ]  # fmt: skip
    # read once: a distribution installed now is not seen by this registry
    distribution(site, "beta-colours", {"b": "beta_colours_mod:B"}, (
        "from colours import Colour\nB = Colour('beige')\n"
    ))  # fmt: skip
    importlib.invalidate_caches()
    assert "beige" not in colours
    # a record registered from Python comes after every plugin's
    colours.register(colour("teal", source="script"))
    assert list(colours)[-2:] == ["sky", "teal"]
    fresh = registry(colour)
    fresh.register(colour("teal", source="script"))  # the plugins are read first
    assert list(fresh) == ["red", "green", "ice", "orange", "amber", "beige", "sky", "teal"]


def test_discovered_built_ins_come_before_the_plugins(site: Path) -> None:
    colour = colour_type()
    distribution(site, "zeta-colours", {"sky": "zeta_colours_mod:SKY"}, (
        "from colours import Colour\nSKY = Colour('sky', '#87ceeb')\n"
    ))  # fmt: skip
    importlib.invalidate_caches()
    found: list[str] = []

    def discover() -> None:  # registers built-in records found, not listed
        found.append("run")
        colours.register(colour("sky", "#00bfff"))
        colours.register(colour("navy"))

    colours = Registry("colour", GROUP, colour, lambda c: c.name, (colour("red"),),
                       discover=discover)  # fmt: skip
    assert list(colours) == ["red", "sky", "navy"] and found == ["run"]
    assert colours.all()["sky"].hex == "#00bfff"  # the built-in one keeps the name
    with pytest.raises(ConfigError, match=r"plugin zeta-colours:sky .* \(by contrastkit\)"):
        colours.get("sky")
    list(colours)
    assert found == ["run"]  # once


def test_a_registry_without_a_group_reads_no_plugins(site: Path) -> None:
    colour = colour_type()
    distribution(site, "zeta-colours", {"sky": "zeta_colours_mod:SKY"}, (
        "from colours import Colour\nSKY = Colour('sky')\n"
    ))  # fmt: skip
    importlib.invalidate_caches()
    assert list(registry(colour, None)) == ["red", "green"]
    assert list(registry(colour)) == ["red", "green", "sky"]


def test_a_plugin_claiming_a_taken_name_breaks_only_that_name(site: Path) -> None:
    colour = colour_type()
    distribution(site, "red-plug", {"red": "red_plug_mod:RED", "pink": "red_plug_mod:PINK"}, (
        "from colours import Colour\nRED = Colour('red', '#110000')\nPINK = Colour('pink')\n"
    ))  # fmt: skip
    importlib.invalidate_caches()
    colours = registry(colour)
    assert colours.all()["red"].hex == "#ff0000"  # the name keeps its meaning
    assert colours["pink"].source == "red-plug:pink" and colours["green"].name == "green"
    colours.check("green")
    for use in (colours.get, colours.check, colours.__getitem__):
        with pytest.raises(ConfigError) as caught:
            use("red")
        assert str(caught.value) == (
            f"plugin red-plug:red (entry point group {GROUP}) is left out: colour 'red' of "
            "red-plug:red is already registered (by contrastkit); choose another name, or "
            "uninstall red-plug"
        )


def test_a_plugin_that_does_not_import_is_named_by_every_read(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = plugin(site / "bad", GROUP, "raise RuntimeError('no colours today')\n")
    monkeypatch.syspath_prepend(str(bad))
    colours = registry(colour_type())
    for read in (colours.all, lambda: colours.get("red"), lambda: list(colours)):
        with pytest.raises(ConfigError) as caught:
            read()
        assert str(caught.value) == (
            f"plugin bad-plug:thing (entry point group {GROUP}) does not import (entry "
            "point 'badplug:THING'): RuntimeError: no colours today; fix or uninstall "
            "bad-plug"
        )
        assert isinstance(caught.value.__cause__, RuntimeError)


def test_a_plugin_giving_something_else_is_named(site: Path) -> None:
    distribution(site, "odd-plug", {"x": "odd_plug_mod:X"}, "X = ['not a colour']\n")
    importlib.invalidate_caches()
    with pytest.raises(ConfigError) as caught:
        registry(colour_type()).all()
    assert str(caught.value) == (
        f"plugin odd-plug:x (entry point group {GROUP}) gave str, not a Colour"
    )


@pytest.mark.parametrize(
    ("module", "function", "what"),
    [
        ("contrastkit.models.families", "register_model", "model family"),
        ("contrastkit.curation.editor_families", "register_editor", "editor family"),
    ],
)
def test_the_old_keyword_replace_still_works_with_a_warning(
    module: str, function: str, what: str
) -> None:
    table = importlib.import_module(module)
    register = getattr(table, function)
    first = table.BUILT_IN[0]
    with pytest.warns(DeprecationWarning, match=rf"{function}\(replace=...\) is deprecated"):
        assert register(first, replace=True) is first
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert register(first, replace_existing=True) is first
    other = dataclasses.replace(first, loads="another", source="mine")
    with pytest.warns(DeprecationWarning), pytest.raises(ConfigError) as caught:
        register(other, replace=False)
    assert str(caught.value) == (
        f"{what} {first.prefix!r} of mine is already registered (by contrastkit); choose "
        "another prefix"
    )


def test_kinds_are_sniffed_with_the_fallback_last(monkeypatch: pytest.MonkeyPatch) -> None:
    """The registry lists the built-in kinds first, like every registry; detection tries
    the other kinds before them (the built-in VisoGender kind takes anything)."""
    from contrastkit.kinds import BUILT_IN, REGISTRY, DatasetKind, kinds

    odd = DatasetKind("odd", "an odd folder", "odd folders", "os.path:isdir", source="mine")
    monkeypatch.setitem(REGISTRY.records, "odd", odd)
    built_in = [kind.name for kind in BUILT_IN]
    assert list(REGISTRY.all()) == [*built_in, "odd"]
    assert list(kinds()) == ["odd", *built_in] and built_in[-1] == "visogender"


def test_a_kind_takes_its_functions_themselves_or_their_import_paths(tmp_path: Path) -> None:
    from contrastkit.kinds import BUILT_IN, DatasetKind

    seen: list[Path] = []
    direct = DatasetKind("seen", "a seen path", "seen paths", lambda p: seen.append(p) or True)
    assert direct.matches(tmp_path) and seen == [tmp_path]
    assert DatasetKind("dir", "a folder", "folders", "os.path:isdir").matches(tmp_path)
    assert not BUILT_IN[1].matches(tmp_path)  # contrast: is_contrast_export, no string
    with pytest.raises(ConfigError, match="must be a function or 'module:function', not 3"):
        DatasetKind("bad", "x", "xs", "os.path:isdir", card=3)  # type: ignore[arg-type]


def test_result_classes_are_a_registry_too() -> None:
    from contrastkit.results import ContrastResult, StereotypeResult, registered_results
    from contrastkit.results.base import RESULT_CLASSES, register_result

    assert registered_results()["contrast"] is ContrastResult
    assert register_result("contrast", ContrastResult) is ContrastResult  # the same again
    with pytest.raises(ConfigError) as caught:
        register_result("contrast", StereotypeResult)
    assert str(caught.value) == (
        "result class of task 'contrast' of contrastkit.results.stereotype.StereotypeResult "
        "is already registered (by contrastkit.results.contrast.ContrastResult); choose "
        "another task name"
    )
    with pytest.raises(TypeError, match="not a Result subclass"):
        register_result("x", dict)  # type: ignore[arg-type]
    before = dict(RESULT_CLASSES.records)
    try:
        register_result("contrast", StereotypeResult, replace_existing=True)
        assert registered_results()["contrast"] is StereotypeResult
        assert list(registered_results()) == list(before)  # it keeps its place
    finally:
        RESULT_CLASSES.records.clear()
        RESULT_CLASSES.records.update(before)
