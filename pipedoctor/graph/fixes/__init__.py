"""The candidate fixes for one pipeline, by kind: parallelism (``parallel``), less work per
element (``vectorize``, ``cache``) and measured bounds (``bounds``)."""

from __future__ import annotations

from pipedoctor.graph.candidate import Candidate
from pipedoctor.graph.fixes.bounds import python_bounds
from pipedoctor.graph.fixes.cache import CachePlan, Limits, choose
from pipedoctor.graph.fixes.parallel import parallelism
from pipedoctor.graph.fixes.vectorize import vectorized
from pipedoctor.graph.frontend import GraphPipeline


def candidates(
    gp: GraphPipeline,
    limits: Limits | None = None,
    rates: dict[int, float] | None = None,
    pipeline_rate: float | None = None,
) -> list[Candidate]:
    """Every rewrite worth timing for this pipeline, in stage order. The cache's position
    comes from the per-stage ``rates`` (stage index to samples/s) where they were measured."""
    found = parallelism(gp) + vectorized(gp) + python_bounds(gp)
    cache = cache_candidate(gp, limits or Limits(None), rates or {}, pipeline_rate)
    if cache is not None:
        found.append(cache)
    return sorted(found, key=lambda c: c.stage)


def cache_candidate(
    gp: GraphPipeline, limits: Limits, rates: dict[int, float], pipeline_rate: float | None
) -> Candidate | None:
    """A cache after the expensive deterministic work, with the moves that open its place; or,
    where a stage decodes, nothing caches it and no cache can be tried, a candidate that only
    says why."""
    position, why = choose(gp, rates, pipeline_rate)
    if position is None:
        if any(s.stage.op in ("cache", "snapshot") for s in gp.stages):
            return None  # it caches already; a cache in the wrong place is PD107's
        decoding = next(
            (i for i, s in enumerate(gp.stages) if s.stage.fn is not None and s.stage.fn.decodes),
            None,
        )
        if decoding is None:
            return None
        return Candidate("PD106", decoding, "`cache()`", lambda _: None, skip_reason=why)
    plan = CachePlan(gp, position, limits)
    stage = gp.stages[position.index].stage
    moved = [
        f"`{m.op}` {'taken out' if m.drop else 'turned off' if m.whole else 'moved after it'}"
        for m in position.moves
    ]
    cache = "`unbatch().cache()`" if position.rebatch is not None else "`cache()`"
    title = f"{cache} after `{stage.op}` (stage {position.index})"
    if position.rebatch is not None:
        moved.append(f"`batch` again after it (stage {position.rebatch} kept)")
    candidate = Candidate(
        "PD106",
        position.index,
        title + "".join(f", {m}" for m in moved),
        plan.apply,
        upstream_of_it_is_moot=True,
    )
    candidate.prepare = lambda deadline, spec=None: plan.prepare(candidate, deadline, spec)
    candidate.cleanup = plan.close
    return candidate
