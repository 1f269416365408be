"""The facts a static finding rests on, each shown by the code or assumed.

The detectors ask these questions of a pipeline or a stage; each answer is an
:class:`~pipedoctor.evidence.Evidence` (the fact, shown or assumed, and where the code says
so) or ``None`` when the code shows the fact is false, in which case the finding would be
wrong and the detector stays silent. The answers are read from what the static front end
recorded on the :class:`~pipedoctor.pipeline.Pipeline`: where the dataset ends and how
(:class:`~pipedoctor.pipeline.Uses`), the mapped functions' cost
(:class:`~pipedoctor.pipeline.FunctionFacts`), the files a reader is given
(:class:`~pipedoctor.pipeline.Files`) and what the sources read.

A pipeline read from a live dataset (the graph front end) has no ends: there every fact is
measured, and the detectors ask none of these questions (see ``detectors.pipeline_rules``).
"""

from __future__ import annotations

from dataclasses import replace

from pipedoctor.evidence import Evidence, assumed, shown
from pipedoctor.pipeline import (
    DECODING_FACTORIES,
    FEATURE_FILE_FACTORIES,
    RECORD_READERS,
    Files,
    Pipeline,
    Stage,
)
from pipedoctor.static.flow import EVALUATION_WORDS, TRAINING_WORDS, words
from pipedoctor.static.runtime import (
    INJECT_PREFETCH,
    MAP_PARALLELIZATION,
    UNKNOWN,
    Runtime,
    Version,
)

READS = "tensorflow.io.read_file"
TINY_DATA = 1000
"""Examples at most in a dataset made in memory from arrays the code writes out, for the
speed rules to leave it alone: a whole epoch of it takes milliseconds."""
VALIDATION_WORDS = frozenset({"val", "valid", "validation", "dev"})
"""Words of a dataset factory's name that may mean per-epoch validation (which trains)."""
FILE_SOURCES = RECORD_READERS | DECODING_FACTORIES | FEATURE_FILE_FACTORIES | {"list_files", "load"}
TOY_DATASETS = frozenset(
    {
        "iris",
        "penguins",
        "titanic",
        "boston_housing",
        "wine_quality",
        "xor",
        "moons",
        "circles",
        "breast_cancer",
        "diabetes",
        "wine",
        "digits",
        "linnerud",
    }
)
"""Data sets of a few hundred rows that lessons train on (TFDS, Keras and scikit-learn names):
a speed finding on them is no finding."""


def trains(pipeline: Pipeline) -> Evidence | None:
    """The dataset reaches training: handed to ``fit``, a training loop, an Estimator's
    ``train``, a strategy's distribution (shown); returned to callers this file does not hold,
    or bound where other modules may import it (assumed); only evaluated, inspected, exported
    or adapted on, or returned by a function named for evaluation (None)."""
    return pipeline.memo("trains", lambda: _trains(pipeline))


def _trains(pipeline: Pipeline) -> Evidence | None:
    uses = pipeline.uses
    for end, what in (("training", "handed to training"), ("validation", "validation data")):
        if end in pipeline.ends:
            how = uses.reached(end) if uses else ""
            return shown("trains", how or what)
    if "unknown" not in pipeline.ends:
        return None
    how = uses.reached("unknown") if uses else ""
    named = words(uses.returned_by) if uses and uses.returned_by else set()
    if named & EVALUATION_WORDS - VALIDATION_WORDS:
        return None  # ``eval_input_fn``, ``make_test_dataset``: evaluation, not training
    if named & TRAINING_WORDS or uses and uses.training_flag:  # a name is no caller
        how = f"{how}; named for training, but its callers are not in this file"
    found = assumed("trains", how or "its end is not in this file")
    if uses and uses.returned_as:  # a caller in another file of the lint may show it
        return replace(found, link=uses.returned_as)
    return found


PER_BATCH_WORK = ("decodes", "parses", "reads files", "runs Python", "runs string ops")
"""Work that stays per element when its map runs on a whole batch: what the batch's
vectorised ops (flips, brightness, resize of a batch) do not make cheap."""


def work(stage: Stage, pipeline: Pipeline | None = None) -> Evidence | None:
    """The stage's function does real work per element: decodes, parses, reads files, runs
    image, signal or string ops, Python, a tokeniser or a lookup (shown); calls what the
    analysis cannot see (assumed); only sets shapes, casts, restructures or does arithmetic
    (None). After ``batch`` it runs once per batch, where only the work that is still done
    element by element (decoding, parsing, Python, strings) counts."""
    fn = stage.fn
    if fn is not None and pipeline is not None and fn.work and after_batch(pipeline, stage):
        kept = tuple(w for w in fn.work if w.startswith(PER_BATCH_WORK))
        if not kept and not fn.unseen and fn.known:
            return None
        fn = replace(fn, work=kept)
    if fn is None:
        if stage.op in RECORD_READERS or stage.op in DECODING_FACTORIES:
            return shown("work", "reads files")
        return assumed("work", f"`{stage.op}` has no function the analysis could read")
    if not fn.known:
        return assumed("work", "its function is defined outside this file")
    if fn.work:
        return shown("work", "; ".join(fn.work[:2]))
    if fn.reader:
        return shown("work", f"reads files (`{fn.reader}`)")
    if fn.cheap:
        return None
    unseen = ", ".join(fn.unseen[:2]) or "calls the analysis cannot follow"
    return assumed("work", f"calls {unseen}, whose cost the analysis cannot see")


def overlap(pipeline: Pipeline) -> Evidence:
    """The pipeline prepares its batches with work a ``prefetch`` can overlap with the step: it
    reads files, runs a generator or a mapped function that does real work (shown); it only
    slices arrays already in memory, shuffles and batches them, or the cost of what it runs is
    not seen (assumed: gathering a batch of slices takes little next to a training step, and
    reviewers judged such findings debatable at best). Worked out once per pipeline."""
    return pipeline.memo("overlap", lambda: _overlap(pipeline))


def _overlap(pipeline: Pipeline) -> Evidence:
    unseen = ""
    for stage in pipeline.walk():
        if stage.op in FILE_SOURCES or stage.op == "tfds.load":
            return shown("overlap", f"it reads files (`{stage.op}`)")
        if stage.op == "from_generator":
            return shown("overlap", "a Python generator makes its elements")
        if stage.op == "external":
            unseen = unseen or "the dataset is made outside this file"
        if stage.fn is None or stage.is_source:
            continue
        found = work(stage)  # after `batch` too: whatever the step waits for is overlapped
        if found is not None and found.shown:
            return shown("overlap", f"`{stage.op}` {found.detail}")
        if found is not None:
            unseen = unseen or f"`{stage.op}`: {found.detail}"
    return assumed(
        "overlap",
        unseen or "it only slices arrays in memory, shuffles and batches them: little to overlap",
    )


BATCH_OR_UNBATCH = frozenset({"batch", "padded_batch", "ragged_batch", "map_and_batch", "unbatch"})


def after_batch(pipeline: Pipeline, stage: Stage) -> bool:
    """Whether ``stage`` gets whole batches: a ``batch`` comes before it, with no ``unbatch``
    in between."""
    nearest = pipeline.nearest_before(stage, BATCH_OR_UNBATCH)
    return nearest is not None and nearest.op != "unbatch"


def several_files(files: Files) -> Evidence | None:
    """Several files are read: a written-out list of two or more, a pattern with a wildcard,
    ``list_files``, names generated in a loop, a dataset of names (shown); a variable whose
    plural name is all that says so (assumed); one file (None)."""
    if not files.several:
        return None
    if files.shown_several:
        detail = f"{files.count} files listed" if files.count else f"file names from a {files.how}"
        return shown("files", detail.replace("a list_files", "`list_files`"))
    if files.how == "name":
        return assumed("files", "only the variable's plural name says there are several")
    return assumed("files", "the file names come from a value the analysis cannot see")


def files_to_shard(pipelines: list[Pipeline]) -> Evidence | None:
    """Files each worker could read a share of, instead of reading everything and keeping
    1/N (``AutoShardPolicy.DATA``): several, shown; files whose number the code does not
    show, a TFDS data set (assumed); data in memory or one file, which only data sharding
    can split (None)."""
    found: list[Evidence] = []
    for pipeline in pipelines:
        for stage in pipeline.walk():
            if not stage.is_source:
                continue
            if stage.op == "external":
                found.append(assumed("files", "the dataset is made outside this file"))
            elif stage.op == "tfds.load":
                found.append(assumed("files", "how many files the TFDS split is stored in"))
            elif stage.op in FILE_SOURCES:
                files = stage.param("filenames") or stage.param("file_pattern")
                several = several_files(files) if isinstance(files, Files) else None
                if several is not None:
                    found.append(several)
                elif not isinstance(files, Files):
                    found.append(assumed("files", f"how many files `{stage.op}` reads"))
    return next((e for e in found if e.shown), found[0] if found else None)


def same_data_everywhere(pipelines: list[Pipeline]) -> Evidence | None:
    """Every worker's pipeline yields the whole data set, so that turning auto-sharding off
    duplicates it (``AutoShardPolicy.OFF``): files or a TFDS split every worker lists (shown);
    arrays or a generator, which may hold this worker's part alone (assumed); a ``shard`` in
    the pipeline, which splits it by hand (None)."""
    found: list[Evidence] = []
    for pipeline in pipelines:
        stages = list(pipeline.walk())
        if any(stage.op == "shard" for stage in stages):
            return None
        for stage in stages:
            if not stage.is_source:
                continue
            if stage.op in FILE_SOURCES or stage.op == "tfds.load":
                found.append(shown("shared", f"every worker lists the same input (`{stage.op}`)"))
            else:
                found.append(
                    assumed("shared", f"`{stage.op}` may hold this worker's part of the data")
                )
    return next((e for e in found if not e.shown), found[0] if found else None)


def real_data(pipeline: Pipeline) -> Evidence | None:
    """The data is more than a toy: a named data set of real size (Keras's, a TFDS one),
    sharded over several files (shown); files, arrays or a generator whose size the code does
    not show (assumed: a file of a few hundred rows reads like any other); a few hundred rows,
    random or generated arrays, a data set lessons use for its smallness (None). Worked out
    once per pipeline: the rules ask it of every stage."""
    return pipeline.memo("real_data", lambda: _real_data(pipeline))


def _real_data(pipeline: Pipeline) -> Evidence | None:
    verdicts: list[Evidence | None] = []
    for stage in pipeline.walk():
        if stage.is_source:
            verdicts.append(_source_data(stage))
        elif stage.fn is not None and (stage.fn.reader or READS in stage.fn.calls):
            verdicts.append(assumed("data", "read from files whose size is not in the code"))
    if any(v is None for v in verdicts) and not any(v is not None and v.shown for v in verdicts):
        return None
    found = [v for v in verdicts if v is not None]
    return next((v for v in found if v.shown), found[0] if found else assumed("data"))


def _source_data(stage: Stage) -> Evidence | None:
    origin = stage.param("origin")
    if stage.op in FILE_SOURCES:
        files = stage.param("filenames") or stage.param("file_pattern")
        if isinstance(files, Files) and files.shown_several:
            return shown("data", "sharded over several files")
        return assumed("data", f"read from files (`{stage.op}`) whose size is not in the code")
    if origin == "replay:buffer":
        return assumed("data", "samples of a replay buffer that an environment fills")
    if stage.op == "tfds.load":
        name = stage.param("name")
        if isinstance(name, str) and name.split(":")[0].split("/")[0] in TOY_DATASETS:
            return None
        return (
            shown("data", f"the TFDS data set `{name}`")
            if isinstance(name, str)
            else (assumed("data", "a TFDS data set whose name the analysis cannot see"))
        )
    if isinstance(origin, str):
        kind, _, name = origin.partition(":")
        if kind in ("made-up", "toy"):
            return None
        if kind == "dataset":
            return shown("data", f"`{name}`")
        if kind == "file":
            return assumed("data", f"read from `{name}`, whose size is not in the code")
    elements = stage.param("elements")
    if isinstance(elements, int):
        if elements <= TINY_DATA:
            return None
        return shown("data", f"{elements:,} examples")
    if stage.op == "range":
        count = stage.param("arg0")
        if isinstance(count, int) and count <= TINY_DATA:
            return None
    if stage.op == "from_generator":
        return assumed("data", "a Python generator: what it reads is not seen")
    return assumed("data", "arrays whose origin or size the analysis cannot see")


def several_epochs(pipeline: Pipeline) -> Evidence | None:
    """The data is read more than once: ``fit(epochs=5)``, a loop of epochs, a ``repeat()``
    (shown); an epoch count the code does not write (assumed); one epoch, as every training
    use reads it (None)."""
    return pipeline.memo("several_epochs", lambda: _several_epochs(pipeline))


def _several_epochs(pipeline: Pipeline) -> Evidence | None:
    repeats = [s for s in pipeline.walk() if s.op == "repeat" and s.param("count") != 1]
    if repeats:
        return shown("epochs", "repeated (`repeat`)")
    uses = pipeline.uses
    if uses is None:
        return assumed("epochs")
    if uses.epochs is not None and uses.epochs > 1:
        return shown("epochs", f"{uses.epochs} epochs")
    if uses.one_epoch:
        return None
    return assumed("epochs", "the number of epochs is not a literal")


def library_leaves_it(pipeline: Pipeline) -> Evidence | None:
    """Nothing else already prefetches or prepares the dataset: a library it is handed to
    that does (a KerasHub task's ``fit``) shows otherwise (None); a dataset whose source is
    outside this file may come prefetched (assumed)."""
    return pipeline.memo("library_leaves_it", lambda: _library_leaves_it(pipeline))


def _library_leaves_it(pipeline: Pipeline) -> Evidence | None:
    uses = pipeline.uses
    if uses is not None and (uses.handled_by or uses.distributed):
        return None  # a KerasHub task, or a strategy's iterator prefetching to each device
    if pipeline.source.op == "external":
        return assumed("library", "the dataset is made outside this file")
    return shown("library", "the whole pipeline is in this file")


def python_replaceable(stage: Stage) -> Evidence:
    """The Python a stage runs has a TensorFlow equivalent: a generator that only yields
    items of arrays already in memory, which ``from_tensor_slices`` gives faster (shown); a
    generator or ``py_function`` that reads a format or calls a library core TensorFlow may
    not have (assumed)."""
    fn = stage.fn
    if stage.op == "from_generator" and fn is not None and fn.known and fn.cheap:
        return shown("python", "it only yields items of arrays in memory")
    if stage.op == "from_generator" and fn is not None and fn.unseen:
        calls = ", ".join(fn.unseen[:2])
        return assumed("python", f"it calls {calls}: core TensorFlow may not read that")
    return assumed("python", "what the Python code does may have no TensorFlow equivalent")


def no_injected_prefetch(runtime: Runtime | None) -> Evidence | None:
    """TensorFlow leaves the end of the pipeline as written: the project pins TensorFlow older
    than 2.12, or the file turns default rewrites off (shown); it pins 2.12 or later, whose
    default ``inject_prefetch`` appends the ``prefetch`` to a synchronous last stage (None);
    nothing says which (assumed)."""
    return left_as_written(
        runtime, INJECT_PREFETCH, "adds no prefetch itself", "append this prefetch themselves"
    )


def no_parallelized_map(stage: Stage, runtime: Runtime | None) -> Evidence | None:
    """TensorFlow runs the map as written, one element at a time: its function is stateful
    (random ops), the project pins TensorFlow older than 2.10, or the file turns default
    rewrites off (shown); it pins 2.10 or later and the function is seen whole and stateless,
    which ``map_parallelization`` makes a parallel map (None); otherwise (assumed)."""
    fn = stage.fn
    if fn is not None and (fn.random or fn.python or fn.stateful):
        why = "draws random numbers" if fn.random else "uses a lookup table or Python"
        return shown("runtime", f"its function {why}: TensorFlow leaves a stateful map sequential")
    stateless = fn is not None and fn.known and not fn.unseen
    return left_as_written(
        runtime,
        MAP_PARALLELIZATION,
        "leaves it sequential",
        "run a stateless map in parallel themselves",
        rewrites_it=stateless,
    )


def left_as_written(
    runtime: Runtime | None, since: Version, before: str, after: str, rewrites_it: bool = True
) -> Evidence | None:
    """The ``runtime`` fact of a rewrite TensorFlow makes by default from version ``since``:
    shown by options that turn the rewrites off or by a pin older than ``since``; no finding
    on a pin of ``since`` or later when the rewrite applies (``rewrites_it``); assumed
    otherwise."""
    runtime = runtime or UNKNOWN
    named = ".".join(map(str, since))
    if runtime.rewrites_off:
        return shown("runtime", "the file turns TensorFlow's default pipeline rewrites off")
    old = runtime.below(since)
    if old is not None:
        return shown("runtime", f"{old.where}: TensorFlow before {named} {before}")
    if rewrites_it and runtime.from_(since) is not None:
        return None
    return assumed("runtime", f"TensorFlow {named} and later {after}; no pin says older")
