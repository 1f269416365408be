"""Detectors for the input-pipeline rules (PD1xx), written once against ``Pipeline``.

They read only the model, so they run unchanged on pipelines seen in source (static) and on
pipelines read from a live dataset's graph. Each rule judges the pipelines whose ends it names
in its rule file (``ends``); the graph front end reads the dataset training was handed, which
every rule judges. Where the static front end cannot see what a fix would buy (a map whose
output is cached runs once; a cheap map; a cache for data of unseen size), it says nothing and
leaves the judgement to the measured check.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from pipedoctor.decide import duration
from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.evidence import Evidence, assumed, shown
from pipedoctor.pipeline import (
    AUTOTUNE,
    DECODING_FACTORIES,
    FEATURE_FILE_FACTORIES,
    READ_THREADS,
    RECORD_READERS,
    Files,
    Location,
    Pipeline,
    Stage,
)
from pipedoctor.report import Severity
from pipedoctor.rules import Context, Hit, detector
from pipedoctor.static import evidence as facts

PREFETCH_MAY_FOLLOW = frozenset(
    {"with_options", "repeat", "prefetch", "prefetch_to_device", "take", "skip", "shuffle"}
)
"""After ``prefetch`` these cost nothing per element (``take``/``skip`` only count; a
``shuffle`` hands out elements from a buffer it refills from the prefetched ones)."""
PREFETCHING_SOURCES = (
    DECODING_FACTORIES | FEATURE_FILE_FACTORIES | {"timeseries_dataset_from_array"}
)
"""Dataset factories that already end their dataset with ``prefetch(AUTOTUNE)``."""
SHUFFLING_FACTORIES = DECODING_FACTORIES | FEATURE_FILE_FACTORIES
"""Factories that shuffle (unless given ``shuffle=False``) and then batch."""
PARALLELISM_PARAMS = ("num_parallel_calls", "num_parallel_reads")
MAPS = ("map", "map_with_legacy_function")
BATCHES = ("batch", "padded_batch", "ragged_batch")
BATCH_OR_UNBATCH = frozenset({"batch", "padded_batch", "unbatch"})
BATCHING = frozenset(
    {
        *BATCHES,
        "sparse_batch",
        "rebatch",
        "bucket_by_sequence_length",
        "dense_to_ragged_batch",
        "map_and_batch",
        "timeseries_dataset_from_array",
        *SHUFFLING_FACTORIES,
    }
)
"""Stages whose elements are batches (the Keras factories batch unless told not to)."""
IN_MEMORY_SOURCES = frozenset({"from_tensor_slices", "from_tensors", "range"})
FILE_READING_CALLS = frozenset({"tensorflow.io.read_file", "tensorflow.io.gfile.GFile"})


def judged(context: Context) -> list[Pipeline]:
    """The pipelines this rule judges: those whose ends its rule file names."""
    return [p for p in context.analysis.pipelines if p.ends_in(context.ends)]


def stages(context: Context, *ops: str) -> Iterator[tuple[Pipeline, Stage]]:
    """Each stage of a judged pipeline, once per pipeline that holds it."""
    for pipeline in judged(context):
        for stage in pipeline.walk():
            if not ops or stage.op in ops:
                yield pipeline, stage


def once(hits: Iterable[Hit]) -> Iterator[Hit]:
    """One finding per place, whichever call site or branch leads there."""
    seen: set[object] = set()
    for hit in hits:
        if hit.location not in seen:
            seen.add(hit.location)
            yield hit


TINY_DATA = 1000
"""Examples at most in a dataset made in memory from arrays the code writes out, for the
speed rules to leave it alone: a whole epoch of it takes milliseconds."""


def tiny_in_memory(pipeline: Pipeline) -> bool:
    """A dataset of at most ``TINY_DATA`` examples from arrays in memory (a lesson's made-up
    points, ``np.random.uniform(size=(200, 2))``), that reads no file and decodes nothing.
    Worked out once per pipeline: the rules ask it of every stage."""
    return pipeline.memo("tiny", lambda: _tiny(pipeline))


def _tiny(pipeline: Pipeline) -> bool:
    sources = [s for s in pipeline.walk() if s.is_source]
    if not sources or any(
        s.op not in ("from_tensor_slices", "from_tensors")
        or s.op == "from_tensor_slices"
        and not (isinstance(s.param("elements"), int) and s.param("elements") <= TINY_DATA)
        for s in sources
    ):
        return False
    return not any(
        s.fn is not None and (s.fn.decodes or s.fn.python or s.fn.reader) or reads_records(s)
        for s in pipeline.walk()
    )


def cached_after(pipeline: Pipeline, stage: Stage) -> bool:
    """Static only: a stage whose output is cached runs once, so its cost is the first
    epoch's; without a measurement that is no finding (the graph's what-if measures it)."""
    return bool(pipeline.ends) and bool(pipeline.ops_after(stage) & {"cache", "snapshot"})


def batched(pipeline: Pipeline) -> bool:
    return any(
        s.op in BATCHING or s.op == "tfds.load" and s.param("batch_size") for s in pipeline.walk()
    )


def reads_records(stage: Stage) -> bool:
    return stage.op in RECORD_READERS or bool(stage.fn and stage.fn.reader)


def sequential(value: object) -> bool:
    """``num_parallel_calls`` absent or ``None``: TensorFlow runs the stage on one thread."""
    return value is None


def prefetches(stage: Stage) -> bool:
    """A stage that leaves its output prefetched: ``prefetch``, a Keras factory, or a
    ``zip`` whose every input ends in one or is generated in place."""
    if stage.op in ("prefetch", "prefetch_to_device") or stage.op in PREFETCHING_SOURCES:
        return True
    return (
        stage.op == "zip"
        and bool(stage.inputs)
        and all(prefetches(p.last) or generated(p) for p in stage.inputs)
    )


RUNS_AHEAD = frozenset({"map_and_batch", "parallel_interleave"})
"""Fused or parallel stages that keep a buffer of finished elements on background threads."""


def runs_ahead(pipeline: Pipeline) -> bool:
    """Static: the pipeline's last working stage already computes ahead of the step on
    background threads (a parallel ``map``, ``batch`` or ``interleave``, ``map_and_batch``),
    keeping a buffer the step reads from: a ``prefetch`` after it adds little, and the
    message that each step waits while its batch is prepared would be false."""
    for stage in reversed(pipeline.stages):
        if stage.op in ("with_options", "repeat", "take", "skip"):
            continue
        if stage.op in RUNS_AHEAD:
            return True
        parallel = stage.op in (*MAPS, *BATCHES, "interleave")
        return parallel and not sequential(stage.param("num_parallel_calls"))
    return False


def generated(pipeline: Pipeline) -> bool:
    """Static: elements made in place (``from_tensors(0).repeat().map(noise)``), nothing to
    wait for."""
    source, *rest = pipeline.stages
    return (
        bool(rest)
        and source.op in ("from_tensors", "range")
        and all(s.op == "repeat" or s.op in MAPS and s.fn is not None and s.fn.cheap for s in rest)
    )


def asynchronous(stage: Stage) -> bool:
    """After a prefetch, stages that run off the step's path or cost nothing per element
    (a cheap map, as the static front end judges it; a cache in memory)."""
    if stage.op in PREFETCH_MAY_FOLLOW:
        return True
    if in_memory_cache(stage):
        return True  # the first pass hands elements on, the later ones replay them
    if stage.op in MAPS and stage.fn is not None and stage.fn.cheap:
        return True
    parallel_ops = (*MAPS, "batch", "interleave", "parallel_interleave")
    return stage.op in parallel_ops and not sequential(stage.param("num_parallel_calls"))


def in_memory_cache(stage: Stage) -> bool:
    return stage.op == "cache" and stage.param("filename") in (None, "")


def replayed_from_memory(pipeline: Pipeline) -> bool:
    """The pipeline ends with a cache in memory (then at most stages that cost nothing per
    element): every epoch after the first takes its batches from memory."""
    for stage in reversed(pipeline.stages):
        if stage.op == "cache":
            return in_memory_cache(stage)
        if stage.op not in PREFETCH_MAY_FOLLOW:
            return False
    return False


def end_words(pipeline: Pipeline) -> str:
    if pipeline.sink == "fit" or pipeline.ends & {"training", "validation"}:
        return "handed to training"
    if pipeline.sink == "return" or "unknown" in pipeline.ends:
        return "returned"
    return "built here"


def whole_set_batches(pipeline: Pipeline, size: int) -> bool:
    """A dataset only validated or evaluated on, batched at ``size`` or more examples: the
    way code reads a whole validation set as one batch (``batch(10000)`` for MNIST's test
    set), which leaves nothing for a prefetch to overlap."""
    if pipeline.ends - {"validation", "evaluation", "inspection", "unknown"}:
        return False
    if not pipeline.ends & {"validation", "evaluation"}:
        return False
    sizes = [s.param("batch_size") for s in pipeline.stages if s.op in BATCHES]
    return bool(sizes) and all(isinstance(n, int) and n >= size for n in sizes)


@detector("PD101")
def missing_prefetch(context: Context) -> Iterator[Hit]:
    hits = []
    for pipeline in judged(context):
        if pipeline.sink is None and not pipeline.ends:
            continue  # a graph pipeline that is not training's input
        if pipeline.source.op == "external" and len(pipeline.stages) == 1:
            continue
        if pipeline.ends and not batched(pipeline):
            continue  # an unbatched dataset is an intermediate the caller batches
        if whole_set_batches(pipeline, context.param("whole_set_batch")):
            continue  # a validation set read as one batch: there is no next batch to overlap
        if tiny_in_memory(pipeline):
            continue  # a few hundred made-up points: there is nothing to overlap with
        prefetched = [i for i, s in enumerate(pipeline.stages) if prefetches(s)]
        after = [] if not prefetched else [
            s for s in pipeline.stages[prefetched[-1] + 1 :] if not asynchronous(s)
        ]  # fmt: skip
        if prefetched and not after:
            continue
        if not prefetched and context.scope == "static" and runs_ahead(pipeline):
            continue  # its last stage computes ahead on background threads already
        if not prefetched and replayed_from_memory(pipeline):
            continue  # after the first epoch each batch comes out of memory: nothing to hide
        found = context.evidence(
            facts.trains(pipeline),
            facts.real_data(pipeline),
            facts.library_leaves_it(pipeline),
            facts.overlap(pipeline),
            facts.no_injected_prefetch(context.analysis.runtime),
        )
        if found is None:
            continue
        if not prefetched:
            hits.append(
                Hit(
                    pipeline.last.location,
                    f"The dataset {end_words(pipeline)} ends with `{pipeline.last.op}`, not "
                    "`prefetch`: each training step waits while the next batch is prepared.",
                    evidence=found,
                )
            )
        else:
            hits.append(
                Hit(
                    after[0].location,
                    f"`{after[0].op}` comes after `prefetch`: it runs in the training step's "
                    "path again; make `prefetch` the last transformation.",
                    evidence=found,
                )
            )
    yield from once(hits)


@detector("PD102")
def sequential_map(context: Context) -> Iterator[Hit]:
    yield from once(sequential_map_hits(context))


def sequential_map_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, *MAPS):
        if (
            not sequential(stage.param("num_parallel_calls"))
            or stage.fn is not None
            and (stage.fn.cheap or stage.fn.python and context.scope == "static")
            or cached_after(pipeline, stage)
            or tiny_in_memory(pipeline)
        ):
            continue  # Python's work is PD108's: parallel calls barely help under the GIL
        found = context.evidence(
            facts.trains(pipeline),
            facts.work(stage, pipeline),
            facts.real_data(pipeline),
            facts.no_parallelized_map(stage, context.analysis.runtime),
        )
        if found is not None:
            yield Hit(
                stage.location,
                "`map` without `num_parallel_calls` runs its function on one element at a "
                "time, on one core.",
                evidence=found,
            )


def spared_prefetch(pipeline: Pipeline, stage: Stage, value: object, context: Context) -> bool:
    """A fixed prefetch that is no finding of its own: a buffer so deep the step never
    outruns it (``large_prefetch`` batches or more), or one in the middle of the pipeline,
    whose fix is to move it to the end (PD101 says so)."""
    if isinstance(value, int) and value >= context.param("large_prefetch"):
        return True
    return any(not asynchronous(s) for s in pipeline.later(stage))


@detector("PD103")
def fixed_parallelism(context: Context) -> Iterator[Hit]:
    yield from once(fixed_parallelism_hits(context))


def fixed_parallelism_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context):
        if cached_after(pipeline, stage) or tiny_in_memory(pipeline):
            continue
        names = PARALLELISM_PARAMS + (("buffer_size",) if stage.op == "prefetch" else ())
        if stage.op == "map_and_batch":
            names += ("num_parallel_batches",)
        for name in names:
            value = stage.param(name)
            if name == "buffer_size" and (
                context.scope == "static" or spared_prefetch(pipeline, stage, value, context)
            ):
                continue  # static: a fixed buffer was right 0 times in 96 judged (first looks)
            if isinstance(value, int) and not isinstance(value, bool) and value != AUTOTUNE:
                found = context.evidence(
                    facts.trains(pipeline),
                    parallelism_pays(pipeline, stage, name, value),
                    facts.real_data(pipeline),
                )
                if found is None:
                    continue
                if name == "buffer_size":
                    why = "a fixed buffer: with AUTOTUNE tf.data sizes it to how fast training "
                    why += "consumes; use `tf.data.AUTOTUNE`"
                elif name == "num_parallel_batches":  # N whole batches of calls at once
                    why = "a fixed number of whole batches computed at once: it runs that many "
                    why += "batches' calls in parallel whatever the load; `num_parallel_calls="
                    why += "tf.data.AUTOTUNE` lets tf.data choose"
                else:
                    why = "a fixed number: it neither uses the cores a bigger machine has nor "
                    why += "adapts to the load; use `tf.data.AUTOTUNE`"
                yield Hit(
                    stage.location, f"`{stage.op}` has `{name}={value}`, {why}.", evidence=found
                )


def parallelism_pays(pipeline: Pipeline, stage: Stage, name: str, value: int) -> Evidence | None:
    """Static: a fixed degree of parallelism costs something only where the stage does real
    work, and is already right where it reads every file at once; a fixed prefetch buffer
    costs something only when step times vary, which the code never shows."""
    if name == "buffer_size":
        if any(prefetches(s) for s in pipeline.earlier(stage)):
            return None  # a factory already prefetched: a second buffer adds nothing
        return assumed("work", "whether a deeper buffer than this pays depends on the step")
    if name == "num_parallel_batches":  # already batch size x N calls at once
        return assumed("work", "it runs N whole batches of calls at once already")
    if name == "num_parallel_reads":
        files = stage.param("filenames") or stage.param("file_pattern")
        if isinstance(files, Files) and files.count is not None and value >= files.count:
            return None  # already reads every file at once
        return shown("work", "reads files")
    if stage.op == "tfds.load" or stage.op in RECORD_READERS:
        return shown("work", "reads files")
    return facts.work(stage, pipeline)


@detector("PD104")
def sequential_reads(context: Context) -> Iterator[Hit]:
    yield from once(sequential_reads_hits(context))


def sequential_reads_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context):
        if stage.op in RECORD_READERS or stage.op in FEATURE_FILE_FACTORIES:
            files = stage.param("filenames") or stage.param("file_pattern")
            knob = READ_THREADS.get(stage.op, "num_parallel_reads")
            if not (isinstance(files, Files) and files.several and sequential(stage.param(knob))):
                continue
            found = context.evidence(facts.trains(pipeline), facts.several_files(files))
            if found is not None:
                count = f"{files.count} files" if files.count else "several files"
                yield Hit(
                    stage.location,
                    f"`{stage.op}` reads {count} one after another (no `{knob}`).",
                    evidence=found,
                )
        elif stage.op == "interleave" and sequential(stage.param("num_parallel_calls")):
            found = context.evidence(
                facts.trains(pipeline), names_read(pipeline, stage), facts.work(stage)
            )
            if found is not None:
                yield Hit(
                    stage.location,
                    "`interleave` without `num_parallel_calls` opens its inputs one at a time.",
                    evidence=found,
                )
        elif stage.op == "flat_map" and stage.fn and stage.fn.reader:
            found = context.evidence(facts.trains(pipeline), names_read(pipeline, stage))
            if found is not None:
                yield Hit(
                    stage.location,
                    f"`flat_map` over `{stage.fn.reader}` reads the files strictly one after "
                    "another; `interleave` reads several at once.",
                    evidence=found,
                )


def names_read(pipeline: Pipeline, stage: Stage) -> Evidence | None:
    """For ``interleave``/``flat_map``: the file names it opens, as its source gives them
    (``list_files`` over a pattern, a written-out list)."""
    for upstream in pipeline.earlier(stage):
        if upstream.is_source:
            files = upstream.param("file_pattern") or upstream.param("filenames")
            if isinstance(files, Files):
                return facts.several_files(files)
            count = upstream.param("elements")
            if upstream.op == "from_tensor_slices" and isinstance(count, int):
                return shown("files", f"{count} files listed") if count > 1 else None
            break
    return assumed("files", "the names it opens come from a value the analysis cannot see")


@detector("PD105")
def unsharded_files(context: Context) -> Iterator[Hit]:
    yield from once(unsharded_files_hits(context))


def unsharded_files_hits(context: Context) -> Iterator[Hit]:
    setup = context.analysis.training
    workers = not setup.static or any(
        f.get("strategy_kind") in ("multi-worker-mirrored", "parameter-server")
        for f in setup.of("strategy")
    )
    for pipeline, stage in stages(context):
        files = stage.param("filenames")
        if stage.op in RECORD_READERS and isinstance(files, Files):
            if files.count == 1 and files.literal and workers:
                # statically, a single file matters only with several workers to split it
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
    yield from once(missing_cache_hits(context))


def missing_cache_hits(context: Context) -> Iterator[Hit]:
    for pipeline in judged(context):
        walked = pipeline.walk()
        if any(s.op in ("cache", "snapshot") for s in walked):
            continue
        for stage in walked:
            decodes = stage.op in MAPS and stage.fn is not None and stage.fn.decodes
            if decodes and stage.fn.random and not context.measurements:  # type: ignore[union-attr]
                continue  # a cache after it would freeze its random draws (PD107's case)
            if not (decodes or stage.op in DECODING_FACTORIES):
                continue
            what = "decodes" if decodes else "loads and decodes files"
            message = f"`{stage.op}` {what} again on every epoch and nothing caches the result."
            if context.measurements:
                yield cache_advice(context, stage, message)
            elif not pipeline.ends:
                yield Hit(stage.location, message)
            elif visibly_bounded(pipeline, stage):
                found = context.evidence(
                    facts.trains(pipeline),
                    facts.several_epochs(pipeline),
                    facts.real_data(pipeline),
                    fits_in_memory(pipeline, stage),
                )
                if found is None:
                    continue
                yield Hit(
                    stage.location,
                    message + " If the decoded data fits in RAM, `.cache()` after it saves that "
                    "work (`pipedoctor check` measures its size).",
                    evidence=found,
                )


def visibly_bounded(pipeline: Pipeline, stage: Stage) -> bool:
    """Static only: cache advice needs data of a size the code shows (a folder read by a
    Keras factory, data already in memory, a written-out file list, a ``take(n)``) and
    nothing random before the stage, where a cache would freeze one epoch's draws."""

    def upstream(name: str, test: Callable[[Stage], bool]) -> bool:
        return pipeline.upstream_any(stage, name, test)  # linear for a chain of many stages

    if upstream("random", lambda s: s.op == "shuffle" or s.fn is not None and s.fn.random):
        return False
    if stage.op in DECODING_FACTORIES or upstream("take", _counted_take):
        return True
    if not upstream("source", lambda s: s.is_source) or upstream(
        "stored source", lambda s: s.is_source and s.op not in IN_MEMORY_SOURCES
    ):
        return False
    reads_files = stage.fn is not None and bool(stage.fn.calls & FILE_READING_CALLS)
    return not reads_files or not upstream(
        "uncounted source", lambda s: s.is_source and not isinstance(s.param("elements"), int)
    )


def _counted_take(stage: Stage) -> bool:
    return stage.op == "take" and isinstance(stage.param("count"), int)


def fits_in_memory(pipeline: Pipeline, stage: Stage) -> Evidence:
    """Static: a cache in RAM is advice only for data that fits there. Arrays already in
    memory do (their decoded form is the same order of size); a folder or a file list read
    from disk is as large as it is, which the code does not show."""
    if stage.op in DECODING_FACTORIES or pipeline.upstream_any(stage, "take", _counted_take):
        return assumed("memory", "how many files the folder holds is not in the code")
    reads_files = stage.fn is not None and bool(stage.fn.calls & FILE_READING_CALLS)
    if reads_files:
        return shown("memory", "a file list the code writes out")
    return shown("memory", "the encoded data is already in memory")


def measured_cache(whatif: list[dict]) -> Iterator[Hit]:
    """Where the graph doctor measured a cache: its place, size and reorders (its gain, or why
    it could not be measured, is attached with the other what-ifs'). A cache measured to gain
    nothing is no finding: the work it would save is cheaper than reading it back."""
    for entry in whatif:
        if entry.get("rule") != "PD106" or (entry.get("gain") or NO_GAIN) < NO_GAIN:
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
            f"{place}, filled in a first pass of {duration(cache['fill_seconds'])}{moves}.",
            fix=cache_fix(cache),
        )


def cache_fix(cache: dict) -> str:
    """``Add .cache() right after this stage, and move shuffle (line 37) after it.``; for a
    restructure, the ``unbatch`` before the cache and what follows it, in order."""
    what = (
        "`.cache(filename)` with a path on fast local disk"
        if cache["kind"] == "disk"
        else ("`.cache()`")
    )
    added = {a["op"]: a for a in cache.get("added", [])}
    if "unbatch" in added:
        what = what.replace("`.cache", "`.unbatch().cache", 1)
    fix = f"Add {what} right after this stage"
    moved = [m for m in cache.get("moved", []) if not m["taken_out"]]
    dropped = [m for m in cache.get("moved", []) if m["taken_out"] and not m.get("in_call")]
    in_call = [m for m in cache.get("moved", []) if m.get("in_call")]
    lines = {m["line"]: m for m in moved}
    if moved:
        ops = " and ".join(
            f"`{m['op']}`" + (f" (line {m['line']})" if m["line"] and len(lines) > 1 else "")
            for m in moved
        )
        fix += f", and move {ops} after it"
    then = [f"`.shuffle({added['shuffle']['value']})`"] if "shuffle" in added else []
    if "batch" in added:
        then.append(f"`.batch({added['batch']['value']})`")
    if "prefetch" in added:
        then.append("`.prefetch(tf.data.AUTOTUNE)`")
    if then:
        fix += ", then " + " and ".join(then)
    if dropped:
        fix += "; list the files without shuffling them (`shuffle=False`)"
    if in_call:
        where = f" (line {in_call[0]['line']})" if in_call[0].get("line") else ""
        fix += f"; turn off the shuffle of the call{where} (`shuffle=False`)"
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
    yield from once(cache_after_random_hits(context))


def cache_after_random_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, "cache"):
        for upstream in pipeline.earlier(stage):
            if upstream.op == "shuffle" and upstream.param("reshuffle_each_iteration") is False:
                continue  # the same order every epoch anyway: caching it changes nothing
            if upstream.op in FEATURE_FILE_FACTORIES and upstream.param("num_epochs") is None:
                break  # it repeats forever by default: the cache never completes an epoch
            if upstream.op == "repeat" and upstream.param("count") in (None, -1):
                break  # an endless `repeat()` before it: the cache never completes an epoch
            if upstream.op in SHUFFLING_FACTORIES and upstream.param("shuffle", True) is not False:
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
            found = context.evidence(facts.trains(pipeline), facts.several_epochs(pipeline))
            if found is not None:
                line = f" (line {upstream.location.line})" if upstream.location else ""
                yield Hit(
                    stage.location,
                    f"`cache()` comes after {cause}{line}{reshuffled_after(pipeline, stage)}.",
                    evidence=found,
                )
            break


def reshuffled_after(pipeline: Pipeline, cache: Stage) -> str:
    """What a ``shuffle`` after the cache does to the replayed epoch: it reorders the cached
    elements (or whole batches, when they were batched before the cache), never what was
    drawn into each one."""
    later = pipeline.first_after(cache, frozenset({"shuffle"}))
    if later is None or later.param("reshuffle_each_iteration") is False:
        return ""
    batched = any(
        s.op in BATCHES or (s.op in DECODING_FACTORIES and s.param("batch_size", 32) is not None)
        for s in pipeline.earlier(cache)
    )
    where = f" (line {later.location.line})" if later.location else ""
    what = (
        "whole cached batches: the same examples always train together"
        if batched
        else ("the cached elements within its buffer")
    )
    return f"; the `shuffle` after it{where} only reorders {what}"


@detector("PD108")
def python_in_pipeline(context: Context) -> Iterator[Hit]:
    yield from once(python_in_pipeline_hits(context))


def python_in_pipeline_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context):
        if cached_after(pipeline, stage):
            continue  # the Python runs once, on the first epoch
        generator = stage.op == "from_generator" and (stage.fn is None or stage.fn.python)
        if not generator and not (stage.fn is not None and stage.fn.python):
            continue
        replaceable = facts.python_replaceable(stage)
        found = context.evidence(facts.trains(pipeline), replaceable, facts.real_data(pipeline))
        if found is None:
            continue
        if generator:
            yield Hit(
                stage.location,
                "`from_generator` produces every element in Python, one at a time, under the GIL.",
                evidence=found,
            )
        else:
            yield Hit(
                stage.location,
                f"The function given to `{stage.op}` calls back into Python "
                "(`py_function`/`numpy_function`): the GIL serialises it, so parallel calls "
                "barely help.",
                evidence=found,
            )


@detector("PD109")
def unvectorized_map(context: Context) -> Iterator[Hit]:
    yield from once(unvectorized_map_hits(context))


def unvectorized_map_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, *MAPS):
        if stage.fn is None or not stage.fn.elementwise:
            continue
        if "cache" in pipeline.ops_after(stage):
            continue  # cached: the map runs once, on the first epoch
        later = pipeline.first_after(stage, BATCH_OR_UNBATCH)
        if later is not None and later.op != "unbatch":
            found = context.evidence(facts.trains(pipeline), facts.real_data(pipeline))
            if found is not None:
                yield Hit(
                    stage.location,
                    "This `map` only does element-wise arithmetic and comes before `batch`: "
                    "after `batch` it would run once per batch instead of once per element.",
                    evidence=found,
                )


@detector("PD110")
def augmentation_on_host(context: Context) -> Iterator[Hit]:
    hits = (
        Hit(
            stage.location,
            "Random image augmentation runs on the host CPU inside the input pipeline.",
        )
        for _, stage in stages(context, *MAPS)
        if stage.fn is not None and stage.fn.augments_images
    )
    yield from once(hits)


def fixed_batches_upstream(pipeline: Pipeline, stage: Stage) -> bool:
    """True when ``stage`` gets batches that hold the same examples every epoch: a ``batch``
    of more than one element, or a factory told not to shuffle (one that shuffles its rows
    before it batches, as Keras's directory factories and ``make_csv_dataset`` do by default,
    makes new batches each epoch, unless a ``cache()`` after it freezes the first epoch's)."""
    frozen = False
    for upstream in pipeline.earlier(stage):
        if upstream.op == "unbatch":
            return False
        if upstream.op == "cache":
            frozen = True
        if upstream.op in ("batch", "padded_batch"):
            if upstream.param("batch_size") == 1:
                return False
            # examples reshuffled before the batch (a shuffle, ``list_files``'s own shuffle
            # of the file names) make new batches every epoch, unless a cache freezes them
            return frozen or not reshuffled_before(pipeline, upstream)
        if upstream.op in SHUFFLING_FACTORIES:
            batched = upstream.params.get("batch_size", 32) is not None
            return batched and (frozen or upstream.params.get("shuffle", True) is False)
    return False


def reshuffled_before(pipeline: Pipeline, stage: Stage) -> bool:
    """A stage before ``stage`` draws a new order every epoch: a ``shuffle`` that reshuffles,
    ``list_files`` (which shuffles its names unless told not to), a shuffling factory."""
    return pipeline.upstream_any(stage, "reshuffles", _reshuffles)


def _reshuffles(stage: Stage) -> bool:
    if stage.op == "shuffle":
        return stage.param("reshuffle_each_iteration") is not False
    if stage.op == "list_files" or stage.op in SHUFFLING_FACTORIES:
        return stage.param("shuffle", True) is not False
    return False


@detector("PD111")
def shuffle_after_batch(context: Context) -> Iterator[Hit]:
    yield from once(shuffle_after_batch_hits(context))


def shuffle_after_batch_hits(context: Context) -> Iterator[Hit]:
    for pipeline, stage in stages(context, "shuffle"):
        if stage.param("buffer_size") == 1:
            found = context.evidence(facts.trains(pipeline))
            if found is not None:
                yield Hit(
                    stage.location,
                    "`shuffle` with a buffer of 1 does not shuffle at all.",
                    evidence=found,
                )
        elif fixed_batches_upstream(pipeline, stage) and not any(
            op in BATCHES for op in pipeline.ops_after(stage)
        ):  # a later batch means the first one cut sequences into chunks
            found = context.evidence(facts.trains(pipeline), facts.several_epochs(pipeline))
            if found is not None:
                yield Hit(
                    stage.location,
                    "`shuffle` after `batch` reorders whole batches: the same examples always "
                    "train together.",
                    evidence=found,
                )


@detector("PD112")
def discarded_transformation(context: Context) -> Iterator[Hit]:
    yield from once(discarded_transformation_hits(context))


def discarded_transformation_hits(context: Context) -> Iterator[Hit]:
    for pipeline in context.analysis.discarded:
        stage = pipeline.last
        found = context.evidence(facts.trains(pipeline))  # on a dataset only looked at: moot
        if found is not None:
            yield Hit(
                stage.location,
                f"The result of `{stage.op}` is thrown away: a `Dataset` transformation returns "
                f"a new dataset and leaves the old one as it was, so this `{stage.op}` never "
                "happens.",
                evidence=found,
            )
