"""The live front end for the training setup: strategy, replicas, batch, optimizer, layers and
mixed precision, read from the real objects at the moment training starts.

It fills the same ``TrainingSetup`` the static front end fills from source, so the PD2xx
detectors judge a live job with the rules they apply to code.
"""

from __future__ import annotations

from typing import Any

from pipedoctor.measure.distribution import keras_setup
from pipedoctor.measure.placement import (
    KerasPlacement,
    Placement,
    StrategyPlacement,
    placement_of,
)
from pipedoctor.pipeline import Location, TrainingSetup

BATCHNORM_CLASSES = ("BatchNormalization", "SyncBatchNormalization")


def _layers(model: Any) -> list[Any]:
    try:
        return list(model._flatten_layers(include_self=False, recursive=True))
    except (AttributeError, TypeError):
        return list(getattr(model, "layers", []))


def _learning_rate(optimizer: Any) -> tuple[str, float | None, bool]:
    """(kind, value, warm-up) of an optimizer's learning rate: ``constant`` or ``schedule``."""
    import keras

    rate = getattr(optimizer, "_learning_rate", None)
    if isinstance(rate, keras.optimizers.schedules.LearningRateSchedule):
        config = rate.get_config() if hasattr(rate, "get_config") else {}
        warmup = bool(config.get("warmup_steps")) or "warmup" in type(rate).__name__.lower()
        return "schedule", None, warmup
    try:
        return "constant", float(optimizer.learning_rate.numpy()), False
    except (AttributeError, TypeError, ValueError):
        return "unknown", None, False


def cluster() -> dict[str, Any] | None:
    """Workers and this task from ``TF_CONFIG`` (``None`` for a single-host job)."""
    import json
    import os

    try:
        config = json.loads(os.environ.get("TF_CONFIG", "") or "{}")
    except ValueError:
        return None
    hosts = config.get("cluster") or {}
    workers = len(hosts.get("worker", [])) + len(hosts.get("chief", []))
    if workers <= 1:
        return None
    task = config.get("task") or {}
    return {"workers": workers, "task": f"{task.get('type', '?')}:{task.get('index', '?')}"}


def evaluation_fact(validation: Any, batch_size: int | None) -> dict[str, Any] | None:
    """How many examples ``fit``'s validation data holds and the global batch they come in
    (``None`` when that cannot be known: no validation data, an infinite or unknown count)."""
    import tensorflow as tf

    if validation is None:
        return None
    if not isinstance(validation, tf.data.Dataset):
        inputs = validation[0] if isinstance(validation, (tuple, list)) else validation
        try:  # x may be an array, a list of arrays or a dict of them: all share a length
            return {"examples": len(tf.nest.flatten(inputs)[0]), "global_batch": batch_size or 32}
        except (TypeError, IndexError):
            return None
    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.frontend import prefix_cardinality, read_dataset

    try:
        gp = read_dataset(validation, None)
        batches = [i for i, s in enumerate(gp.stages) if s.stage.op == "batch" and i > 0]
        examples = prefix_cardinality(gp, batches[-1] - 1) if batches else -1
    except (tf.errors.OpError, ValueError, TypeError, AttributeError):
        return None
    batch = gp.stages[batches[-1]] if batches else None
    size = batch.stage.param("batch_size") if batch else None
    if batch is None or examples <= 0 or not isinstance(size, int) or size <= 0:
        return None
    drop = g.param(gp.graph, g.nodes(gp.graph)[batch.node], "drop_remainder")
    return {"examples": examples, "global_batch": size, "drop_remainder": bool(drop)}


def last_batch_fact(dataset: Any) -> dict[str, Any] | None:
    """The training data's final, partial batch (``None`` when every batch is full or the count
    cannot be known): a mesh must split it too."""
    counts = evaluation_fact(dataset, None)
    if counts is None or counts.get("drop_remainder"):
        return None
    rest = counts["examples"] % counts["global_batch"]
    return {**counts, "size": rest} if rest else None


def live_setup(
    model: Any,
    batch_size: int | None,
    where: Location | None = None,
    placement: Placement | None = None,
    sites: dict[str, Any] | None = None,
) -> tuple[TrainingSetup, dict[str, Any]]:
    """The setup's facts, and the measurements they add to the report. ``sites`` holds where the
    script set a Keras distribution and its ``LayoutMap`` keys, when the check saw it."""
    import keras
    import tensorflow as tf

    setup = TrainingSetup()
    measurements: dict[str, Any] = {}
    placement = placement or placement_of(model)
    replicas = placement.replicas
    at = (sites or {}).get("distribution") or where
    setup.add(
        "strategy", at if placement.api == "keras" else where, name=placement.name,
        multi=replicas > 1, api=placement.api,
    )  # fmt: skip
    setup.add("replicas", where, count=replicas)
    measurements["strategy"] = placement.name
    measurements["replicas"] = replicas
    if batch_size:
        setup.add("global_batch", where, value=batch_size, replicas=replicas, api=placement.api)
        measurements["per_replica_batch"] = round(batch_size / replicas, 2)
        setup.add("batch", where, value=batch_size, per_replica=batch_size / replicas, live=True)
    distribution = keras.distribution.distribution() if hasattr(keras, "distribution") else None
    if distribution is not None:
        measurements["keras_distribution"] = type(distribution).__name__
    if isinstance(placement, KerasPlacement) and placement.spmd:  # a JAX mesh
        keras_setup(model, placement, setup, measurements, where, sites or {})
    policy = keras.config.dtype_policy().name if hasattr(keras, "config") else "float32"
    measurements["mixed_precision"] = policy
    setup.add("precision", where, policy=policy, mixed=policy.startswith("mixed"))
    multi_worker = cluster()
    if multi_worker is not None:
        setup.add("workers", where, count=multi_worker["workers"])
        measurements.update(multi_worker)
    if model is None:
        return setup, measurements
    if (
        isinstance(placement, StrategyPlacement)
        and tf.distribute.has_strategy()
        and model._distribute_strategy is None
        and replicas == 1
    ):
        active = tf.distribute.get_strategy()
        if active.num_replicas_in_sync > 1:  # fit runs under a scope the model was not built in
            setup.add("model", where, in_scope=False, live=True, name=type(model).__name__)
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None:
        kind, value, warmup = _learning_rate(optimizer)
        # A live rate is a number: whether the code scaled it with the replicas only the source
        # shows, so PD203 is left to the static facts (``lr`` is recorded, not judged).
        setup.add(
            "optimizer", where, name=type(optimizer).__name__, lr=f"live-{kind}", value=value,
            warmup=warmup, in_scope=True, live=True,
        )  # fmt: skip
        measurements["learning_rate"] = value if value is not None else kind
    # Under SPMD (the Keras distribution on JAX) a layer computes over the global batch, so
    # BatchNormalization's statistics are the whole batch's, as on one device.
    global_statistics = placement.spmd
    for layer in _layers(model):
        if type(layer).__name__ in BATCHNORM_CLASSES:
            setup.add(
                "batchnorm", where, frozen=not layer.trainable,
                synchronized=bool(getattr(layer, "synchronized", False))
                or type(layer).__name__.startswith("Sync") or global_statistics,
                name=layer.name,
            )  # fmt: skip
    return setup, measurements
