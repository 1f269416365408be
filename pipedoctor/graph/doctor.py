"""The graph doctor: read a live dataset's graph, run the graph rules on it, time each stage and
each candidate fix, and attach the measured gains to the findings they answer."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from pipedoctor.diagnosis import NO_GAIN, WORTH_FIXING
from pipedoctor.pipeline import Analysis
from pipedoctor.report import Finding, Severity
from pipedoctor.rules import ALL_RULES, Selection, load_catalog, run_rules


@dataclass
class GraphDiagnosis:
    findings: list[Finding] = field(default_factory=list)
    measurements: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    outcome: Any = None
    """The what-if result behind the figures (its chosen fixes), where the what-ifs ran."""
    pipeline: Any = None
    """The graph the what-ifs rewrote, for timing training on a rewrite afterwards."""


def measured(finding: Finding, gain: float | None, end_to_end: float | None) -> Finding:
    """The finding with its measured gain. Rules stand on measurements where they exist: a fix
    that measurably gains nothing becomes ``info`` and says so, and an ``info`` finding whose
    fix measurably speeds training up becomes a ``warning``. What the source left to assume
    (whether the dataset trains, the data is real) the measurement shows: it is ``high``."""
    finding = replace(
        finding, gain=gain, end_to_end_gain=end_to_end, confidence="high", evidence=()
    )
    if end_to_end is not None and end_to_end >= WORTH_FIXING and finding.severity is Severity.INFO:
        finding = replace(finding, severity=Severity.WARNING)
    if gain is not None and gain < NO_GAIN:
        why = WHY_NOTHING.get(finding.rule, "")
        finding = replace(
            finding,
            severity=Severity.INFO,
            message=f"{finding.message} Measured here, the fix gains nothing{why}.",
        )
    return finding


WHY_NOTHING = {
    "PD101": ": TensorFlow's own inject_prefetch may already add the prefetch at run time",
    "PD102": ": TensorFlow's own map_parallelization may already run it in parallel",
    "PD103": ": this stage is not what limits the pipeline here",
    "PD104": ": reading these files is not what limits the pipeline here",
}
"""Why a measured fix can gain nothing, for the rules where TensorFlow or the pipeline says."""


BOUND = " Measured bound:"
"""Starts the sentence a finding gets for a measured upper bound (see :func:`bound_sentence`)."""


def bound_sentence(bound: dict[str, Any]) -> str:
    """A measured upper bound, said as one: what the stage could give at most, not a gain."""
    return (
        f"{BOUND} with this stage's work taken out the pipeline runs at "
        f"{bound['samples_per_s']:,.0f} samples/s (x{bound['gain']:.1f}); rewriting it in "
        "TensorFlow ops recovers part of that."
    )


def with_gains(findings: list[Finding], fixes: list[dict[str, Any]]) -> list[Finding]:
    """Each finding gets the measured gain of the fix for its rule at its line, its bound, or
    the reason its fix could not be measured."""
    out = []
    for finding in findings:
        match = next(
            (
                f
                for f in fixes
                if f["rule"] == finding.rule
                and f["path"] == finding.path
                and f["line"] == finding.line
            ),
            None,
        )
        if match is not None and match.get("unmeasured"):
            if NOT_MEASURED not in finding.message:
                message = f"{finding.message}{NOT_MEASURED} {match['unmeasured']}."
                finding = replace(finding, message=message)
        elif match is not None and match.get("bound"):
            finding = replace(finding, message=finding.message + bound_sentence(match))
        elif match is not None:
            finding = measured(finding, match["gain"], match["end_to_end_gain"])
        out.append(finding)
    return out


NOT_MEASURED = " Its fix was not measured:"


def diagnose(
    dataset: Any,
    deadline: float,
    *,
    selection: Selection = ALL_RULES,
    free_ram_bytes: int | None = None,
    ceiling: float | None = None,
    pipeline_rate: float | None = None,
    sink: str = "fit",
    keep_files: bool = False,
    progress: Callable[[str], None] = lambda _: None,
) -> GraphDiagnosis:
    """Everything the graph can tell within ``deadline`` (``time.perf_counter()`` based).

    The what-ifs run first, so that the graph rules judge the pipeline with what was measured
    (PD106 places its cache where the measurement put it). A pipeline that cannot be serialised
    or rebuilt is not an error: the diagnosis says which part could not be analysed and why,
    and the caller keeps its other facts and timings. A cache the projection wrote to local
    disk is removed once measured, unless ``keep_files`` (then the caller reads the rewrite
    through ``outcome.chosen`` and calls their ``cleanup``).
    """
    import tensorflow as tf

    from pipedoctor.graph.frontend import read_dataset
    from pipedoctor.graph.whatif import evaluate
    from pipedoctor.measure.protocol import brief

    result = GraphDiagnosis()
    try:
        gp = read_dataset(dataset, sink)
    except (tf.errors.OpError, ValueError, TypeError, AttributeError, StopIteration) as exc:
        result.notes.append(
            f"the pipeline's graph could not be read ({type(exc).__name__}): "
            "only whole-pipeline timings and static facts are reported"
        )
        return result
    result.notes += gp.notes
    files = [s.param("filenames") for s in gp.pipeline.stages if s.param("filenames") is not None]
    counted = [f.count for f in files if getattr(f, "count", None)]
    if counted:
        result.measurements["input_files"] = sum(counted)
    analysis = Analysis("<graph>", [gp.pipeline])
    if not any(selection.enabled(rule) for rule in graph_rules()):
        result.notes.append(  # nothing would judge the rates, and no fix of theirs is wanted
            "per-stage rates and what-if fixes: not timed, no input-pipeline rule (PD1xx) "
            "is selected"
        )
        return result
    if time.perf_counter() >= deadline - 1.0:
        result.notes.append(
            "per-stage rates and what-if fixes: skipped, the check's budget ran out"
        )
        result.findings = list(run_rules(analysis, "graph", selection))
        return result
    try:
        limits = cache_limits(selection, free_ram_bytes)
        outcome = evaluate(
            gp, dataset.element_spec, deadline, limits, ceiling, pipeline_rate, progress,
            selection.enabled,
        )  # fmt: skip
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        result.notes.append(
            f"the pipeline could not be rebuilt from its graph to time stages and "
            f"fixes ({type(exc).__name__}: {brief(exc)})"
        )
        result.findings = list(run_rules(analysis, "graph", selection))
        return result
    result.notes += outcome.notes
    result.outcome, result.pipeline = outcome, gp
    result.measurements = {
        **result.measurements,
        "graph_pipeline_samples_per_s": round(outcome.baseline, 1) if outcome.baseline else None,
        "stages": outcome.stages,
        "whatif": outcome.fixes,
        "fixed_pipeline_samples_per_s": round(outcome.fixed, 1) if outcome.fixed else None,
        "fixes_applied": outcome.applied,
    }
    if not keep_files:  # a cache on disk: the projection is measured, the files go
        for candidate in outcome.chosen:
            candidate.cleanup()
    findings = run_rules(analysis, "graph", selection, result.measurements)
    result.findings = with_gains(list(findings), outcome.fixes)
    return result


def graph_rules() -> list[str]:
    """The rules that judge a pipeline read from its graph: what per-stage rates and what-if
    fixes are timed for."""
    return [rule.id for rule in load_catalog().values() if "graph" in rule.scope]


def cache_limits(selection: Selection, free_ram_bytes: int | None) -> Any:
    """How much a cache may take, with PD106's parameters as the user set them."""
    from pipedoctor.graph.fixes.cache import Limits
    from pipedoctor.rules import load_catalog, rule_params

    params = rule_params(load_catalog()["PD106"], selection)
    return Limits(free_ram_bytes, params["ram_fraction"], params["disk_fraction"])


def optimize(dataset: Any, *, timeout: float = 30.0, free_ram_bytes: int | None = None) -> Any:
    """The dataset rebuilt with every fix that may be applied and measurably helps (order kept),
    within ``timeout`` seconds of measuring: safe fixes, and unsafe ones verified on this
    pipeline (a cache that a first pass filled within the free-RAM share, a map moved after
    ``batch`` whose values were compared). ``pipedoctor_rewrites`` on the result lists them,
    with how each unsafe one was verified; a cache on local disk is advised, never made.
    """
    from pipedoctor.graph.candidate import rebuilt
    from pipedoctor.graph.frontend import read_dataset
    from pipedoctor.graph.whatif import evaluate, without_moot

    gp = read_dataset(dataset, sink=None)
    if free_ram_bytes is None:
        free_ram_bytes = free_ram()
    limits = cache_limits(ALL_RULES, free_ram_bytes)
    outcome = evaluate(gp, dataset.element_spec, time.perf_counter() + timeout, limits)
    chosen = without_moot([c for c in outcome.chosen if not c.writes_files])
    notes = list(outcome.notes)
    if len(chosen) < len(outcome.chosen):
        notes.append("a cache on local disk is advised, not made: it would leave files behind")
    optimized = rebuilt(gp, chosen, dataset.element_spec) if chosen else dataset
    optimized.pipedoctor_rewrites = [
        c.title + (f" (verified: {c.verified})" if c.verified else "") for c in chosen
    ]
    optimized.pipedoctor_notes = notes
    for candidate in outcome.chosen:
        if candidate not in chosen:
            candidate.cleanup()
    return optimized


def free_ram() -> int | None:
    """Bytes of RAM available now: from psutil, or from the OS where it says (Linux, macOS);
    ``None`` when nothing says, and then no cache is filled."""
    try:
        import psutil

        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    import os

    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        return None
