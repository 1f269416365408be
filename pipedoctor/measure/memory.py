"""What one training step holds in one device's memory, and how much memory one device has.

The figures behind the data- or model-parallel decision: parameter bytes, gradient bytes (one
per trainable parameter), optimizer-state bytes (read from a built optimizer), and what the
compiled training step holds at the per-replica batch, as the backend's compiler reports it
(JAX: XLA's memory analysis of the compiled step, its activations and workspace and its total;
nothing is allocated to learn it). One device's memory is NVML's total for a GPU, the host's
RAM for a CPU. Nothing here decides anything: ``pipedoctor.diagnosis`` does, with PD213's
threshold.
"""

from __future__ import annotations

from typing import Any

LARGEST = 5
"""How many of the largest weights the measurements list."""


def nbytes(variable: Any) -> int:
    """A variable's size in bytes over its whole (global) shape."""
    value = getattr(variable, "value", variable)
    size = getattr(value, "nbytes", None)
    if isinstance(size, int):
        return size
    import numpy as np

    count = 1
    for dim in variable.shape:
        count *= int(dim)
    return count * np.dtype(str(variable.dtype)).itemsize


def weight_figures(model: Any) -> dict[str, Any]:
    """Parameter and gradient bytes of the model, and its largest weights."""
    weights = list(model.weights)
    trainable = {id(v) for v in model.trainable_weights}
    sized = sorted(((nbytes(v), v) for v in weights), key=lambda pair: -pair[0])
    return {
        "parameter_bytes": sum(size for size, _ in sized),
        "gradient_bytes": sum(size for size, v in sized if id(v) in trainable),
        "largest": [
            {"path": v.path, "shape": [int(d) for d in v.shape], "bytes": size}
            for size, v in sized[:LARGEST]
        ],
    }


def optimizer_bytes(copy: Any) -> int | None:
    """Bytes of a built optimizer's state (moments, iteration count); ``None`` before build."""
    optimizer = getattr(copy, "optimizer", None)
    variables = list(getattr(optimizer, "variables", []) or [])
    if not getattr(optimizer, "built", False) or not variables:
        return None
    return sum(nbytes(v) for v in variables)


def compiled_step(copy: Any, batch: Any) -> dict[str, int] | None:
    """What one compiled training step of ``copy`` (on its own device) holds for ``batch``, as
    the compiler reports it: ``step_temp_bytes`` (activations kept for the backward pass,
    gradients it keeps, workspace) and ``step_total_bytes`` (arguments, outputs that do not
    reuse an argument's buffer, temporaries). JAX only; ``None`` elsewhere."""
    import keras

    if keras.backend.backend() != "jax" or not getattr(copy.optimizer, "built", False):
        return None
    import jax
    import tensorflow as tf

    data = tf.nest.map_structure(lambda t: t.numpy() if hasattr(t, "numpy") else t, batch)
    state = (
        [v.value for v in copy.trainable_variables],
        [v.value for v in copy.non_trainable_variables],
        [v.value for v in copy.optimizer.variables],
        [v.value for v in copy.metrics_variables],
    )
    try:
        analysis = jax.jit(copy.train_step).lower(state, data).compile().memory_analysis()
        temp = int(analysis.temp_size_in_bytes)
        total = (
            int(analysis.argument_size_in_bytes)
            + int(analysis.output_size_in_bytes)
            - int(analysis.alias_size_in_bytes)
            + temp
        )
    except Exception:  # noqa: BLE001 - a backend that cannot analyse: the figures are unknown
        return None
    return {"step_temp_bytes": temp, "step_total_bytes": total}


def step_figures(copy: Any, batch: Any, per_replica_batch: int) -> dict[str, Any]:
    """Optimizer state and the compiled step's memory of a trained copy at the per-replica
    batch."""
    figures: dict[str, Any] = {"per_replica_batch": per_replica_batch}
    if (state := optimizer_bytes(copy)) is not None:
        figures["optimizer_bytes"] = state
    figures.update(compiled_step(copy, batch) or {})
    return figures


def device_memory(platform: str, measurements: dict[str, Any]) -> tuple[int, str] | None:
    """One device's memory in bytes and where the figure comes from: NVML's total for the
    smallest sampled GPU, or the host's RAM for a CPU device."""
    if platform == "gpu":
        totals = [g.get("memory_total_mb") for g in measurements.get("gpus") or []]
        totals = [t for t in totals if t]
        if not totals:
            return None
        return int(min(totals) * 2**20), "GPU memory (NVML)"
    if platform != "cpu":
        return None
    try:
        import psutil
    except ImportError:
        return None
    return int(psutil.virtual_memory().total), "host RAM"


def default_platform() -> str:
    """The platform the backend computes on when no mesh names one (``cpu``, ``gpu``, ``tpu``)."""
    import keras

    if keras.backend.backend() != "jax":
        return "cpu"
    import jax

    return str(jax.default_backend())


def memory_measurements(model: Any, measurements: dict[str, Any]) -> dict[str, Any]:
    """The step's figures (``measurements["memory"]``, from the one-device copy) completed with
    the user's model's weights and one device's memory."""
    memory = {**weight_figures(model), **measurements.get("memory", {})}
    platform = (measurements.get("distribution") or {}).get("platform") or default_platform()
    memory["platform"] = platform
    capacity = device_memory(platform, measurements)
    if capacity is not None:
        memory["device_bytes"], memory["device_source"] = capacity
    return memory
