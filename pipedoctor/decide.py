"""Decisions before buying hardware, from the figures a check measured: how many devices the
pipeline and the host can feed, what N devices would get, and how long the whole run takes.

This layer reads measurements and never times anything. Every figure it gives is measured or
derived from measured ones, and ``derivation`` says how, so the JSON can be checked by hand:
nothing is assumed about hardware the user does not have (no interconnect, no device speed).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def _rate(measurements: Mapping[str, Any], key: str) -> float | None:
    value = measurements.get(key)
    return float(value) if isinstance(value, int | float) and value > 0 else None


def one_device_rate(measurements: Mapping[str, Any]) -> float | None:
    """What one device's training step takes in samples/s: the one-device ceiling of a
    multi-device job, or the ceiling of a job on one device."""
    if (measurements.get("replicas") or 1) > 1 or (measurements.get("devices") or 1) > 1:
        return _rate(measurements, "ceiling_1_samples_per_s")
    return _rate(measurements, "ceiling_samples_per_s")


def decide(measurements: Mapping[str, Any], devices: int | None = None) -> dict[str, Any]:
    """The decision figures (empty where the check measured too little); ``devices`` is the
    count the user is about to buy (``check --devices N``)."""
    one = one_device_rate(measurements)
    result: dict[str, Any] = {}
    derivation: dict[str, str] = {}
    if one is not None:
        result["one_device_samples_per_s"] = round(one, 1)
        for name, key in (("today", "pipeline_samples_per_s"),
                          ("with_fixes", "fixed_pipeline_samples_per_s")):  # fmt: skip
            rate = _rate(measurements, key)
            if rate is not None:
                result[f"devices_fed_{name}"] = round(rate / one, 2)
                derivation[f"devices_fed_{name}"] = f"{key} / one-device ceiling"
        host = _host(measurements, one, devices)
        if host:
            result["host"] = host
            derivation["host"] = (
                "cores / (pipeline CPU seconds per sample, timed alone) / one-device ceiling"
            )
        service = _service(measurements, one, devices)
        if service:
            result["data_service"] = service
            derivation["data_service"] = "service rate / its workers; workers for N devices"
        if devices:
            result["projection"] = _projection(measurements, one, devices)
    run = run_length(measurements)
    if run:
        result["run"] = run
        derivation["run"] = "epochs x steps per epoch x batch / measured training rate"
    if result:
        result["derivation"] = derivation
    return result


def _host(measurements: Mapping[str, Any], one: float, devices: int | None) -> dict[str, Any]:
    cpu = measurements.get("pipeline_cpu_s_per_sample")
    cores = (measurements.get("host") or {}).get("cpu_count")
    if not isinstance(cpu, int | float) or cpu <= 0 or not isinstance(cores, int) or cores < 1:
        return {}
    most = cores / cpu  # samples/s this host's cores could produce at today's cost
    host: dict[str, Any] = {
        "cores": cores,
        "cpu_ms_per_sample": round(cpu * 1000, 4),
        "max_samples_per_s": round(most, 1),
        "devices_fed": round(most / one, 2),
    }
    for n in sorted({devices or 0, 8} - {0}):
        host[f"cores_for_{n}_devices"] = round(n * one * cpu, 1)
    return host


def _service(measurements: Mapping[str, Any], one: float, devices: int | None) -> dict[str, Any]:
    service = measurements.get("data_service") or {}
    rate, workers = service.get("samples_per_s"), service.get("workers")
    if not isinstance(rate, int | float) or rate <= 0 or not isinstance(workers, int):
        return {}
    per_worker = rate / max(1, workers)
    figures: dict[str, Any] = {"samples_per_s_per_worker": round(per_worker, 1)}
    for n in sorted({devices or 0, 8} - {0}):
        figures[f"workers_for_{n}_devices"] = max(1, -int(-(n * one) // per_worker))
    return figures


def _projection(measurements: Mapping[str, Any], one: float, devices: int) -> dict[str, Any]:
    """What ``devices`` devices would need from the input, and what is known of their
    compute: the scaling efficiency measured on the replicas that exist, or nothing."""
    needed = devices * one
    projection: dict[str, Any] = {"devices": devices, "input_needed_samples_per_s": round(needed)}
    for name, key in (("today", "pipeline_samples_per_s"),
                      ("with_fixes", "fixed_pipeline_samples_per_s")):  # fmt: skip
        rate = _rate(measurements, key)
        if rate is not None:
            projection[f"input_keeps_up_{name}"] = rate >= needed
    efficiency = measurements.get("scaling_efficiency")
    replicas = measurements.get("replicas") or 1
    if isinstance(efficiency, int | float) and replicas > 1:
        projection["scaling_efficiency_measured"] = {"replicas": replicas, "value": efficiency}
    else:
        projection["scaling_efficiency_measured"] = None
    return projection


def run_length(measurements: Mapping[str, Any]) -> dict[str, Any]:
    """How long the whole ``fit`` takes at the measured training rate, from its epochs and its
    steps per epoch (or the dataset's cardinality); ``known: False`` with the reason when the
    run has no end the check can see."""
    fit = measurements.get("fit")
    if not isinstance(fit, Mapping):
        return {}
    epochs = fit.get("epochs") or 1
    steps = fit.get("steps_per_epoch") or measurements.get("cardinality")
    batch = measurements.get("batch_size")
    training = _rate(measurements, "training_samples_per_s")
    if not steps:
        return {
            "known": False,
            "why": "the dataset's length is not known (it repeats forever, or tf.data cannot "
            "tell) and `fit` has no `steps_per_epoch`: the run ends when the data or the script "
            "stops it, which the check cannot see",
        }
    if not batch or training is None:
        return {}
    samples = int(epochs) * int(steps) * int(batch)
    seconds = samples / training
    return {
        "known": True,
        "epochs": int(epochs),
        "steps_per_epoch": int(steps),
        "samples": samples,
        "seconds": round(seconds, 1),
    }


def saving_at_most(seconds: float, devices: int) -> float:
    """The most that ``devices`` devices could save on a run of ``seconds``: perfect scaling,
    which no real job reaches."""
    return seconds * (1 - 1 / devices)


def run_size(run: dict[str, Any]) -> str:
    """``3 epochs x 16 steps`` (``1 epoch x 5 steps``): a run's length as the report says it."""
    epochs, steps = run.get("epochs"), run.get("steps_per_epoch")
    return f"{epochs} epoch{'' if epochs == 1 else 's'} x {steps:,} step{'' if steps == 1 else 's'}"


def duration(seconds: float, *, about: bool = False) -> str:
    """``42 s``, ``12 min``, ``3.4 h``: a length a person reads at a glance, and ``under a
    second`` rather than "0 s", which reads as no time at all. Every length pipedoctor prints
    in words comes from here, so they all read alike. ``about``: an estimate (``about 42 s``;
    a length under a second needs no "about")."""
    if seconds < 1:
        return "under a second"
    if seconds < 90:
        text = f"{seconds:.0f} s"
    elif seconds < 5400:
        text = f"{seconds / 60:.0f} min"
    else:
        text = f"{seconds / 3600:.1f} h"
    return f"about {text}" if about else text


STEPS = ("fix the input pipeline", "mixed precision on the GPU", "more devices")
"""The order in which scaling pays: each step only once the one before it is done."""


SHARED_HOST_MARGIN = 1.25
"""The pipeline alone and the model alone each this much faster than training together: what
holds training back is that they share the host, not either of them."""


def shared_host(measurements: Mapping[str, Any]) -> dict[str, Any] | None:
    """Where the pipeline and the model each keep up alone but not together: the cores the
    job kept busy while training, and about how many it would need to train at its compute
    ceiling (the same work per sample, at the ceiling's rate). None where one of them is the
    limit, or the figures are missing."""
    pipeline = _rate(measurements, "pipeline_samples_per_s")
    ceiling = _rate(measurements, "ceiling_samples_per_s")
    training = _rate(measurements, "training_samples_per_s")
    if pipeline is None or ceiling is None or training is None:
        return None
    if pipeline < SHARED_HOST_MARGIN * training or ceiling < SHARED_HOST_MARGIN * training:
        return None
    found: dict[str, Any] = {"ceiling_over_training": round(ceiling / training, 2)}
    host = measurements.get("host") if isinstance(measurements.get("host"), Mapping) else {}
    cores, busy = host.get("cpu_count"), _rate(measurements, "host_cpu_percent")
    if isinstance(cores, int) and cores > 0 and busy is not None:
        used = busy / 100 * cores
        found.update(
            cores=cores,
            busy_cores=round(used, 1),
            cores_needed=round(used * ceiling / training, 1),
            derivation="cores busy while training x ceiling / training",
        )
    return found


def next_step(
    measurements: Mapping[str, Any], verdict: str | None, best_gain: float | None = None
) -> str | None:
    """Which of the three steps the job is at, and why, from the verdict, what the check saw
    of the devices and the precision policy, and the largest end-to-end gain a fix measured
    (``best_gain``): no step says "fix the input pipeline" when no fix pays for training."""
    if verdict is None or verdict == "inconclusive":
        return None  # no step before the figures decide
    shared = shared_host(measurements) if verdict == "balanced" else None
    if shared is not None:
        return _shared_host_step(shared, best_gain)
    if verdict in ("input-bound", "balanced"):
        return (
            f"step 1 of 3, {STEPS[0]}: training waits for its input, so neither mixed "
            "precision nor more devices can help yet; the findings below come in order of "
            "measured gain"
        )
    gpus = measurements.get("gpus") or []
    policy = str(measurements.get("mixed_precision") or "float32")
    if gpus and not policy.startswith("mixed"):
        return (
            f"step 2 of 3, {STEPS[1]}: the input keeps up and the model runs in {policy}; "
            '`keras.mixed_precision.set_global_policy("mixed_float16")` (or '
            "`mixed_bfloat16`) usually speeds a GPU step up before any device is added"
        )
    done = "mixed precision is on" if gpus else "no GPU was seen, so mixed precision is moot"
    return (
        f"step 3 of 3, {STEPS[2]}: the input keeps up and {done}; more devices can help now, "
        "by as much as the scaling efficiency allows (`check --devices N` shows whether the "
        "input would still keep up)"
    )


def _shared_host_step(shared: Mapping[str, Any], best_gain: float | None) -> str:
    """Step 1 where the pipeline and the model compete for the host: a fix measured to pay for
    training comes first; without one, the host itself is what to change."""
    from pipedoctor.diagnosis import NO_GAIN

    need = ""
    if "cores_needed" in shared:
        need = (
            f"; the job kept {shared['busy_cores']:g} of the host's {shared['cores']} cores busy "
            f"and needs about {max(shared['cores_needed'], shared['busy_cores']):.1f} to train "
            "at its compute ceiling"
        )
    if best_gain is not None and best_gain >= NO_GAIN:
        return (
            f"step 1 of 3, {STEPS[0]}: the pipeline and the model each keep up alone but "
            f"compete for the host{need}; the first fix below measured x{best_gain:.2f} for "
            "training, by leaving the model more of the host"
        )
    return (
        "step 1 of 3, free the host: the pipeline and the model each keep up alone but "
        f"compete for the host{need}; no fix of the pipeline measured a gain for training, so "
        "give the job more cores, or move its input work off this host (tf.data service), "
        "before adding devices"
    )
