"""Option groups declared once and reused by every command that has them.

A group is a frozen dataclass of :class:`OptionGroup` whose fields are the options
(``Annotated[type, typer.Option(...)]`` with the default as the field's default). A
command names a group by a parameter of that type, and :func:`with_options` spreads the
group's fields into the command's options (typer sees ``--device``, ``--dtype`` ...) and
gathers them back into one value when the command runs::

    @with_options
    def audit(data: Path = ..., runtime: ModelOptions = ModelOptions()) -> None:
        config = AuditConfig(..., model=runtime.config())

A command whose defaults differ from the group's says so in the group it gives as the
parameter's default (``runtime: ModelOptions = ModelOptions(batch_size=8)``): the same
options, names and help, with those defaults.

:func:`command_function` builds a command from groups alone (the ``contrastkit evaluate
TASK`` commands, whose groups a task names). The groups here:

* :class:`ModelOptions`: where and how a model runs (:class:`~contrastkit.config.ModelConfig`),
  on every command that loads a model;
* :class:`NetworkOptions` (and :class:`NetworkTuning`, :class:`ImageLimitOptions`): how
  URLs are fetched (:class:`~contrastkit.curation.urls.CheckConfig`);
* :class:`BootstrapOptions`: the bootstrap intervals and their seed;
* :class:`OutputOptions`: the output folder of an evaluation and ``--json``.

Nothing heavy is imported here: the configs are built inside the methods.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import inspect
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer

from contrastkit.curation.image_limits import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_PIXELS,
    DEFAULT_MIN_SIDE,
)
from contrastkit.curation.urls.config import DEFAULT_URL_DEADLINE, DEFAULT_USER_AGENT
from contrastkit.errors import ConfigError

if TYPE_CHECKING:
    from contrastkit.config import ModelConfig
    from contrastkit.curation.urls import CheckConfig

__all__ = [
    "BootstrapOptions",
    "DataOptions",
    "EditorModelOptions",
    "ImageLimitOptions",
    "ModelOptions",
    "NetworkOptions",
    "NetworkTuning",
    "OptionGroup",
    "OutputOptions",
    "command_function",
    "group_parameters",
    "parse_resolve",
    "with_options",
]

#: Help panels the groups show their options in.
RUNNING = "Running the model"
NETWORK = "Network"
IMAGE_LIMITS = "Image limits"
STATISTICS = "Statistics"

G = TypeVar("G", bound="OptionGroup")
F = TypeVar("F", bound=Callable[..., Any])


@dataclasses.dataclass(frozen=True, kw_only=True)
class OptionGroup:
    """Base of the option groups: a frozen dataclass whose fields are options."""

    @classmethod
    def parameters(cls, defaults: OptionGroup | None = None) -> list[inspect.Parameter]:
        """The group's options as keyword parameters, as typer reads a signature; their
        defaults are ``defaults``' values where given (a command whose defaults differ
        from the group's), else the group's."""
        hints = typing.get_type_hints(cls, include_extras=True)
        return [
            inspect.Parameter(
                item.name,
                inspect.Parameter.KEYWORD_ONLY,
                default=getattr(defaults, item.name)
                if defaults is not None
                else inspect.Parameter.empty
                if item.default is dataclasses.MISSING
                else item.default,
                annotation=hints[item.name],
            )
            for item in dataclasses.fields(cls)
        ]

    @classmethod
    def take(cls: type[G], values: dict[str, Any]) -> G:
        """The group made of its options' values, taken out of ``values``."""
        return cls(**{item.name: values.pop(item.name) for item in dataclasses.fields(cls)})


def group_parameters(groups: Iterable[type[OptionGroup]]) -> list[inspect.Parameter]:
    """Every option of ``groups``, in order; an option two groups both declare is a bug."""
    parameters: dict[str, inspect.Parameter] = {}
    for group in groups:
        for parameter in group.parameters():
            if parameter.name in parameters:
                raise TypeError(f"option {parameter.name!r} of {group.__name__} is declared twice")
            parameters[parameter.name] = parameter
    return list(parameters.values())


def _signed(function: Callable[..., Any], parameters: Sequence[inspect.Parameter]) -> None:
    """Give ``function`` the signature (and annotations) typer reads its options from."""
    names = [parameter.name for parameter in parameters]
    if len(set(names)) != len(names):
        raise TypeError(f"{function.__name__}: an option is declared twice: {names}")
    function.__signature__ = inspect.Signature(list(parameters))  # type: ignore[attr-defined]
    function.__annotations__ = {p.name: p.annotation for p in parameters}


def with_options(function: F) -> F:
    """``function``, a command, with each parameter typed as an :class:`OptionGroup`
    spread into that group's options; it is called with the group made of them."""
    hints = typing.get_type_hints(function, include_extras=True)
    groups: dict[str, type[OptionGroup]] = {}
    parameters: list[inspect.Parameter] = []
    for parameter in inspect.signature(function).parameters.values():
        hint = hints.get(parameter.name, parameter.annotation)
        if isinstance(hint, type) and issubclass(hint, OptionGroup):
            groups[parameter.name] = hint
            given = parameter.default if isinstance(parameter.default, hint) else None
            parameters += hint.parameters(given)
        else:
            parameters.append(parameter.replace(annotation=hint, kind=parameter.KEYWORD_ONLY))

    @functools.wraps(function)
    def command(**values: Any) -> Any:
        given = {name: group.take(values) for name, group in groups.items()}
        return function(**values, **given)

    del command.__wrapped__  # typer must read the spread signature, not the original
    _signed(command, parameters)
    return command  # type: ignore[return-value]


def command_function(
    name: str,
    groups: Sequence[type[OptionGroup]],
    run: Callable[[Mapping[type[OptionGroup], OptionGroup]], None],
    doc: str,
    helps: Mapping[str, str] | None = None,
) -> Callable[..., None]:
    """A command (for :meth:`typer.Typer.command`) whose options are ``groups``'; it
    calls ``run`` with each group's value by its class. ``helps``: this command's own
    help of some options, by name (an example spec the task takes)."""

    def command(**values: Any) -> None:
        run({group: group.take(values) for group in groups})

    command.__name__ = command.__qualname__ = name.replace("-", "_")
    command.__doc__ = doc
    parameters = group_parameters(groups)
    _signed(command, [_with_help(p, (helps or {}).get(p.name)) for p in parameters])
    return command


def _with_help(parameter: inspect.Parameter, help_text: str | None) -> inspect.Parameter:
    """``parameter`` whose option has the help ``help_text`` (unchanged when ``None``)."""
    if help_text is None:
        return parameter
    kind, *extras = typing.get_args(parameter.annotation)
    changed = [copy.copy(e) for e in extras]
    for extra in changed:
        if isinstance(extra, typer.models.OptionInfo):
            extra.help = help_text
    return parameter.replace(annotation=Annotated[(kind, *changed)])


# -- running a model --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class DataOptions(OptionGroup):
    """What every ``evaluate`` command reads and scores."""

    data: Annotated[
        list[str],
        typer.Option(
            "--data",
            metavar="PATH",
            help="The data (above): a file or folder, or a Hub dataset (hf:USER/NAME). Repeatable.",
        ),
    ]
    model: Annotated[
        list[str] | None,
        typer.Option(
            "--model",
            metavar="SPEC",
            help="Model spec, e.g. open_clip:ViT-B-32/openai (all families: `contrastkit "
            "models list`). Repeatable.",
        ),
    ] = None
    split: Annotated[str | None, typer.Option("--split", help="Split of a saved dataset dict.")] = (
        None
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ModelOptions(OptionGroup):
    """Where and how a model runs: :class:`~contrastkit.config.ModelConfig`."""

    device: Annotated[
        str | None,
        typer.Option(
            "--device", help="cpu, cuda, cuda:1 [default: auto].", rich_help_panel=RUNNING
        ),
    ] = None
    dtype: Annotated[
        str,
        typer.Option(
            "--dtype",
            help="auto (float16 on CUDA, else float32), float32, bfloat16 or float16.",
            rich_help_panel=RUNNING,
        ),
    ] = "auto"
    batch_size: Annotated[
        int,
        typer.Option(
            "--batch-size", min=1, help="Images per forward pass.", rich_help_panel=RUNNING
        ),
    ] = 32
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=0,
            help="Image-decoding processes [default: suits the device].",
            rich_help_panel=RUNNING,
        ),
    ] = None
    decode: Annotated[
        str,
        typer.Option(
            "--decode",
            help="Who decodes and preprocesses images: pil, worker, tensor or auto "
            "(docs/pipeline.md).",
            rich_help_panel=RUNNING,
        ),
    ] = "auto"
    #: The one spelling, on every command that loads a model, of "model weights missing
    #: from the local cache may be downloaded" (a permission, off by default).
    download: Annotated[
        bool,
        typer.Option(
            "--allow-download",
            help="Allow downloading model weights missing from the local cache (default: a "
            "missing model is an error saying how to get it).",
            rich_help_panel=RUNNING,
        ),
    ] = False
    #: The older spelling of --allow-download, still accepted but not shown in --help.
    download_alias: Annotated[
        bool, typer.Option("--download", hidden=True, help="Old spelling of --allow-download.")
    ] = False

    def config(self) -> ModelConfig:
        """The :class:`~contrastkit.config.ModelConfig` the options describe."""
        from contrastkit.config import ModelConfig

        return ModelConfig(
            device=self.device, dtype=self.dtype, batch_size=self.batch_size,
            download=self.download or self.download_alias, workers=self.workers,
            decode=self.decode,
        )  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class EditorModelOptions(ModelOptions):
    """:class:`ModelOptions` of a command that also runs an image editor, whose
    ``auto`` dtype is the editor family's own."""

    dtype: Annotated[
        str,
        typer.Option(
            "--dtype",
            help="auto (float16 on CUDA, or an editor family's own; else float32), float32, "
            "bfloat16 or float16.",
            rich_help_panel=RUNNING,
        ),
    ] = "auto"


# -- fetching URLs ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkOptions(OptionGroup):
    """How URLs are fetched: the options every command that fetches has."""

    concurrency: Annotated[
        int,
        typer.Option("--concurrency", min=1, help="Requests in flight at once.",
                     rich_help_panel=NETWORK),
    ] = 64  # fmt: skip
    timeout: Annotated[
        float,
        typer.Option("--timeout", min=0.01, help="Seconds for a whole request.",
                     rich_help_panel=NETWORK),
    ] = 60.0  # fmt: skip
    retries: Annotated[
        int,
        typer.Option("--retries", min=0, help="Retries after a transient failure (5xx, 429, "
                     "timeout).", rich_help_panel=NETWORK),
    ] = 2  # fmt: skip
    allow_private: Annotated[
        bool,
        typer.Option("--allow-private/--no-allow-private",
                     help="Allow loopback, private and link-local addresses (tests, intranet "
                     "mirrors).", show_default=False, rich_help_panel=NETWORK),
    ] = False  # fmt: skip
    allow_network: Annotated[
        list[str] | None,
        typer.Option("--allow-network", metavar="CIDR", help="Allow one non-public network, "
                     "e.g. 10.1.0.0/16. Repeatable.", rich_help_panel=NETWORK),
    ] = None  # fmt: skip
    resolve: Annotated[
        list[str] | None,
        typer.Option("--resolve", metavar="HOST:ADDRESS",
                     help="Use ADDRESS for HOST instead of DNS. Repeatable.",
                     rich_help_panel=NETWORK),
    ] = None  # fmt: skip

    def config(
        self, tuning: NetworkTuning | None = None, limits: ImageLimitOptions | None = None
    ) -> CheckConfig:
        """The :class:`~contrastkit.curation.urls.CheckConfig` these options (and the
        finer ones, where the command has them) describe."""
        from contrastkit.curation.image_limits import ImageLimits
        from contrastkit.curation.urls.config import CheckConfig

        tuning = tuning or NetworkTuning()
        limits = limits or ImageLimitOptions()
        return CheckConfig(
            concurrency=self.concurrency, per_host=tuning.per_host,
            connect_timeout=tuning.connect_timeout, read_timeout=tuning.read_timeout,
            total_timeout=self.timeout, url_deadline=tuning.url_deadline, retries=self.retries,
            max_redirects=tuning.max_redirects, max_retry_after=tuning.max_retry_after,
            user_agent=tuning.user_agent, allow_private=self.allow_private,
            allowed_networks=tuple(self.allow_network or ()),
            resolve=tuple(parse_resolve(item) for item in self.resolve or ()),
            limits=ImageLimits(max_bytes=limits.max_bytes, max_pixels=limits.max_pixels,
                               min_side=limits.min_side),
        )  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class NetworkTuning(OptionGroup):
    """The finer network settings of the URL checks (``contrastkit urls``)."""

    per_host: Annotated[
        int,
        typer.Option("--per-host", min=1, help="Requests in flight at once to one host.",
                     rich_help_panel=NETWORK),
    ] = 16  # fmt: skip
    connect_timeout: Annotated[
        float,
        typer.Option("--connect-timeout", min=0.01, help="Seconds to resolve and connect.",
                     rich_help_panel=NETWORK),
    ] = 10.0  # fmt: skip
    read_timeout: Annotated[
        float,
        typer.Option("--read-timeout", min=0.01, help="Seconds allowed between received bytes.",
                     rich_help_panel=NETWORK),
    ] = 20.0  # fmt: skip
    url_deadline: Annotated[
        float,
        typer.Option("--url-deadline", min=0.01, help="Seconds one URL may take in all: "
                     "attempts, redirects, retry waits.", rich_help_panel=NETWORK),
    ] = DEFAULT_URL_DEADLINE  # fmt: skip
    max_redirects: Annotated[
        int, typer.Option("--max-redirects", min=0, rich_help_panel=NETWORK)
    ] = 5
    max_retry_after: Annotated[
        float,
        typer.Option("--max-retry-after", min=0, help="Longest Retry-After honoured, in "
                     "seconds.", rich_help_panel=NETWORK),
    ] = 30.0  # fmt: skip
    user_agent: Annotated[str, typer.Option("--user-agent", rich_help_panel=NETWORK)] = (
        DEFAULT_USER_AGENT
    )


@dataclasses.dataclass(frozen=True, kw_only=True)
class ImageLimitOptions(OptionGroup):
    """The size limits a fetched image must meet."""

    max_bytes: Annotated[int, typer.Option("--max-bytes", min=1, rich_help_panel=IMAGE_LIMITS)] = (
        DEFAULT_MAX_BYTES
    )
    max_pixels: Annotated[
        int, typer.Option("--max-pixels", min=1, rich_help_panel=IMAGE_LIMITS)
    ] = DEFAULT_MAX_PIXELS
    min_side: Annotated[int, typer.Option("--min-side", min=1, rich_help_panel=IMAGE_LIMITS)] = (
        DEFAULT_MIN_SIDE
    )


def parse_resolve(item: str) -> tuple[str, str]:
    """``--resolve HOST:ADDRESS`` -> ``(host, address)``; an IPv6 address keeps its colons."""
    host, sep, address = item.rpartition(":") if item.count(":") == 1 else item.partition(":")
    if not sep or not host or not address:
        raise ConfigError(f"--resolve {item!r}: expected HOST:ADDRESS")
    return host, address


# -- statistics and output -------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class BootstrapOptions(OptionGroup):
    """The bootstrap intervals of an evaluation, and the seed of its random analyses."""

    bootstrap: Annotated[
        int,
        typer.Option("--bootstrap", min=0, help="Bootstrap resamples of the images for the "
                     "intervals (0: none).", rich_help_panel=STATISTICS),
    ] = 1000  # fmt: skip
    confidence: Annotated[
        float,
        typer.Option("--confidence", help="Level of the bootstrap intervals, in (0, 1).",
                     rich_help_panel=STATISTICS),
    ] = 0.95  # fmt: skip
    seed: Annotated[
        int,
        typer.Option("--seed", help="Seed of the random analyses and the bootstrap.",
                     rich_help_panel=STATISTICS),
    ] = 0  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class OutputOptions(OptionGroup):
    """Where an evaluation writes, and whether it prints JSON."""

    out: Annotated[Path, typer.Option("--out", help="Output folder; one subfolder per model.")] = (
        Path("results")
    )
    as_json: Annotated[
        bool,
        typer.Option("--json", help="Print each model's output paths and headline figures as "
                     "JSON."),
    ] = False  # fmt: skip
