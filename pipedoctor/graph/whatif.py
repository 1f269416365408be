"""Which stage limits the pipeline, and what each fix is worth, measured on the user's own graph.

Per-stage attribution rebuilds the pipeline cut after each stage and times each prefix. Each
candidate fix rewrites the graph, rebuilds it and is timed in the same run as the unmodified
pipeline; the safe fixes are then timed together. Rewrites that could change what the pipeline
yields (reading several files at once reorders records) are measured and advised, never applied.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pipedoctor.graph import graphdef as g
from pipedoctor.graph.frontend import READER_CLASSES, GraphPipeline
from pipedoctor.measure.protocol import element_bytes, samples_in
from pipedoctor.measure.rates import Rate, RateMeter

MEASURE_S = 2.0
"""Longest a single prefix or candidate is timed."""
CACHE_FILL_S = 10.0
TIMING_BATCH = 64
"""Unbatched prefixes are timed in batches of this many elements."""
"""Longest the first pass that fills a candidate cache may take."""


@dataclass
class Candidate:
    """One rewrite: the rule it answers, the stage it touches, and whether it is safe."""

    rule: str | None
    stage: int
    title: str
    safe: bool
    apply: Callable[[g.GraphDef], None]
    fill_elements: int = 0
    """Elements to read before timing (a cache fills on the first pass)."""


@dataclass
class WhatIfResult:
    baseline: float | None = None
    stages: list[dict[str, Any]] = field(default_factory=list)
    fixes: list[dict[str, Any]] = field(default_factory=list)
    fixed: float | None = None
    applied: list[str] = field(default_factory=list)
    chosen: list[Candidate] = field(default_factory=list)
    """The safe fixes that paid off, in the order they are applied."""
    notes: list[str] = field(default_factory=list)


def time_dataset(dataset: Any, batched: bool, seconds: float, skip: int = 0) -> Rate | None:
    """Samples per second of ``dataset`` (repeated), in steady state, for at most ``seconds``
    after the first ``skip`` elements."""
    meter = RateMeter(warmup_items=3 + skip, warmup_s=0.4, block_s=0.1, min_blocks=5)
    deadline = time.perf_counter() + seconds
    if not batched:  # batch for timing only: iterating single elements in Python costs more
        dataset = dataset.batch(TIMING_BATCH)  # than most stages, and would hide them
        skip = skip // TIMING_BATCH
    for element in dataset.repeat():
        meter.add(time.perf_counter(), samples_in(element))
        if meter.converged or time.perf_counter() >= deadline:
            break
    return meter.rate()


def _prefix_cardinality(gp: GraphPipeline, index: int) -> int:
    stage = gp.stages[index]
    prefix = g.rebuild(g.truncated(gp.graph, stage.node), stage.spec)
    return int(prefix.cardinality())


def candidates(
    gp: GraphPipeline, free_ram_bytes: int | None, ram_fraction: float = 0.5
) -> list[Candidate]:
    """The rewrites worth timing for this pipeline, safe ones first."""
    found: list[Candidate] = []
    stages = gp.stages
    for i, gs in enumerate(stages):
        op, node = gs.stage.op, gs.node
        graph_op = g.nodes(gp.graph)[node].op
        if graph_op == "MapDataset":
            found.append(
                Candidate(
                    "PD102",
                    i,
                    f"parallel `map` (stage {i})",
                    True,
                    lambda gd, n=node: g.map_to_parallel(gd, n),
                )
            )
        elif graph_op == "ParallelMapDatasetV2" and gs.stage.param("num_parallel_calls") not in (
            None,
            -1,
        ):
            found.append(
                Candidate(
                    "PD103",
                    i,
                    f"`map` with AUTOTUNE (stage {i})",
                    True,
                    lambda gd, n=node: g.set_param(gd, n, "num_parallel_calls", -1),
                )
            )
        elif graph_op == "InterleaveDataset":
            found.append(
                Candidate(
                    "PD104",
                    i,
                    f"parallel `interleave` (stage {i})",
                    True,
                    lambda gd, n=node: g.interleave_to_parallel(gd, n),
                )
            )
        elif graph_op == "FlatMapDataset" and op in READER_CLASSES.values():
            files = gs.stage.param("filenames")
            count = files.count if files is not None and files.count else 4
            found.append(
                Candidate(
                    "PD104",
                    i,
                    f"parallel reads of {count} files (stage {i})",
                    False,
                    lambda gd, n=node, c=count: g.interleave_to_parallel(gd, n, c),
                )
            )
        elif graph_op == "BatchDatasetV2":
            found.append(
                Candidate(
                    None,
                    i,
                    f"parallel `batch` (stage {i})",
                    True,
                    lambda gd, n=node: g.batch_to_parallel(gd, n),
                )
            )
        elif graph_op == "PrefetchDataset" and gs.stage.param("buffer_size") not in (None, -1):
            found.append(
                Candidate(
                    "PD103",
                    i,
                    f"`prefetch` with AUTOTUNE (stage {i})",
                    True,
                    lambda gd, n=node: g.set_param(gd, n, "buffer_size", -1),
                )
            )
    visible = [s for s in stages if not s.internal]
    if visible and visible[-1].stage.op not in ("prefetch", "with_options", "repeat"):
        last = stages[-1].node
        found.append(
            Candidate(
                "PD101",
                len(stages) - 1,
                "`prefetch(AUTOTUNE)` at the end",
                True,
                lambda gd, n=last: g.insert_prefetch(gd, n),
            )
        )
    cache = cache_candidate(gp, free_ram_bytes, ram_fraction)
    if cache is not None:
        found.append(cache)
    return found


def cache_candidate(
    gp: GraphPipeline, free_ram_bytes: int | None, ram_fraction: float
) -> Candidate | None:
    """``cache()`` after the last expensive deterministic stage, when it fits in RAM."""
    stages = gp.stages
    if any(s.stage.op == "cache" for s in stages):
        return None
    target = None
    for i, gs in enumerate(stages):
        fn = gs.stage.fn
        if gs.stage.op == "shuffle" or (fn is not None and (fn.random or fn.python)):
            break
        if gs.stage.op in ("take", "skip", "repeat", "shard"):
            break
        if (fn is not None and fn.decodes) or gs.stage.op in READER_CLASSES.values():
            target = i
    if target is None:
        return None
    elements = _prefix_cardinality(gp, target)
    if elements <= 0:
        return None
    first = next(iter(g.rebuild(g.truncated(gp.graph, stages[target].node), stages[target].spec)))
    size = element_bytes(first) * elements
    if free_ram_bytes is not None and size > ram_fraction * free_ram_bytes:
        return None
    node = stages[target].node
    return Candidate(
        "PD106",
        target,
        f"`cache()` after stage {target} ({size / 1e6:,.0f} MB)",
        True,
        lambda gd, n=node: g.insert_cache(gd, n),
        fill_elements=elements,
    )


def _output_batched(gp: GraphPipeline) -> bool:
    return gp.stages[-1].batched


def evaluate(
    gp: GraphPipeline,
    element_spec: Any,
    deadline: float,
    free_ram_bytes: int | None = None,
    ceiling: float | None = None,
) -> WhatIfResult:
    """Per-stage rates and every candidate fix, timed against the unmodified pipeline."""
    result = WhatIfResult()
    batched = _output_batched(gp)

    def left() -> float:
        return deadline - time.perf_counter()

    base = time_dataset(
        g.rebuild(gp.graph, element_spec), batched, min(MEASURE_S, max(0.0, left()))
    )
    if base is None:
        result.notes.append("the pipeline could not be timed from its graph")
        return result
    result.baseline = base.samples_per_s
    for i, gs in enumerate(gp.stages):
        if gs.internal:
            continue
        if left() < 1.0:
            result.notes.append("per-stage rates: the budget ran out before every stage was timed")
            break
        prefix = g.rebuild(g.truncated(gp.graph, gs.node), gs.spec)
        rate = time_dataset(prefix, gs.batched, min(MEASURE_S, left()))
        where = gs.stage.location
        result.stages.append({
            "index": i, "op": gs.stage.op,
            "path": where.path if where else None, "line": where.line if where else None,
            "samples_per_s": round(rate.samples_per_s, 1) if rate else None,
        })  # fmt: skip
    mark_limiting(result.stages)
    safe_fixes: list[Candidate] = []
    for candidate in candidates(gp, free_ram_bytes):
        cost = MEASURE_S + (CACHE_FILL_S if candidate.fill_elements else 0.0)
        if left() < cost:
            result.notes.append(f"what-if {candidate.title}: skipped, the check's budget ran out")
            continue
        rate = _time_rewrite(gp, [candidate], element_spec, batched, candidate.fill_elements)
        if rate is None:
            result.notes.append(f"what-if {candidate.title}: could not be rebuilt or timed")
            continue
        gain = rate / result.baseline
        result.fixes.append(_fix_entry(gp, candidate, rate, gain, ceiling, result.baseline))
        if candidate.safe and gain > 1.05:
            safe_fixes.append(candidate)
    if left() >= MEASURE_S:  # the baseline again: a cold first timing must not inflate gains
        again = time_dataset(g.rebuild(gp.graph, element_spec), batched, MEASURE_S)
        if again is not None and again.samples_per_s > result.baseline:
            scale = result.baseline / again.samples_per_s
            result.baseline = again.samples_per_s
            for fix in result.fixes:
                fix["gain"] = round(fix["gain"] * scale, 2)
                fix["end_to_end_gain"] = round(
                    _end_to_end(fix["samples_per_s"], result.baseline, ceiling), 2
                )
            safe_fixes = [c for c in safe_fixes if _gain_of(result, c) > 1.05]
    fill = max((c.fill_elements for c in safe_fixes), default=0)
    if safe_fixes and left() >= MEASURE_S + (CACHE_FILL_S if fill else 0.0):
        result.fixed = _time_rewrite(gp, safe_fixes, element_spec, batched, fill)
        result.applied = [c.title for c in safe_fixes]
        result.chosen = safe_fixes
    elif safe_fixes:
        result.notes.append("all safe fixes together: skipped, the check's budget ran out")
    return result


def _end_to_end(rate: float, base: float, ceiling: float | None) -> float:
    """What training could gain: the pipeline's gain, capped by the compute ceiling."""
    return min(rate, ceiling) / min(base, ceiling) if ceiling else rate / base


def _gain_of(result: WhatIfResult, candidate: Candidate) -> float:
    return next((f["gain"] for f in result.fixes if f["title"] == candidate.title), 0.0)


def mark_limiting(stages: list[dict[str, Any]]) -> None:
    """The stage where throughput drops most relative to its input limits the pipeline."""
    worst, worst_drop = None, 1.0
    previous = None
    for entry in stages:
        rate = entry["samples_per_s"]
        if rate and previous:
            drop = previous / rate
            if drop > worst_drop:
                worst, worst_drop = entry, drop
        previous = rate or previous
    for entry in stages:
        entry["limiting"] = entry is worst


def _fix_entry(
    gp: GraphPipeline,
    candidate: Candidate,
    rate: float,
    gain: float,
    ceiling: float | None,
    base: float,
) -> dict[str, Any]:
    where = gp.stages[candidate.stage].stage.location
    end_to_end = _end_to_end(rate, base, ceiling)
    return {
        "rule": candidate.rule, "title": candidate.title, "safe": candidate.safe,
        "path": where.path if where else None, "line": where.line if where else None,
        "samples_per_s": round(rate, 1), "gain": round(gain, 2),
        "end_to_end_gain": round(end_to_end, 2),
        "capped_by_ceiling": bool(ceiling and rate > ceiling),
    }  # fmt: skip


def rewritten(gp: GraphPipeline, fixes: list[Candidate]) -> g.GraphDef:
    graph = g.copy(gp.graph)
    for fix in fixes:
        fix.apply(graph)
    return graph


def _time_rewrite(
    gp: GraphPipeline, fixes: list[Candidate], spec: Any, batched: bool, fill: int
) -> float | None:
    try:
        dataset = g.rebuild(rewritten(gp, fixes), spec)
        skip = fill // max(1, _batch_size(gp)) if batched and fill else fill
        seconds = MEASURE_S + (CACHE_FILL_S if fill else 0.0)
        rate = time_dataset(dataset, batched, seconds, skip=skip)
    except (tf.errors.OpError, ValueError, TypeError):
        return None
    return rate.samples_per_s if rate else None


def _batch_size(gp: GraphPipeline) -> int:
    for gs in gp.stages:
        size = gs.stage.param("batch_size")
        if isinstance(size, int) and size > 0:
            return size
    return 1
