"""What every ``--engine ray`` job shares: the engine names, the Ray session, pool sizing.

Ray is an optional dependency (``pip install "contrastkit[ray]"``): nothing here imports
it at module import time, so ``import contrastkit`` and every ``--engine local`` run work
without it. The jobs that use it: ``urls check`` / ``urls maintain``
(:mod:`contrastkit.curation.urls.distributed`, Ray tasks grouped by host) and
``build gensynth`` (:mod:`contrastkit.builders.gensynth.ray`, Ray Data actor pools
for editing and embedding). In every one the driver (the process that started the job)
is the only writer of the job's files.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Literal

from contrastkit.errors import ConfigError

__all__ = [
    "ENGINES",
    "LOCAL_NUM_CPUS",
    "RAY_INSTALL_HINT",
    "Engine",
    "actor_pool",
    "check_engine",
    "import_ray",
    "ray_session",
    "require_ray",
]

ENGINES = ("local", "ray")
"""Where a job's work runs: this process, or a Ray cluster."""

Engine = Literal["local", "ray"]

RAY_INSTALL_HINT = 'pip install "contrastkit[ray]"'

LOCAL_NUM_CPUS = 4
"""Logical CPUs of the local Ray instance started when no address is given (at least 4:
``num_cpus=2`` with a 2-actor pool deadlocks, the actors holding every CPU; see
shared/RECIPES.md)."""


def require_ray(field: str = "engine") -> None:
    """Raise :class:`ConfigError` unless Ray can be imported (checked without importing)."""
    try:
        found = importlib.util.find_spec("ray") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise ConfigError(f'{field}: the "ray" engine needs Ray: {RAY_INSTALL_HINT}')


def check_engine(engine: str, ray_address: str | None) -> None:
    """Validate an ``engine`` / ``ray_address`` pair of a job config.

    Raises:
        ConfigError: an unknown engine; ``ray`` without Ray installed (with the install
            hint); an address without the ``ray`` engine, or an empty one. Each names
            its field.
    """
    if engine not in ENGINES:
        raise ConfigError(f"engine: must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "ray":
        require_ray("engine")
    elif ray_address is not None:
        raise ConfigError('ray_address: only used with engine "ray"')
    if ray_address is not None and not ray_address.strip():
        raise ConfigError(
            "ray_address: must be a Ray address (e.g. auto, ray://head:10001), not empty"
        )


def import_ray() -> Any:
    """The ``ray`` module.

    Raises:
        ConfigError: Ray is not installed (with the install hint).
    """
    try:
        import ray
    except ImportError as error:
        raise ConfigError(f'engine: the "ray" engine needs Ray: {RAY_INSTALL_HINT}') from error
    return ray


@contextmanager
def ray_session(address: str | None = None) -> Iterator[Any]:
    """The ``ray`` module, connected to a cluster for the duration of the block.

    ``address`` None starts a local Ray instance (``LOCAL_NUM_CPUS`` logical CPUs or the
    machine's count if larger, no dashboard) and shuts it down afterwards; an address
    (``auto``, ``ray://head:10001``, ``head:6379``) connects to that cluster and leaves it
    running. If Ray is already initialised in this process, that instance is used as is
    (and left running).

    Raises:
        ConfigError: Ray is not installed.
    """
    ray = import_ray()
    if ray.is_initialized():
        yield ray
        return
    if address is None:
        ray.init(
            address="local",
            num_cpus=max(LOCAL_NUM_CPUS, os.cpu_count() or 1),
            include_dashboard=False,
            logging_level=logging.WARNING,
        )
    else:
        ray.init(address=address, logging_level=logging.WARNING)
    try:
        yield ray
    finally:
        ray.shutdown()


def actor_pool(ray: Any, work: int, device: str | None = None) -> tuple[int, float]:
    """How many model actors to start for ``work`` batches, and the GPUs of each.

    With GPUs in the cluster (and ``device`` not ``cpu``): one actor per GPU, one GPU
    each. Without: half the cluster's logical CPUs (at least one), no GPU, so that the
    actors never hold every CPU (shared/RECIPES.md). Never more actors than ``work``.
    """
    resources = ray.cluster_resources()
    gpus = int(resources.get("GPU", 0))
    if gpus > 0 and not (device or "").startswith("cpu"):
        return max(1, min(gpus, work)), 1.0
    cpus = int(resources.get("CPU", 1))
    return max(1, min(cpus // 2, work)), 0.0
