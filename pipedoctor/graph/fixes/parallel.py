"""Fixes that add parallelism or buffering: parallel ``map``, ``interleave`` and ``batch``,
AUTOTUNE in place of fixed numbers, parallel reads of several files, a final ``prefetch``."""

from __future__ import annotations

from pipedoctor.graph import graphdef as g
from pipedoctor.graph.candidate import Candidate
from pipedoctor.graph.frontend import READER_CLASSES, GraphPipeline

AUTOTUNE_PARAMS = {"ParallelMapDatasetV2": "num_parallel_calls", "PrefetchDataset": "buffer_size"}
"""Graph ops whose fixed parallelism or buffer can be handed to AUTOTUNE."""
KEEPS_ORDER = "made parallel with deterministic=True, it yields the same records in the same order"


def parallelism(gp: GraphPipeline) -> list[Candidate]:
    found: list[Candidate] = []
    graph_nodes = g.nodes(gp.graph)
    for i, gs in enumerate(gp.stages):
        node, graph_op = gs.node, graph_nodes[gs.node].op
        if graph_op == "MapDataset":
            found.append(
                Candidate(
                    "PD102",
                    i,
                    f"parallel `map` (stage {i})",
                    lambda gd, n=node: g.map_to_parallel(gd, n),
                )
            )
        elif graph_op == "InterleaveDataset":
            found.append(
                Candidate(
                    "PD104",
                    i,
                    f"parallel `interleave` (stage {i})",
                    lambda gd, n=node: g.interleave_to_parallel(gd, n),
                    verified=KEEPS_ORDER,
                )
            )
        elif graph_op == "FlatMapDataset" and gs.stage.op in READER_CLASSES.values():
            files = gs.stage.param("filenames")
            count = files.count if files is not None and files.count else None
            what = f"{count} files" if count else "the files (how many is unknown: AUTOTUNE)"
            found.append(
                Candidate(
                    "PD104",
                    i,
                    f"parallel reads of {what} (stage {i})",
                    lambda gd, n=node, c=count or -1: g.interleave_to_parallel(gd, n, c),
                )
            )
        elif graph_op == "BatchDatasetV2":
            found.append(
                Candidate(
                    None,
                    i,
                    f"parallel `batch` (stage {i})",
                    lambda gd, n=node: g.batch_to_parallel(gd, n),
                )
            )
        elif graph_op in AUTOTUNE_PARAMS:
            param = AUTOTUNE_PARAMS[graph_op]
            if gs.stage.param(param) not in (None, -1):
                found.append(
                    Candidate(
                        "PD103",
                        i,
                        f"`{gs.stage.op}` with AUTOTUNE (stage {i})",
                        lambda gd, n=node, p=param: g.set_param(gd, n, p, -1),
                    )
                )
    visible = [s for s in gp.stages if not s.internal]
    if visible and visible[-1].stage.op not in ("prefetch", "with_options", "repeat"):
        last = gp.stages[-1].node
        found.append(
            Candidate(
                "PD101",
                len(gp.stages) - 1,
                "`prefetch(AUTOTUNE)` at the end",
                lambda gd, n=last: g.insert_prefetch(gd, n),
            )
        )
    return found
