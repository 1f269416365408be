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
from pipedoctor.report import Finding
from pipedoctor.rules import ALL_RULES, Selection


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
) -> JobResult:
    """Raises ``MeasureError`` when nothing could be measured."""
    from pipedoctor.graph.doctor import diagnose

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
    measurements["check_seconds"] = round(time.perf_counter() - started, 1)
    return JobResult(measurements, notes + graph.notes, graph.findings)
