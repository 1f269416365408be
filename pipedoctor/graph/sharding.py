"""Which files each worker of a multi-worker job reads.

TensorFlow's own auto-shard rewrite is applied to the live pipeline once per worker index (as
``MultiWorkerMirroredStrategy`` does on each worker), and the rewritten graph is read back: where
the shard went says which policy really applied, and rebuilding the graph up to the shard lists
the worker's files. Asking TensorFlow instead of re-implementing its rules keeps the answer exact
across versions, fallbacks and errors included.
"""

from __future__ import annotations

import os
import time
from typing import Any

from pipedoctor.graph.frontend import OPS, READER_OPS

POLICIES = {-1: "OFF", 0: "AUTO", 1: "FILE", 2: "DATA", 3: "HINT"}
MAX_WORKERS = 64
"""Workers whose shares are listed; a larger job gets the first ones and a note."""
MAX_FILES = 100_000
LISTED = 3
"""File names shown per worker."""


def policy_name(dataset: Any) -> str:
    value = dataset.options().experimental_distribute.auto_shard_policy
    return POLICIES.get(int(value), str(value))


FILE_STAGES = frozenset(
    op for op, name in OPS.items() if op in READER_OPS or name in ("flat_map", "interleave")
)
"""Stages that turn file names into records: a shard placed before one shards files."""


def explain_sharding(dataset: Any, workers: int, deadline: float | None = None) -> dict[str, Any]:
    """The policy set, the one that applies, each worker's share of the files and a summary.

    ``applied`` is ``FILE`` (each worker reads its own files), ``DATA`` (each reads everything
    and keeps every N-th element), ``OFF`` (each reads and trains on everything) or ``fails``
    (TensorFlow's error, which every worker would hit at its first step). Shares are listed
    until ``deadline`` (``time.perf_counter()`` based), then the result says how many were.
    """
    import tensorflow as tf
    from tensorflow.python.data.experimental.ops.distribute import _AutoShardDataset

    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.frontend import spec_from_node
    from pipedoctor.measure.protocol import brief

    result: dict[str, Any] = {"policy": policy_name(dataset), "workers": workers, "shares": []}
    original = {n.name for n in g.serialize(dataset).node}
    for index in range(min(workers, MAX_WORKERS)):
        if deadline is not None and index and time.perf_counter() > deadline:
            result["listed_until_budget"] = index
            break
        try:
            graph = g.serialize(_AutoShardDataset(dataset, workers, index))
        except (tf.errors.OpError, ValueError, TypeError) as exc:
            result.update(applied="fails", error=brief(exc))
            break
        chain = g.chain(graph)
        added = [n for n in chain if n.op == "ShardDataset" and n.name not in original]
        if not added:
            result["applied"] = "OFF"
            break
        after = [n.op for n in chain[chain.index(added[0]) + 1 :]]
        if not FILE_STAGES.intersection(after):  # the shard splits elements, not file names
            result["applied"] = "DATA"
            break
        result["applied"] = "FILE"
        files_ds = g.rebuild(g.truncated(graph, added[0].name), spec_from_node(added[0]))
        try:
            names = [_text(x) for x in files_ds.take(MAX_FILES).as_numpy_iterator()]
        except tf.errors.OpError as exc:
            result.update(applied="fails", error=brief(exc))
            break
        result["shares"].append({
            "worker": index, "files": len(names),
            "bytes": sum(_size(n) for n in names),
            "first": [os.path.basename(n) for n in names[:LISTED]],
        })  # fmt: skip
    result["summary"] = summary(result)
    return result


def _size(path: str) -> int:
    """A file's size, local or remote (``gs://``...); 0 when it cannot be read."""
    import tensorflow as tf

    try:
        return int(tf.io.gfile.stat(path).length)
    except (tf.errors.OpError, OSError):
        return 0


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def summary(result: dict[str, Any]) -> str:
    """One paragraph a user can act on."""
    workers, policy, applied = result["workers"], result["policy"], result.get("applied")
    head = f"With auto-shard policy {policy} on {workers} workers"
    if applied == "fails":
        return f"{head}, every worker fails at its first step: {result.get('error', '')}"
    if applied == "OFF":
        return (
            f"{head}, nothing is sharded: every worker reads and trains on the whole data set, "
            f"so each example is seen {workers} times per epoch."
        )
    if applied == "DATA":
        return (
            f"{head}, the data is sharded by element: every worker reads all of the input and "
            f"keeps 1 element in {workers}, so each does the reading and decoding of the whole "
            "data set."
        )
    shares = result["shares"]
    counts = [s["files"] for s in shares]
    listed = "; ".join(
        f"worker {s['worker']}: {s['files']} files ({s['bytes'] / 1e6:,.1f} MB, "
        f"{', '.join(s['first'])}{', ...' if s['files'] > len(s['first']) else ''})"
        for s in shares[:4]
    )
    more = f"; ... ({workers - 4} more workers)" if workers > 4 else ""
    text = f"{head}, file i goes to worker i mod {workers}: {listed}{more}."
    if counts and max(counts) != min(counts):
        text += (
            f" Shares are uneven ({max(counts)} against {min(counts)} files): every epoch "
            "waits for the largest."
        )
    if len(shares) < workers:
        text += f" Shares were listed for the first {len(shares)} workers."
    return text
