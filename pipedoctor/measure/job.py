"""One measured check of a live dataset (and model): the protocol, the samplers and the graph
doctor inside one budget. The child of ``pipedoctor check`` and ``pipedoctor.check()`` both
call this, so a script and a notebook are measured the same way."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.measure.protocol import Budget, run_protocol
from pipedoctor.measure.sampling import Sampling
from pipedoctor.measure.timeline import phases_from_rates
from pipedoctor.pipeline import Analysis, Location
from pipedoctor.report import Finding
from pipedoctor.rules import ALL_RULES, Selection, only, run_rules


@dataclass
class JobResult:
    measurements: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    """Findings from the live pipeline's graph, with measured gains."""


def measure_job(
    dataset: Any,
    model: Any,
    seconds: float,
    progress: Callable[[str], None] = lambda _: None,
    selection: Selection = ALL_RULES,
    where: Location | None = None,
    workers: int | None = None,
    validation: tuple[Any, Any] = (None, None),
) -> JobResult:
    """Raises ``MeasureError`` when nothing could be measured. ``where`` is the line that
    started training, for findings about the training setup; ``workers`` the worker count to
    explain file sharding for (default: the workers in ``TF_CONFIG``); ``validation`` is
    ``fit``'s validation data and batch size."""
    from pipedoctor.graph.doctor import diagnose
    from pipedoctor.measure.setup import cluster, evaluation_fact, live_setup

    started = time.perf_counter()
    budget = Budget(started + seconds)
    sampling = Sampling()
    measured = run_protocol(dataset, model, budget, progress, sampling.during)
    measurements = {**measured.to_measurements(), **sampling.measurements()}
    measurements["timeline"] = check_timeline(measured, sampling, started)
    notes = measured.notes + sampling.notes()
    if model is None:
        notes.append("no compiled Keras model was found: only the input pipeline was measured")
    batched = measured.batch_size is not None
    offload_if_saturated(dataset, batched, measurements, selection, budget.deadline, progress)
    sharded_over = workers or (cluster() or {}).get("workers")
    if sharded_over and sharded_over > 1:  # cheap: before the graph doctor takes what is left
        progress(f"working out which files each of {sharded_over} workers reads")
        notes += sharding(dataset, sharded_over, measurements, budget.deadline)
    progress("reading the pipeline's graph: per-stage rates and what-if fixes")
    free_mb = (measurements.get("host") or {}).get("available_ram_mb_min")
    graph = diagnose(
        dataset,
        budget.deadline,
        selection=selection,
        free_ram_bytes=int(free_mb * 1e6) if free_mb else None,
        ceiling=measurements.get("ceiling_samples_per_s"),
    )
    measurements.update(graph.measurements)
    setup, facts = live_setup(model, measured.batch_size, where)
    measurements.update(facts)
    if (evaluation := evaluation_fact(*validation)) is not None:
        setup.add("evaluation", where, **evaluation)
    if graph.measurements.get("input_files"):
        setup.add("input_files", where, count=graph.measurements["input_files"])
    if workers and not measurements.get("workers"):  # asked for: judge the job as if on them
        setup.add("workers", where, count=workers)
    projection(measurements)
    setup_findings = run_rules(
        Analysis("<job>", training=setup), "runtime", only(selection, "PD2"), measurements
    )
    measurements["check_seconds"] = round(time.perf_counter() - started, 1)
    return JobResult(measurements, notes + graph.notes, graph.findings + list(setup_findings))


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
    """What the devices would deliver with today's pipeline, and after the safe fixes."""
    ceiling = measurements.get("ceiling_samples_per_s")
    pipeline = measurements.get("pipeline_samples_per_s")
    if not ceiling or not pipeline:
        return
    measurements["projected_samples_per_s"] = round(min(pipeline, ceiling), 1)
    fixed, graph = (
        measurements.get("fixed_pipeline_samples_per_s"),
        measurements.get("graph_pipeline_samples_per_s"),
    )
    if fixed and graph:  # the fixes' measured gain, applied to the pipeline as measured alone
        measurements["projected_fixed_samples_per_s"] = round(
            min(pipeline * fixed / graph, ceiling), 1
        )
