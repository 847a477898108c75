"""The ``context`` section of ``contrastkit audit DATA --build BUILD``: how much context
the edits changed outside the person, measured on what is audited.

``DATA`` is the contrast-set export of ``BUILD`` (its images are measured, as
``contrastkit evaluate`` reads them, after checking that the export is this build's:
:mod:`contrastkit.builders.gensynth.export_context`), or the build folder itself (its
own files: :func:`contrastkit.builders.gensynth.context.measure_context`). Anything else
is refused: the figures would be another data set's.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from contrastkit.builders.gensynth.context import ContextSummary
from contrastkit.errors import ConfigError, DataFormatError

__all__ = ["AuditContext", "context_section"]


class AuditContext(ContextSummary):
    """The audit's ``context`` section: the measure's summary, the build, what was
    measured (``export`` or ``build``), the data and the file of its rows."""

    build: str
    measured_on: str
    data: str
    file: str


def context_section(data: Path, build: Path, out: Path, say: Callable[[str], None]) -> AuditContext:
    """The context measure of ``data`` against ``build`` (its summary, with what was
    measured: ``measured_on`` ``export`` or ``build``); the rows go to
    ``out/context_change.jsonl``.

    Raises:
        DataFormatError: ``build`` has no contrast set.
        ConfigError: ``data`` is neither an export of ``build`` nor ``build`` itself.
    """
    from contrastkit.builders.export_folder import METADATA_FILE
    from contrastkit.builders.gensynth.context import CONTEXT_FILE, measure_context, write_context
    from contrastkit.builders.gensynth.export_context import measure_export_context

    if not (build / "contrast_set.jsonl").is_file():
        raise DataFormatError(
            build / "contrast_set.jsonl", None, None,
            "no contrast set here: --build takes a GenSynth / GenSwap build folder after "
            "its select stage",
        )  # fmt: skip
    if data.resolve() == build.resolve():
        say(f"measuring the context the edits of {build} changed outside the person")
        measured, on = measure_context(build), "build"
    elif (data / METADATA_FILE).is_file():
        say(f"measuring the context the images of {data} changed outside the person "
            f"(against the sources of {build})")  # fmt: skip
        measured, on = measure_export_context(data, build), "export"
    else:
        raise ConfigError(
            f"--build {build}: the data audited ({data}) is not an export of it: the "
            "context measure reads the images of the contrast-set export of the build "
            f"(contrastkit export contrast {build}) or the build folder itself"
        )
    write_context(out, measured)
    return {
        **measured.summary,
        "build": build.name,
        "measured_on": on,
        "data": data.name,
        "file": CONTEXT_FILE,
    }
