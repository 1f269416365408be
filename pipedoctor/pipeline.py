"""The one model of an input pipeline that both front ends fill and every rule reads.

The static front end (``pipedoctor.static``) fills it from source text with the values it can
see; the graph front end fills it from a live dataset's GraphDef with exact values. A rule is
written once against these classes, so the CI gate and the live check agree by construction.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, overload

if TYPE_CHECKING:
    from pipedoctor.static.runtime import Runtime

AUTOTUNE = -1
"""``tf.data.AUTOTUNE``: the same sentinel TensorFlow stores in the graph."""


class _Unknown:
    """A value the front end could not see (a function argument, a config lookup)."""

    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __reduce__(self) -> str:
        return "UNKNOWN"


UNKNOWN: Any = _Unknown()

SOURCE_OPS = frozenset(
    {
        "from_tensor_slices",
        "from_tensors",
        "range",
        "from_generator",
        "list_files",
        "TFRecordDataset",
        "TextLineDataset",
        "FixedLengthRecordDataset",
        "image_dataset_from_directory",
        "text_dataset_from_directory",
        "audio_dataset_from_directory",
        "timeseries_dataset_from_array",
        "make_csv_dataset",
        "make_batched_features_dataset",
        "tfds.load",
        "zip",
        "sample_from_datasets",
        "choose_from_datasets",
        "counter",
        "load",
        "external",
    }
)
"""Ops that start a pipeline. ``external`` is a dataset whose origin is not visible (a typed
function parameter, a dataset handed to ``check``)."""

RECORD_READERS = frozenset({"TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"})
DECODING_FACTORIES = frozenset(
    {"image_dataset_from_directory", "text_dataset_from_directory", "audio_dataset_from_directory"}
)
FEATURE_FILE_FACTORIES = frozenset({"make_csv_dataset", "make_batched_features_dataset"})
"""``tf.data.experimental`` factories over a file pattern: they list the files, read them
(``num_parallel_reads`` / ``reader_num_threads`` at a time, one by default), shuffle before
batching, repeat forever unless given ``num_epochs``, and end with a ``prefetch``."""
READ_THREADS = {"make_batched_features_dataset": "reader_num_threads"}
"""The argument that reads several files at once, where it is not ``num_parallel_reads``."""
FUNCTION_OPS = frozenset({"map", "interleave", "flat_map", "filter", "parallel_interleave"})

ENDS = (
    "training",
    "validation",
    "evaluation",
    "inspection",
    "export",
    "adapt",
    "unknown",
)
"""Where a dataset ends up: fed to training (``fit``, a custom loop, a strategy's distribution,
an Estimator's train ``input_fn``); to ``fit``'s ``validation_data`` or a per-epoch evaluation
loop; to evaluation or prediction; only looked at (``take(1)``, printing, a vocabulary); written
out; given to a preprocessing layer's ``adapt()``; or unknown (returned from a function nobody
in the module calls, or exported at module level), where a library's ``make_dataset()`` may
well be real training code."""


STRATEGY_KINDS = (
    "mirrored",
    "multi-worker-mirrored",
    "tpu",
    "parameter-server",
    "central-storage",
    "one-device",
    "estimator",
    "keras.distribution",
)
"""The kinds of distributed setup a PD2xx rule can apply to: the ``tf.distribute`` strategies,
an Estimator running one through its ``RunConfig`` (its ``input_fn`` batch is per replica), and
the Keras distribution API (``keras.distribution.DataParallel``/``ModelParallel``)."""


KERNEL_CELL = "Cell In["
"""How the place of a cell a Jupyter kernel ran begins: ``Cell In[3]``, as IPython's
tracebacks name it (see ``capture.sites.kernel_cell``)."""


@dataclass(frozen=True)
class Location:
    """A span in the user's source, 1-based lines and columns (as editors and SARIF count)."""

    path: str
    line: int
    column: int = 1
    end_line: int | None = None
    end_column: int | None = None

    def __str__(self) -> str:
        if self.path.startswith(KERNEL_CELL):
            return f"{self.path}, line {self.line}"
        return f"{self.path}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Files:
    """What a reader is given to read: how many files, and whether the list is written out."""

    count: int | None
    """Number of files when known; ``None`` for a glob, a variable or a generated list."""
    literal: bool = False
    """True when the path(s) are string literals in the source."""
    how: str = ""
    """How the code names them, when ``count`` is unknown: ``glob`` (a pattern with a
    wildcard), ``list_files``, ``shards`` (names generated in a loop), ``dataset`` (a dataset
    of names), ``name`` (only the variable's plural name says so), ``""`` (nothing says)."""

    SHOWN_SEVERAL = frozenset({"glob", "list_files", "shards", "dataset"})
    """Ways of naming files that show there are several (a pattern with a wildcard can still
    match one, but it is written to match many)."""

    @property
    def several(self) -> bool:
        return self.count is None or self.count > 1

    @property
    def shown_several(self) -> bool:
        """Whether the code shows several files, rather than the analysis assuming it."""
        return (self.count or 0) > 1 or self.count is None and self.how in self.SHOWN_SEVERAL


@dataclass(frozen=True)
class FunctionFacts:
    """What a function handed to ``map``/``interleave``/``filter`` does, as far as it is seen."""

    known: bool = True
    """False when the function's body could not be inspected (imported, built dynamically)."""
    decodes: bool = False
    """Calls a decode, parse or resize op: expensive, and deterministic (worth caching)."""
    random: bool = False
    """Draws random numbers (random ops, stateful random image ops, Keras ``Random*`` layers)."""
    augments_images: bool = False
    """Random image augmentation in particular (flip, crop, brightness, ...)."""
    python: bool = False
    """Calls back into Python (``py_function``, ``numpy_function``, ``py_func``)."""
    stateful: bool = False
    """Uses state other than random numbers: a hash table's ``lookup``, a Keras lookup or
    vectorisation layer. Like random ops and Python, it keeps TensorFlow from running the map
    in parallel on its own (``map_parallelization`` leaves stateful functions alone)."""
    elementwise: bool = False
    """Only element-wise arithmetic and casts: cheaper on a whole batch than per element."""
    cheap: bool = False
    """Only picks, renames or restructures its inputs, casts, reshapes or does element-wise
    arithmetic: too little work per element for parallel calls to be worth a finding."""
    reader: str | None = None
    """For ``interleave``/``flat_map``: the record reader the function opens, if any."""
    calls: frozenset[str] = frozenset()
    """Canonical names of the TensorFlow/Keras functions it calls, for messages."""
    work: tuple[str, ...] = ()
    """The calls that are real work per element (decode, parse, file reads, image and signal
    ops, string ops, Python, tokenisers, lookups), for the evidence a finding cites."""
    unseen: tuple[str, ...] = ()
    """Calls whose cost the analysis cannot see (a function from another module, a method of
    an object it does not follow): the function may do real work there."""


@dataclass(frozen=True, eq=False)
class Stage:
    """One transformation (or the source) of a pipeline, with the parameters that were given.

    ``params`` holds only what the code passed: a missing key means "not given" (the
    TensorFlow default), ``UNKNOWN`` means "given, but not visible", ``AUTOTUNE`` is ``-1``.
    Stages compare by identity: two pipelines that share a prefix share its stage objects.
    """

    op: str
    params: dict[str, Any] = field(default_factory=dict)
    fn: FunctionFacts | None = None
    inputs: tuple[Pipeline, ...] = ()
    location: Location | None = None

    @property
    def is_source(self) -> bool:
        return self.op in SOURCE_OPS

    def param(self, name: str, default: Any = None) -> Any:
        return self.params.get(name, default)

    def __repr__(self) -> str:
        where = f" @{self.location.line}" if self.location else ""
        return f"Stage({self.op}{where})"


class Stages(Sequence["Stage"]):
    """A pipeline's stages: the first ``len`` items of a list that only ever grows.

    ``ds = ds.map(f)`` extends the chain ``ds`` ends, so the new pipeline appends its stage
    to the list the old one views, instead of copying it. A file of ``n`` such lines then
    holds ``n`` stages, not ``n**2 / 2``, even where every intermediate stays alive as an
    input (``ds = ds.concatenate(ds)``). Extending a pipeline that is not the list's longest
    view (a branch) copies its prefix once. Reads behave as a tuple's.
    """

    __slots__ = ("_items", "_length")

    def __init__(self, stages: Iterable[Stage] = ()) -> None:
        self._items: list[Stage] = list(stages)
        self._length = len(self._items)

    @classmethod
    def _view(cls, items: list[Stage], length: int) -> Stages:
        view = cls.__new__(cls)
        view._items, view._length = items, length
        return view

    def plus(self, stage: Stage) -> Stages:
        """These stages, then ``stage``."""
        if self._length == len(self._items):
            self._items.append(stage)
            return Stages._view(self._items, self._length + 1)
        return Stages([*self._items[: self._length], stage])

    def same_prefix(self, other: Sequence[Stage], length: int) -> bool:
        """Whether the first ``length`` stages of both are the same objects; immediate when
        both view one list."""
        if isinstance(other, Stages) and other._items is self._items:
            return length <= min(self._length, other._length)
        if length > len(self) or length > len(other):
            return False
        return all(self._items[i] is other[i] for i in range(length))

    def __len__(self) -> int:
        return self._length

    @overload
    def __getitem__(self, index: int) -> Stage: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Stage, ...]: ...
    def __getitem__(self, index: int | slice) -> Stage | tuple[Stage, ...]:
        if isinstance(index, slice):
            return tuple(self._items[: self._length][index])
        if index < 0:
            index += self._length
        if not 0 <= index < self._length:
            raise IndexError("stage index out of range")
        return self._items[index]

    def __iter__(self) -> Iterator[Stage]:
        items = self._items
        for i in range(self._length):
            yield items[i]

    def __add__(self, other: Iterable[Stage]) -> Stages:
        joined = self
        for stage in other:
            joined = joined.plus(stage)
        return joined

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (Stages, tuple)):
            return len(self) == len(other) and self.same_prefix(other, len(self))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[Stages], tuple[tuple[Stage, ...]]]:
        return Stages, (tuple(self),)

    def __repr__(self) -> str:
        return f"Stages({', '.join(s.op for s in self)})"


@dataclass(frozen=True)
class Uses:
    """What the static front end saw the code do with a dataset, for the evidence of a finding:
    the first place each end was reached, the epochs it trains for, and a library that
    prepares it further where the code hands it over (a KerasHub task's own ``prefetch``)."""

    how: tuple[tuple[str, str], ...] = ()
    """(end, how it was reached: ``fit (line 40)``), the first of each end."""
    epochs: int | None = None
    """The most epochs a training call is given as a literal; None when none is seen."""
    one_epoch: bool = False
    """Every training call seen reads it for one epoch (``epochs=1``) and nothing repeats."""
    handled_by: str = ""
    """A library the dataset is handed to that batches and prefetches it itself."""
    returned_by: str = ""
    """The function that returns it to callers outside the file, when that is its end."""
    returned_as: str = ""
    """That function as other modules call it (``Loader.build``), with the item of what it
    returns when it returns several (``make_datasets[0]``): the project pass's key."""
    distributed: bool = False
    """A ``tf.distribute`` strategy distributes it: its iterators prefetch to each device."""
    training_flag: bool = False
    """That function takes a flag that says training (``is_training``, ``mode``): the
    dataset it builds trains on one of its paths."""

    def reached(self, end: str) -> str:
        return dict(self.how).get(end, "")


@dataclass(frozen=True, eq=False)
class Pipeline:
    """An ordered chain of stages, source first.

    ``sink`` says how the pipeline leaves the code: ``"fit"`` (handed to training or a
    distribution strategy), ``"return"`` (returned from a dataset-building function),
    ``"variable"`` (the last value bound to a name), or ``None`` while it is still an
    intermediate that another stage consumes.
    """

    stages: Stages
    """Source first; a tuple given here is made a :class:`Stages`."""
    sink: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    ends: frozenset[str] = frozenset()
    """Where the code sends this dataset (see :data:`ENDS`), as the static front end saw it.
    Empty when the front end does not know (the graph front end reads the dataset that
    training was handed): every rule then judges it."""
    uses: Uses | None = None
    """How the static front end saw it used: what trains on it, for how many epochs."""

    def __post_init__(self) -> None:
        if not isinstance(self.stages, Stages):
            object.__setattr__(self, "stages", Stages(self.stages))

    @property
    def source(self) -> Stage:
        return self.stages[0]

    @property
    def last(self) -> Stage:
        return self.stages[-1]

    def then(self, stage: Stage) -> Pipeline:
        return Pipeline(self.stages.plus(stage))

    def with_sink(self, sink: str) -> Pipeline:
        return Pipeline(self.stages, sink, self.options, self.ends, self.uses)

    def with_ends(self, ends: frozenset[str], uses: Uses | None = None) -> Pipeline:
        return Pipeline(self.stages, self.sink, self.options, ends, uses or self.uses)

    def ends_in(self, wanted: frozenset[str] | tuple[str, ...]) -> bool:
        """True when a rule that judges ``wanted`` ends judges this pipeline."""
        return not self.ends or bool(self.ends & set(wanted))

    def walk(self) -> list[Stage]:
        """Every stage, upstream pipelines of ``zip``/``concatenate`` included, source first.

        The pipeline is a graph, not a tree: an input shared by several stages (``ds.concatenate
        (ds)``, ``zip((ds, ds))``) is listed once, where it is first reached, so the walk is
        linear in the number of distinct stages however often inputs are shared."""
        return list(self._layout().order)

    def _layout(self) -> _Layout:
        """The walk, computed once and without recursion (stages and their inputs never
        change), with what ``upstream_of`` and ``downstream_of`` look up in it."""
        cached = self.__dict__.get("_walked")
        if cached is not None:
            return cached
        walker = _Walker()
        starts: list[int] = []
        segments: list[tuple[tuple[int, Pipeline], ...]] = []
        for i, top in enumerate(self.stages):
            starts.append(len(walker.order))
            inputs: list[tuple[int, Pipeline]] = []
            if id(top) not in walker.seen:
                for upstream in top.inputs:
                    inputs.append((len(walker.order), upstream))
                    walker.emit(upstream.stages)
                walker.emitted(top, self.stages, i)
            segments.append(tuple(inputs))
        starts.append(len(walker.order))
        order = tuple(walker.order)
        layout = _Layout(order, {id(s): i for i, s in enumerate(order)}, starts, segments)
        object.__setattr__(self, "_walked", layout)
        return layout

    def upstream_of(self, stage: Stage) -> list[Stage]:
        """Stages whose output flows into ``stage`` (through ``zip`` inputs too), nearest last.
        A sibling input of a ``zip`` is not upstream of the other input's stages."""
        pipeline = self
        while True:
            layout = pipeline._layout()
            at = layout.index.get(id(stage))
            if at is None:
                return []
            # the stage of ``stages`` whose processing reached it first, then the input there
            i = bisect.bisect_right(layout.starts, at) - 1
            if pipeline.stages[i] is stage:
                return list(layout.order[: layout.starts[i]])
            inputs = layout.segments[i]
            k = bisect.bisect_right([start for start, _ in inputs], at) - 1
            pipeline = inputs[k][1]

    def downstream_of(self, stage: Stage) -> list[Stage]:
        """Stages that run after ``stage`` on its way out of this pipeline, nearest first."""
        return list(self.later(stage))

    def later(self, stage: Stage) -> Iterator[Stage]:
        """``downstream_of`` without the copy: a rule that stops at the first batch after a
        stage walks only that far, so a long chain costs each stage what it reads."""
        layout = self._layout()
        i = layout.index.get(id(stage))
        if i is not None:
            for j in range(i + 1, len(layout.order)):
                yield layout.order[j]

    def earlier(self, stage: Stage) -> Iterator[Stage]:
        """``upstream_of``, nearest first, without the copy."""
        pipeline = self
        while True:
            layout = pipeline._layout()
            at = layout.index.get(id(stage))
            if at is None:
                return
            i = bisect.bisect_right(layout.starts, at) - 1
            if pipeline.stages[i] is stage:
                for j in range(layout.starts[i] - 1, -1, -1):
                    yield layout.order[j]
                return
            inputs = layout.segments[i]
            k = bisect.bisect_right([start for start, _ in inputs], at) - 1
            pipeline = inputs[k][1]

    def memo(self, key: object, compute: Callable[[], Any]) -> Any:
        """``compute()``, worked out once per pipeline and ``key``: the rules ask the same
        question of a pipeline for every one of its stages, and a stage never changes."""
        memos: dict[object, Any] = self.__dict__.setdefault("_memos", {})
        if key not in memos:
            memos[key] = compute()
        return memos[key]

    def upstream_any(self, stage: Stage, name: str, test: Callable[[Stage], bool]) -> bool:
        """Whether a stage upstream of ``stage`` (as ``upstream_of`` lists them) passes
        ``test``: one pass over the pipeline for each ``name`` asked, then constant time a
        stage, where asking ``upstream_of`` of every stage would cost the square."""
        found = self._holder(stage)
        return found is not None and found[0]._prefix_any(name, test)[found[1]]

    def _prefix_any(self, name: str, test: Callable[[Stage], bool]) -> list[bool]:
        def compute() -> list[bool]:
            seen, prefix = False, [False]
            for stage in self._layout().order:
                seen = seen or test(stage)
                prefix.append(seen)
            return prefix

        return self.memo(("prefix_any", name), compute)

    def nearest_before(self, stage: Stage, ops: frozenset[str]) -> Stage | None:
        """The stage with one of ``ops`` nearest upstream of ``stage`` in the chain it sits
        in (``earlier``'s first match), in time linear in the pipeline once per ``ops``."""
        found = self._holder(stage)
        return None if found is None else found[0]._nearest(ops)[found[1]]

    def _holder(self, stage: Stage) -> tuple[Pipeline, int] | None:
        """The pipeline (this one or one of its inputs) whose own chain holds ``stage``, and
        where that chain starts in its walk; None when ``stage`` is not upstream here."""
        pipeline = self
        while True:
            layout = pipeline._layout()
            at = layout.index.get(id(stage))
            if at is None:
                return None
            i = bisect.bisect_right(layout.starts, at) - 1
            if pipeline.stages[i] is stage:
                return pipeline, layout.starts[i]
            inputs = layout.segments[i]
            k = bisect.bisect_right([start for start, _ in inputs], at) - 1
            pipeline = inputs[k][1]

    def _nearest(self, ops: frozenset[str]) -> list[Stage | None]:
        def compute() -> list[Stage | None]:
            last: Stage | None = None
            nearest: list[Stage | None] = [None]
            for stage in self._layout().order:
                if stage.op in ops:
                    last = stage
                nearest.append(last)
            return nearest

        return self.memo(("nearest", ops), compute)

    def first_after(self, stage: Stage, ops: frozenset[str]) -> Stage | None:
        """The nearest stage after ``stage`` whose op is one of ``ops``, in time linear in
        the pipeline once for each set of ``ops`` asked."""
        cache: dict[frozenset[str], list[int]] = self.__dict__.setdefault("_first_after", {})
        order = self._layout().order
        nearest = cache.get(ops)
        if nearest is None:
            nearest, found = [-1] * len(order), -1
            for j in range(len(order) - 1, -1, -1):
                nearest[j] = found
                if order[j].op in ops:
                    found = j
            cache[ops] = nearest
        i = self._layout().index.get(id(stage))
        return order[nearest[i]] if i is not None and nearest[i] >= 0 else None

    def ops_after(self, stage: Stage) -> frozenset[str]:
        """The ops of ``downstream_of(stage)``, worked out once for the whole pipeline: rules
        ask it of every stage, which would otherwise cost the square of the chain's length."""
        suffixes = self.__dict__.get("_ops_after")
        if suffixes is None:
            order = self._layout().order
            built: list[frozenset[str]] = [frozenset()] * max(len(order), 1)
            for j in range(len(order) - 2, -1, -1):  # a set is shared until an op is new
                after, op = built[j + 1], order[j + 1].op
                built[j] = after if op in after else after | {op}
            suffixes = tuple(built)
            object.__setattr__(self, "_ops_after", suffixes)
        i = self._layout().index.get(id(stage))
        return suffixes[i] if i is not None else frozenset()

    def __repr__(self) -> str:
        chain = " -> ".join(s.op for s in self.stages)
        ends = f", ends={','.join(sorted(self.ends))}" if self.ends else ""
        return f"Pipeline({chain}{', sink=' + self.sink if self.sink else ''}{ends})"


@dataclass(frozen=True)
class _Layout:
    """A pipeline's walk and where each stage sits in it."""

    order: tuple[Stage, ...]
    index: dict[int, int]
    """``id(stage)`` → its place in ``order``."""
    starts: list[int]
    """For each of the pipeline's own stages, how much of ``order`` came before it was
    processed (its inputs, then itself, follow); one more entry: the length of ``order``."""
    segments: list[tuple[tuple[int, Pipeline], ...]]
    """For each of the pipeline's own stages, where in ``order`` each of its inputs began."""


class _Walker:
    """A depth-first walk over stages and their inputs that lists each stage once."""

    def __init__(self) -> None:
        self.order: list[Stage] = []
        self.seen: set[int] = set()
        self.chains: dict[int, tuple[Stages, int]] = {}
        """``id(stage)`` → (a chain of stages, the stage's index there) where every stage
        before it had been walked when it was: an input that shares that prefix (``ds`` in
        ``ds.concatenate(ds)``) is walked from where it differs, not from its source."""

    def emitted(self, stage: Stage, chain: Stages, index: int) -> None:
        self.seen.add(id(stage))
        self.order.append(stage)
        self.chains[id(stage)] = (chain, index)

    def walked_prefix(self, chain: Stages) -> int:
        """How many of ``chain``'s first stages are walked already, as a prefix seen before."""
        for i in range(len(chain) - 1, -1, -1):
            known = self.chains.get(id(chain[i]))
            if known is not None and known[1] == i and known[0].same_prefix(chain, i):
                return i + 1
        return 0

    def emit(self, chain: Stages) -> None:
        """Walk ``chain`` and, before each of its stages, that stage's inputs."""
        start = self.walked_prefix(chain)
        pending: list[tuple[Stages, int, bool]] = [
            (chain, i, False) for i in range(len(chain) - 1, start - 1, -1)
        ]
        while pending:
            stages, i, ready = pending.pop()
            stage = stages[i]
            if id(stage) in self.seen:
                continue
            if ready:
                self.emitted(stage, stages, i)
                continue
            pending.append((stages, i, True))
            for upstream in reversed(stage.inputs):
                inner = upstream.stages
                first = self.walked_prefix(inner)
                pending.extend((inner, j, False) for j in range(len(inner) - 1, first - 1, -1))


@dataclass(frozen=True)
class Fact:
    """One training-setup fact with where it was seen: ``kind`` names it, ``data`` details it."""

    kind: str
    location: Location | None
    data: dict[str, Any] = field(default_factory=dict)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)


@dataclass
class TrainingSetup:
    """What the code says about how the pipelines are trained on: strategies, batch sizes,
    optimizers, layers. Filled from source statically, and from the live objects in a check.

    Facts are kept as a flat list of ``Fact`` records; rules select them by ``kind``.
    """

    facts: list[Fact] = field(default_factory=list)
    static: bool = False
    """Filled from source text: each training the code starts is a ``training`` fact with
    the strategy that reaches it, and the PD2xx rules judge those. A live setup is one job,
    judged whole."""

    def add(self, kind: str, location: Location | None, **data: Any) -> None:
        self.facts.append(Fact(kind, location, data))

    def of(self, kind: str) -> list[Fact]:
        return [f for f in self.facts if f.kind == kind]

    def has(self, kind: str) -> bool:
        return any(f.kind == kind for f in self.facts)


@dataclass(frozen=True)
class ProjectUse:
    """A dataset a function of another module of the project returned, and what this module
    does with it: trains on it (``fit(make_ds())``), or returns it on to its own callers."""

    origin: str
    """The function's dotted name as imported (``pkg.data.make_ds``, ``.data.make_ds``)."""
    index: str | None
    """The item of what it returned, where the code unpacks it (``train, val = make_ds()``)."""
    end: str
    """``training``, ``validation``, or ``returned`` (passed on by a function of this file)."""
    how: str = ""
    """Where: ``fit (line 40)``."""
    changed: bool = False
    """The code transformed or distributed the dataset before that end: what trains is not
    what the function returned."""
    returned_as: str = ""
    """For ``returned``: this file's function, as :attr:`Uses.returned_as` names it."""


@dataclass
class Analysis:
    """Everything a front end learned about one unit (a source file or a live job)."""

    path: str
    pipelines: list[Pipeline] = field(default_factory=list)
    training: TrainingSetup = field(default_factory=TrainingSetup)
    discarded: list[Pipeline] = field(default_factory=list)
    """Transformations whose result the code throws away (``ds.shuffle(n)`` as a statement):
    each the pipeline it ends, with the ends of the dataset it was applied to."""
    project_uses: list[ProjectUse] = field(default_factory=list)
    """Datasets from functions of the project's other modules, and where they go here."""
    runtime: Runtime | None = None
    """The TensorFlow the code runs on, as far as its project pins it (static scope)."""

    def stages(self) -> list[tuple[Pipeline, Stage]]:
        """Each distinct stage once, with one pipeline that contains it (for context)."""
        seen: set[int] = set()
        pairs: list[tuple[Pipeline, Stage]] = []
        for pipeline in self.pipelines:
            for stage in pipeline.walk():
                if id(stage) not in seen:
                    seen.add(id(stage))
                    pairs.append((pipeline, stage))
        return pairs
