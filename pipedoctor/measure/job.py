"""One measured check of a live dataset (and model): the protocol, the samplers and the graph
doctor inside one budget. The child of ``pipedoctor check`` and ``pipedoctor.check()`` both
call this, so a script and a notebook are measured the same way."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipedoctor.measure.placement import Placement
from pipedoctor.measure.protocol import Budget, Measured, run_protocol
from pipedoctor.measure.sampling import Sampling
from pipedoctor.measure.timeline import phases_from_rates
from pipedoctor.pipeline import Analysis, Location
from pipedoctor.progress import GRAPH_PHASE
from pipedoctor.report import Finding
from pipedoctor.rules import ALL_RULES, Selection, only, run_rules


@dataclass
class JobResult:
    measurements: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Findings from the live pipeline's graph, with measured gains."""


@dataclass
class JobOptions:
    """What a check is told besides its dataset and model, the same whoever timed the job.

    ``selection``: the rules to run. ``where``: the line that started training, for findings
    about the training setup. ``workers``: the worker count to explain file sharding for
    (default: the workers in ``TF_CONFIG``). ``validation``: ``fit``'s validation data and batch
    size. ``sites``: where the script set its Keras distribution and ``LayoutMap`` keys.
    ``profile``: a log directory to write a profile of a few more training steps to (a separate
    window, after the measured ones), read back. ``placement``: the job's, where no model tells
    it. ``built_by``: what ``fit`` was given when Keras built the pipeline from it (its stages
    are then no lines of the script, and their findings are left out). ``partial``: handed the
    result as it stands before the graph doctor starts, so that a check whose last phase runs
    past its time still has a report."""

    selection: Selection = ALL_RULES
    where: Location | None = None
    workers: int | None = None
    validation: tuple[Any, Any] = (None, None)
    sites: dict[str, Any] | None = None
    profile: Path | None = None
    placement: Placement | None = None
    built_by: str | None = None
    partial: Callable[[JobResult], None] | None = None


def measure_job(
    dataset: Any,
    model: Any,
    seconds: float,
    progress: Callable[[str], None] = lambda _: None,
    options: JobOptions | None = None,
) -> JobResult:
    """The protocol, then ``finish_job``. Raises ``MeasureError`` when nothing could be
    measured."""
    started = time.perf_counter()
    budget = Budget(started + seconds)
    sampling = Sampling()
    measured = run_protocol(dataset, model, budget, progress, sampling.during)
    if model is None:
        measured.notes.append(
            "no compiled Keras model was found: only the input pipeline was measured"
        )
    return finish_job(dataset, model, measured, sampling, budget, started, progress, options)


def finish_job(
    dataset: Any,
    model: Any,
    measured: Measured,
    sampling: Sampling,
    budget: Budget,
    started: float,
    progress: Callable[[str], None] = lambda _: None,
    options: JobOptions | None = None,
) -> JobResult:
    """Everything after the three throughputs, whoever timed them (the protocol on a copy of
    the model, or a custom loop timed in place): the samplers' summaries, the setup's facts,
    the graph doctor and the rules."""
    from pipedoctor.decide import shared_host
    from pipedoctor.graph.doctor import diagnose, free_ram
    from pipedoctor.measure.fixed_training import (
        RESERVE_S,
        best_fix,
        measure_training_with_fix,
    )
    from pipedoctor.measure.memory import memory_measurements
    from pipedoctor.measure.setup import cluster, evaluation_fact, last_batch_fact, live_setup

    o = options or JobOptions()
    selection, where, workers, sites, built_by = (
        o.selection, o.where, o.workers, o.sites, o.built_by
    )  # fmt: skip
    measurements = {**measured.to_measurements(), **sampling.measurements()}
    measurements["timeline"] = check_timeline(measured, sampling, started)
    notes = measured.notes + sampling.notes()
    if o.profile is not None:
        from pipedoctor.profile.capture import profile_window

        progress(f"profiling a few training steps into {o.profile}")
        profiled, profile_notes = profile_window(dataset, model, o.profile, budget.deadline)
        measurements.update(profiled)
        notes += profile_notes
    batched = measured.batch_size is not None
    offload_if_saturated(dataset, batched, measurements, selection, budget.deadline, progress)
    sharded_over = workers or (cluster() or {}).get("workers")
    if sharded_over and sharded_over > 1:  # cheap: before the graph doctor takes what is left
        progress(f"working out which files each of {sharded_over} workers reads")
        notes += sharding(dataset, sharded_over, measurements, budget.deadline)
    setup, facts = live_setup(model, measured.batch_size, where, o.placement, sites=sites)
    measurements.update(facts)
    if (evaluation := evaluation_fact(*o.validation)) is not None:
        setup.add("evaluation", where, **evaluation)
    if setup.has("built_before_distribution"):
        notes.append(
            "the figures are those of a copy built under the distribution: the script built "
            "its model or optimizer before setting it (PD211)"
        )
    if "distribution" in facts and (last := last_batch_fact(dataset)) is not None:
        setup.add("last_batch", where, **last)
    if model is not None and "memory" in measurements:
        measurements["memory"] = memory_measurements(model, measurements)
        setup.add("memory", where, **measurements["memory"])
    if workers and not measurements.get("workers"):  # asked for: judge the job as if on them
        setup.add("workers", where, count=workers)
    if built_by is not None:  # Keras's own pipeline: no stage or fix of it is the script's
        return assemble(measurements, notes, setup, None, selection, built_by, started, where)
    if o.partial is not None:
        o.partial(
            assemble(
                {**measurements}, notes + [GRAPH_NOT_READ], setup, None, selection, built_by,
                started, where,
            )
        )  # fmt: skip
    progress(f"{GRAPH_PHASE}: per-stage rates and what-if fixes")
    free_mib = (measurements.get("host") or {}).get("available_ram_mb_min")  # MiB, from psutil
    shared = model is not None and shared_host(measurements) is not None
    graph = diagnose(  # last: it takes what is left of the budget
        dataset,
        budget.deadline - (RESERVE_S if shared else 0.0),
        selection=selection,
        free_ram_bytes=int(free_mib * 2**20) if free_mib else free_ram(),
        ceiling=measurements.get("ceiling_samples_per_s"),
        pipeline_rate=measurements.get("pipeline_samples_per_s"),
        progress=progress,
    )
    if shared and best_fix(graph) is not None:
        progress("the host is shared: timing training on the pipeline with its best fix")
        notes += measure_training_with_fix(dataset, model, graph, measurements, budget.deadline)
    return assemble(measurements, notes, setup, graph, selection, built_by, started, where)


GRAPH_NOT_READ = (
    "the check's time ran out while it read the pipeline's graph: no per-stage rates, no "
    "what-if fixes, and no findings from the live graph (give it a longer --timeout)"
)


def assemble(
    measurements: dict[str, Any],
    notes: list[str],
    setup: Any,
    graph: Any,
    selection: Selection,
    built_by: str | None,
    started: float,
    where: Location | None,
) -> JobResult:
    """The job's result from what was measured and, when it was read, the pipeline's graph
    (``graph``, the doctor's diagnosis, or ``None``)."""
    if graph is not None:
        measurements.update(graph.measurements)
        notes = notes + graph.notes
        if graph.measurements.get("input_files"):
            setup.add("input_files", where, count=graph.measurements["input_files"])
    if "profile" in measurements:
        from pipedoctor.profile.reader import attach_sources

        attach_sources(measurements)
    projection(measurements)
    notes = notes + surprises(measurements)
    setup_findings = run_rules(
        Analysis("<job>", training=setup), "runtime", only(selection, "PD2"), measurements
    )
    measurements["check_seconds"] = round(time.perf_counter() - started, 1)
    pipeline_findings = graph.findings if graph is not None else []
    if built_by is not None:
        measurements["input_built_by_keras"] = built_by
        notes.append(keras_input_note(built_by))
        pipeline_findings = []
    return JobResult(measurements, notes, pipeline_findings + list(setup_findings))


GRAIN_INPUT = "a Grain"
"""How a Grain input's name starts (``a Grain dataset (MapDataset)``, ``a Grain DataLoader``):
Grain, not tf.data, runs it."""


def keras_input_note(built_by: str) -> str:
    """What the check could and could not read of an input ``fit`` was not given as a
    ``tf.data.Dataset``."""
    if built_by.startswith(GRAIN_INPUT):
        return (
            f"`fit` was given {built_by}: Grain runs its stages in Python and Keras wraps its "
            "batches in a tf.data pipeline (`from_generator`), which is what was timed as the "
            "pipeline alone; Grain's own stages are not read here, so they get no per-stage rates "
            "and no findings. If the pipeline is what is slow, give Grain read threads or worker "
            "processes (`to_iter_dataset(grain.ReadOptions(num_threads=...))` or `mp_prefetch` "
            "on a dataset, `worker_count` on a `DataLoader`)"
        )
    return (
        f"`fit` was given {built_by}: Keras builds the tf.data pipeline for it (batch, "
        "shuffle, prefetch), so its stages are not lines of the script and get no per-stage "
        "rates, fixes or findings here; if the pipeline is what is slow, build it with tf.data "
        "(parallel map, cache, prefetch) and hand `fit` the dataset"
    )


def check_timeline(measured: Any, sampling: Sampling, started: float) -> dict[str, Any]:
    """Each phase's rate over time, and the host and GPUs while training was timed, in
    seconds from the check's start (the samplers' clock is ``time.monotonic()``)."""
    phases = {"pipeline": measured.pipeline, "ceiling": measured.ceiling,
              "training": measured.training}  # fmt: skip
    monotonic_origin = started - (time.perf_counter() - time.monotonic())
    return {
        "phases": phases_from_rates(phases, started),
        **sampling.series(monotonic_origin),
    }


def offload_if_saturated(
    dataset: Any,
    batched: bool,
    measurements: dict[str, Any],
    selection: Selection,
    deadline: float,
    progress: Callable[[str], None],
) -> None:
    """When the host CPU is saturated (PD302 fires), time the pipeline through a local tf.data
    service, so that the advice to move preprocessing off the host rests on a figure."""
    if not list(run_rules(Analysis("<job>"), "runtime", only(selection, "PD302"), measurements)):
        return
    from pipedoctor.measure.service import measure_service

    progress("host CPU saturated: timing the pipeline through a local tf.data service")
    measurements["data_service"] = measure_service(dataset, batched, deadline)


def sharding(
    dataset: Any, workers: int, measurements: dict[str, Any], deadline: float
) -> list[str]:
    """Each worker's files under the pipeline's auto-shard policy, into ``measurements``."""
    import tensorflow as tf

    from pipedoctor.measure.protocol import brief

    try:
        from pipedoctor.graph.sharding import explain_sharding

        measurements["sharding"] = explain_sharding(dataset, workers, deadline)
    except (ImportError, tf.errors.OpError, ValueError, TypeError, AttributeError) as exc:
        return [f"file sharding across {workers} workers could not be worked out: {brief(exc)}"]
    return []


def projection(measurements: dict[str, Any]) -> None:
    """One set of figures for every renderer: the pipeline with its fixes on the same scale as
    the pipeline alone (its rate times the fixes' measured gain together), and what the devices
    would deliver with today's pipeline and with the fixed one (each capped by the ceiling)."""
    pipeline = measurements.get("pipeline_samples_per_s")
    fixed, graph = (
        measurements.get("fixed_pipeline_samples_per_s"),
        measurements.get("graph_pipeline_samples_per_s"),
    )
    if pipeline and fixed and graph:
        measurements["fixes_gain"] = round(fixed / graph, 2)
        measurements["fixed_pipeline_samples_per_s"] = fixed = round(pipeline * fixed / graph, 1)
    else:
        fixed = measurements["fixed_pipeline_samples_per_s"] = None
    ceiling = measurements.get("ceiling_samples_per_s")
    if not ceiling or not pipeline:
        return
    measurements["projected_samples_per_s"] = round(min(pipeline, ceiling), 1)
    if fixed:
        measurements["projected_fixed_samples_per_s"] = round(min(fixed, ceiling), 1)


FAST_BATCHES_PER_S = 1000
"""Above this many batches a second, reading a pipeline from Python costs a visible share."""


def surprises(measurements: dict[str, Any]) -> list[str]:
    """Notes for figures that look wrong at first sight: training faster than the pipeline
    alone, or faster than the compute ceiling, with what explains them."""
    notes = []
    pipeline, ceiling, training = (
        measurements.get(f"{name}_samples_per_s") for name in ("pipeline", "ceiling", "training")
    )
    cached = any(s.get("op") == "cache" for s in measurements.get("stages") or [])
    for name, rate, label in (("pipeline", pipeline, "the pipeline alone"),
                              ("ceiling", ceiling, "the compute ceiling")):  # fmt: skip
        if not rate or not training or training <= rate:
            continue
        intervals = (measurements.get(f"{name}_ci"), measurements.get("training_ci"))
        margin = sum(ci or 0 for ci in intervals)
        why = f"within the two measurements' 95% intervals (±{margin:.0%} together)"
        if None in intervals or training > rate * (1 + margin):
            why = (
                "too few timed blocks for a 95% interval: the difference may be noise"
                if None in intervals
                else "beyond their 95% intervals: the host was busier while one was timed"
            )
            if name == "pipeline" and cached:
                why = (
                    "the pipeline alone was timed first, while its `cache()` was still filling; "
                    "training read the filled cache"
                )
            elif name == "pipeline" and _batches_per_s(rate, measurements) > FAST_BATCHES_PER_S:
                why = (
                    "the pipeline alone is read batch by batch from Python, training reads it "
                    "inside its compiled step, and at this many batches a second that shows"
                )
        notes.append(
            f"training measured faster than {label} ({training:,.0f} against {rate:,.0f} "
            f"samples/s): {why}"
        )
    return notes


def _batches_per_s(rate: float, measurements: dict[str, Any]) -> float:
    batch = measurements.get("batch_size") or 1
    return rate / batch
