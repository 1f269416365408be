"""``pipedoctor profile LOGDIR``: the doctor for a profile captured elsewhere, offline.

The profile's measurements go through the same rules and the same ``Report`` as a check: the
verdict and PD301 from the input-wait share, PD303 from each accelerator's busy time, PD307
from several hosts, and the PD1xx rules on the pipeline as its iterators show it running.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.pipeline import Analysis, Pipeline
from pipedoctor.profile.reader import read_measurements
from pipedoctor.report import Finding, Report, Severity
from pipedoctor.rules import ALL_RULES, Selection, only, run_rules

PIPELINE_RULES = "PD1"


def read_profile(
    logdirs: str | Path | Sequence[str | Path], selection: Selection = ALL_RULES
) -> Report:
    """The :class:`Report` for one log directory, or several hosts' (a list). Raises
    :class:`~pipedoctor.profile.ProfileError` with a one-line reason for what it cannot read."""
    from pipedoctor.checker import build_report

    paths = [Path(logdirs)] if isinstance(logdirs, (str, Path)) else [Path(p) for p in logdirs]
    measurements, notes, pipelines = read_measurements(paths)
    offline_figures(measurements)
    findings = pipeline_findings(pipelines, selection, measurements.get("input_wait_fraction"))
    if pipelines and findings:
        chain = " -> ".join(s.op for s in pipelines[0].stages)
        notes.append(f"the input pipeline as the profile shows it running: {chain}")
    return build_report(measurements, notes, selection, file_findings=findings)


def offline_figures(measurements: dict[str, Any]) -> None:
    """The keys a check fills from its own samplers, filled from the profile instead: each
    accelerator's utilisation (its busy share) and the training step time."""
    section = measurements["profile"]
    gpus = [d for d in section["devices"] if d.get("busy_fraction") is not None]
    if gpus:
        measurements["gpus"] = [
            {"index": i, "name": f"{d['device']} ({d['worker']}, from the profile)",
             "utilization_mean": round(100 * d["busy_fraction"], 1)}
            for i, d in enumerate(gpus)
        ]  # fmt: skip
    steps = [h["step_ms"] for h in section["hosts"] if h.get("step_ms")]
    if steps:
        measurements["step_ms"] = {"training": round(max(steps), 2)}


def pipeline_findings(
    pipelines: list[Pipeline], selection: Selection, wait: float | None
) -> list[Finding]:
    """The pipeline rules on the pipeline the profile shows (a profile carries no source
    lines, so each finding is about the job). Training that waits for input a share ``wait``
    of its steps can gain at most ``1 / (1 - wait)`` from any input fix: where that is within
    noise, the findings drop to ``info`` and say so, as a check's measured gains do."""
    analysis = Analysis("<profile>", pipelines=pipelines)
    findings = list(run_rules(analysis, "graph", only(selection, PIPELINE_RULES)))
    if wait is None or wait >= 1.0 or 1.0 / (1.0 - wait) >= NO_GAIN:
        return findings
    bound = (
        f" The profile shows training waiting for input only {wait:.0%} of its step time, so "
        f"an input fix can speed it up by x{1.0 / (1.0 - wait):.2f} at most."
    )
    return [replace(f, severity=Severity.INFO, message=f.message + bound) for f in findings]
