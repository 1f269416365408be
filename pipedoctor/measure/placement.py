"""Where a job trains, and how the check builds copies of its model there and on one device.

Two APIs spread a Keras model over devices: a ``tf.distribute`` strategy (the TensorFlow
backend; the model remembers the strategy it was built under) and the Keras distribution API
(``keras.distribution.DataParallel`` or ``ModelParallel`` over a ``DeviceMesh``, set globally
before the model is built; most complete on JAX). The protocol asks one ``Placement`` for both,
so the compute ceiling, the one-device ceiling and parity are measured the same way on either.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

Scope = Callable[[], AbstractContextManager[Any]]
"""Entered while a copy of the model is built: the copy's variables are placed by it."""


class Placement:
    """The job's distribution: its name, its replicas (the batch is split this many ways) and
    devices (the mesh's size; equal to the replicas under ``tf.distribute``)."""

    api = "none"
    name = "default"
    replicas = 1
    devices = 1
    spmd = False
    """One program over the whole mesh (JAX): layers compute over the global batch."""

    def scope(self) -> AbstractContextManager[Any]:
        """Where a copy built under it is placed as the job's own model is."""
        return nullcontext()

    def one_device(self) -> AbstractContextManager[Scope]:
        """Build and train a copy on one device inside this; it gives the build scope."""
        return nullcontext(nullcontext)


class StrategyPlacement(Placement):
    """A ``tf.distribute`` strategy: the TensorFlow backend's path."""

    api = "tf.distribute"

    def __init__(self, strategy: Any) -> None:
        self.strategy = strategy
        self.name = type(strategy).__name__.replace("_DefaultDistributionStrategy", "default")
        self.replicas = self.devices = int(strategy.num_replicas_in_sync)

    def scope(self) -> AbstractContextManager[Any]:
        return self.strategy.scope()

    @contextmanager
    def one_device(self) -> Iterator[Scope]:
        import tensorflow as tf

        device = self.strategy.extended.worker_devices[0]
        with outside_strategy_scope():
            yield tf.distribute.OneDeviceStrategy(device).scope


class KerasPlacement(Placement):
    """The Keras distribution API: a global ``Distribution`` over a ``DeviceMesh`` whose batch
    axis gives the replicas. Without a distribution, the backend's default device."""

    api = "keras"

    def __init__(self, distribution: Any) -> None:
        import keras

        self.distribution = distribution
        if distribution is None:
            return
        self.spmd = keras.backend.backend() == "jax"
        mesh = distribution.device_mesh
        self.name = type(distribution).__name__
        self.shape = tuple(int(n) for n in mesh.shape)
        self.axis_names = tuple(str(a) for a in mesh.axis_names)
        self.batch_axis = str(distribution.batch_dim_name or self.axis_names[0])
        axes = self.axis_names
        self.replicas = self.shape[axes.index(self.batch_axis) if self.batch_axis in axes else 0]
        self.devices = 1
        for size in self.shape:
            self.devices *= size

    def scope(self) -> AbstractContextManager[Any]:
        return self.distribution.scope() if self.distribution is not None else nullcontext()

    @contextmanager
    def one_device(self) -> Iterator[Scope]:
        """No distribution for a moment: the backend builds and trains on its default device."""
        import keras

        setter = keras.distribution.set_distribution
        setter = getattr(setter, "__wrapped__", setter)  # not the check's own recording hook
        previous = keras.distribution.distribution()
        setter(None)
        try:
            yield nullcontext
        finally:
            setter(previous)


def placement_of(model: Any) -> Placement:
    """The placement ``model`` trains under: its strategy on the TensorFlow backend, the global
    Keras distribution on the others."""
    import keras

    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf

        strategy = model.distribute_strategy if model is not None else tf.distribute.get_strategy()
        return StrategyPlacement(strategy)
    distribution = getattr(keras, "distribution", None)
    return KerasPlacement(distribution.distribution() if distribution is not None else None)


@contextmanager
def outside_strategy_scope() -> Iterator[None]:
    """Leave the strategy scopes the script is inside for a moment (a script may call ``fit``
    inside ``strategy.scope()``, where no other strategy may be entered). TensorFlow keeps the
    stack on the default graph; it is put back exactly as it was."""
    from tensorflow.python.framework import ops

    graph = ops.get_default_graph()
    saved = getattr(graph, "_distribution_strategy_stack", None)
    if saved is None:
        yield
        return
    graph._distribution_strategy_stack = []
    try:
        yield
    finally:
        graph._distribution_strategy_stack = saved
