"""Measured bounds: how fast the pipeline could run at best if a stage's work cost nothing.

No rewrite exists for a stage that calls Python (rewriting NumPy as TensorFlow ops is the
user's work), so the stage's function is replaced by one that returns zeros of its output
spec, and the pipeline is timed: an upper bound for any rewrite of the stage, never a fix.
"""

from __future__ import annotations

from pipedoctor.graph import graphdef as g
from pipedoctor.graph.candidate import Candidate
from pipedoctor.graph.frontend import GraphPipeline


def python_bounds(gp: GraphPipeline) -> list[Candidate]:
    found = []
    for i, gs in enumerate(gp.stages):
        if gs.stage.op == "map" and gs.stage.fn is not None and gs.stage.fn.python and i > 0:
            found.append(
                Candidate(
                    "PD108",
                    i,
                    f"`map` (stage {i}) with its Python work taken out",
                    lambda gd, n=gs.node, a=gp.stages[i - 1].spec, b=gs.spec: g.stub_function(
                        gd, n, a, b
                    ),
                    bound=True,
                )
            )
    return found
