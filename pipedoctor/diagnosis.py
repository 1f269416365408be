"""From measured throughputs to a verdict, and what it means for adding devices.

The thresholds are PD301's parameters (``rules/PD301-input-bound.toml``), so the verdict and
the input-bound finding can never disagree.
"""

from __future__ import annotations

from typing import Any

INPUT_BOUND, COMPUTE_BOUND, BALANCED = "input-bound", "compute-bound", "balanced"
INCONCLUSIVE = "inconclusive"
"""The throughputs' intervals straddle a threshold the verdict turns on: no verdict yet."""
VERDICTS = (INPUT_BOUND, COMPUTE_BOUND, BALANCED, INCONCLUSIVE)
NO_GAIN = 1.05
"""Below this measured gain a fix is within noise of doing nothing."""
WORTH_FIXING = 1.25
"""A fix measured to speed training up this much is worth a warning, whatever its rule says."""


def service_figures(measurements: dict[str, Any]) -> tuple[int, float, float] | None:
    """(workers, samples/s through local tf.data service workers, samples/s in-process), or
    ``None`` when the service was not measured."""
    service = measurements.get("data_service")
    if not isinstance(service, dict):
        return None
    rate, local = service.get("samples_per_s"), service.get("local_samples_per_s")
    if not rate or not local:
        return None
    return int(service.get("workers") or 1), float(rate), float(local)


def thresholds(overrides: dict[str, Any] | None = None) -> dict[str, float]:
    from pipedoctor.rules import load_catalog

    params = dict(load_catalog()["PD301"].params)
    params.update(overrides or {})
    return params


def verdict(measurements: dict[str, Any], params: dict[str, Any] | None = None) -> str | None:
    """``input-bound``: training well below the ceiling and the pipeline alone cannot keep up;
    ``compute-bound``: training reaches the ceiling; ``balanced``: training is below the
    ceiling although the pipeline alone could keep up (they slow each other down).
    ``None`` without the three throughputs."""
    pipeline = measurements.get("pipeline_samples_per_s")
    ceiling = measurements.get("ceiling_samples_per_s")
    training = measurements.get("training_samples_per_s")
    limits = thresholds(params)
    if not pipeline or not ceiling or not training:
        return wait_verdict(measurements, limits)
    question = undecided(measurements, limits)
    if question is not None:
        if question["compared"] != "training / ceiling" or not input_keeps_up(measurements, limits):
            return INCONCLUSIVE
        # Whether training reaches the ceiling is within the noise, but the pipeline alone is
        # clearly fast enough: input is not what limits the job. Unless training on the
        # pipeline with its best fix was measured faster (they slow each other down: balanced),
        # the model is taken as the limit (``noise_note``).
        return BALANCED if fix_frees_the_host(measurements) else COMPUTE_BOUND
    if training >= limits["training_to_ceiling"] * ceiling:
        return COMPUTE_BOUND
    if pipeline < limits["pipeline_to_ceiling"] * ceiling:
        return INPUT_BOUND
    return BALANCED


UNTIMED_CI = 0.25
"""The relative half-width taken for a throughput the check timed in too few blocks to give
a 95% interval (a slow model, a short budget: its ``*_ci`` is None): no interval is no
certainty. Figures given without any ``*_ci`` (read from a profile, written by hand) are
compared as they are."""


def _intervals(measurements: dict[str, Any]) -> dict[str, float | None]:
    found: dict[str, float | None] = {}
    for name in ("pipeline", "ceiling", "training"):
        key = f"{name}_ci"
        ci = measurements.get(key)
        found[name] = float(ci) if ci is not None else (UNTIMED_CI if key in measurements else None)
    return found


def fix_frees_the_host(measurements: dict[str, Any]) -> bool:
    """Training was measured faster on the pipeline with its best fix, beyond twice training's
    interval: the pipeline's use of the host holds training back (see
    ``measure/fixed_training.py``)."""
    fixed = measurements.get("training_with_fix_samples_per_s")
    training = measurements.get("training_samples_per_s")
    if not fixed or not training:
        return False
    spread = _intervals(measurements)["training"]
    return fixed / training > 1 + 2 * (UNTIMED_CI if spread is None else spread)


def input_keeps_up(measurements: dict[str, Any], limits: dict[str, float]) -> bool:
    """The pipeline alone delivers more than ``pipeline_to_ceiling`` of the ceiling beyond
    both intervals: whatever training reached, input is not what holds it back."""
    pipeline = measurements.get("pipeline_samples_per_s")
    ceiling = measurements.get("ceiling_samples_per_s")
    if not pipeline or not ceiling:
        return False
    cis = _intervals(measurements)
    spread = (cis["pipeline"] or 0.0) + (cis["ceiling"] or 0.0)
    return pipeline / ceiling >= limits["pipeline_to_ceiling"] * (1 + spread)


def undecided(measurements: dict[str, Any], limits: dict[str, float]) -> dict[str, Any] | None:
    """Where a comparison the verdict turns on lies within the throughputs' intervals (95%,
    relative half-widths added for a ratio; ``UNTIMED_CI`` for a throughput timed too briefly
    for one): which one, and about how much longer the timing must run for it to be decided
    (an interval narrows as the square root of the time). ``None`` when every comparison the
    verdict needs is clear."""
    rates = {n: measurements.get(f"{n}_samples_per_s") for n in ("pipeline", "ceiling", "training")}
    if not all(rates.values()):  # judged from the input-wait share, not from throughputs
        return None
    cis = _intervals(measurements)
    steps = [("training", "training_to_ceiling")]
    if rates["training"] < limits["training_to_ceiling"] * rates["ceiling"]:
        steps.append(("pipeline", "pipeline_to_ceiling"))  # decided only below the first
    for name, limit in steps:
        if cis[name] is None or cis["ceiling"] is None:
            continue
        ratio = rates[name] / rates["ceiling"]
        spread = cis[name] + cis["ceiling"]
        gap = abs(ratio / limits[limit] - 1)
        if gap <= spread:
            return {
                "compared": f"{name} / ceiling",
                "ratio": round(ratio, 3),
                "threshold": limits[limit],
                "spread": round(spread, 3),
                "longer": round(min((spread / max(gap, 0.01)) ** 2, 100.0), 1),
            }
    return None


def noise_note(measurements: dict[str, Any], limits: dict[str, float]) -> str | None:
    """What a ``compute-bound`` verdict given within the noise rests on (see ``verdict``)."""
    question = undecided(measurements, limits)
    if question is None:
        return None
    return (
        f"whether training reaches the compute ceiling is within the figures' noise (training "
        f"/ ceiling {question['ratio']:.2f} ±{question['spread']:.0%}, against "
        f"{question['threshold']:g}), but the pipeline alone is clearly faster than the "
        "ceiling: input is not what limits this job, and the model is taken as the limit"
    )


def wait_limit(limits: dict[str, float]) -> float:
    """The share of step time spent waiting for input at which training is input-bound: the
    complement of ``training_to_ceiling`` (a step that waits 20% of its time runs at 80% of
    what the model alone could do), which is also where xprof calls a program highly
    input-bound."""
    return 1.0 - limits["training_to_ceiling"]


def wait_verdict(measurements: dict[str, Any], limits: dict[str, float]) -> str | None:
    """The verdict from the share of step time spent waiting for input, where no throughputs
    were measured (a profile read back, a monitored run). It cannot tell ``balanced``: that
    needs the pipeline's rate alone."""
    wait = measurements.get("input_wait_fraction")
    if wait is None:
        return None
    return INPUT_BOUND if wait >= wait_limit(limits) else COMPUTE_BOUND


def _n(value: float) -> str:
    return f"{value:,.0f}"


def scaling_sentence(measurements: dict[str, Any], found: str | None) -> str:
    """One sentence: what the numbers mean for scaling out."""
    pipeline = measurements.get("pipeline_samples_per_s")
    ceiling = measurements.get("ceiling_samples_per_s")
    training = measurements.get("training_samples_per_s")
    if found is None:
        if pipeline:
            return (
                f"The input pipeline alone delivers {_n(pipeline)} samples/s; check it with the "
                "model to see whether that is enough for more devices."
            )
        return ""
    if not (pipeline and ceiling and training):  # judged from the input-wait share alone
        wait = measurements["input_wait_fraction"]
        if found == INPUT_BOUND:
            return (
                f"Training waits for input {wait:.0%} of its step time: more devices will not "
                "help until the pipeline is faster; fix it first."
            )
        return (
            f"Training waits for input only {wait:.0%} of its step time: the model is the "
            "limit, so more devices can help while the pipeline keeps ahead."
        )
    share = training / ceiling
    if found == INCONCLUSIVE:
        why = measurements.get("undecided") or undecided(measurements, thresholds()) or {}
        return (
            f"Inconclusive: {why.get('compared', 'a ratio')} is {why.get('ratio', 0):.2f} "
            f"±{why.get('spread', 0):.0%} against the threshold {why.get('threshold', 0):g}, so "
            f"the figures support no verdict yet; timing about x{why.get('longer', 1):g} longer "
            "would decide (a longer --timeout)."
        )
    if found == INPUT_BOUND:
        return (
            f"Training runs at {share:.0%} of what the model can do ({_n(training)} of "
            f"{_n(ceiling)} samples/s) because the input pipeline delivers only {_n(pipeline)} "
            "samples/s: more devices will not help until the pipeline is faster; fix it first."
        )
    if found == COMPUTE_BOUND:
        headroom = pipeline / training
        ahead = (
            f"it has {headroom:.1f}x headroom over today's training rate"
            if headroom >= 1
            else "alone it measured slower than training itself; see the notes"
        )
        return (
            f"Training runs at {share:.0%} of the compute ceiling: the model is the limit, so "
            f"more devices can help while the pipeline keeps ahead ({ahead})."
        )
    return (
        f"Training runs at {share:.0%} of the compute ceiling although the pipeline alone "
        f"({_n(pipeline)} samples/s) and the model alone ({_n(ceiling)}) are each fast enough: "
        "they compete for the same host, so more devices will not help until the input work "
        "is made cheaper (cache, lighter preprocessing) or moved off this host."
    )


def size(count: float) -> str:
    """Bytes as a person reads them: ``980 B``, ``11 KB``, ``612.5 MB``, ``79.6 GB`` (binary
    units, as NVML and the rest of the report count them)."""
    for unit, scale in (("GB", 2**30), ("MB", 2**20), ("KB", 2**10)):
        if count >= scale:
            value = count / scale
            return f"{value:,.1f} {unit}" if value < 100 else f"{value:,.0f} {unit}"
    return f"{count:,.0f} B"


def parallelism(memory: dict[str, Any], params: dict[str, Any] | None = None) -> dict[str, Any]:
    """Data or model parallel, decided from what one training step holds on one device against
    that device's memory. The step's total is the compiler's figure where the backend reports
    it (XLA knows which buffers are reused and which gradients are never held at once);
    otherwise parameters + gradients + optimizer state. ``fits`` is ``None`` without the
    device's memory."""
    from pipedoctor.rules import load_catalog

    fraction = {**load_catalog()["PD213"].params, **(params or {})}["memory_fraction"]
    weights = memory.get("parameter_bytes")
    need = memory.get("step_total_bytes") or (
        (weights or 0) + (memory.get("gradient_bytes") or 0) + (memory.get("optimizer_bytes") or 0)
    )
    device = memory.get("device_bytes")
    fits = None if not weights or not device else need <= fraction * device
    return {"fits": fits, "need_bytes": need, "fraction": fraction}


def parallelism_sentence(memory: dict[str, Any], params: dict[str, Any] | None = None) -> str:
    """``Fits on one device: data parallel is the right choice (...)`` or ``Does not fit on one
    device: shard it with ModelParallel; these weights are the largest: ...``, with the figures
    either way; empty when the device's memory is unknown."""
    decision = parallelism(memory, params)
    if decision["fits"] is None:
        return ""
    parts = [
        f"parameters {size(memory['parameter_bytes'])}",
        f"gradients {size(memory.get('gradient_bytes') or 0)}",
    ]
    state = memory.get("optimizer_bytes")
    parts.append(f"optimizer state {size(state) if state is not None else 'not measured'}")
    temp = memory.get("step_temp_bytes")
    parts.append(
        f"activations and workspace {size(temp)}" if temp is not None else "activations unknown"
    )
    batch = memory.get("per_replica_batch")
    step = "one training step" + (f" at a per-replica batch of {batch}" if batch else "")
    if memory.get("step_total_bytes"):
        step += f" needs {size(decision['need_bytes'])} as XLA compiles it"
        if temp is not None and temp < (memory.get("gradient_bytes") or 0):
            step += " (the update consumes the gradients as they are made)"
    else:
        step += f" needs at least {size(decision['need_bytes'])}"
    device = f"one device's {size(memory['device_bytes'])} of {memory.get('device_source')}"
    step = step[0].upper() + step[1:]
    if decision["fits"]:
        share = decision["need_bytes"] / memory["device_bytes"]
        used = f"{share:.1%}" if share >= 0.001 else "under 0.1%"
        return (
            f"Fits on one device: data parallel is the right choice. {step}: "
            f"{', '.join(parts)}; that is {used} of {device}."
        )
    return (
        "Does not fit on one device: shard it with ModelParallel; these weights are the "
        f"largest: {largest_weights(memory)}. {step}: {', '.join(parts)}; that is "
        f"over {decision['fraction']:.0%} of {device}."
    )


def largest_weights(memory: dict[str, Any], count: int = 3) -> str:
    """```embedding/embeddings` (1.2 GB, 41%)``, for the weights worth sharding first."""
    total = memory.get("parameter_bytes") or 1
    return ", ".join(
        f"`{w['path']}` ({size(w['bytes'])}, {w['bytes'] / total:.0%})"
        for w in (memory.get("largest") or [])[:count]
    )
