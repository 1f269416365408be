"""Cache placement by measurement: where a cache goes, what it holds, and the reorders that
open a position for it.

Every stage of the deterministic part of the pipeline is a possible position. The per-stage
rates say where the expensive work ends: the cache goes after the first stage by which the
pipeline has done nearly all of the work the positions could hold, whatever the ops are
(decoding, parsing, FFTs, tokenising). A ``repeat`` or a ``shuffle`` before that stage would
keep the cache from filling or freeze the first epoch's order, so they move after the cache
where that keeps what the pipeline yields: ``repeat`` past stages that keep order (the same
elements in the same order), ``shuffle`` past one-to-one deterministic maps (the same elements
every epoch, orders drawn the same way, reshuffled every epoch), and a shuffle of file names
is taken out where the records are shuffled again later.

Work after a ``batch`` that a shuffle or repeat comes before (a factory that shuffles and
batches, then a vectorising ``map``) is cached by restructuring: the map still runs on the
same batches once, its results are unbatched into the cache, and the moved stages and a twin of
the ``batch`` follow it. That is the same pipeline only for a map that treats each row of a
batch on its own, so the user's first batches are compared value for value, mapped over batches
of another size, before anything is filled.

The size is learned by filling the cache itself: one pass with a byte counter behind the cache,
stopped when it would pass the free-RAM share or the time allowed. The filled cache is then the
one the timing reads, so the user's data is read once. What does not fit in RAM is tried as a
``cache(filename)`` on local disk the same way.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import tensorflow as tf

from pipedoctor.graph import graphdef as g
from pipedoctor.graph.candidate import Candidate
from pipedoctor.graph.frontend import READER_CLASSES, GraphPipeline, function_facts

SHUFFLE_OPS = frozenset({"ShuffleDatasetV3", "ShuffleDatasetV2", "ShuffleDataset"})
REPEAT_OPS = frozenset({"RepeatDataset"})
PASS_THROUGH_OPS = frozenset(
    {"PrefetchDataset", "OptionsDataset", "ModelDataset", "MaxIntraOpParallelismDataset",
     "PrivateThreadPoolDataset", "AssertCardinalityDataset"}
)  # fmt: skip
"""Stages that neither change elements nor cost work: never a position of their own."""
ONE_TO_ONE_OPS = frozenset({"MapDataset", "ParallelMapDatasetV2", "ParallelMapDataset"})
"""A shuffle moves past these (deterministic functions only): one element in, one out."""
ORDER_KEEPING_OPS = ONE_TO_ONE_OPS | {"FilterDataset"}
"""A repeat moves past these: each epoch's elements come out the same, in the same order."""
READER_EXPANSIONS = frozenset(
    {"FlatMapDataset", "InterleaveDataset", "ParallelInterleaveDatasetV4",
     "LegacyParallelInterleaveDatasetV2"}
)  # fmt: skip
IN_MEMORY_SOURCES = frozenset({"TensorSliceDataset", "TensorDataset", "RangeDataset"})
"""Sources that read memory already: a cache right after one would only copy it."""
BATCH_OPS = frozenset({"BatchDatasetV2", "ParallelBatchDataset"})
"""Batches a cache after later work can restructure around (unbatched into it, batched again)."""
NEVER_CACHED_PAST = frozenset(
    {"CacheDatasetV2", "CacheDataset", "ShuffleAndRepeatDatasetV2", "DirectedInterleaveDataset"}
)
COSTLY_SHARE = 0.8
"""The positions whose cost reaches this share of the highest hold nearly all the work."""
ROOM_FOR_WORK = 2.0
"""Of those, the one holding the most work may take up to this many times the bytes of the
smallest: token ids over their raw text, yes; a cast to float32 of 8-bit pixels (x4), no."""
WORTH_CACHING = 0.1
"""A position whose work is under this share of the whole pipeline's time is not tried."""
FILL_CAP_S = 30.0
"""Longest a first pass that fills a cache may take."""
FILL_CHUNK = 64
"""Elements counted per step of the fill pass: the RAM guard's granularity."""
LIVE_CACHE = "pipedoctor/filled_cache"
"""The graph node that holds a filled memory cache's live handle in rewritten graphs."""


@dataclass
class Move:
    """A stage before the cache position that moves after the cache (or goes, for a shuffle of
    file names that a later shuffle replaces), and what that keeps."""

    index: int
    node: str
    op: str
    drop: bool = False
    whole: bool = False
    """A factory's own shuffle: turned off in its call, and every cached element shuffled
    after the cache instead (the source cannot move a stage out of a call)."""


@dataclass
class Position:
    index: int
    moves: list[Move] = field(default_factory=list)
    rebatch: int | None = None
    """The ``batch`` stage the work after it runs on, where a cache here is a restructure: its
    results unbatched into the cache, the moves after it, then a twin of that ``batch``."""


@dataclass
class Fill:
    """What one pass through a cache's input read."""

    elements: int = 0
    bytes: int = 0
    seconds: float = 0.0
    complete: bool = False
    stopped: str = ""


@dataclass
class Limits:
    """How much a cache may take, in RAM and on local disk."""

    free_ram_bytes: int | None
    ram_fraction: float = 0.5
    disk_fraction: float = 0.5
    disk_dir: str | None = None
    """Where a cache on disk is tried (a temporary folder under it, removed afterwards)."""


def _graph_op(gp: GraphPipeline, index: int) -> str:
    return g.nodes(gp.graph)[gp.stages[index].node].op


def _random_upstream(gp: GraphPipeline, node: g.NodeDef) -> bool:
    """A shuffle or a random function in the other inputs of a ``zip`` or ``concatenate``."""
    graph_nodes = g.nodes(gp.graph)
    stack = [graph_nodes[g.clean(i)] for i in list(node.input)[1:] if not i.startswith("^")]
    seen: set[str] = set()
    while stack:
        current = stack.pop()
        if current.name in seen or not g.is_dataset(current):
            continue
        seen.add(current.name)
        if current.op in SHUFFLE_OPS or current.op in NEVER_CACHED_PAST:
            return True
        facts = function_facts(gp.graph, current)
        if facts is not None and (facts.random or facts.python):
            return True
        stack += g.dataset_inputs(gp.graph, current)
    return False


def deterministic(gp: GraphPipeline, index: int) -> bool:
    """The stage yields the same elements every pass, in an order a cache may keep."""
    gs = gp.stages[index]
    op = _graph_op(gp, index)
    if op in NEVER_CACHED_PAST:
        return False
    fn = gs.stage.fn
    if fn is not None and (fn.random or fn.python):
        return False
    if op in ("ZipDataset", "ConcatenateDataset"):
        return not _random_upstream(gp, g.nodes(gp.graph)[gs.node])
    return True


def _reads_files(gp: GraphPipeline, index: int) -> bool:
    gs = gp.stages[index]
    expands = _graph_op(gp, index) in READER_EXPANSIONS
    return expands and (
        gs.stage.op in READER_CLASSES.values() or bool(gs.stage.fn and gs.stage.fn.reader)
    )


def positions(gp: GraphPipeline) -> list[Position]:
    """Every stage a cache could follow, source first, with the moves each one needs."""
    if any(_graph_op(gp, i) in ("CacheDatasetV2", "CacheDataset") for i in range(len(gp.stages))):
        return []
    found: list[Position] = []
    pending: list[Move] = []
    rebatch: int | None = None
    for i, gs in enumerate(gp.stages):
        op = _graph_op(gp, i)
        if op in SHUFFLE_OPS or op in REPEAT_OPS:
            if rebatch is not None:
                return found  # it reorders whole batches: after a twin batch it would not
            pending.append(Move(i, gs.node, "shuffle" if op in SHUFFLE_OPS else "repeat"))
            continue
        if op in PASS_THROUGH_OPS:
            continue
        if not deterministic(gp, i):
            break
        if rebatch is not None:  # only one-to-one work on the same batches can be cached
            if op not in ONE_TO_ONE_OPS:
                return found
            found.append(Position(i, [_copy(m) for m in pending], rebatch))
            continue
        if op in BATCH_OPS and any(not m.drop for m in pending):
            rebatch = i  # the stages before it hold no more work than the cache before it
            for move in pending:
                move.whole = move.op == "shuffle" and _same_call(gp, move.index, i)
            if any(m.whole for m in pending) and not _inside_call(gp, i):
                # the factory's output, unbatched into the cache: the work inside its call
                found.append(Position(i, [_copy(m) for m in pending], rebatch))
            continue
        for move in pending:
            if move.op == "repeat" and op not in ORDER_KEEPING_OPS:
                return found
            if move.op == "shuffle" and op not in ONE_TO_ONE_OPS:
                if not (_reads_files(gp, i) and move.index == i - 1 or move.drop):
                    return found
                move.drop = True  # a shuffle of file names: only a later shuffle replaces it
        if op not in IN_MEMORY_SOURCES and not _inside_call(gp, i):
            found.append(Position(i, [_copy(m) for m in pending]))
    return found


def _inside_call(gp: GraphPipeline, index: int) -> bool:
    """Stages of the same library call (a factory's ``batch``) follow this one: no source
    can put a cache between them, so a cache goes after the call's last stage instead."""
    return any(
        _same_call(gp, index, later) and _graph_op(gp, later) not in PASS_THROUGH_OPS
        for later in range(index + 1, len(gp.stages))
    )


def _copy(move: Move) -> Move:
    return Move(move.index, move.node, move.op, move.drop, move.whole)


def _same_call(gp: GraphPipeline, a: int, b: int) -> bool:
    """Both stages were made by a library inside one call of the user's (a factory that
    shuffles and batches), not by a chain of the user's own calls on one line."""
    first, second = gp.stages[a], gp.stages[b]
    where = first.stage.location
    return (
        first.in_library
        and second.in_library
        and where is not None
        and where == second.stage.location
    )


def _later_shuffle(gp: GraphPipeline, index: int) -> int | None:
    return next(
        (j for j in range(index + 1, len(gp.stages)) if _graph_op(gp, j) in SHUFFLE_OPS), None
    )


def choose(
    gp: GraphPipeline, rates: dict[int, float], pipeline_rate: float | None
) -> tuple[Position | None, str]:
    """Where the expensive deterministic work is done, by the per-stage rates: of the
    positions whose cost reaches ``COSTLY_SHARE`` of the highest, the latest, since it holds
    the most work, unless its elements take more than ``ROOM_FOR_WORK`` times the bytes per
    sample of the smallest (a cast to float grows them); then the one with the fewest bytes (a
    resize shrinks them), the latest of equals. ``None`` and why, when no cache is tried."""
    every = positions(gp)
    found = [p for p in every if not any(m.drop for m in p.moves) or _later_shuffle(gp, p.index)]
    blocked = next((p for p in every if p not in found), None)
    position, why = _costliest(gp, found, rates, pipeline_rate)
    if position is None and blocked is not None:
        move = next(m for m in blocked.moves if m.drop)
        where = gp.stages[move.index].stage.location
        line = f" (line {where.line})" if where else ""
        return None, (
            f"the file names are shuffled{line} before the work a cache would hold, and no later "
            "`shuffle` would mix the records instead: with `list_files(..., shuffle=False)`, add "
            "`.cache().shuffle(n)` after the parsing"
        )
    return position, why


def _costliest(
    gp: GraphPipeline, found: list[Position], rates: dict[int, float], pipeline_rate: float | None
) -> tuple[Position | None, str]:
    if not found:
        return None, "no stage of the pipeline can be cached: randomness or a cache comes first"
    rated = [(p, 1.0 / rates[p.index]) for p in found if rates.get(p.index)]
    if not rated:  # no per-stage rates (budget): the last deterministic stage
        return found[-1], ""
    top = max(cost for _, cost in rated)
    costly = [(p, c) for p, c in rated if c >= COSTLY_SHARE * top]
    sizes = {p.index: sample_bytes(gp, p.index) for p, _ in costly}
    smallest = min((size for size in sizes.values() if size is not None), default=None)
    most_work = sizes[costly[-1][0].index]
    if smallest is not None and (most_work is None or most_work > ROOM_FOR_WORK * smallest):
        costly = [
            (p, c)
            for p, c in costly
            if sizes[p.index] is not None and sizes[p.index] <= 1.05 * smallest
        ]
    chosen, cost = costly[-1]
    if pipeline_rate and cost < WORTH_CACHING * (1.0 / pipeline_rate):
        return None, (
            f"the work a cache could hold (up to stage {chosen.index}) takes under "
            f"{WORTH_CACHING:.0%} of the pipeline's time"
        )
    return chosen, ""


def sample_bytes(gp: GraphPipeline, index: int) -> float | None:
    """Bytes per sample of the elements out of stage ``index``, from its first element."""
    from pipedoctor.measure.protocol import element_bytes, samples_in

    gs = gp.stages[index]
    try:
        first = next(iter(g.rebuild(g.truncated(gp.graph, gs.node), gs.spec)))
    except (tf.errors.OpError, StopIteration, ValueError, TypeError):
        return None
    return element_bytes(first) / (samples_in(first) if gs.batched else 1)


def _bytes_of(*components: Any) -> Any:
    total = tf.constant(0, tf.int64)
    for tensor in tf.nest.flatten(components, expand_composites=True):
        if tensor.dtype == tf.string:
            total += tf.reduce_sum(tf.cast(tf.strings.length(tensor), tf.int64))
        else:
            total += tf.cast(tf.size(tensor), tf.int64) * tensor.dtype.size
    return total


def fill(dataset: Any, limit_bytes: float, deadline: float) -> Fill:
    """Read ``dataset`` once to its end, through the cache it ends with, counting elements and
    bytes; stop when the bytes would pass ``limit_bytes`` or the time ``deadline``."""
    result = Fill()
    started = time.perf_counter()
    sizes = dataset.map(_bytes_of).batch(FILL_CHUNK)
    for chunk in sizes:
        values = chunk.numpy()
        result.elements += len(values)
        result.bytes += int(values.sum())
        if result.bytes > limit_bytes:
            result.stopped = "size"
            break
        if time.perf_counter() >= deadline:
            result.stopped = "time"
            break
    else:
        result.complete = True
    result.seconds = time.perf_counter() - started
    return result


def _mb(size: float) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 1e6 else f"{size / 1e6:,.1f} MB"


def _share(fraction: float) -> str:
    """A fraction as a percentage with the digits it needs: 50%, 0.2%."""
    return f"{fraction:.0%}" if fraction >= 0.01 else f"{fraction * 100:.2g}%"


class CachePlan:
    """One cache candidate: its position and moves, filled on demand (``prepare``) in memory
    or, when it does not fit there, on local disk."""

    def __init__(self, gp: GraphPipeline, position: Position, limits: Limits) -> None:
        self.gp = gp
        self.position = position
        self.limits = limits
        self.live_node: g.NodeDef | None = None
        self.keepalive: Any = None
        self.folder: tempfile.TemporaryDirectory[str] | None = None
        self.filename = ""
        self.elements = 0
        """Elements the filled cache holds (a factory's shuffle, moved, shuffles them all)."""
        self.regroup_checked = ""

    # -- the rewrite -------------------------------------------------------------------------

    def reorder(self, graph: g.GraphDef) -> str:
        """Apply the moves (and a restructure's unbatch and twin batch); returns the node the
        cache follows."""
        target = self.gp.stages[self.position.index].node
        for move in self.position.moves:
            if move.drop:
                g.bypass(graph, move.node)
        after = target
        if self.position.rebatch is not None:
            target = after = g.insert_unbatch(graph, after)
        for move in (m for m in self.position.moves if not m.drop):
            g.move_after(graph, move.node, after)
            if move.whole and self.elements:
                g.set_param(graph, move.node, "buffer_size", self.elements)
            after = move.node
        if self.position.rebatch is not None:
            batch = self.gp.stages[self.position.rebatch].node
            twin = g.insert_batch_like(
                graph, after, batch, self.gp.stages[self.position.index].node
            )
            if self._call_prefetches():
                g.insert_prefetch(graph, twin)
        return target

    def apply(self, graph: g.GraphDef) -> None:
        target = self.reorder(graph)
        if self.live_node is None:
            g.insert_cache(graph, target, self.filename)
            return
        g.insert_cache(graph, target, resource=LIVE_CACHE)
        g.use_live_resource(graph, LIVE_CACHE, self.live_node)

    def prefix(self) -> Any:
        """The pipeline up to and including a fresh cache (moves applied): what a fill reads."""
        graph = g.copy(self.gp.graph)
        target = self.reorder(graph)
        cache = g.insert_cache(graph, target, self.filename)
        spec = self.gp.stages[self.position.index].spec
        if self.position.rebatch is not None:  # its elements are rows of the map's batches
            spec = tf.nest.map_structure(lambda s: s._unbatch(), spec)  # noqa: SLF001
        return g.rebuild(g.truncated(graph, cache), spec)

    def regrouped(self, spec: Any) -> str:
        """Why a restructure is not the same pipeline, or ``""``: the map's first batches,
        computed over batches of another size and batched again, compared value for value
        with the pipeline's own (shuffles taken out on both sides)."""
        from pipedoctor.graph.fixes.vectorize import COMPARED, changed_values

        rebatch = self.gp.stages[self.position.rebatch or 0]
        size = rebatch.stage.param("batch_size")
        if not isinstance(size, int) or size < 2:
            return "the batch size before the map cannot be read from the graph"
        other = size // 2
        target = self.gp.stages[self.position.index].node

        def regroup(graph: g.GraphDef) -> None:
            g.insert_batch_like(graph, g.insert_unbatch(graph, target), rebatch.node, target)
            g.set_param(graph, rebatch.node, "batch_size", other)

        check = Candidate(None, self.position.index, "regroup", regroup)
        why = changed_values(self.gp, [check], spec, COMPARED)
        if why:
            return (
                f"its map does not treat each row of a batch on its own ({why.removeprefix('the ')}"
                f" when mapped over batches of {other} instead of {size})"
            )
        self.regroup_checked = f"batches of {other} instead of {size}"
        return ""

    # -- the fill ----------------------------------------------------------------------------

    def prepare(self, candidate: Candidate, deadline: float, spec: Any = None) -> str | None:
        """Fill the cache in RAM, or on local disk when it does not fit; on success the
        candidate reads the filled cache and says how it was verified. A restructure is first
        compared value for value (``spec``: the pipeline's element structure). Returns why
        not."""
        free = self.limits.free_ram_bytes
        if free is None:
            return "free RAM is unknown on this system, so no cache was filled"
        if self.position.rebatch not in (None, self.position.index):  # a map to compare
            why = self.regrouped(spec if spec is not None else self.gp.stages[-1].spec)
            if why:
                return why
        ram_limit = self.limits.ram_fraction * free
        limit_s = max(0.0, deadline - time.perf_counter())
        dataset = self.prefix()
        in_ram = fill(dataset, ram_limit, deadline)
        if in_ram.complete:
            self.elements = in_ram.elements
            self.keepalive = dataset  # owns the filled cache while rewrites read it
            self.live_node = _live_cache_node(dataset)
            candidate.live = frozenset({LIVE_CACHE})
            candidate.verified = (
                f"a first pass filled it: {_mb(in_ram.bytes)} for {in_ram.elements:,} elements, "
                f"within {_share(self.limits.ram_fraction)} of the {_mb(free)} of free RAM"
                + self._regroup_note()
            )
            self._describe(candidate, "memory", in_ram)
            return None
        if in_ram.stopped == "time":
            return (
                f"a first pass did not end within {limit_s:.0f} s ({in_ram.elements:,} "
                f"elements, {_mb(in_ram.bytes)} read), so its size is unknown"
            )
        return self._on_disk(candidate, deadline, in_ram, ram_limit)

    def _on_disk(
        self, candidate: Candidate, deadline: float, in_ram: Fill, ram_limit: float
    ) -> str | None:
        too_big = (
            f"it passed {_mb(ram_limit)} ({_share(self.limits.ram_fraction)} of free RAM) after "
            f"{in_ram.elements:,} elements"
        )
        self.folder = tempfile.TemporaryDirectory(
            prefix="pipedoctor-cache-", dir=self.limits.disk_dir
        )
        free_disk = shutil.disk_usage(self.folder.name).free
        self.filename = f"{self.folder.name}/cache"
        on_disk = fill(self.prefix(), self.limits.disk_fraction * free_disk, deadline)
        if not on_disk.complete:
            why = (
                f"more than {_share(self.limits.disk_fraction)} of the {_mb(free_disk)} free"
                if on_disk.stopped == "size"
                else "a first pass to local disk did not end in time"
            )
            self.close()
            return (
                f"it does not fit in RAM ({too_big}), and not on local disk either ({why}): "
                "preprocess the data offline into TFRecord files at training resolution"
            )
        candidate.writes_files = True
        self.elements = on_disk.elements
        candidate.verified = (
            f"a first pass wrote it to local disk: {_mb(on_disk.bytes)} for "
            f"{on_disk.elements:,} elements, within {_share(self.limits.disk_fraction)} of the "
            f"{_mb(free_disk)} free; in RAM {too_big}" + self._regroup_note()
        )
        self._describe(candidate, "disk", on_disk)
        candidate.details["cache"]["not_in_ram"] = too_big
        return None

    def _regroup_note(self) -> str:
        if not self.regroup_checked:
            return ""
        return (
            "; the map's values on the first batches were compared element for element with "
            f"the same map over {self.regroup_checked}"
        )

    def _describe(self, candidate: Candidate, kind: str, filled: Fill) -> None:
        per_element = filled.bytes / max(1, filled.elements)
        candidate.details["cache"] = {
            "stage": self.position.index,
            "kind": kind,
            "elements": filled.elements,
            "bytes": filled.bytes,
            "fill_seconds": round(filled.seconds, 1),
            "moves": [self._statement(m, per_element) for m in self.position.moves],
            "moved": [self._moved(m) for m in self.position.moves],
        }
        if self.position.rebatch is not None:
            candidate.details["cache"]["moves"].append(self._rebatch_statement())
            candidate.details["cache"]["added"] = self._added()

    def _added(self) -> list[dict[str, Any]]:
        """The stages a restructure adds around the cache, in the order they are written:
        ``unbatch`` before it, a shuffle of every element for a factory's, the twin batch."""
        batch = self.gp.stages[self.position.rebatch or 0].stage
        added: list[dict[str, Any]] = [{"op": "unbatch"}]
        if any(m.whole for m in self.position.moves):
            added.append({"op": "shuffle", "value": self.elements})
        added.append({
            "op": "batch", "value": batch.param("batch_size"),
            "drop_remainder": batch.param("drop_remainder") is True,
        })  # fmt: skip
        if self._call_prefetches():
            added.append({"op": "prefetch"})  # the call ended with one: so does the rewrite
        return added

    def _call_prefetches(self) -> bool:
        """The library call the cache follows ends with its own ``prefetch``, which the
        restructure's stages would otherwise come after."""
        index = self.position.index
        return any(
            _same_call(self.gp, index, later) and _graph_op(self.gp, later) == "PrefetchDataset"
            for later in range(index + 1, len(self.gp.stages))
        )

    def _rebatch_statement(self) -> str:
        batch = self.gp.stages[self.position.rebatch or 0].stage
        size = batch.param("batch_size")
        where = f" (line {batch.location.line})" if batch.location else ""
        if self.position.rebatch == self.position.index:
            return (
                f"the call's batches of {size}{where} are `unbatch()`ed into the cache and "
                f"batched again by {size} after it: batches of the same size and rows"
            )
        return (
            f"the map still runs once on the batches of {size}{where}; its results are "
            f"`unbatch()`ed into the cache and batched again by {size} after it: batches of "
            "the same size, whose rows the map computed as before"
        )

    def _moved(self, move: Move) -> dict[str, Any]:
        """Where a moved stage was built, for ``check --fix`` to move it in the source."""
        where = self.gp.stages[move.index].stage.location
        return {
            "op": move.op, "taken_out": move.drop or move.whole, "in_call": move.whole,
            "path": where.path if where else None,
            "line": where.line if where else None,
            "column": where.column if where else None,
        }  # fmt: skip

    def _statement(self, move: Move, per_element: float) -> str:
        stage = self.gp.stages[move.index].stage
        where = f" (line {stage.location.line})" if stage.location else ""
        if move.op == "repeat":
            return f"`repeat`{where} moved after the cache: the same elements in the same order"
        buffer = stage.param("buffer_size")
        if move.whole:
            return (
                f"the shuffle inside the call{where} turned off (`shuffle=False`) and, after "
                f"the cache, all {self.elements:,} cached elements shuffled every epoch "
                f"(`shuffle({self.elements})`, about {_mb(self.elements * per_element)}): "
                f"each epoch a uniformly random order, where the call drew from a buffer of "
                f"{buffer}"
            )
        if move.drop:
            later = self.gp.stages[_later_shuffle(self.gp, self.position.index) or 0].stage
            later_where = f" (line {later.location.line})" if later.location else ""
            return (
                f"the shuffle of file names{where} taken out: before a cache it would replay the "
                f"first epoch's file order; the records are still shuffled every epoch after "
                f"the cache by `shuffle`{later_where}"
            )
        memory = (
            f", about {_mb(buffer * per_element)}" if isinstance(buffer, int) and buffer > 0 else ""
        )
        return (
            f"`shuffle({buffer})`{where} moved after the cache with the same buffer: the same "
            "elements every epoch, in orders drawn the same way, reshuffled every epoch; its "
            f"buffer now holds cached elements{memory}"
        )

    def close(self) -> None:
        """Remove a cache written to disk."""
        if self.folder is not None:
            self.folder.cleanup()
            self.folder = None


def _live_cache_node(dataset: Any) -> g.NodeDef:
    """The live resource handle of the memory cache ``dataset`` ends with."""
    graph = g.serialize(dataset)
    cache = next(n for n in reversed(graph.node) if n.op == "CacheDatasetV2")
    return g.nodes(graph)[g.clean(cache.input[2])]
