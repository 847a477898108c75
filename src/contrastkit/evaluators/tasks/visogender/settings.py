"""The settings of a VisoGender evaluation (:class:`EvalConfig`: what
:class:`~contrastkit.evaluators.evaluation.EvaluateConfig` holds as ``settings``; also
importable from :mod:`contrastkit.evaluators.runner`, its older home)."""

from __future__ import annotations

from dataclasses import dataclass

from contrastkit.config import require
from contrastkit.evaluators.bootstrap import require_bootstrap
from contrastkit.evaluators.tasks.visogender.resolution import PROTOCOL_CANDIDATES
from contrastkit.evaluators.tasks.visogender.retrieval import DEFAULT_KS

__all__ = ["PROTOCOLS", "TASKS", "EvalConfig"]

#: VisoGender's analyses, what ``EvalConfig.tasks`` takes.
TASKS = ("resolution", "retrieval")


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


def _positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
