"""Detectors for the input-pipeline rules (PD1xx), written once against ``Pipeline``.

They read only the model, so they run unchanged on pipelines seen in source (static) and on
pipelines read from a live dataset's graph.
"""

from __future__ import annotations

from collections.abc import Iterator

from pipedoctor.pipeline import (
    AUTOTUNE,
    DECODING_FACTORIES,
    RECORD_READERS,
    Files,
    Location,
    Pipeline,
    Stage,
)
from pipedoctor.report import Severity
from pipedoctor.rules import Context, Hit, detector

PREFETCH_MAY_FOLLOW = frozenset({"with_options", "repeat", "prefetch", "prefetch_to_device"})
PREFETCHING_SOURCES = DECODING_FACTORIES
"""Keras directory factories already end their dataset with ``prefetch(AUTOTUNE)``."""
PARALLELISM_PARAMS = ("num_parallel_calls", "num_parallel_reads")
MAPS = ("map", "map_with_legacy_function")
BATCHES = ("batch", "padded_batch", "ragged_batch")


def stages(context: Context, *ops: str) -> Iterator[tuple[Pipeline, Stage]]:
    for pipeline, stage in context.analysis.stages():
        if not ops or stage.op in ops:
            yield pipeline, stage


def reads_records(stage: Stage) -> bool:
    return stage.op in RECORD_READERS or bool(stage.fn and stage.fn.reader)


def sequential(value: object) -> bool:
    """``num_parallel_calls`` absent or ``None``: TensorFlow runs the stage on one thread."""
    return value is None


@detector("PD101")
def missing_prefetch(context: Context) -> Iterator[Hit]:
    for pipeline in context.analysis.pipelines:
        if pipeline.sink is None or pipeline.source.op == "external" and len(pipeline.stages) == 1:
            continue
        if pipeline.sink == "variable" and not any(s.op in BATCHES for s in pipeline.stages):
            continue  # an unbatched dataset in a variable is a file list, a peek, a plot
        ops = [s.op for s in pipeline.stages]
        prefetched = [i for i, op in enumerate(ops) if op == "prefetch"]
        if not prefetched and pipeline.source.op in PREFETCHING_SOURCES:
            prefetched = [0]
        where = {"fit": "handed to training", "return": "returned", "variable": "built here"}
        if not prefetched:
            yield Hit(
                pipeline.last.location,
                f"The dataset {where[pipeline.sink]} ends with `{pipeline.last.op}`, not "
                "`prefetch`: each training step waits while the next batch is prepared.",
            )
            continue
        after = [
            s for s in pipeline.stages[prefetched[-1] + 1 :] if s.op not in PREFETCH_MAY_FOLLOW
        ]
        if after:
            yield Hit(
                after[0].location,
                f"`{after[0].op}` comes after `prefetch`: it runs in the training step's path "
                "again; make `prefetch` the last transformation.",
            )


@detector("PD102")
def sequential_map(context: Context) -> Iterator[Hit]:
    for _, stage in stages(context, *MAPS):
        if sequential(stage.param("num_parallel_calls")):
            yield Hit(
                stage.location,
                "`map` without `num_parallel_calls` runs its function on one element at a time, "
                "on one core.",
            )


@detector("PD103")
def fixed_parallelism(context: Context) -> Iterator[Hit]:
    for _, stage in stages(context):
        names = PARALLELISM_PARAMS + (("buffer_size",) if stage.op == "prefetch" else ())
        for name in names:
            value = stage.param(name)
            if isinstance(value, int) and not isinstance(value, bool) and value != AUTOTUNE:
                why = (
                    "a fixed buffer: with AUTOTUNE tf.data sizes it to how fast training consumes"
                    if name == "buffer_size"
                    else "a fixed number: it neither uses the cores a bigger machine has nor "
                    "adapts to the load"
                )
                yield Hit(
                    stage.location,
                    f"`{stage.op}` has `{name}={value}`, {why}; use `tf.data.AUTOTUNE`.",
                )


@detector("PD104")
def sequential_reads(context: Context) -> Iterator[Hit]:
    for _, stage in stages(context):
        if stage.op in RECORD_READERS:
            files = stage.param("filenames")
            if (
                isinstance(files, Files)
                and files.several
                and sequential(stage.param("num_parallel_reads"))
            ):
                count = f"{files.count} files" if files.count else "several files"
                yield Hit(
                    stage.location,
                    f"`{stage.op}` reads {count} one after another (no `num_parallel_reads`).",
                )
        elif stage.op == "interleave" and sequential(stage.param("num_parallel_calls")):
            yield Hit(
                stage.location,
                "`interleave` without `num_parallel_calls` opens its inputs one at a time.",
            )
        elif stage.op == "flat_map" and stage.fn and stage.fn.reader:
            yield Hit(
                stage.location,
                f"`flat_map` over `{stage.fn.reader}` reads the files strictly one after "
                "another; `interleave` reads several at once.",
            )


@detector("PD105")
def unsharded_files(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context):
        files = stage.param("filenames")
        if stage.op in RECORD_READERS and isinstance(files, Files):
            if files.count == 1 and files.literal:
                yield Hit(
                    stage.location,
                    f"`{stage.op}` reads a single file: nothing to read in parallel, and nothing "
                    "to split across workers.",
                )
        elif stage.op == "shard":
            upstream = pipeline.upstream_of(stage)
            if any(reads_records(s) for s in upstream):
                parsed = any(s.op in MAPS for s in upstream)
                work = "reads and parses" if parsed else "reads"
                yield Hit(
                    stage.location,
                    f"`shard` comes after the records were read: every worker {work} every "
                    "file, then keeps one record in N.",
                )


@detector("PD106")
def missing_cache(context: Context) -> Iterator[Hit]:
    if context.measurements.get("whatif") is not None:  # the graph doctor measured the cache
        for hit in measured_cache(context.measurements["whatif"]):
            here = hit.location is not None and hit.location.path == context.analysis.path
            if context.scope == "graph" or here:  # a source file speaks for its own lines
                yield hit
        return
    for pipeline in context.analysis.pipelines:
        walked = pipeline.walk()
        if any(s.op == "cache" for s in walked):
            continue
        for stage in walked:
            decodes = stage.op in MAPS and stage.fn is not None and stage.fn.decodes
            if decodes or stage.op in DECODING_FACTORIES:
                what = "decodes" if decodes else "loads and decodes files"
                message = f"`{stage.op}` {what} again on every epoch and nothing caches the result."
                if context.measurements:
                    yield cache_advice(context, stage, message)
                else:
                    yield Hit(stage.location, message)


def measured_cache(whatif: list[dict]) -> Iterator[Hit]:
    """Where the graph doctor measured a cache: its place, size and reorders (its gain, or why
    it could not be measured, is attached with the other what-ifs')."""
    for entry in whatif:
        if entry.get("rule") != "PD106":
            continue
        where = None
        if entry.get("path"):
            where = Location(entry["path"], entry["line"], entry.get("column") or 1)
        cache = entry.get("cache")
        if cache is None:
            yield Hit(where, "The pipeline decodes again on every epoch and nothing caches it.")
            continue
        place = "in RAM"
        if cache["kind"] == "disk":
            place = f"on local disk (in RAM {cache.get('not_in_ram', 'it does not fit')})"
        moves = "".join(f"; {move}" for move in cache["moves"])
        yield Hit(
            where,
            f"Up to this stage the pipeline does the same work every epoch and nothing caches "
            f"it: a `cache()` here holds {_mb(cache['bytes'])} ({cache['elements']:,} elements) "
            f"{place}, filled in a first pass of {cache['fill_seconds']:.0f} s{moves}.",
            fix=cache_fix(cache),
        )


def cache_fix(cache: dict) -> str:
    """``Add .cache() right after this stage, and move shuffle (line 37) after it.``"""
    what = (
        "`.cache(filename)` with a path on fast local disk"
        if cache["kind"] == "disk"
        else ("`.cache()`")
    )
    fix = f"Add {what} right after this stage"
    moved = [m for m in cache.get("moved", []) if not m["taken_out"]]
    dropped = [m for m in cache.get("moved", []) if m["taken_out"]]
    lines = {m["line"]: m for m in moved}
    if moved:
        ops = " and ".join(
            f"`{m['op']}`" + (f" (line {m['line']})" if m["line"] and len(lines) > 1 else "")
            for m in moved
        )
        fix += f", and move {ops} after it"
    if dropped:
        fix += "; list the files without shuffling them (`shuffle=False`)"
    return fix + "."


def _mb(size: float) -> str:
    return f"{size / 1e6:,.0f} MB" if size >= 1e6 else f"{size / 1e6:,.1f} MB"


def cache_advice(context: Context, stage: Stage, message: str) -> Hit:
    """At runtime: the decoded size, estimated from a measured batch, against free RAM."""
    m = context.measurements
    batch_bytes, batches = m.get("batch_bytes"), m.get("cardinality")
    free_mb = (m.get("host") or {}).get("available_ram_mb_min")
    if not batch_bytes or not batches:
        advice = " Its decoded size is unknown (the dataset's length is not known)."
    else:
        size_mb = batch_bytes * batches / 1e6
        each = batch_bytes / 1e6
        advice = f" Decoded, it is about {size_mb:,.0f} MB ({batches} batches of {each:,.1f} MB)"
        if free_mb is None:
            advice += "."
        elif size_mb <= context.param("ram_fraction") * free_mb:
            advice += f", which fits in the {free_mb:,.0f} MB of free RAM: use `.cache()`."
        else:
            advice += (
                f", more than {context.param('ram_fraction'):.0%} of the {free_mb:,.0f} MB of "
                "free RAM: use `.cache(filename)` on a local disk."
            )
    return Hit(stage.location, message + advice, severity=Severity.WARNING)


@detector("PD107")
def cache_after_random(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, "cache"):
        for upstream in reversed(pipeline.upstream_of(stage)):
            if upstream.op == "shuffle" and upstream.param("reshuffle_each_iteration") is False:
                continue  # the same order every epoch anyway: caching it changes nothing
            if upstream.op in DECODING_FACTORIES and upstream.param("shuffle", True) is not False:
                cause = (
                    f"`{upstream.op}`, which shuffles by default: every epoch replays the "
                    "first epoch's order"
                )
            elif upstream.op == "shuffle":
                cause = "`shuffle`: every epoch replays the first epoch's order"
            elif upstream.fn is not None and upstream.fn.random:
                cause = f"a random `{upstream.op}`: every epoch replays the first epoch's draws"
            else:
                continue
            line = f" (line {upstream.location.line})" if upstream.location else ""
            yield Hit(stage.location, f"`cache()` comes after {cause}{line}.")
            break


@detector("PD108")
def python_in_pipeline(context: Context) -> Iterator[Hit]:
    for _, stage in stages(context):
        if stage.op == "from_generator":
            yield Hit(
                stage.location,
                "`from_generator` produces every element in Python, one at a time, under the GIL.",
            )
        elif stage.fn is not None and stage.fn.python and stage.op != "from_generator":
            yield Hit(
                stage.location,
                f"The function given to `{stage.op}` calls back into Python "
                "(`py_function`/`numpy_function`): the GIL serialises it, so parallel calls "
                "barely help.",
            )


@detector("PD109")
def unvectorized_map(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, *MAPS):
        if stage.fn is None or not stage.fn.elementwise:
            continue
        later_ops = [s.op for s in pipeline.downstream_of(stage)]
        if "cache" in later_ops:
            continue  # cached: the map runs once, on the first epoch
        for later in pipeline.downstream_of(stage):
            if later.op == "unbatch":
                break
            if later.op in ("batch", "padded_batch"):
                yield Hit(
                    stage.location,
                    "This `map` only does element-wise arithmetic and comes before `batch`: "
                    "after `batch` it would run once per batch instead of once per element.",
                )
                break


@detector("PD110")
def augmentation_on_host(context: Context) -> Iterator[Hit]:
    for _, stage in stages(context, *MAPS):
        if stage.fn is not None and stage.fn.augments_images:
            yield Hit(
                stage.location,
                "Random image augmentation runs on the host CPU inside the input pipeline.",
            )


def batched_upstream(pipeline: Pipeline, stage: Stage) -> bool:
    """True when elements reach ``stage`` as batches (a ``batch`` not undone by ``unbatch``)."""
    for upstream in reversed(pipeline.upstream_of(stage)):
        if upstream.op == "unbatch":
            return False
        if upstream.op in ("batch", "padded_batch"):
            return True
    return False


@detector("PD111")
def shuffle_after_batch(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, "shuffle"):
        if stage.param("buffer_size") == 1:
            yield Hit(stage.location, "`shuffle` with a buffer of 1 does not shuffle at all.")
        elif batched_upstream(pipeline, stage) and not any(
            s.op in BATCHES for s in pipeline.downstream_of(stage)
        ):  # a later batch means the first one cut sequences into chunks
            yield Hit(
                stage.location,
                "`shuffle` after `batch` reorders whole batches: the same examples always "
                "train together.",
            )
