"""What one maintenance run does: :class:`MaintainConfig` and its :class:`RetirementPolicy`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from contrastkit.config import require
from contrastkit.curation.dedup import NEAR_DUPLICATE_MAX_DISTANCE
from contrastkit.curation.integrity import as_paths, check_near_distance
from contrastkit.curation.urls import CheckConfig
from contrastkit.distributed import Engine, check_engine

__all__ = ["DEFAULT_REPORT_NAME", "MaintainConfig", "RetirementPolicy"]

DEFAULT_REPORT_NAME = "maintenance_report.md"
"""The report's file name, in the state database's folder, when no report path is given."""


@dataclass(frozen=True)
class RetirementPolicy:
    """When a failing row is retired.

    Attributes:
        failures: Consecutive failed checks needed.
        days: Days the failing streak must span (first to latest failure).

    Raises:
        ConfigError: ``failures`` below 1 or negative ``days``.
    """

    failures: int = 3
    days: float = 7.0

    def __post_init__(self) -> None:
        require(self.failures >= 1, "policy.failures", f"must be at least 1, not {self.failures}")
        require(self.days >= 0, "policy.days", f"cannot be negative ({self.days})")


@dataclass(frozen=True)
class MaintainConfig:
    """What ``contrastkit urls maintain`` does: the config of
    :func:`~contrastkit.curation.maintenance.maintain`.

    Attributes:
        files: Official-format TSVs to maintain (strings are taken as paths); they are
            rewritten in place, atomically. Stereotype probe sets
            (:mod:`contrastkit.probes`) are checked and recorded too, never rewritten.
        db: The SQLite state database (created on the first run).
        network: How URLs are fetched (:class:`~contrastkit.curation.urls.CheckConfig`).
        store: Keep every image that decodes in this content-addressed store; None keeps
            nothing.
        report: Where the markdown report goes; None: ``maintenance_report.md`` in
            ``db``'s folder (:attr:`report_path`).
        policy: When failing rows are retired.
        per_cell: Healthy rows each occupation cell needs (VisoGender: 5).
        drop_retired: Remove retired rows from the TSVs (after a backup of each file).
        accept_changes: Take the images served now as the rows' new reference images.
        near_distance: Perceptual-hash distance (bits of 64) up to which an image counts
            as unchanged, and as a near-duplicate; -1: any other file is a change.
        engine: Where the checks run: ``"local"`` (this process) or ``"ray"`` (Ray tasks
            grouped by host, :func:`~contrastkit.curation.urls.distributed.check_urls_ray`).
            The state database, the store, the TSVs and the report are written by this
            process only (one writer), so the outcome is the same either way.
        ray_address: With ``engine="ray"``: the cluster (``auto``, ``ray://head:10001``);
            None starts a local Ray instance for the run and stops it afterwards.

    Raises:
        ConfigError: no files, a value out of range, an unknown engine, or engine
            ``"ray"`` without Ray installed, naming the field.
    """

    files: tuple[Path, ...]
    db: Path
    network: CheckConfig = field(default_factory=CheckConfig)
    store: Path | None = None
    report: Path | None = None
    policy: RetirementPolicy = field(default_factory=RetirementPolicy)
    per_cell: int = 5
    drop_retired: bool = False
    accept_changes: bool = False
    near_distance: int = NEAR_DUPLICATE_MAX_DISTANCE
    engine: Engine = "local"
    ray_address: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "files", as_paths(self.files))
        object.__setattr__(self, "db", Path(self.db))
        for name in ("store", "report"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, Path(getattr(self, name)))
        require(bool(self.files), "files", "needs at least one TSV")
        require(isinstance(self.network, CheckConfig), "network", "must be a CheckConfig")
        require(isinstance(self.policy, RetirementPolicy), "policy", "must be a RetirementPolicy")
        require(self.per_cell >= 1, "per_cell", f"must be at least 1, not {self.per_cell}")
        check_near_distance(self.near_distance)
        require(self.db not in self.files, "db", f"{self.db} is also one of the files")
        check_engine(self.engine, self.ray_address)

    @property
    def report_path(self) -> Path:
        """Where the report goes: :attr:`report`, or ``maintenance_report.md`` beside the db."""
        return self.report if self.report is not None else self.db.parent / DEFAULT_REPORT_NAME
