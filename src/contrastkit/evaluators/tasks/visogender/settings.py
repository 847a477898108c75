"""The settings of a VisoGender evaluation (:class:`EvalConfig`: what
:class:`~contrastkit.evaluators.evaluation.EvaluateConfig` holds as ``settings``; also
importable from :mod:`contrastkit.evaluators.runner`, its older home) and the settings
class the command line builds VisoGender's options from (:class:`AnalysisSettings`)."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from contrastkit.config import require
from contrastkit.evaluators.bootstrap import require_bootstrap
from contrastkit.evaluators.engine.settings import TaskSettings, setting
from contrastkit.evaluators.tasks.visogender.resolution import PROTOCOL_CANDIDATES
from contrastkit.evaluators.tasks.visogender.retrieval import DEFAULT_KS

__all__ = ["PANEL", "PROTOCOLS", "STATISTICS_PANEL", "TASKS", "AnalysisSettings", "EvalConfig"]

#: VisoGender's analyses, what ``EvalConfig.tasks`` takes.
TASKS = ("resolution", "retrieval")


#: The help panel of VisoGender's options, and of its statistics'.
PANEL = "Resolution and retrieval"
STATISTICS_PANEL = "Statistics"

#: Resolution protocols: how the predicted pronoun is chosen from the candidates' scores
#: (:data:`~contrastkit.evaluators.tasks.visogender.resolution.PROTOCOL_CANDIDATES`).
PROTOCOLS: tuple[str, ...] = tuple(PROTOCOL_CANDIDATES)


@dataclass(frozen=True)
class EvalConfig:
    """What to compute.

    Attributes:
        tasks: ``resolution`` and/or ``retrieval``.
        neutral: add the their/neutral candidate to the resolution task (Appendix D.1);
            the ``visogender-official`` protocol scores it whatever this says.
        ks: the cut-offs of the retrieval metrics.
        ndkl_k: NDKL depth (``None``: every candidate image).
        subsample_ks: images kept per group in the Appendix G.1 subsamples.
        subsample_runs: repetitions of each subsample (paper: 500).
        baseline_runs: repetitions of the Appendix G.2 relabeling (paper: 3000).
        seed: seed of the random analyses (Appendix G and the bootstrap).
        protocol: how a resolution prediction is made (see :data:`PROTOCOLS`):
            ``visogender-official`` (default; the argmax over his / her / their, a
            "their" win counting as wrong, as the official code computes the published
            Tab. 2) or ``two-way`` (the argmax over his / her, as the paper's Sec. 3.4
            text describes).
        bootstrap: resamples of the percentile bootstrap over images behind every
            headline figure's confidence interval (0: no intervals).
        confidence: the intervals' level.
        flipped_retrieval: with the retrieval task, also rank each occupation's
            two-person images with the participant-subject query ("The patient and
            their doctor") by the participant's perceived gender (VisoGender Appendix
            D.2, Tab. 5; :mod:`~contrastkit.evaluators.tasks.visogender.flipped`). On by default;
            it reuses the image embeddings of the retrieval task (one more text per
            occupation). Single-person images take no part (no participant).

    Raises:
        ConfigError: naming the field, for an unknown task, a cut-off, depth or subsample
            size below 1, fewer than 1 subsample run or 2 baseline runs.
    """

    tasks: tuple[str, ...] = TASKS
    neutral: bool = False
    ks: tuple[int, ...] = DEFAULT_KS
    ndkl_k: int | None = None
    subsample_ks: tuple[int, ...] = (1,)
    subsample_runs: int = 500
    baseline_runs: int = 3000
    seed: int = 0
    protocol: str = "visogender-official"
    bootstrap: int = 1000
    confidence: float = 0.95
    flipped_retrieval: bool = True

    def __post_init__(self) -> None:
        for name in ("tasks", "ks", "subsample_ks"):  # lists from Python callers
            object.__setattr__(self, name, tuple(getattr(self, name)))
        require(
            self.protocol in PROTOCOLS,
            "protocol",
            f"unknown protocol {self.protocol!r}; choose from {', '.join(PROTOCOLS)}",
        )
        require_bootstrap(self.bootstrap, self.confidence)
        unknown = [task for task in self.tasks if task not in TASKS]
        require(
            not unknown and bool(self.tasks),
            "tasks",
            f"unknown task(s) {unknown or 'none given'}; choose from {', '.join(TASKS)}",
        )
        require(
            bool(self.ks) and all(_positive_int(k) for k in self.ks),
            "ks",
            f"retrieval cut-offs must be positive integers, not {self.ks}",
        )
        require(
            self.ndkl_k is None or _positive_int(self.ndkl_k),
            "ndkl_k",
            f"must be a positive integer or None, not {self.ndkl_k!r}",
        )
        require(
            bool(self.subsample_ks) and all(_positive_int(k) for k in self.subsample_ks),
            "subsample_ks",
            f"subsample sizes must be positive integers, not {self.subsample_ks}",
        )
        require(
            self.subsample_runs >= 1,
            "subsample_runs",
            f"must be at least 1, not {self.subsample_runs}",
        )
        require(
            self.baseline_runs >= 2,
            "baseline_runs",
            f"the relabeling baseline needs at least 2 runs, not {self.baseline_runs}",
        )


@dataclass(frozen=True)
class AnalysisSettings(TaskSettings):
    """VisoGender's analyses as options: the :class:`EvalConfig` fields of the same names
    but for the shared ones (the bootstrap, its level and the seed). ``contrastkit
    evaluate visogender`` builds its options from these fields
    (:func:`~contrastkit.evaluators.engine.setting`) and gives the values as
    ``EvaluateConfig(task_settings=AnalysisSettings(...))``; ``evaluate auto`` and a task
    naming the ``visogender`` option group give them as ``EvaluateConfig.settings``.

    Raises:
        ConfigError: naming the field, what :class:`EvalConfig` refuses.
    """

    tasks: tuple[str, ...] = setting(
        TASKS, help="resolution, retrieval or both, comma-separated.", flag="--only",
        separator=",", panel=PANEL,
    )  # fmt: skip
    neutral: bool = setting(
        False, help="Add 'their' to the candidates (neutral rate, VisoGender Appendix D).",
        negatable=False, panel=PANEL,
    )  # fmt: skip
    ndkl_k: int | None = setting(
        None, help="NDKL depth [default: every image of the occupation].", min=1, panel=PANEL
    )
    flipped_retrieval: bool = setting(
        True, help="Also retrieve with the participant as subject ('The patient and their "
        "doctor', VisoGender Tab. 5).", panel=PANEL,
    )  # fmt: skip
    protocol: str = setting(
        "visogender-official", help="visogender-official (argmax over his/her/their, as the "
        "published tables) or two-way (his/her).", panel=PANEL,
    )  # fmt: skip
    ks: tuple[int, ...] = setting(
        DEFAULT_KS, help="Retrieval cut-offs K, comma-separated.", flag="--k", separator=",",
        panel=PANEL,
    )  # fmt: skip
    subsample_ks: tuple[int, ...] = setting(
        (1,), help="Images kept per group in the random subsamples (VisoGender Appendix G.1).",
        flag="--subsample-k", separator=",", panel=STATISTICS_PANEL,
    )  # fmt: skip
    subsample_runs: int = setting(
        500, help="Repetitions of the random subsamples (Appendix G.1).", min=1,
        panel=STATISTICS_PANEL,
    )  # fmt: skip
    baseline_runs: int = setting(
        3000, help="Repetitions of the random baseline (Appendix G.2).", min=2,
        panel=STATISTICS_PANEL,
    )  # fmt: skip

    def __post_init__(self) -> None:
        # each analysis once, the protocol without spaces (as typed on the command line)
        object.__setattr__(self, "tasks", tuple(dict.fromkeys(self.tasks)))
        for name in ("ks", "subsample_ks"):  # lists from Python callers
            object.__setattr__(self, name, tuple(getattr(self, name)))
        object.__setattr__(self, "protocol", self.protocol.strip())
        self.applied_to(EvalConfig())  # what EvalConfig refuses, refused here

    def applied_to(self, shared: EvalConfig) -> EvalConfig:
        """``shared`` (its bootstrap, level and seed) with these analyses."""
        return replace(shared, **{spec.name: getattr(self, spec.name) for spec in fields(self)})


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
