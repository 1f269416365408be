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
) -> JobResult:
    """Raises ``MeasureError`` when nothing could be measured. ``where`` is the line that
    started training, for findings about the training setup."""
    from pipedoctor.graph.doctor import diagnose
    from pipedoctor.measure.setup import live_setup

    started = time.perf_counter()
    budget = Budget(started + seconds)
    sampling = Sampling()
    measured = run_protocol(dataset, model, budget, progress, sampling.during)
    measurements = {**measured.to_measurements(), **sampling.measurements()}
    notes = measured.notes + sampling.notes()
    if model is None:
        notes.append("no compiled Keras model was found: only the input pipeline was measured")
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
    if graph.measurements.get("input_files"):
        setup.add("input_files", where, count=graph.measurements["input_files"])
    projection(measurements)
    setup_findings = run_rules(
        Analysis("<job>", training=setup), "runtime", only(selection, "PD2"), measurements
    )
    measurements["check_seconds"] = round(time.perf_counter() - started, 1)
    return JobResult(measurements, notes + graph.notes, graph.findings + list(setup_findings))


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
