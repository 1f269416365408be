"""Which stage limits the pipeline, and what each fix is worth, measured on the user's own graph.

Per-stage attribution rebuilds the pipeline cut after each stage and times each prefix. Each
candidate fix (``graph/fixes/``) rewrites the graph, is prepared where it needs it (a cache is
filled once), rebuilt, and timed in turns against the unmodified pipeline; the fixes that may
be applied (safe, or unsafe and verified here: see ``graph/candidate.py``) and pay off are then
timed together, and that figure is the projection. Rewrites that could change what the pipeline
yields in ways nothing verified (reading several files at once reorders records) are measured
and advised, never applied. A fix that could not be measured is reported with the reason.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.graph import graphdef as g
from pipedoctor.graph.candidate import Candidate, rebuilt
from pipedoctor.graph.fixes import candidates
from pipedoctor.graph.fixes.cache import FILL_CAP_S, Limits
from pipedoctor.graph.fixes.vectorize import verify
from pipedoctor.graph.frontend import GraphPipeline, prefix_cardinality
from pipedoctor.graph.timing import (
    CONFIRM_TURNS,
    MEASURE_S,
    SCREEN_TURNS,
    Paired,
    paired_cost,
    paired_gain,
    time_dataset,
)
from pipedoctor.progress import GRAPH_PHASE

FILL_SHARE = 0.5
"""Share of the budget left, beyond the reserve, that filling a cache may take."""
BUDGET_RAN_OUT = "the check's budget ran out before it could be timed"


@dataclass
class WhatIfResult:
    baseline: float | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    fixed: float | None = None
    applied: list[str] = field(default_factory=list)
    chosen: list[Candidate] = field(default_factory=list)
    """The fixes that may be applied and paid off, in the order they are applied."""
    notes: list[str] = field(default_factory=list)


def evaluate(
    gp: GraphPipeline,
    element_spec: Any,
    deadline: float,
    limits: Limits | None = None,
    ceiling: float | None = None,
    reference: float | None = None,
    progress: Callable[[str], None] = lambda _: None,
    enabled: Callable[[str], bool] = lambda _: True,
) -> WhatIfResult:
    """Per-stage rates and every candidate fix, timed against the unmodified pipeline.

    Each fix's rate and end-to-end gain are on the scale of ``reference``, the pipeline alone as
    the check measured it (the graph's own baseline without it), so that they compare with the
    compute ``ceiling`` as the projection does. ``progress`` hears of each stage and fix as its
    timing starts: this phase can take half a check's budget. Only the fixes of the rules
    ``enabled`` are timed (``--select``): a finding that is not reported needs no figure."""
    result = WhatIfResult()
    batched = gp.stages[-1].batched

    def left() -> float:
        return deadline - time.perf_counter()

    warm = OwnCache(gp, batched)
    base_ds = warm(g.rebuild(gp.graph, element_spec), deadline)
    base = time_dataset(base_ds, batched, min(MEASURE_S, max(0.0, left())))
    if base is None:
        result.notes.append("the pipeline could not be timed from its graph")
        return result
    result.baseline = base.samples_per_s
    result.stages = stage_rates(gp, left, result.notes, progress)
    rates = {s["index"]: s["samples_per_s"] for s in result.stages if s["samples_per_s"]}
    found = candidates(gp, limits, rates, base.samples_per_s)
    for left_out in [c for c in found if c.rule is not None and not enabled(c.rule)]:
        left_out.cleanup()
        found.remove(left_out)
    limiting = next((s["index"] for s in result.stages if s["limiting"]), None)
    screened: list[tuple[Candidate, Paired]] = []
    baselines = [base.samples_per_s]
    reserve = paired_cost(SCREEN_TURNS)  # the fixes together are timed last, always
    try:
        ordered = by_promise(found, limiting)
        for number, candidate in enumerate(ordered, 1):
            progress(f"{GRAPH_PHASE}: what-if {number} of {len(ordered)}, {candidate.title}")
            why = _prepare(gp, candidate, element_spec, left, reserve)
            if not why and left() < paired_cost(SCREEN_TURNS) + reserve:
                why = BUDGET_RAN_OUT
            paired = (
                None
                if why
                else _time(base_ds, warm(rebuilt(gp, [candidate], element_spec), deadline), batched)
            )
            if paired is None:
                why = why or "it could not be rebuilt or timed"
                result.fixes.append(_unmeasured(gp, candidate, why))
                result.notes.append(f"what-if {candidate.title}: not measured, {why}")
                continue
            screened.append((candidate, paired))
            baselines += paired.base_rates
        result.baseline = statistics.median(baselines)
        _together(
            gp, base_ds, screened, result, (ceiling, reference), batched, left, warm, progress
        )
    finally:
        for candidate in found:
            if candidate not in result.chosen:
                candidate.cleanup()
    return result


def _prepare(
    gp: GraphPipeline,
    candidate: Candidate,
    spec: Any,
    left: Callable[[], float],
    reserve: float,
) -> str:
    """Why ``candidate`` cannot be timed, or ``""`` once it is ready (verified, filled)."""
    if candidate.skip_reason:
        return candidate.skip_reason
    if candidate.verify:
        return verify(gp, candidate, spec)
    if candidate.prepare is not None:
        spare = left() - reserve - paired_cost(SCREEN_TURNS)
        if spare < 1.0:
            return BUDGET_RAN_OUT
        deadline = time.perf_counter() + min(FILL_CAP_S, FILL_SHARE * spare)
        return candidate.prepare(deadline, spec) or ""
    return ""


def _time(base: Any, other: Any, batched: bool, turns: int = SCREEN_TURNS) -> Paired | None:
    try:
        return paired_gain(base, other, batched, turns)
    except (tf.errors.OpError, ValueError, TypeError):
        return None


def _together(
    gp: GraphPipeline,
    base_ds: Any,
    screened: list[tuple[Candidate, Paired]],
    result: WhatIfResult,
    scale: tuple[float | None, float | None],
    batched: bool,
    left: Callable[[], float],
    warm: OwnCache,
    progress: Callable[[str], None],
) -> None:
    """Each fix's entry, then the fixes that may be applied and pay off, timed together."""
    ceiling, reference = scale
    base = reference or result.baseline
    paying = [c for c, paired in screened if c.applicable and paired.gain >= NO_GAIN]
    chosen = without_moot(paying)
    for candidate, paired in screened:
        entry = _fix_entry(gp, candidate, ceiling, base, base * paired.gain, paired.gain)
        if candidate in paying and candidate not in chosen:
            entry["note"] = "not applied: a cache before it does its work once"
        result.fixes.append(entry)
    if not chosen:
        return
    turns = min(CONFIRM_TURNS, int(left() / paired_cost(1)))
    if turns < SCREEN_TURNS:
        result.notes.append("all fixes together: not timed, the check's budget ran out")
        return
    progress(
        f"{GRAPH_PHASE}: the {len(chosen)} paying fixes together"
        if len(chosen) > 1
        else f"{GRAPH_PHASE}: the paying fix, confirmed"
    )
    deadline = time.perf_counter() + left()
    fixed = warm(rebuilt(gp, chosen, base_ds.element_spec), deadline)
    together = _time(base_ds, fixed, batched, turns)
    if together is None:
        result.notes.append("all fixes together: could not be rebuilt or timed")
    elif together.gain < NO_GAIN:
        result.notes.append(
            f"all fixes together: x{together.gain:.2f} over {turns} timed turns, within "
            "noise of the pipeline as it is, so none is applied"
        )
    else:
        chosen, gain = _set_or_best_alone(
            gp, (base_ds, fixed), screened, chosen, together.gain, batched, left, warm,
            result.notes,
        )  # fmt: skip
        result.fixed = result.baseline * gain
        result.applied = [c.title for c in chosen]
        result.chosen = chosen
        for entry in result.fixes:
            entry["applied"] = entry["title"] in result.applied


BELOW_ALONE = 1.1
"""A set of fixes measured this much below its best fix alone is timed against that fix."""


def _set_or_best_alone(
    gp: GraphPipeline,
    datasets: tuple[Any, Any],
    screened: list[tuple[Candidate, Paired]],
    chosen: list[Candidate],
    together: float,
    batched: bool,
    left: Callable[[], float],
    warm: OwnCache,
    notes: list[str],
) -> tuple[list[Candidate], float]:
    """The fixes to apply and their gain: the set, unless one fix alone measured clearly more
    than the set did (in separate turns). The set is then timed against that fix alone: where
    the others slow it beyond noise, that fix alone is applied (its gain the set's over the
    pipeline, divided by the set's over it); either way the note says what was measured."""
    base_ds, fixed = datasets
    alone = {id(c): p.gain for c, p in screened}
    best = max(chosen, key=lambda c: alone[id(c)])
    clearly_below = len(chosen) > 1 and alone[id(best)] >= together * BELOW_ALONE
    if not clearly_below or left() < paired_cost(SCREEN_TURNS):
        return chosen, together
    deadline = time.perf_counter() + left()
    versus = _time(warm(rebuilt(gp, [best], base_ds.element_spec), deadline), fixed, batched)
    if versus is None:
        return chosen, together
    measured = (
        f"all fixes together measured x{together:.2f} and {best.title} alone x"
        f"{alone[id(best)]:.2f}, in separate turns; timed against it, the set runs at "
        f"x{versus.gain:.2f} of it"
    )
    if versus.gain < 1.0 / NO_GAIN:
        notes.append(f"{measured}: the other fixes slow it down here, so it is applied alone")
        return [best], together / versus.gain
    notes.append(f"{measured}: no slower, so the difference was noise between turns")
    return chosen, together


WARM_S = 10.0
"""Longest a rebuilt pipeline's own cache may take to fill before it is timed."""


class OwnCache:
    """A pipeline that caches on its own refills that cache in every rebuild: read once
    through it before a rebuild is timed, so that the timing reads the cache, not its filling
    (when its length is known)."""

    def __init__(self, gp: GraphPipeline, batched: bool) -> None:
        self.items = 0
        for i, gs in enumerate(gp.stages):
            if gs.stage.op == "cache":
                cached = prefix_cardinality(gp, i)
                size = batch_size(gp) if batched else 1
                if cached > 0:
                    self.items = cached // size + 1
                break

    def __call__(self, dataset: Any, deadline: float) -> Any:
        if self.items:
            until = min(deadline, time.perf_counter() + WARM_S)
            for _ in dataset.take(self.items):
                if time.perf_counter() >= until:
                    break
        return dataset


def batch_size(gp: GraphPipeline) -> int:
    """The pipeline's first batch size read from its graph, 1 when it has none."""
    for gs in gp.stages:
        size = gs.stage.param("batch_size")
        if isinstance(size, int) and size > 0:
            return size
    return 1


def without_moot(fixes: list[Candidate]) -> list[Candidate]:
    """Drop the fixes to stages before a cache that is applied: they would speed up only the
    pass that fills it."""
    caches = [c.stage for c in fixes if c.upstream_of_it_is_moot]
    if not caches:
        return fixes
    last = max(caches)
    return [c for c in fixes if c.upstream_of_it_is_moot or c.stage > last]


def by_promise(found: list[Candidate], limiting: int | None) -> list[Candidate]:
    """What touches the limiting stage first (a cache that holds its work counts), then the
    other fixes, then the bounds: a tight budget times what matters most."""

    def key(candidate: Candidate) -> tuple[bool, bool, bool]:
        holds_limit = (
            candidate.upstream_of_it_is_moot
            and limiting is not None
            and candidate.stage >= limiting
        )
        touches = candidate.stage == limiting or holds_limit
        return (not touches, candidate.bound, not candidate.upstream_of_it_is_moot)

    return sorted(found, key=key)


def stage_rates(
    gp: GraphPipeline,
    left: Callable[[], float],
    notes: list[str],
    progress: Callable[[str], None] = lambda _: None,
) -> list[dict[str, Any]]:
    """Each stage's rate (the pipeline cut after it, rebuilt and timed), the limiting one marked."""
    stages: list[dict[str, Any]] = []
    untimed: list[str] = []
    shown = [gs for gs in gp.stages if not gs.internal]
    for i, gs in enumerate(gp.stages):
        if gs.internal:
            continue
        progress(f"{GRAPH_PHASE}: stage {shown.index(gs) + 1} of {len(shown)}, {gs.stage.op}")
        if left() < 1.0:
            notes.append("per-stage rates: the budget ran out before every stage was timed")
            break
        if not gs.samples:
            untimed.append(gs.stage.op)
            continue
        prefix = g.rebuild(g.truncated(gp.graph, gs.node), gs.spec)
        try:
            rate = time_dataset(prefix, gs.batched, min(MEASURE_S, left()))
        except tf.errors.InvalidArgumentError:  # elements of varying shapes, not batched
            rate = None
            untimed.append(gs.stage.op)
        where = gs.stage.location
        stages.append({
            "index": i, "op": gs.stage.op,
            "path": where.path if where else None, "line": where.line if where else None,
            "samples_per_s": round(rate.samples_per_s, 1) if rate else None,
        })  # fmt: skip
    if untimed:
        notes.append(
            f"per-stage rates: {', '.join(untimed)} not timed alone (their elements are not "
            "samples, or vary in shape before any batch and cannot be batched for timing)"
        )
    mark_limiting(stages)
    return stages


LIMITING_DROP = 1.25
"""A stage limits the pipeline only where throughput falls by more than this: two timings
of a few seconds each differ by up to about a fifth on a shared machine, so a smaller fall
(a ``with_options`` after a fast ``map``) is noise, not a slow stage."""


def mark_limiting(stages: list[dict[str, Any]]) -> None:
    """The stage where throughput drops most relative to its input limits the pipeline. Work
    before a ``cache()`` is done once, not in the steady state, so only the stages after the
    last cache can limit it (timed alone, a prefix that ends at the cache mostly fills it)."""
    caches = [i for i, entry in enumerate(stages) if entry["op"] == "cache"]
    steady = stages[caches[-1] + 1 :] if caches else stages
    worst, worst_drop, worst_from = None, LIMITING_DROP, None
    previous = None
    for entry in steady:
        rate = entry["samples_per_s"]
        if rate and previous:
            drop = previous / rate
            if drop > worst_drop:
                worst, worst_drop, worst_from = entry, drop, previous
        previous = rate or previous
    for entry in stages:
        entry["limiting"] = entry is worst
        if entry is worst:
            entry["input_samples_per_s"] = worst_from


def _end_to_end(rate: float, base: float, ceiling: float | None) -> float | None:
    """What training could gain: the pipeline's gain, capped by the compute ceiling; unknown
    (``None``) without a ceiling, where the gain is the pipeline's alone and nothing more."""
    return min(rate, ceiling) / min(base, ceiling) if ceiling else None


def _place(gp: GraphPipeline, candidate: Candidate) -> dict[str, Any]:
    """Where a candidate's stage was written; ``op`` names the method called there, none for
    a stage a library made inside the user's call (the factory's name is what was called)."""
    stage = gp.stages[candidate.stage]
    where = stage.stage.location
    return {
        "rule": candidate.rule, "title": candidate.title, "stage": candidate.stage,
        "op": None if stage.in_library else stage.stage.op,
        "path": where.path if where else None, "line": where.line if where else None,
        "column": where.column if where else None,
        "safe": candidate.safety == "safe", "safety": candidate.safety,
        "verified": candidate.verified, "bound": candidate.bound, "applied": False,
        "writes_files": candidate.writes_files,
        **candidate.details,
    }  # fmt: skip


def _unmeasured(gp: GraphPipeline, candidate: Candidate, why: str) -> dict[str, Any]:
    return {**_place(gp, candidate), "gain": None, "unmeasured": why}


def _fix_entry(
    gp: GraphPipeline,
    candidate: Candidate,
    ceiling: float | None,
    base: float,
    rate: float,
    gain: float,
) -> dict[str, Any]:
    end_to_end = _end_to_end(rate, base, ceiling)
    return {
        **_place(gp, candidate),
        "samples_per_s": round(rate, 1), "gain": round(gain, 2),
        "end_to_end_gain": round(end_to_end, 2) if end_to_end is not None else None,
        "capped_by_ceiling": bool(ceiling and rate > ceiling),
    }  # fmt: skip
