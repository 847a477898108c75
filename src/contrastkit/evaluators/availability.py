"""Getting the images of an evaluation ready: image URLs fetched into the store
(``fetch``), rows without an image refused or set aside (``skip_missing``). What the
VisoGender task and the engine's ``images`` options
(:mod:`contrastkit.evaluators.engine.images`) share; :mod:`.evaluation` re-exports
:func:`available_items`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from contrastkit.errors import ConfigError, DataFormatError
from contrastkit.interfaces import ProgressFactory, progress_stage
from contrastkit.io import check_writable

if TYPE_CHECKING:
    from contrastkit.config import ModelConfig
    from contrastkit.curation.urls.config import CheckConfig
    from contrastkit.evaluators.data import EvalItem, ImageLoader, SkippedRow

__all__ = ["ImageConfig", "available_items", "fetch_missing", "image_loader"]


class ImageConfig(Protocol):
    """What getting a run's images ready reads of its config
    (:class:`~contrastkit.evaluators.evaluation.EvaluateConfig` has it all): whether
    URLs are fetched and rows without an image skipped, the image store, how URLs are
    fetched, and the models (their weights are located before any fetching)."""

    @property
    def fetching(self) -> bool: ...

    @property
    def skipping(self) -> bool: ...

    @property
    def image_store(self) -> Path | None: ...

    @property
    def network(self) -> CheckConfig: ...

    @property
    def models(self) -> tuple[str, ...]: ...

    @property
    def model(self) -> ModelConfig: ...


def image_loader(store: Path | None, *, fetching: bool = False) -> ImageLoader:
    from contrastkit.evaluators.data import ImageLoader

    if store is not None and store.exists() and not store.is_dir():
        raise ConfigError(f"store: {store} is a file, not an image store folder")
    if store is not None and not fetching and not store.is_dir():
        raise ConfigError(
            f"store: {store} is not a folder; pass the image store that "
            "`contrastkit urls check --store` filled"
        )
    return ImageLoader(store)


def fetch_missing(
    items: Sequence[EvalItem],
    loader: ImageLoader,
    config: ImageConfig,
    progress: ProgressFactory | None,
) -> tuple[dict[str, str], int]:
    """Check the URLs of ``items`` the store does not hold into it (the URL checker, with
    ``config.network``); rows that will be left out as retired are not fetched.

    Returns:
        Why each URL that failed is not available (URL -> reason), and how many URLs
        were checked (those the store lacked).
    """
    from urllib.parse import urlparse

    from contrastkit.curation.urls import check_urls
    from contrastkit.evaluators.data import RETIRED_CODES, maintenance_flags

    assert loader.store is not None
    urls = list(
        dict.fromkeys(
            item.image_ref
            for item in items
            if urlparse(item.image_ref).scheme in ("http", "https")
            and loader.missing(item) is not None
            and not (
                config.skipping
                and any(f in RETIRED_CODES for f in maintenance_flags(item.row.error_codes))
            )
        )
    )
    if not urls:
        return {}, 0
    from contrastkit.models import locate_model

    for spec in config.models:  # found (not loaded): a missing model fails before any fetch
        locate_model(spec, config.model)
    check_writable(loader.store.root, "the image store")
    with progress_stage(progress, "fetching images", len(urls)) as update:
        done = 0

        def advance(_: object) -> None:
            nonlocal done
            done += 1
            update(done, len(urls))

        checks = check_urls(urls, config.network, store=loader.store, on_result=advance)
    loader.refresh()
    failures = {}
    for check in checks:
        if not check.ok:
            code = check.status.value
            if check.http_status is not None and not 200 <= check.http_status < 300:
                code += f":{check.http_status}"
            failures[check.url] = f"{code} when fetched" + (
                f": {check.detail}" if check.detail else ""
            )
    return failures, len(urls)


def available_items(
    config: ImageConfig,
    paths: tuple[Path, ...],
    items: list[EvalItem],
    progress: ProgressFactory | None,
) -> tuple[list[EvalItem], ImageLoader, list[SkippedRow], tuple[int, int]]:
    """The items to score, their image loader, the rows left out and the URLs checked
    and fetched: fetch what the store lacks (``fetch``), then leave out
    (``skip_missing``) or refuse the rows still without an image."""
    loader = image_loader(config.image_store, fetching=config.fetching)
    failures: dict[str, str] = {}
    checked = 0
    if config.fetching:
        failures, checked = fetch_missing(items, loader, config, progress)
    fetched = (checked - len(failures), checked)
    if not config.skipping:
        loader.check(items, failures)
        return items, loader, [], fetched
    kept, skipped = loader.available(items, failures)
    if not kept:
        reasons = "; ".join(f"{row.idx}: {row.reason}" for row in skipped[:3])
        where = f"the image store {loader.store.root}" if loader.store else "an image store"
        raise DataFormatError(
            ", ".join(p.name for p in paths),
            None,
            None,
            f"no row has its image available: all {len(skipped)} were left out ({reasons}"
            + ("; ..." if len(skipped) > 3 else "")
            + f"). Images of URLs are read from {where}: "
            + ("check this machine's network access (the reasons above say what failed), "
               if failures else "fetch them with --fetch, ")
            + "or pass --store DIR with a store that `contrastkit urls check FILE --store DIR` "
            "filled elsewhere",
        )  # fmt: skip
    return kept, loader, skipped, fetched
