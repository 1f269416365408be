"""Detectors for the measured rules (PD30x): they read the check's measurements, never time
anything themselves."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

from pipedoctor import diagnosis
from pipedoctor.measure.rates import share_text
from pipedoctor.rules import Context, Hit, detector


@detector("PD301")
def input_bound(context: Context) -> Iterator[Hit]:
    m = context.measurements
    if diagnosis.verdict(m, context.params) != diagnosis.INPUT_BOUND:
        return
    pipeline, ceiling, training = (
        m.get("pipeline_samples_per_s"), m.get("ceiling_samples_per_s"),
        m.get("training_samples_per_s"),
    )  # fmt: skip
    if not (pipeline and ceiling and training):  # judged from the input-wait share alone
        wait = m["input_wait_fraction"]
        limit = diagnosis.wait_limit(diagnosis.thresholds(context.params))
        yield Hit(
            None,
            f"Training waits for input {share_text(wait, m.get('input_wait_ci'))} of its step "
            f"time over the steps measured (95% interval; input-bound from {limit:.0%}): adding "
            "devices will not help until the pipeline is faster.",
            headroom=round(1 / (1 - wait), 2) if wait < 0.99 else None,
        )
        return
    yield Hit(
        None,
        f"Training reaches {training / ceiling:.0%} of the compute ceiling "
        f"({training:,.0f} of {ceiling:,.0f} samples/s) and the pipeline alone delivers "
        f"{pipeline:,.0f} samples/s: adding devices will not help until the pipeline is "
        "faster.",
        headroom=round(ceiling / training, 2),
    )


@detector("PD302")
def host_cpu_saturated(context: Context) -> Iterator[Hit]:
    m = context.measurements
    cpu = m.get("host_cpu_percent")
    judged = diagnosis.verdict(m, context.params_of("PD301"))  # the user's thresholds
    if cpu is None or judged not in (diagnosis.INPUT_BOUND, diagnosis.BALANCED):
        return
    host = m.get("host") or {}
    typical = host.get("cpu_percent_p50")
    limit = context.param("cpu_percent")
    if cpu < limit and (typical is None or typical < limit):
        return
    cores = host.get("cpu_count")
    busy = f"{cpu:.0f}% busy on average"
    if typical is not None:
        busy += f", {typical:.0f}% or more half of the time"
    yield Hit(
        None,
        f"The host CPUs are {busy} during training"
        + (f" (all {cores} cores)" if cores else "")
        + ": more parallelism cannot help; cache decoded data, make preprocessing cheaper, "
        "or move it off this host (tf.data service)." + _service_measured(m),
    )


def _service_measured(m: dict) -> str:
    """What the local tf.data service measurement found, as evidence for the advice."""
    figures = diagnosis.service_figures(m)
    if figures is None:
        return ""
    workers, rate, local = figures
    gain = rate / local
    verdict = (
        "so workers on other hosts, adding their own cores, are where it pays off"
        if gain < diagnosis.NO_GAIN
        else "already faster on this host; more on other hosts add their own cores"
    )
    return (
        f" Measured: {workers} local tf.data service workers delivered {rate:,.0f} samples/s "
        f"against {local:,.0f} in-process (x{gain:.2f}), {verdict}."
    )


@detector("PD303")
def accelerator_idle(context: Context) -> Iterator[Hit]:
    gpus = context.measurements.get("gpus") or []
    if not gpus:
        return
    idle = context.param("idle_utilization")
    gap = context.param("straggler_gap")
    busiest = max(g.get("utilization_mean") or 0.0 for g in gpus)
    for gpu in gpus:
        mean = gpu.get("utilization_mean")
        if mean is None:
            continue
        label = f"GPU {gpu.get('index')} ({gpu.get('name', 'GPU')})"
        if mean < idle:
            spread = ", ".join(
                f"{p} {gpu[f'utilization_{p}']:.0f}%"
                for p in ("p5", "p95")
                if gpu.get(f"utilization_{p}") is not None
            )
            yield Hit(
                None,
                f"{label} is busy only {mean:.0f}% of the time during training"
                + (f" ({spread})." if spread else "."),
            )
        elif len(gpus) > 1 and busiest - mean > gap:
            yield Hit(
                None,
                f"{label} averages {mean:.0f}% while the busiest GPU averages {busiest:.0f}%: "
                "a straggler that every synchronous step waits for.",
            )


@detector("PD304")
def overhead_bound_model(context: Context) -> Iterator[Hit]:
    step = (context.measurements.get("step_ms") or {}).get("ceiling")
    if step is not None and step < context.param("min_step_ms"):
        yield Hit(
            None,
            f"A training step on synthetic data takes only {step:.1f} ms: per-step overhead "
            "(dispatch, synchronisation) is a large share of it, and more devices may be slower. "
            "Use a larger batch or `steps_per_execution`.",
        )


@detector("PD305")
def poor_scaling(context: Context) -> Iterator[Hit]:
    m = context.measurements
    efficiency = m.get("scaling_efficiency")
    if efficiency is None or efficiency >= context.param("min_efficiency"):
        return
    devices = (m.get("distribution") or {}).get("devices") or m.get("replicas")
    unit = "replicas" if devices == m.get("replicas") else "devices"
    yield Hit(
        None,
        f"Scaling efficiency is {efficiency:.0%} on {devices} {unit}: the compute ceiling is "
        f"{m.get('ceiling_n_samples_per_s'):,.0f} samples/s on all of them against "
        f"{m.get('ceiling_1_samples_per_s'):,.0f} on one (with its share of the batch); "
        "synchronisation eats the rest. A larger per-replica batch or fewer, busier devices help.",
    )


@detector("PD306")
def replica_divergence(context: Context) -> Iterator[Hit]:
    m = context.measurements
    tolerance = context.param("loss_tolerance")
    delta = m.get("parity_max_loss_delta")
    weights = m.get("parity_max_weight_delta")
    apart = [d for d in (delta, weights) if d is not None and d > tolerance]
    if not apart:
        return
    losses = m.get("parity_losses") or {}
    what = (
        f"the loss on {m.get('replicas')} replicas differs from one replica by up to {delta:.1%}"
        if delta is not None and delta > tolerance
        else "the losses agree"
    )
    if weights is not None:
        what += f", and the trained weights by {weights:.1%}"
    yield Hit(
        None,
        f"On the same {m.get('parity_steps')} batches from the same weights, {what} "
        f"(tolerance {tolerance:g}, relative): losses on one replica "
        f"{losses.get('one_replica')}, on all {losses.get('all_replicas')}. More than float "
        "reordering: per-replica statistics (BatchNormalization), loss scaling or a custom "
        "training step differ between the two.",
    )


@detector("PD307")
def slow_worker(context: Context) -> Iterator[Hit]:
    """Reads ``per_worker``: one summary per worker of a multi-worker run (``worker`` name,
    ``step_ms`` median step time, optional ``input_wait_fraction``), from a monitored run or
    from several hosts' profiles."""
    workers = [
        w
        for w in context.measurements.get("per_worker") or []
        if isinstance(w, dict) and isinstance(w.get("step_ms"), (int, float)) and w["step_ms"] > 0
    ]
    if len(workers) < 2:
        return
    typical = statistics.median(w["step_ms"] for w in workers)
    slowest = max(workers, key=lambda w: w["step_ms"])
    excess = slowest["step_ms"] / typical - 1.0
    if excess < context.param("straggler_gap"):
        yield from _waits_longer(context, workers) or _fed_slowest(context, workers)
        return
    message = (
        f"Worker {slowest.get('worker', '?')} takes {slowest['step_ms']:,.1f} ms per step "
        f"against a median of {typical:,.1f} ms over {len(workers)} workers (+{excess:.0%}): "
        "in synchronous training every worker waits for it at each step."
    )
    waits = [w["input_wait_fraction"] for w in workers if w.get("input_wait_fraction") is not None]
    own = slowest.get("input_wait_fraction")
    if own is not None and len(waits) >= 2:
        usual = statistics.median(waits)
        if own - usual >= context.param("input_wait_gap"):
            message += (
                f" It waits for input {own:.0%} of its step time against {usual:.0%} on the "
                "median worker: its input is slower (an uneven file share, a slower disk, or a "
                "busier host)."
            )
        else:
            message += (
                f" Its input wait ({own:.0%}) is like the others' ({usual:.0%}): its compute is "
                "slower."
            )
    yield Hit(None, message)


def _waits_longer(context: Context, workers: list[dict]) -> list[Hit]:
    """Synchronous training evens the step times out (every worker's step ends at the same
    all-reduce), so a worker fed more slowly shows in its input wait instead: it waits for its
    batches while the others wait for it inside their steps."""
    waits = [w for w in workers if isinstance(w.get("input_wait_fraction"), (int, float))]
    if len(waits) < 2:
        return []
    hungriest = max(waits, key=lambda w: w["input_wait_fraction"])
    own = hungriest["input_wait_fraction"]
    rest = statistics.median(w["input_wait_fraction"] for w in waits if w is not hungriest)
    if own - rest < context.param("input_wait_gap"):
        return []
    return [
        Hit(
            None,
            f"Worker {hungriest.get('worker', '?')} waits for input {own:.0%} of its step time "
            f"against {rest:.0%} on the other workers, with step times within "
            f"{context.param('straggler_gap'):.0%} of each other: in synchronous training the "
            "others wait for it inside their steps. Its input is slower (an uneven file share, a "
            "slower disk, or a busier host)." + _alone(workers, hungriest),
        )
    ]


def _alone(workers: list[dict], worker: dict) -> str:
    """What the worker's own pipeline gave read alone against the others', where probed."""
    own = worker.get("pipeline_samples_per_s")
    others = [w.get("pipeline_samples_per_s") for w in workers if w is not worker]
    if not _positive(own) or not others or not all(_positive(rate) for rate in others):
        return ""
    return (
        f" Read alone, its own pipeline gives {own:,.0f} samples/s against "
        f"{statistics.median(others):,.0f} on the other workers."
    )


def _positive(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0


def _fed_slowest(context: Context, workers: list[dict]) -> list[Hit]:
    """Under ``MultiWorkerMirroredStrategy`` every dequeue all-reduces too, so even the input
    waits come out alike. Each worker's own pipeline, read alone after training (the monitor's
    probe), tells which one feeds the job slowest; it counts when it gives barely more than
    training takes from each worker."""
    rated = [w for w in workers if _positive(w.get("pipeline_samples_per_s"))]
    if len(rated) < 2:
        return []
    slowest = min(rated, key=lambda w: w["pipeline_samples_per_s"])
    own = slowest["pipeline_samples_per_s"]
    usual = statistics.median(w["pipeline_samples_per_s"] for w in rated if w is not slowest)
    taken = slowest.get("samples_per_s")
    if own > (1 - context.param("pipeline_gap")) * usual:
        return []
    if not _positive(taken) or own > context.param("pipeline_margin") * taken:
        return []  # slower than the others, yet fast enough for what training takes
    return [
        Hit(
            None,
            f"Worker {slowest.get('worker', '?')}'s own input pipeline, read alone, gives "
            f"{own:,.0f} samples/s against {usual:,.0f} on the other workers, and training takes "
            f"{taken:,.0f} samples/s from each worker: every step waits for its batches, so the "
            "job runs at its pace. Step times and input waits look alike on every worker "
            "because each step's all-reduce makes all of them wait for the slowest. Its input "
            "is slower: an uneven file share, a slower disk, or a busier host.",
        )
    ]


@detector("PD320")
def one_device_enough(context: Context) -> Iterator[Hit]:
    """The run's length from the decision layer (``measurements["decision"]["run"]``)."""
    from pipedoctor.decide import duration, run_size, saving_at_most

    decision = context.measurements.get("decision") or {}
    run = decision.get("run") or {}
    if not run.get("known"):
        return
    seconds = float(run["seconds"])
    devices = int((decision.get("projection") or {}).get("devices") or context.param("devices"))
    saving = saving_at_most(seconds, devices)
    short = seconds < context.param("max_run_s")
    if not short and saving >= context.param("min_saving_s"):
        return
    rate = context.measurements.get("training_samples_per_s") or 0
    why = (
        f"shorter than {duration(context.param('max_run_s'))}"
        if short
        else f"so {devices} devices could save at most {duration(saving)}"
    )
    yield Hit(
        None,
        f"The whole run ({run_size(run)}, "
        f"{run['samples']:,} samples) takes {duration(seconds, about=True)} at the measured "
        f"{rate:,.0f} samples/s, {why}: one device is enough. Even with perfect scaling, "
        f"{devices} devices would save at most {duration(saving)}.",
    )
