"""``--help`` of every command: typer's panels, without cutting an option's name.

typer lays the options out as a table of six columns (names, short names, negative
names, type, help) that rich shrinks to the terminal's width, and it shrinks the name
columns too: at 80 columns ``--flipped-retrieval`` became ``--flipped-retri...`` and at
60 ``--i-know-these-are-random-weights`` lost half its letters. Here each row has two
cells, the names (as click spells them, ``--flipped-retrieval / --no-flipped-retrieval
<bool>``) in a column as wide as the longest of them, never wrapped, and the help; where
the terminal cannot hold that column and a useful help column side by side, each option
takes a line of its own with its help indented below it.

Every command group and command of :class:`App` renders its help here; the root app and
every command group are :class:`App`\\ s, so a new command gets it too. Contexts are
typed ``Any``: recent typer releases bundle their own click, older ones use click itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import typer
from rich import box
from rich.console import Console, Group, RenderableType
from rich.highlighter import RegexHighlighter
from rich.markdown import Markdown
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text
from rich.theme import Theme
from typer.core import TyperCommand, TyperGroup

__all__ = ["App", "HelpCommand", "HelpGroup", "render_help"]

#: Narrowest help column beside the names; below it the options are stacked.
MIN_HELP_WIDTH = 28
#: Indent of an option's help under its names in the stacked layout.
STACKED_INDENT = 4
#: Columns a panel takes besides its table: two borders, two cells of padding.
_PANEL_FRAME = 4
#: Space between the names and the help column.
_GAP = 2
#: How click joins an option's spellings (``--fetch / --no-fetch``).
_SEPARATOR = " / "

_THEME = Theme({
    "help.option": "bold cyan",
    "help.switch": "bold green",
    "help.metavar": "yellow",
    "help.usage": "yellow",
})  # fmt: skip


class _NameHighlighter(RegexHighlighter):
    """Option names bold cyan, short switches green, the value's type yellow."""

    base_style = "help."
    highlights = [  # noqa: RUF012 (rich's own pattern)
        r"(^|[\s/;,])(?P<option>--[\w-]+)",
        r"(^|[\s/;,])(?P<switch>-\w)\b",
        r"(?P<metavar><[^>]+>(\.\.\.)?)",
        r"(?P<metavar>\b[A-Z][A-Z_|:.]+\b)",
    ]


_names = _NameHighlighter()


def _console(ctx: Any) -> Console:
    """A console as wide as the context's ``terminal_width`` if one was given, else as the
    terminal (or ``COLUMNS``), read when help is asked for."""
    return Console(theme=_THEME, highlight=False, width=getattr(ctx, "terminal_width", None))


def _markup(text: str, mode: str | None, style: str = "", *, dedent: bool = True) -> RenderableType:
    """``text`` rendered the way the command's ``rich_markup_mode`` says."""
    if dedent:
        text = inspect.cleandoc(text)
    if mode == "markdown":
        return Markdown(text, style=style)
    if mode == "rich":
        return Text.from_markup(text, style=style)
    return Text(text, style=style)


def _mode(command: TyperCommand | TyperGroup) -> str | None:
    mode = getattr(command, "rich_markup_mode", None)
    return mode if isinstance(mode, str) else None


def _description(command: TyperCommand | TyperGroup, mode: str | None) -> Iterable[RenderableType]:
    """The command's help: its first paragraph, then the rest dimmed (as typer does), an
    indented example kept as a code block."""
    text = inspect.cleandoc(command.help or "").partition("\f")[0]
    first, *rest = text.split("\n\n")
    if mode != "markdown":
        first = first.replace("\n", " ")
    yield _markup(first.strip(), mode)
    if rest:
        yield Text("")
        yield _markup("\n\n".join(rest), mode, style="dim", dedent=False)


def _alternatives(names: str) -> list[str]:
    """``"--fetch / --no-fetch"`` -> ``["--fetch /", "--no-fetch"]``: the pieces a name
    cell may break between (click joins an option's spellings with `` / ``)."""
    parts = names.split(_SEPARATOR)
    return [f"{part}{_SEPARATOR.rstrip()}" for part in parts[:-1]] + parts[-1:]


def _name_lines(names: str, width: int) -> Text:
    """The names packed into lines of ``width``, broken only between two spellings (a
    spelling longer than ``width`` keeps a line of its own, whole)."""
    lines: list[str] = []
    for piece in _alternatives(names):
        joined = f"{lines[-1]} {piece}" if lines else piece
        if lines and len(joined) <= width:
            lines[-1] = joined
        else:
            lines.append(piece)
    return _names(Text("\n".join(lines)))


def _name_width(records: Iterable[tuple[str, str]], width: int) -> int:
    """The names column: the longest names if they take at most a third of the
    terminal, else that third, and never narrower than the longest single spelling."""
    names = [names for names, _ in records]
    longest = max((len(n) for n in names), default=0)
    piece = max((len(p) for n in names for p in _alternatives(n)), default=0)
    return max(min(longest, width // 3), piece)


def _option_table(
    records: list[tuple[str, str]], name_width: int, stacked: bool, mode: str | None
) -> Table:
    """One panel's rows: names beside their help, or (``stacked``) above it."""
    table = Table.grid(expand=True)
    if stacked:
        table.add_column(overflow="fold")
        for names, help_text in records:
            table.add_row(_name_lines(names, name_width))
            if help_text:
                table.add_row(Padding(_markup(help_text, mode), (0, 0, 0, STACKED_INDENT)))
        return table
    table.add_column(no_wrap=True, min_width=name_width, max_width=name_width)
    table.add_column(ratio=1, overflow="fold")
    table.padding = (0, _GAP, 0, 0)
    for names, help_text in records:
        help_cell = _markup(help_text, mode) if help_text else ""
        table.add_row(_name_lines(names, name_width), help_cell)
    return table


def _panel(body: RenderableType, title: str) -> Panel:
    return Panel(body, title=title, title_align="left", border_style="dim", box=box.ROUNDED)


def _param_panels(command: TyperCommand | TyperGroup, ctx: Any) -> dict[str, list[tuple[str, str]]]:
    """Each shown parameter's (names, help) by panel: the arguments' panels first, then
    "Options", then the other option panels in the order their first option comes."""
    arguments: dict[str, list[tuple[str, str]]] = {"Arguments": []}
    options: dict[str, list[tuple[str, str]]] = {"Options": []}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:  # hidden
            continue
        panels, default = (
            (arguments, "Arguments")
            if param.param_type_name == "argument"
            else (options, "Options")
        )
        panel = getattr(param, "rich_help_panel", None) or default
        panels.setdefault(panel, []).append(record)
    return {name: rows for name, rows in {**arguments, **options}.items() if rows}


def _command_rows(group: TyperGroup, ctx: Any) -> dict[str, list[tuple[str, str]]]:
    """Each shown subcommand's name and the first paragraph of its help, by panel."""
    panels: dict[str, list[tuple[str, str]]] = {"Commands": []}
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        text = inspect.cleandoc(command.short_help or command.help or "")
        first = text.partition("\f")[0].split("\n\n")[0].replace("\n", " ").strip()
        panel = getattr(command, "rich_help_panel", None) or "Commands"
        panels.setdefault(panel, []).append((name, first))
    return {name: rows for name, rows in panels.items() if rows}


def render_help(command: TyperCommand | TyperGroup, ctx: Any) -> None:
    """Print ``command``'s help: usage, description, one panel per parameter group
    (``rich_help_panel``), the subcommands; every option's names in full at any width."""
    console = _console(ctx)
    mode = _mode(command)
    console.print(Padding(_names(Text(command.get_usage(ctx), style="bold")), 1))
    if command.help:
        console.print(Padding(Group(*_description(command, mode)), (0, 1, 1, 1)))
    panels = _param_panels(command, ctx)
    commands = _command_rows(command, ctx) if isinstance(command, TyperGroup) else {}
    rows = [row for records in (*panels.values(), *commands.values()) for row in records]
    name_width = _name_width(rows, console.width)
    stacked = name_width + _GAP + MIN_HELP_WIDTH + _PANEL_FRAME > console.width
    if stacked:
        name_width = console.width - _PANEL_FRAME
    for title, records in (*panels.items(), *commands.items()):
        console.print(_panel(_option_table(records, name_width, stacked, mode), title))
    if command.epilog:
        console.print(Padding(_markup(command.epilog, mode), 1))


class HelpCommand(TyperCommand):
    """A typer command whose ``--help`` is :func:`render_help`."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print the help (``formatter`` is left empty, as typer's rich help leaves it)."""
        render_help(self, ctx)


class HelpGroup(TyperGroup):
    """A typer command group whose ``--help`` is :func:`render_help`."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Print the help (``formatter`` is left empty, as typer's rich help leaves it)."""
        render_help(self, ctx)


class App(typer.Typer):
    """:class:`typer.Typer` whose group and commands print :func:`render_help`."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", HelpGroup)
        super().__init__(**kwargs)

    def command(  # type: ignore[override]
        self, name: str | None = None, **kwargs: Any
    ) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
        """:meth:`typer.Typer.command` with :class:`HelpCommand` as the command class."""
        kwargs.setdefault("cls", HelpCommand)
        return super().command(name, **kwargs)
