"""Which stage limits the pipeline, and what each fix is worth, measured on the user's own graph.

Per-stage attribution rebuilds the pipeline cut after each stage and times each prefix. Each
candidate fix rewrites the graph, rebuilds it and is timed in the same run as the unmodified
pipeline; the safe fixes are then timed together. Rewrites that could change what the pipeline
yields (reading several files at once reorders records) are measured and advised, never applied.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.graph import graphdef as g
from pipedoctor.graph.frontend import READER_CLASSES, GraphPipeline, prefix_cardinality
from pipedoctor.measure.protocol import brief, element_bytes, samples_in
from pipedoctor.measure.rates import Rate, RateMeter

MEASURE_S = 2.0
"""Longest the pipeline, or the pipeline cut after a stage, is timed alone."""
CACHE_FILL_S = 10.0
"""Longest the first pass that fills a candidate cache may take."""
TIMING_BATCH = 64
"""Unbatched prefixes are timed in batches of this many elements."""
TURN_S = 1.0
"""Each rewrite is timed in turns against the unmodified pipeline, this long per timing..."""
SCREEN_TURNS = 2
"""...in two turns for each candidate fix alone..."""
CONFIRM_TURNS = 6
"""...and in up to six for all safe fixes together, the figure the projection rests on."""


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
    verify: bool = False
    """Safe only where the values come out the same: compare them before timing."""
    bound: bool = False
    """Not a fix but a limit: how fast the pipeline could run at best (never applied)."""


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
    if not batched:  # batch for timing only: iterating single elements in Python costs more
        dataset = dataset.batch(TIMING_BATCH)  # than most stages, and would hide them
        skip = skip // TIMING_BATCH
    meter = RateMeter(warmup_items=3 + skip, warmup_s=0.4, block_s=0.1, min_blocks=5)
    deadline = time.perf_counter() + seconds
    for element in dataset.repeat():
        meter.add(time.perf_counter(), samples_in(element))
        if meter.converged or time.perf_counter() >= deadline:
            break
    return meter.rate()


def candidates(
    gp: GraphPipeline, free_ram_bytes: int | None, ram_fraction: float = 0.5
) -> list[Candidate]:
    """The rewrites worth timing for this pipeline, in stage order (see :func:`by_promise`)."""
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
            count = files.count if files is not None and files.count else None
            what = f"{count} files" if count else "the files (how many is unknown: AUTOTUNE)"
            found.append(
                Candidate(
                    "PD104",
                    i,
                    f"parallel reads of {what} (stage {i})",
                    False,
                    lambda gd, n=node, c=count or -1: g.interleave_to_parallel(gd, n, c),
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
        vectorize = vectorize_candidate(gp, i)
        if vectorize is not None:
            found.append(vectorize)
        if gs.stage.op == "map" and gs.stage.fn is not None and gs.stage.fn.python and i > 0:
            found.append(
                Candidate(
                    "PD108",
                    i,
                    f"`map` (stage {i}) with its Python work taken out",
                    False,
                    lambda gd, n=node, a=stages[i - 1].spec, b=gs.spec: g.stub_function(
                        gd, n, a, b
                    ),
                    bound=True,
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


FLOAT_RTOL = 1e-6
"""Largest relative difference between float values that still counts as the same value."""
BATCH_OPS = ("BatchDatasetV2", "ParallelBatchDataset")
ORDER_ONLY = frozenset({"shuffle", "prefetch", "repeat", "take", "skip", "shard", "with_options"})
"""Stages an element-wise map can move past without changing any value."""


def vectorize_candidate(gp: GraphPipeline, index: int) -> Candidate | None:
    """An element-wise ``map`` before ``batch``, moved after it to run once per batch."""
    gs = gp.stages[index]
    fn = gs.stage.fn
    if gs.stage.op != "map" or fn is None or not fn.elementwise or fn.random or fn.python:
        return None
    graph_nodes = g.nodes(gp.graph)
    for later in gp.stages[index + 1 :]:
        if graph_nodes[later.node].op in BATCH_OPS:
            return Candidate(
                "PD109",
                index,
                f"element-wise `map` (stage {index}) after `batch`",
                True,
                lambda gd, m=gs.node, b=later.node: g.move_after_batch(gd, m, b),
                verify=True,
            )
        if later.stage.op not in ORDER_ONLY:
            return None
    return None


def changed_values(gp: GraphPipeline, fixes: list[Candidate], spec: Any, count: int = 4) -> str:
    """Why the rewritten pipeline yields other values than the original, or ``""`` when its
    first ``count`` elements are identical (compared with every shuffle taken out on both
    sides, so that order cannot hide or fake a difference)."""
    plain = g.copy(gp.graph)
    for gs in gp.stages:
        if gs.stage.op == "shuffle":
            g.bypass(plain, gs.node)
    try:
        before = _first(g.rebuild(plain, spec), count)
        after = _first(g.rebuild(rewritten(gp, fixes, plain), spec), count)
    except (tf.errors.OpError, ValueError, TypeError) as exc:
        return f"the rewritten pipeline fails ({type(exc).__name__}: {brief(exc)})"
    if len(before) != len(after):
        return "the rewritten pipeline yields a different number of elements"
    for old, new in zip(before, after, strict=True):
        if not all(_same(a.numpy(), b.numpy()) for a, b in zip(old, new, strict=True)):
            return "the rewritten pipeline yields different values"
    return ""


def _first(dataset: Any, count: int) -> list[list[Any]]:
    return [tf.nest.flatten(x) for x in dataset.take(count)]


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal, exactly for integers and strings; for floats up to the last bits, where a
    vectorised kernel (exp, tanh) may round differently over a batch than over one element."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.kind in "fc":
        return bool(np.allclose(a, b, rtol=FLOAT_RTOL, atol=0.0, equal_nan=True))
    return bool(np.array_equal(a, b))


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
    elements = prefix_cardinality(gp, target)
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

    base_ds = g.rebuild(gp.graph, element_spec)
    base = time_dataset(base_ds, batched, min(MEASURE_S, max(0.0, left())))
    if base is None:
        result.notes.append("the pipeline could not be timed from its graph")
        return result
    result.baseline = base.samples_per_s
    result.stages = stage_rates(gp, left, result.notes)
    screened: list[tuple[Candidate, Paired]] = []
    baselines = [base.samples_per_s]
    limiting = next((s["index"] for s in result.stages if s["limiting"]), None)
    for candidate in by_promise(candidates(gp, free_ram_bytes), limiting):
        if candidate.verify and (why := changed_values(gp, [candidate], element_spec)):
            result.notes.append(f"what-if {candidate.title}: not made, {why}")
            continue
        reserve = paired_cost(SCREEN_TURNS, 0)  # the fixes together are timed last, always
        if left() < paired_cost(SCREEN_TURNS, candidate.fill_elements) + reserve:
            result.notes.append(f"what-if {candidate.title}: skipped, the check's budget ran out")
            continue
        paired = _time_rewrite(gp, base_ds, [candidate], SCREEN_TURNS, batched)
        if paired is None:
            result.notes.append(f"what-if {candidate.title}: could not be rebuilt or timed")
            continue
        screened.append((candidate, paired))
        baselines += paired.base_rates
    result.baseline = statistics.median(baselines)
    safe_fixes: list[Candidate] = []
    for candidate, paired in screened:
        rate = result.baseline * paired.gain
        result.fixes.append(_fix_entry(gp, candidate, rate, paired.gain, ceiling, result.baseline))
        if candidate.safe and paired.gain >= NO_GAIN:
            safe_fixes.append(candidate)
    if not safe_fixes:
        return result
    fill = max(c.fill_elements for c in safe_fixes)
    turns = min(CONFIRM_TURNS, int((left() - paired_cost(0, fill)) / paired_cost(1, 0)))
    if turns < SCREEN_TURNS:
        result.notes.append("all safe fixes together: skipped, the check's budget ran out")
        return result
    together = _time_rewrite(gp, base_ds, safe_fixes, turns, batched)
    if together is None:
        result.notes.append("all safe fixes together: could not be rebuilt or timed")
    elif together.gain < NO_GAIN:
        result.notes.append(
            f"all safe fixes together: x{together.gain:.2f} over {turns} timed turns, within "
            "noise of the pipeline as it is, so none is applied"
        )
    else:
        result.fixed = result.baseline * together.gain
        result.applied = [c.title for c in safe_fixes]
        result.chosen = safe_fixes
    return result


def by_promise(found: list[Candidate], limiting: int | None) -> list[Candidate]:
    """What touches the limiting stage first (its fixes, then its bound), then the other
    stages' fixes, then their bounds: a tight budget times what matters most."""
    return sorted(found, key=lambda c: (c.stage != limiting, c.bound))


def stage_rates(
    gp: GraphPipeline, left: Callable[[], float], notes: list[str]
) -> list[dict[str, Any]]:
    """Each stage's rate (the pipeline cut after it, rebuilt and timed), the limiting one marked."""
    stages: list[dict[str, Any]] = []
    for i, gs in enumerate(gp.stages):
        if gs.internal:
            continue
        if left() < 1.0:
            notes.append("per-stage rates: the budget ran out before every stage was timed")
            break
        prefix = g.rebuild(g.truncated(gp.graph, gs.node), gs.spec)
        rate = time_dataset(prefix, gs.batched, min(MEASURE_S, left()))
        where = gs.stage.location
        stages.append({
            "index": i, "op": gs.stage.op,
            "path": where.path if where else None, "line": where.line if where else None,
            "samples_per_s": round(rate.samples_per_s, 1) if rate else None,
        })  # fmt: skip
    mark_limiting(stages)
    return stages


@dataclass
class Paired:
    """A rewrite timed in turns against the unmodified pipeline."""

    ratios: list[float]
    """Per turn: the rewrite's rate over the unmodified pipeline's."""
    base_rates: list[float]

    @property
    def gain(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half of the per-turn ratios (quartiles): how noisy the gain is."""
        if len(self.ratios) < 2:
            return (self.gain, self.gain)
        low, _, high = statistics.quantiles(self.ratios, n=4)
        return (low, high)


def paired_gain(
    base: Any, other: Any, batched: bool, turns: int, skip: int = 0, seconds: float = TURN_S
) -> Paired | None:
    """``other``'s speed-up over ``base``, timed in turns so that a machine that speeds up or
    slows down meanwhile moves both alike, in ABBA order so that neither always goes first.
    ``skip`` elements of ``other`` are read before its first timing (to fill a cache)."""
    ratios, base_rates = [], []
    for turn in range(turns):
        rates: dict[str, float] = {}
        for which in ("base", "other") if turn % 2 == 0 else ("other", "base"):
            fill = bool(skip) and which == "other" and turn == 0
            rate = time_dataset(
                base if which == "base" else other,
                batched,
                seconds + (CACHE_FILL_S if fill else 0.0),
                skip=skip if fill else 0,
            )
            if rate is None:
                return None
            rates[which] = rate.samples_per_s
        ratios.append(rates["other"] / rates["base"])
        base_rates.append(rates["base"])
    return Paired(ratios, base_rates)


def paired_cost(turns: int, fill: int = 0) -> float:
    """Seconds that :func:`paired_gain` takes for ``turns`` (with a cache to fill first)."""
    return turns * 2 * (TURN_S + 0.25) + (CACHE_FILL_S if fill else 0.0)


def _end_to_end(rate: float, base: float, ceiling: float | None) -> float:
    """What training could gain: the pipeline's gain, capped by the compute ceiling."""
    return min(rate, ceiling) / min(base, ceiling) if ceiling else rate / base


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
        "bound": candidate.bound,
    }  # fmt: skip


def rewritten(
    gp: GraphPipeline, fixes: list[Candidate], base: g.GraphDef | None = None
) -> g.GraphDef:
    """A copy of the pipeline's graph (or of ``base``, an edited copy of it) with ``fixes``."""
    graph = g.copy(gp.graph if base is None else base)
    for fix in fixes:
        fix.apply(graph)
    return graph


def _time_rewrite(
    gp: GraphPipeline, base: Any, fixes: list[Candidate], turns: int, batched: bool
) -> Paired | None:
    fill = max((c.fill_elements for c in fixes), default=0)
    try:
        dataset = g.rebuild(rewritten(gp, fixes), base.element_spec)
        return paired_gain(base, dataset, batched, turns, _fill_skip(gp, batched, fill))
    except (tf.errors.OpError, ValueError, TypeError):
        return None


def _fill_skip(gp: GraphPipeline, batched: bool, fill: int) -> int:
    """What to read before timing, in the pipeline's own items, so that ``fill`` elements
    have passed a cache."""
    return fill // max(1, _batch_size(gp)) if batched and fill else fill


def _batch_size(gp: GraphPipeline) -> int:
    for gs in gp.stages:
        size = gs.stage.param("batch_size")
        if isinstance(size, int) and size > 0:
            return size
    return 1
