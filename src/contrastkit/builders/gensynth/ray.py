"""GenSynth on a Ray cluster: ``build gensynth --engine ray`` (issue 16, item 3).

The two model-bound stages run as Ray Data ``map_batches`` over an actor pool
(``ray.data.ActorPoolStrategy``); everything else stays in the driver (the process that
runs the build):

- **Edit** (Sec. 4.1, :class:`RayWindowEditor`): the driver plans the pending edits
  exactly as a local run (finished edits are skipped) and cuts them into the same
  windows. Each actor loads the editor once
  (:func:`~contrastkit.curation.editing.load_editor`) and makes one window per call with
  :func:`~contrastkit.builders.gensynth.edit.edit_window`, the function the local engine
  calls; it returns each pasted-back image encoded in the build's storage format
  (:func:`~contrastkit.builders.manifest.encode_image`: the same bytes a local run
  writes). The driver writes every image (atomically) and appends every manifest line,
  in plan order, so its serial work per edit is a write and an fsync.
- **Embed** (Sec. 4.2, :class:`RayCropEmbedder`): the crops the embedding cache lacks,
  one local batch per call, go to actors that load the scorer once
  (:func:`~contrastkit.models.load_scorer`) and return the vectors; the driver
  writes the checkpoint shards as the local run does and makes the KNN decisions.

So the manifest, the images and the embedding shards are those of an ``--engine local``
run, and a run started by either engine can be resumed by the other. Select and the
quality checks run in the driver.

Actors get one GPU each when the cluster has GPUs (one actor per GPU), else half the
cluster's logical CPUs are used (:func:`contrastkit.distributed.actor_pool`). Actors read
the COCO images and the build folder by path: on a multi-machine cluster the driver's
paths must be visible on every node (a shared filesystem), as for any Ray Data job that
reads files. Ray is imported only when a run starts.
"""

from __future__ import annotations

import importlib
import logging
import pickle
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from contrastkit.config import ModelConfig
from contrastkit.distributed import actor_pool, import_ray
from contrastkit.errors import ContrastkitError, DataFormatError, StateError

if TYPE_CHECKING:
    from contrastkit.builders.gensynth.edit import CropCache, Storage, Window
    from contrastkit.builders.gensynth.filter import PersonCrop
    from contrastkit.curation.editing import EditSettings
    from contrastkit.pipeline.sources import DecodeFailure

__all__ = ["RayCropEmbedder", "RayWindowEditor"]

log = logging.getLogger("contrastkit.gensynth")


class RayWindowEditor:
    """Makes the edit stage's windows on a Ray actor pool, one window per actor call
    (a :class:`~contrastkit.builders.gensynth.edit.WindowEditor`).

    Args:
        model: the editor spec (``PREFIX:TARGET`` of an editor family, or an
            InstructPix2Pix folder or Hub id), loaded by each actor (it must be there on
            every node).
        config: device, dtype, batch size and download permission of the actors' editors;
            with a ``cpu`` device the actors get no GPU.

    Use it inside :func:`contrastkit.distributed.ray_session`.
    """

    def __init__(self, model: str, config: ModelConfig) -> None:
        from contrastkit.curation.editing import editor_dtype
        from contrastkit.curation.editor_families import parse_editor_spec
        from contrastkit.tiny.marker import marked_random

        self._name = str(model).strip()
        self.config = config
        #: The editor family (:mod:`~contrastkit.curation.editor_families`) and the
        #: model it names, as each actor parses the spec.
        self.family, self._target = parse_editor_spec(self._name)
        #: The dtype the actors run the editor in (``None`` when the device is left to
        #: each actor: the family's on a GPU, float32 on a CPU).
        self.dtype = editor_dtype(self.family, config, config.device) if config.device else None
        #: Whether the model folder carries the random-weights marker (a tiny test editor).
        self.random_weights = marked_random(self._target)

    @property
    def name(self) -> str:
        """The editor model, as the manifest records it (as the local engine's)."""
        return self._name

    def edit_windows(
        self, windows: Sequence[Window], settings: EditSettings, storage: Storage
    ) -> Iterator[list[bytes]]:
        """Each window's pasted-back images encoded as ``storage`` (format, quality) by
        the actors, in window order, as the actors finish them.

        Raises:
            StateError: an actor returned other edits than the window's.
            ContrastkitError: what an actor raised (a missing model, an unreadable image).
        """
        if not windows:
            return
        payloads = [
            pickle.dumps([(replace(source, path=source.path.absolute()), spec)
                          for source, spec in window])
            for window in windows
        ]  # fmt: skip
        prefix, sep, _ = self._name.partition(":")
        spec = (
            f"{prefix}:{_absolute_model(self._target)}"
            if sep and self._target != self._name
            else _absolute_model(self._name)
        )
        args = (spec, _actor_config(self.config), settings, storage)
        results = _map_on_actors(payloads, _EditActor, args, self.config.device)
        for window, made in zip(windows, results, strict=True):
            ids = [spec.edit_id for _, spec in window]
            if [edit_id for edit_id, _ in made] != ids:
                raise StateError(f"ray: an actor returned other edits than {ids}")
            yield [encoded for _, encoded in made]


class RayCropEmbedder:
    """Embeds person crops on a Ray actor pool, one local batch per actor call (a
    :class:`~contrastkit.builders.gensynth.filter.CropEmbedder`).

    Args:
        spec: the image-text model spec, loaded by each actor.
        config: device, dtype and download permission of the actors' scorers.

    Use it inside :func:`contrastkit.distributed.ray_session`.

    Raises:
        ConfigError: a malformed spec, or one of a captioning model.
    """

    def __init__(self, spec: str, config: ModelConfig) -> None:
        from contrastkit.models import check_dual
        from contrastkit.models.registry import random_weights

        parsed = check_dual(spec)
        self._spec = str(parsed)  # the name the local engine's scorer reports
        self.model = f"{parsed.prefix}:{_absolute_model(parsed.target)}"  # what actors load
        self.config = config
        #: Whether the spec names random weights (a tiny test model), as the scorer says.
        self.random_weights = random_weights(spec)

    @property
    def spec(self) -> str:
        """The encoder's spec: names its embedding cache, as the local scorer's does."""
        return self._spec

    def embed_crops(
        self, crops: Sequence[PersonCrop], batch_size: int
    ) -> Iterator[tuple[range, np.ndarray]]:
        """``(positions, unit-norm embeddings)`` of ``crops``, ``batch_size`` per batch
        (the batches of a local run), in order.

        Raises:
            DataFormatError: a crop's image does not decode (names the file).
            StateError: an actor returned another number of embeddings.
        """
        if not crops:
            return
        starts = range(0, len(crops), batch_size)
        payloads = [
            pickle.dumps([replace(crop, path=crop.path.absolute())
                          for crop in crops[start : start + batch_size]])
            for start in starts
        ]  # fmt: skip
        args = (self.model, _actor_config(self.config))
        results = _map_on_actors(payloads, _EmbedActor, args, self.config.device)
        for start, vectors in zip(starts, results, strict=True):
            stop = min(start + batch_size, len(crops))
            if vectors.shape[0] != stop - start:
                raise StateError(f"ray: {vectors.shape[0]} embeddings for {stop - start} crops")
            yield range(start, stop), vectors


class _PoolActor:
    """One actor of a pool: set up once (a model load), then one payload per call.

    A :class:`~contrastkit.errors.ContrastkitError` (a missing model, an unreadable
    image) is sent back as the result, pickled, instead of being raised: Ray keeps only
    the text of an actor's exception, and the driver raises the error itself, so a user
    sees the same message as with the local engine.
    """

    def __init__(self, *args: Any) -> None:
        self.failed: ContrastkitError | None = None
        try:
            self.setup(*args)
        except ContrastkitError as error:
            self.failed = error

    def setup(self, *args: Any) -> None:
        """Load what every call needs."""

    def run(self, payload: Any) -> Any:
        """The result of one payload."""
        raise NotImplementedError

    def __call__(self, batch: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        results = []
        for payload in batch["payload"]:
            outcome: tuple[str, Any] = ("error", self.failed)
            if self.failed is None:
                try:
                    outcome = ("ok", self.run(pickle.loads(payload)))
                except ContrastkitError as error:
                    outcome = ("error", error)
            results.append(pickle.dumps(outcome))
        return {"result": np.array(results, dtype=object)}


class _EditActor(_PoolActor):
    """The edit pool's actor: loads the editor once; a window per call, returned as
    ``[(edit id, encoded image), ...]`` in the build's storage format (the encoding, about
    as costly as writing, is spread over the actors instead of serialised in the driver:
    bench/scale.py --part project)."""

    def setup(
        self, model: str, config: ModelConfig, settings: EditSettings, storage: Storage
    ) -> None:
        from contrastkit.curation.editing import load_editor

        _quiet_loaders()
        self.editor = load_editor(model, config)
        self.settings = settings
        self.storage = storage
        self.cache: CropCache = {}

    def run(self, window: Window) -> list[tuple[str, bytes]]:
        from contrastkit.builders.gensynth.edit import edit_window
        from contrastkit.builders.manifest import encode_image

        image_format, quality = self.storage
        pasted = edit_window(self.editor, window, self.settings, self.cache)
        return [
            (spec.edit_id, encode_image(image, image_format, quality=quality))
            for (_, spec), image in zip(window, pasted, strict=True)
        ]


class _EmbedActor(_PoolActor):
    """The embedding pool's actor: loads the scorer once; a batch of crops per call,
    returned as their ``(n, d)`` float32 embeddings."""

    def setup(self, model: str, config: ModelConfig) -> None:
        from contrastkit.models import load_scorer

        _quiet_loaders()
        self.scorer = load_scorer(model, config)

    def run(self, crops: list[PersonCrop]) -> np.ndarray:
        from contrastkit.pipeline.embed import iter_embeddings

        def located(failure: DecodeFailure) -> Exception:
            return DataFormatError(crops[failure.index].path, None, None, failure.message)

        parts = [
            vectors
            for _, vectors in iter_embeddings(
                self.scorer, crops, batch_size=len(crops), on_error=located
            )
        ]
        return np.concatenate(parts).astype(np.float32)


def _quiet_loaders() -> None:
    """No download / loading progress bars from an actor (Ray forwards them to the
    driver's terminal, interleaved from every actor)."""
    for name in ("diffusers", "transformers"):
        try:
            logging_module = importlib.import_module(f"{name}.utils.logging")
        except ImportError:
            continue
        logging_module.disable_progress_bar()
        logging_module.set_verbosity_error()


def _actor_config(config: ModelConfig) -> ModelConfig:
    """``config`` for an actor: a numbered GPU (``cuda:1``) becomes ``cuda``, the one GPU
    Ray makes visible to each actor."""
    if config.device is not None and config.device.startswith("cuda:"):
        return replace(config, device="cuda")
    return config


def _absolute_model(model: str) -> str:
    """``model`` as an absolute path when it names a file or folder here (actors may run
    in another working directory), else as given (a Hub id, an architecture tag)."""
    path = Path(model).expanduser()
    return str(path.absolute()) if path.exists() else model


def _map_on_actors(
    payloads: list[bytes], actor: type[_PoolActor], args: tuple[Any, ...], device: str | None
) -> Iterator[Any]:
    """What ``actor(*args)`` makes of each payload, in payload order: Ray Data
    ``map_batches`` (one payload per call) over an actor pool sized by :func:`actor_pool`.

    Raises:
        ContrastkitError: the first one an actor met (:class:`_PoolActor`).
    """
    ray = import_ray()
    data = importlib.import_module("ray.data")
    size, gpus = actor_pool(ray, len(payloads), device)
    log.info("ray: %d batches on %d actors (%g GPU each)", len(payloads), size, gpus)
    with _ordered_quiet_data(data):
        dataset = data.from_items(
            [{"payload": payload} for payload in payloads],
            override_num_blocks=max(1, min(len(payloads), 4 * size)),
        ).map_batches(
            actor,
            fn_constructor_args=args,
            batch_size=1,
            batch_format="numpy",
            compute=data.ActorPoolStrategy(size=size),
            num_cpus=1,
            num_gpus=gpus,
        )
        for row in dataset.iter_rows():
            status, value = pickle.loads(row["result"])
            if status == "error":
                raise value
            yield value


@contextmanager
def _ordered_quiet_data(data: Any) -> Iterator[None]:
    """Ray Data set to keep row order (results are written in plan order) and without
    its progress bars and per-run log lines (the CLI shows its own progress)."""
    context = data.DataContext.get_current()
    saved = (context.execution_options.preserve_order, context.enable_progress_bars)
    data_log = logging.getLogger("ray.data")
    level = data_log.level
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    data_log.setLevel(logging.ERROR)
    try:
        yield
    finally:
        context.execution_options.preserve_order, context.enable_progress_bars = saved
        data_log.setLevel(level)
