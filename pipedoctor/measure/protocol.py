"""The measurement protocol: the pipeline alone, the compute ceiling, and real training.

All three are measured inside one budget, each to ±5% or until its share of the budget is
spent. Training runs on a *copy* of the model (same architecture, weights, compile settings,
mixed-precision policy and distribution strategy), so the user's model is never changed.
Measurement never judges: it returns numbers and notes, and the rules decide what they mean.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.measure.memory import step_figures
from pipedoctor.measure.placement import Placement, Scope, placement_of
from pipedoctor.measure.rates import Rate, RateMeter

Progress = Callable[[str], None]

PHASE_SHARE = {"pipeline": 0.25, "ceiling": 0.25, "training": 0.4}
"""Share of the budget left when each phase starts; the graph doctor takes what remains."""
PHASE_CAP_S = {"pipeline": 10.0, "ceiling": 10.0, "training": 12.0}
"""No phase needs longer than this to reach ±5% on a typical job; it stops earlier if it can."""
LONG_RUN_STEPS = 1_000_000


class MeasureError(RuntimeError):
    """Measurement could not go on (the dataset raised, the model could not be copied)."""


@dataclass
class Budget:
    """A wall-clock deadline shared by every phase of one check."""

    deadline: float

    @classmethod
    def of(cls, seconds: float) -> Budget:
        return cls(time.perf_counter() + seconds)

    def left(self) -> float:
        return max(0.0, self.deadline - time.perf_counter())

    def phase_deadline(self, phase: str) -> float:
        share = min(self.left() * PHASE_SHARE[phase], PHASE_CAP_S[phase])
        return time.perf_counter() + share


@dataclass
class Measured:
    """What the protocol measured; ``to_measurements`` gives the report's keys."""

    batch_size: int | None = None
    pipeline: Rate | None = None
    ceiling: Rate | None = None
    training: Rate | None = None
    replicas: int = 1
    strategy: str = "default"
    devices: int = 1
    """Devices the job trains on: the replicas, or a model-parallel mesh's size."""
    ceiling_1: Rate | None = None
    """The compute ceiling of one device alone, with its share of the batch (multi-device jobs
    only)."""
    element_bytes: int | None = None
    cardinality: int | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def to_measurements(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "batch_size": self.batch_size,
            "replicas": self.replicas,
            "strategy": self.strategy,
        }
        step_ms: dict[str, float] = {}
        for name in ("pipeline", "ceiling", "training"):
            rate: Rate | None = getattr(self, name)
            data[f"{name}_samples_per_s"] = round(rate.samples_per_s, 1) if rate else None
            data[f"{name}_ci"] = round(rate.ci, 4) if rate and rate.ci is not None else None
            if rate and self.batch_size and name != "pipeline":
                step_ms[name] = round(1000.0 * self.batch_size / rate.samples_per_s, 2)
        if step_ms:
            data["step_ms"] = step_ms
        if self.ceiling_1 is not None and self.ceiling is not None:
            n = self.devices
            data["ceiling_1_samples_per_s"] = round(self.ceiling_1.samples_per_s, 1)
            data["ceiling_n_samples_per_s"] = round(self.ceiling.samples_per_s, 1)
            data["scaling_efficiency"] = round(
                self.ceiling.samples_per_s / (n * self.ceiling_1.samples_per_s), 3
            )
        if self.element_bytes is not None:
            data["batch_bytes"] = self.element_bytes
        if self.cardinality is not None:
            data["cardinality"] = self.cardinality
        data.update(self.extra)
        return data


def samples_in(element: Any) -> int:
    """The batch size of one dataset element: the leading dimension of its first tensor."""
    import tensorflow as tf

    for tensor in tf.nest.flatten(element, expand_composites=False):
        if isinstance(tensor, tf.SparseTensor):
            return int(tensor.dense_shape[0])
        shape = getattr(tensor, "shape", None)
        if shape is not None and shape.rank:
            return int(shape[0]) if shape[0] is not None else int(tf.shape(tensor)[0])
    return 1


def element_bytes(element: Any) -> int:
    import tensorflow as tf

    total = 0
    for tensor in tf.nest.flatten(element, expand_composites=True):
        if tensor.dtype == tf.string:
            total += int(tf.reduce_sum(tf.strings.length(tensor)).numpy())
        else:
            total += int(tf.size(tensor).numpy()) * tensor.dtype.size
    return total


def endless(dataset: Any, notes: list[str]) -> Any:
    """The dataset repeated when it is finite, so a measurement never runs out of data."""
    import tensorflow as tf

    cardinality = int(dataset.cardinality())
    if cardinality == tf.data.INFINITE_CARDINALITY:
        return dataset
    if cardinality >= 0:
        notes.append(f"the dataset is finite ({cardinality} batches); it was repeated to measure")
    return dataset.repeat()


def _iterate(dataset: Any) -> Iterator[Any]:
    iterator = iter(dataset)
    while True:
        try:
            yield next(iterator)
        except StopIteration:
            return
        except Exception as exc:  # noqa: BLE001 - the user's pipeline raised: say so plainly
            raise MeasureError(
                f"the dataset raised while iterating: {type(exc).__name__}: {brief(exc)}"
            ) from None


MIN_ITEMS = 3
"""A phase whose share of the budget ran out still takes this many items (a first step can
spend its whole share tracing), unless the check's own deadline has passed."""


def time_to_stop(
    meter: RateMeter, deadline: float, hard_deadline: float | None, *, settle: bool = True
) -> bool:
    """At the deadline (with ``MIN_ITEMS`` seen), or earlier once the rate is known to ±5%
    (``settle``)."""
    now = time.perf_counter()
    if (settle and meter.converged) or (hard_deadline is not None and now >= hard_deadline):
        return True
    return now >= deadline and meter.seen >= MIN_ITEMS


def measure_pipeline(
    dataset: Any,
    deadline: float,
    hard_deadline: float | None = None,
    *,
    settle: bool = True,
    cpu: dict[str, float] | None = None,
) -> Rate | None:
    """Samples per second of the dataset alone, in steady state. ``settle=False`` reads until
    the deadline even once the rate is known: pipelines timed side by side then share the
    same stretch of time. ``cpu`` receives the process's CPU seconds per sample over the
    same steady stretch (``s_per_sample``): with nothing else running, the pipeline's cost."""
    meter = RateMeter(warmup_items=3, warmup_s=0.5)
    cpu_start = None
    for element in _iterate(dataset):
        meter.add(time.perf_counter(), samples_in(element))
        if cpu_start is None and meter.warmed_up:
            cpu_start = time.process_time()
        if time_to_stop(meter, deadline, hard_deadline, settle=settle):
            break
    if cpu is not None and cpu_start is not None and meter.total_samples:
        cpu["s_per_sample"] = (time.process_time() - cpu_start) / meter.total_samples
    return meter.rate()


def copy_model(model: Any, scope: Scope | None = None) -> Any:
    """A fresh copy with the same architecture, weights and compile settings, built under the
    model's own distribution (or inside ``scope``). The original is only read."""
    import keras

    if not getattr(model, "compiled", False):
        raise MeasureError("the model is not compiled: compile it before `fit` or `check`")
    scope = scope or placement_of(model).scope
    try:
        # Read everything under the model's own strategy, before entering the copy's.
        weights = model.get_weights()
        compile_config = model.get_compile_config()
        architecture = keras.saving.serialize_keras_object(model)
        with scope():
            twin = keras.saving.deserialize_keras_object(architecture, safe_mode=False)
            if model.built and not twin.built:
                twin.build(model.input_shape if hasattr(model, "input_shape") else None)
            twin.set_weights(weights)
            twin.compile_from_config(compile_config)
    except Exception as exc:  # noqa: BLE001 - any Keras failure becomes one clear message
        reason = brief(exc).split(" Full object config")[0]  # not kilobytes of config
        raise MeasureError(f"cannot copy the model: {type(exc).__name__}: {reason}") from None
    if not getattr(twin, "compiled", False):
        raise MeasureError("cannot copy the model's compile settings (custom `compile`)")
    return twin


def measure_fit(
    twin: Any,
    dataset: Any,
    deadline: float,
    samples_per_step: int,
    hard_deadline: float | None = None,
) -> Rate | None:
    """Training samples per second of ``twin`` on ``dataset`` (timed per step, steady state)."""
    import keras

    meter = RateMeter(warmup_items=2, warmup_s=0.3)

    class StepTimer(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self.samples = 0
            self.error: Exception | None = None

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            meter.add(time.perf_counter(), self.samples)
            if time_to_stop(meter, deadline, hard_deadline):
                self.model.stop_training = True

    timer = StepTimer()
    timer.samples = samples_per_step
    try:
        twin.fit(
            dataset,
            epochs=1,
            steps_per_epoch=LONG_RUN_STEPS,
            verbose=0,
            shuffle=False,
            callbacks=[timer],
        )
    except MeasureError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's step failed: report it, not a traceback
        raise MeasureError(f"a training step failed: {type(exc).__name__}: {brief(exc)}") from None
    return meter.rate()


def brief(exc: BaseException) -> str:
    """An exception's message on one line, without TensorFlow's op-location noise."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    text = re.sub(r"\{\{function_node [^}]*\}\}\s*", "", text)
    text = text.split(" [Op:")[0]
    return text[:240]


def measure_input(
    dataset: Any, budget: Budget, progress: Progress = lambda _: None, share: str = "pipeline"
) -> tuple[Measured, Any, Any]:
    """The pipeline alone, timed within ``share`` of the budget, with what its first element
    tells (batch size, bytes, cardinality); also the endless dataset and that element."""
    measured = Measured()
    data = endless(dataset, measured.notes)
    progress("measuring the input pipeline alone")
    first = next(iter(_iterate(data)), None)
    if first is None:
        raise MeasureError("the dataset is empty")
    measured.batch_size = samples_in(first)
    measured.element_bytes = element_bytes(first)
    cardinality = int(dataset.cardinality())
    measured.cardinality = cardinality if cardinality >= 0 else None
    cpu: dict[str, float] = {}
    measured.pipeline = measure_pipeline(
        data, budget.phase_deadline(share), budget.deadline, cpu=cpu
    )
    if "s_per_sample" in cpu:
        measured.extra["pipeline_cpu_s_per_sample"] = round(cpu["s_per_sample"], 9)
    return measured, data, first


def run_protocol(
    dataset: Any,
    model: Any | None,
    budget: Budget,
    progress: Progress = lambda _: None,
    sampling: Callable[[], Any] | None = None,
) -> Measured:
    """Pipeline alone, then (with a model) the compute ceiling and real training.

    ``sampling`` is entered around the real training steps (host CPU and GPU samplers); its
    ``__exit__`` result is not used: the caller reads the samplers afterwards.
    """

    if model is None:  # the pipeline is all there is: sample the host while it runs
        with sampling() if sampling is not None else nullcontext():
            measured, _, _ = measure_input(dataset, budget, progress, share="training")
        return measured
    measured, data, first = measure_input(dataset, budget, progress)

    placement = placement_of(model)
    measured.replicas, measured.devices = placement.replicas, placement.devices
    measured.strategy = placement.name
    try:
        trainee: AbstractContextManager[Any] = nullcontext(copy_model(model, placement.scope))
    except MeasureError as exc:
        if not getattr(model, "compiled", False):
            raise
        measured.notes.append(
            f"{exc}; it was measured in place, and its weights and optimizer state were put "
            "back afterwards"
        )
        measured.extra["measured_in_place"] = True
        trainee = in_place(model, first)
    with trainee as twin:
        _time_model(model, twin, data, first, measured, placement, budget, progress, sampling)
    return measured


def _time_model(
    model: Any,
    twin: Any,
    data: Any,
    first: Any,
    measured: Measured,
    placement: Placement,
    budget: Budget,
    progress: Progress,
    sampling: Callable[[], Any] | None,
) -> None:
    """The compute ceiling, the one-device ceiling and parity (several devices), and real
    training, on ``twin``: a copy of ``model``, or the model itself put back afterwards."""
    import tensorflow as tf

    progress("measuring the compute ceiling (synthetic batches, no input cost)")
    synthetic = tf.data.Dataset.from_tensors(first).repeat()
    try:
        measured.ceiling = measure_fit(
            twin, synthetic, budget.phase_deadline("ceiling"), measured.batch_size, budget.deadline
        )
        if placement.api == "keras" and measured.devices == 1:
            measured.extra["memory"] = step_figures(twin, first, measured.batch_size)
        if measured.devices > 1 and measured.ceiling is not None:
            progress(f"measuring the compute ceiling on one of the {_devices(measured)}")
            measured.ceiling_1 = measure_one_replica(model, first, measured, budget, placement)
        if measured.devices > 1:
            unit = _unit(measured)
            progress(f"training one {unit} and all {unit}s on the same batches (parity)")
            measured.extra.update(parity(model, first, measured, placement))
        progress("measuring real training steps")
        with sampling() if sampling is not None else nullcontext():
            measured.training = measure_fit(
                twin, data, budget.phase_deadline("training"), measured.batch_size, budget.deadline
            )
    except MeasureError as exc:  # keep what was measured: the report says what failed
        measured.notes.append(f"training could not be measured: {exc}")


@contextmanager
def in_place(model: Any, batch: Any = None) -> Iterator[Any]:
    """The model itself, for a model that cannot be copied (a subclass without
    ``get_config``, a custom layer that cannot be rebuilt): its weights, its optimizer's state
    and its ``history`` are put back when the measurement ends, however it ends. A subclass not
    built yet is built first, on ``batch``'s inputs, so that its fresh weights are what is put
    back. Optimizer variables that the measurement created (slots of an optimizer not built
    before) are set back to zero, the value a first build gives them."""
    if not model.weights and batch is not None:
        inputs = batch[0] if isinstance(batch, tuple | list) else batch
        try:
            model(inputs, training=False)
        except Exception as exc:  # noqa: BLE001 - a model that cannot run its own batch
            raise MeasureError(f"cannot build the model on a batch: {brief(exc)}") from None
    weights = model.get_weights()
    optimizer = getattr(model, "optimizer", None)
    before = {id(v): v.numpy() for v in getattr(optimizer, "variables", [])}
    history, stop = getattr(model, "history", None), getattr(model, "stop_training", False)
    try:
        yield model
    finally:
        model.set_weights(weights)
        for variable in getattr(optimizer, "variables", []):
            value = before.get(id(variable))
            variable.assign(value if value is not None else variable.numpy() * 0)
        model.history, model.stop_training = history, stop
        model.reset_metrics()


def _unit(measured: Measured) -> str:
    """What the job's devices are called: replicas, or devices of a mesh that splits the model."""
    return "replica" if measured.devices == measured.replicas else "device"


def _devices(measured: Measured) -> str:
    """``2 replicas``, or ``4 devices``."""
    return f"{measured.devices} {_unit(measured)}s"


def measure_one_replica(
    model: Any, batch: Any, measured: Measured, budget: Budget, placement: Placement
) -> Rate | None:
    """The ceiling of one device with its share of the batch: the base of scaling efficiency.
    Under the Keras distribution, the same copy also gives the step's memory figures at the
    per-replica batch."""
    import tensorflow as tf

    per_device = max(1, measured.batch_size // measured.devices)
    deadline = budget.phase_deadline("ceiling")
    try:
        with placement.one_device() as scope:
            single = copy_model(model, scope)
            piece = tf.nest.map_structure(lambda t: t[:per_device], batch)
            synthetic = tf.data.Dataset.from_tensors(piece).repeat()
            rate = measure_fit(single, synthetic, deadline, per_device)
            if placement.api == "keras":
                per_replica = max(1, measured.batch_size // measured.replicas)
                replica = tf.nest.map_structure(lambda t: t[:per_replica], batch)
                measured.extra["memory"] = step_figures(single, replica, per_replica)
            return rate
    except MeasureError as exc:
        measured.notes.append(f"the one-{_unit(measured)} ceiling could not be measured: {exc}")
        return None


PARITY_STEPS = 4
PARITY_WEIGHT_FLOOR = 1e-5
"""A weight whose values stay this small (root mean square), such as a bias just before
BatchNormalization, gets no gradient to speak of: float reordering alone moves it by a large
fraction of itself, so its difference is taken relative to this floor instead."""
RANDOM_LAYERS = ("Dropout", "GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout")


def parity(model: Any, batch: Any, measured: Measured, placement: Placement) -> dict[str, Any]:
    """Train two copies from the same weights on the same few batches, one on a single device
    and one under the job's distribution, and compare their losses step by step and their
    weights at the end (each as the largest relative difference)."""
    import numpy as np
    import tensorflow as tf

    layers = [type(layer).__name__ for layer in getattr(model, "layers", [])]
    if any(name.startswith(RANDOM_LAYERS) for name in layers):
        measured.notes.append("parity check skipped: the model draws random numbers (dropout)")
        return {}
    data = tf.data.Dataset.from_tensors(batch).repeat(PARITY_STEPS)
    try:
        multi, multi_weights = _train_steps(copy_model(model, placement.scope), data)
        with placement.one_device() as scope:
            single, single_weights = _train_steps(copy_model(model, scope), data)
    except (MeasureError, ValueError, RuntimeError) as exc:
        measured.notes.append(f"parity check could not run: {brief(exc)}")
        return {}
    deltas = [abs(a - b) / max(abs(a), abs(b), 1e-12) for a, b in zip(single, multi, strict=False)]
    weight_deltas = [
        float(np.linalg.norm(a - b) / max(np.linalg.norm(a), np.linalg.norm(b), _floor(a)))
        for a, b in zip(single_weights, multi_weights, strict=False)
    ]
    return {
        "parity_steps": len(deltas),
        "parity_max_loss_delta": round(max(deltas), 6) if deltas else None,
        "parity_max_weight_delta": round(max(weight_deltas), 6) if weight_deltas else None,
        "parity_losses": {"one_replica": single, "all_replicas": multi},
    }


def _floor(weight: Any) -> float:
    return PARITY_WEIGHT_FLOOR * float(weight.size) ** 0.5


def _train_steps(twin: Any, data: Any) -> tuple[list[float], list[Any]]:
    """The loss after each step, and the trainable weights at the end."""
    import keras
    import numpy as np

    losses: list[float] = []

    class Record(keras.callbacks.Callback):
        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            losses.append(float((logs or {}).get("loss", float("nan"))))

    twin.fit(data, epochs=1, verbose=0, shuffle=False, callbacks=[Record()])
    weights = [np.asarray(keras.ops.convert_to_numpy(w)) for w in twin.trainable_weights]
    return [round(v, 8) for v in losses], weights
