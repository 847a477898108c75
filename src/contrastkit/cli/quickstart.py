"""``contrastkit quickstart``: the whole workflow, offline, in one command
(:func:`contrastkit.apps.quickstart.quickstart`)."""

from __future__ import annotations

from pathlib import Path

import typer

from contrastkit.cli.common import console, err_console, plain, print_json, user_errors
from contrastkit.cli.options import EditorModelOptions, with_options
from contrastkit.cli.outdir import tidy_output


def _quiet_libraries() -> None:
    """Our own step lines say what happens; the libraries' load bars and notices would
    bury them."""
    import datasets
    import diffusers
    import transformers

    datasets.disable_progress_bars()
    diffusers.utils.logging.set_verbosity_error()
    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.set_verbosity_error()  # type: ignore[no-untyped-call]
    transformers.utils.logging.disable_progress_bar()  # type: ignore[no-untyped-call]


@with_options
def quickstart(
    out: Path = typer.Option(..., "--out", help="Output folder for everything it makes."),
    editor: str | None = typer.Option(
        None, help="InstructPix2Pix folder or cached Hub id [default: cached default, or tiny]."
    ),
    model: str | None = typer.Option(
        None, help="CLIP-like model spec [default: cached open_clip:ViT-B-32/openai, or tiny]."
    ),
    tiny: bool = typer.Option(False, help="Use tiny random-weight models even if real ones exist."),
    steps: int = typer.Option(20, min=1, help="Denoising steps of a real editor."),
    tau_real: float | None = typer.Option(None, help="Filter threshold tau_R (Eq. 5)."),
    tau_gender: float | None = typer.Option(None, help="Filter threshold tau_G (Eq. 5)."),
    runtime: EditorModelOptions = EditorModelOptions(batch_size=8),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Run the whole workflow on a fresh machine with no internet: a small GenSynth
    contrast set from the bundled public-domain photos (edited, filtered, selected),
    exported with its dataset card, checked to load as a Hub repository, evaluated, and a
    report written to OUT/QUICKSTART.md. A model named with --editor / --model must load;
    without them the cached defaults are used, and only if those are not on this machine
    tiny random-weight models, saying plainly that the figures are then a pipeline check,
    not a measurement.

    The offline HTML report (the figures and each source's two versions with the model's
    scores; it opens from file://) goes to OUT/report/index.html.

    Example:

        contrastkit quickstart --out build/quickstart
    """
    from contrastkit.apps.quickstart import QuickstartConfig
    from contrastkit.apps.quickstart import quickstart as run

    _quiet_libraries()

    def log(line: str) -> None:
        if not as_json:
            err_console.print(plain(line), highlight=False)

    with tidy_output(out), user_errors():
        result = run(QuickstartConfig(
            out=out, editor=editor, model=model, tiny=tiny, steps=steps, tau_real=tau_real,
            tau_gender=tau_gender, runtime=runtime.config(),
        ), log=log)  # fmt: skip
    if as_json:
        print_json(result.to_json())
        return
    if result.tiny:
        console.print(plain(result.summary["note"], style="yellow"), highlight=False)
    console.print(plain(f"report: {result.files['report']}"), highlight=False)
    console.print(plain(f"dataset card: {result.files['card']}"), highlight=False)
    console.print(
        plain(f"HTML report: {result.files['html_report']} (open it in a browser)"),
        highlight=False,
    )
