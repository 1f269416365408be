"""An element-wise ``map`` before ``batch``, moved after it so that it runs once per batch.

The function is unchanged and now sees whole batches, which is the same computation only for
element-wise functions: the op types say which functions may be, and the user's own first
elements, compared value for value, say which are.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import tensorflow as tf

from pipedoctor.graph import graphdef as g
from pipedoctor.graph.candidate import Candidate, rewritten
from pipedoctor.graph.frontend import GraphPipeline
from pipedoctor.measure.protocol import brief

FLOAT_RTOL = 1e-6
"""Largest relative difference between float values that still counts as the same value."""
COMPARED = 4
"""Elements compared before a move after ``batch`` counts as verified."""
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
                lambda gd, m=gs.node, b=later.node: g.move_after_batch(gd, m, b),
                verify=True,
            )
        if later.stage.op not in ORDER_ONLY:
            return None
    return None


def vectorized(gp: GraphPipeline) -> list[Candidate]:
    return [c for i in range(len(gp.stages)) if (c := vectorize_candidate(gp, i)) is not None]


def verify(gp: GraphPipeline, candidate: Candidate, spec: Any) -> str:
    """Why the move is not made, or ``""`` once it is verified (and the candidate says how)."""
    why = changed_values(gp, [candidate], spec, COMPARED)
    if not why:
        candidate.verified = (
            f"its first {COMPARED} elements were compared value for value with the pipeline's "
            "as it is, shuffles taken out"
        )
    return why


def changed_values(
    gp: GraphPipeline, fixes: list[Candidate], spec: Any, count: int = COMPARED
) -> str:
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
