"""Timing the calls of Keras's train and test functions from inside ``fit``.

Keras 3 on TensorFlow takes the next batch inside the compiled train function
(``iterator.get_next()`` in the traced graph), so the time spent waiting for input is hidden in
the step time. The clock wraps ``model.train_function`` (and ``test_function`` during
evaluation) for the length of ``fit`` and times every call whole. A random sample of the calls
is *split*: the wrapper takes the batch from the iterator itself, timing that dequeue, then
hands the batch to the same train function through the plain-iterator path Keras keeps for
input that is not a ``tf.data`` iterator. That path runs the same traced step function on the
same batch (TensorFlow finds the trace it already has: nothing is traced again, and the
weights come out bit for bit the same, which the tests check), and one output is read back so
the step is over when the clock stops.

Taking a batch from Python costs more than inside the compiled function even when the batch
is ready (about 0.2 ms on a CPU). That *dequeue floor* is measured on a one-batch dataset of
the same structure through the same kind of iterator, at the first split call and at each
epoch's start, and only what a dequeue takes beyond it counts as waiting.

On JAX the train function pulls batches with Python's ``next()``; a split call waits for the
previous step to finish, then times its own steps with the batch in hand.

Each call is split with a probability (``Sampler``), so the split calls are a fair sample of
all calls whatever rhythm the input has (a wait at every epoch's first step, every 8th step
opening a file): ``tally`` weighs each by the inverse of its probability. The probability
adapts so that what splitting costs stays within a budget of the step time.

The calls that are not split are most calls, and a step can take 2 ms, where every
microsecond of Python between two steps counts (it runs with cold caches, on cores the input
pipeline keeps busy). So the sampler decides at once how many of the next calls are not split
(a :class:`Plan`), and each of them takes the *fast path*: its start and end are appended to an
array, and nothing else. They are handed on in bulk before the next call that is handed on
alone (a split call, a long one) and at every epoch's and evaluation's edges.

Only Keras's own train and test functions are split (recognised by name). A model that brings
its own ``make_train_function`` is still timed call by call, without the wait.
"""

from __future__ import annotations

import random
import statistics
import threading
import time
from array import array
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

ORIGINAL = "__pipedoctor_original__"
"""Attribute of a wrapper that holds the function it wraps."""

STOCK_FUNCTIONS = {
    "tensorflow": "TensorFlowTrainer._make_function.<locals>.function",
    "jax": "JAXTrainer._make_function.<locals>.iterator_step",
}
"""The train/test functions whose handling of a plain iterator the split relies on."""

PHASES = ("train", "eval")
FLOOR_DEQUEUES = 24
"""Dequeues of a ready batch timed for the floor (their median is taken)."""
INTERRUPTED_S = 0.005
"""The clock's work on one call takes microseconds: a call's own time this long was another
thread or process holding the core, and would swamp the mean cost."""
UNSPLIT_RUN = 1024
"""Calls planned at once where none is ever split (a function the clock cannot split)."""


@dataclass(frozen=True)
class Call:
    """One call of a train or test function: one step, or ``steps_per_execution`` steps."""

    phase: str
    index: int
    """Its number among this phase's calls since the phase (re)started (epoch or evaluation)."""
    start: float
    end: float
    steps: int
    samples: int | None
    """Samples in the call's batches when they were seen (split calls, and every JAX call)."""
    dequeue: float | None = None
    """Seconds spent taking the batches from the input, from Python (split calls only)."""
    busy: float | None = None
    """Seconds of the steps themselves, from the batch in hand to the result read back."""
    chance: float | None = None
    """The probability with which this call was split (split calls only)."""
    floor: float = 0.0
    """Seconds a ready batch takes to dequeue from Python (TensorFlow), subtracted per batch."""
    synced: bool = True
    """Whether the call returned only when its steps were done (TensorFlow's train function
    reads a flag back from the device on every call); a JAX call returns at dispatch."""
    traced: bool | None = None
    """Whether the call traced (or compiled) a function, which makes it no step to time;
    None when that cannot be told."""
    paused: float = 0.0
    """Seconds the clock itself spent just before this call (measuring the dequeue floor):
    the monitor's own time, not a gap in the user's training."""
    extra: float | None = None
    """What splitting added to this call: waiting for the previous result and for its own,
    and the dequeue floor."""

    @property
    def split(self) -> bool:
        return self.dequeue is not None

    @property
    def waited(self) -> float:
        """Seconds of this split call spent waiting for input beyond the dequeue floor."""
        return max(0.0, (self.dequeue or 0.0) - self.floor * self.steps)


class Sampler:
    """Decides which calls to split, at random, from its own RNG.

    Calls come in blocks of ``k = round(1 / chance())``, and one call at a random place in
    each block is split: every call is split with probability ``1 / k``, a run of calls never
    goes long without one, and a rhythm in the input (every 8th step opening a file) is not
    aliased. With ``fraction`` the chance is fixed. Otherwise it adapts: splitting costs a call
    a little (the dequeue from Python, the previous result and its own read back), timed on
    each split call, and the chance is set so that the median cost, with what timing costs
    every call, stays within ``budget`` of the median step period, between ``lowest`` and
    ``highest``. The first call of each
    phase in a ``fit`` is always split (it traces anyway, and shows the batch).
    """

    def __init__(
        self,
        fraction: float | None = None,
        *,
        budget: float = 0.005,
        lowest: float = 0.005,
        highest: float = 0.5,
        seed: int = 0,
        memory: int = 64,
    ) -> None:
        if fraction is not None and not 0 < fraction <= 1:
            raise ValueError(f"a split fraction must be within (0, 1], not {fraction}")
        self.fraction = fraction
        self.budget, self.lowest, self.highest = budget, lowest, highest
        self._random = random.Random(seed)
        self._extra: deque[float] = deque(maxlen=memory)
        """What each recent split added to its call (see :meth:`observe`)."""
        self._whole: deque[float] = deque(maxlen=memory)
        self._blocks: dict[str, list[int]] = {}
        """Per phase: [calls left in the block, position of the split call, block length]."""
        self._own = [0.0, 0]
        """Seconds and calls timed whole: calls looked at alone, and handing calls on in bulk."""
        self._fast = [0.0, 0, 0]
        """Seconds and number of the fast calls timed, and every fast call."""

    def cost(self) -> tuple[float, float] | None:
        """(what a split adds to a call, a call's median period), in seconds, once known."""
        if len(self._extra) < 4 or len(self._whole) < 4:
            return None
        return max(statistics.median(self._extra), 5e-5), statistics.median(self._whole)

    def chance(self) -> float:
        if self.fraction is not None:
            return self.fraction
        cost = self.cost()
        if cost is None:
            return self.highest
        extra, whole = cost
        left = max(0.0, self.budget - self.call_cost / whole)
        return min(self.highest, max(self.lowest, left * whole / extra))

    def decide(self, phase: str) -> float | None:
        """The probability the call is split with, or None when it is not split."""
        block = self._blocks.get(phase)
        if block is None:
            self._blocks[phase] = [0, 0, 1]
            return 1.0
        if block[0] == 0:
            length = max(1, round(1.0 / self.chance()))
            block[:] = [length, self._random.randrange(length), length]
        left, pick, length = block
        block[0] = left - 1
        return 1.0 / length if length - left == pick else None

    def not_split(self, phase: str) -> int:
        """How many of the phase's next calls are certainly not split, decided now (each of them
        as :meth:`decide` would have); the next call after them goes to :meth:`decide`."""
        block = self._blocks.get(phase)
        if block is None or block[0] == 0:
            return 0
        left, pick, length = block
        position = length - left
        ahead = pick - position if pick >= position else left
        block[0] = left - ahead
        return ahead

    @property
    def call_cost(self) -> float:
        """Seconds every call pays for being timed at all, on average (0 until a few calls were
        timed): it comes out of the budget before splitting does."""
        seconds, calls = self._own
        timed, sampled, fast = self._fast
        if sampled:
            seconds, calls = seconds + timed / sampled * fast, calls + fast
        return seconds / calls if calls >= 16 else 0.0

    def observe_own(self, seconds: float) -> None:
        """The clock's own work on a call it did not split and looked at alone."""
        if seconds < INTERRUPTED_S:
            self._own[0] += seconds
            self._own[1] += 1

    def observe_fast(self, seconds: float) -> None:
        """The clock's own work on one call on the fast path (a sample of them is timed)."""
        if seconds < INTERRUPTED_S:
            self._fast[0] += seconds
            self._fast[1] += 1

    def observe_bulk(self, seconds: float, calls: int) -> None:
        """Handing ``calls`` calls from the fast path on, in ``seconds``."""
        self._own[0] += seconds
        self._fast[2] += calls

    def observe(self, period: float, extra: float | None) -> None:
        """A call's period (from the previous call's end) and, for a split call, what the split
        added to it: the waits for the previous step and for the result, and the dequeue
        floor (the dequeue from Python in place of the one inside the graph)."""
        if extra is None:
            self._whole.append(period)
        else:
            self._extra.append(extra)

    def observe_ends(self, previous: float, ends: Sequence[float]) -> None:
        """Calls not split, many at once: when each ended, in order, and when the call before
        the first ended. Only the periods the sampler remembers are worked out."""
        tail = [previous, *ends][-(self._whole.maxlen or 0) - 1 :]
        self._whole.extend(after - before for before, after in zip(tail, tail[1:], strict=False))


def first_leaf(structure: Any) -> Any:
    """The first array of a batch; only plain containers are walked, so a distributed value
    (one array per replica) is a leaf."""
    while isinstance(structure, (dict, list, tuple)) and structure:
        structure = next(iter(structure.values())) if isinstance(structure, dict) else structure[0]
    return structure


def _leading(array: Any) -> int | None:
    shape = getattr(array, "shape", None)
    try:
        return int(shape[0]) if shape is not None and len(shape) and shape[0] is not None else None
    except (TypeError, ValueError):
        return None


def count_samples(batch: Any) -> int | None:
    """Samples in one batch: the leading dimension of its first array, summed over replicas
    (``tf.distribute`` per-replica values); None when it has no known leading dimension."""
    leaf = first_leaf(batch)
    values = getattr(leaf, "values", None)
    if isinstance(values, tuple) and values:
        sizes = [_leading(v) for v in values]
        return None if None in sizes else sum(sizes)  # type: ignore[arg-type]
    return _leading(leaf)


def read_back(outputs: Any) -> None:
    """Wait until a step's results exist: JAX and GPU TensorFlow return before the device is
    done. One scalar is enough; an error here is the step's own and surfaces in Keras later."""
    leaf = first_leaf(outputs)
    try:
        if hasattr(leaf, "block_until_ready"):
            leaf.block_until_ready()
        elif hasattr(leaf, "numpy"):
            leaf.numpy()
    except Exception:  # noqa: BLE001 - never raise into fit from a measurement
        pass


class TraceCounter:
    """How many times the compiled functions behind a train function have been traced.

    A call that traces (the first one on each path, a new batch shape) takes seconds, not a
    step's time, and must not be counted as one. Keras keeps its ``tf.function`` objects (JAX:
    its jitted functions) in the closures of the function it hands to ``fit``; they are found
    there by what they can do (``experimental_get_tracing_count``, ``_cache_size``), two levels
    deep. Nothing found means tracing cannot be told (``None``).
    """

    def __init__(self, function: Callable[..., Any]) -> None:
        self._compiled = _compiled_functions(function)

    def __call__(self) -> int | None:
        if not self._compiled:
            return None
        total = 0
        for compiled in self._compiled:
            try:
                count = getattr(compiled, "experimental_get_tracing_count", None)
                total += int(count() if count else compiled._cache_size())
            except Exception:  # noqa: BLE001 - an unexpected object: tracing cannot be told
                return None
        return total


TRACE_MIN_S = 0.03
"""No call that traces (or compiles) a train function is shorter (the first call of a
one-layer Keras model takes 100 ms or more here): shorter calls are not checked, which keeps
steps of up to 30 ms on the fast path."""


class TraceWatch:
    """Whether each call traced: the trace count is read after calls long enough to have
    traced, and compared with the one read last."""

    def __init__(self, counter: TraceCounter) -> None:
        self._counter = counter
        self._last = counter()

    def traced(self, seconds: float) -> bool | None:
        if self._last is None:
            return None
        if seconds < TRACE_MIN_S:
            return False
        now = self._counter()
        changed = _traced(self._last, now)
        self._last = now
        return changed


def _compiled_functions(function: Any, depth: int = 0, seen: set[int] | None = None) -> list:
    seen = set() if seen is None else seen
    found = []
    for cell in getattr(function, "__closure__", None) or ():
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        if id(value) in seen:
            continue
        seen.add(id(value))
        if hasattr(value, "experimental_get_tracing_count") or hasattr(value, "_cache_size"):
            found.append(value)
        elif callable(value) and depth < 2:
            found.extend(_compiled_functions(value, depth + 1, seen))
    return found


class TimedIterator:
    """Hands out batches from ``source``, timing each dequeue; ``first`` was taken already."""

    _NOTHING = object()

    def __init__(self, source: Any, clock: Callable[[], float], first: Any = _NOTHING) -> None:
        self._source = source
        self._clock = clock
        self._pending = first
        self.wait = 0.0
        self.taken = 0
        self.samples: int | None = 0
        if first is not TimedIterator._NOTHING:
            self._count(first)

    def __iter__(self) -> TimedIterator:
        return self

    def __next__(self) -> Any:
        if self._pending is not TimedIterator._NOTHING:
            item, self._pending = self._pending, TimedIterator._NOTHING
            return item
        start = self._clock()
        item = next(self._source)
        self.wait += self._clock() - start
        self._count(item)
        return item

    def _count(self, item: Any) -> None:
        self.taken += 1
        if self.samples is not None:
            n = count_samples(item)
            self.samples = None if n is None else self.samples + n


class DequeueFloor:
    """What taking a ready batch from Python costs: the median of ``FLOOR_DEQUEUES`` dequeues
    from a dataset that repeats one batch of the same structure, through the same kind of
    iterator (a distributed one under a ``tf.distribute`` strategy)."""

    def __init__(self, batch: Any, strategy: Any, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._iterator = _ready_iterator(batch, strategy)
        self.seconds = 0.0

    def measure(self) -> float:
        for _ in range(3):  # warm: the first dequeues start the iterator
            next(self._iterator)
        times = []
        for _ in range(FLOOR_DEQUEUES):
            start = self._clock()
            next(self._iterator)
            times.append(self._clock() - start)
        self.seconds = statistics.median(times)
        return self.seconds


def _ready_iterator(batch: Any, strategy: Any) -> Any:
    """An iterator over ``batch`` forever, through a distributed iterator like the user's
    where there is one. Not across workers: a multi-worker distributed dataset would add
    collectives the other workers do not run, so there the floor is the local dequeue's."""
    import tensorflow as tf

    distributed = isinstance(getattr(first_leaf(batch), "values", None), tuple)
    if distributed:
        batch = tf.nest.map_structure(
            lambda value: tf.concat(strategy.experimental_local_results(value), axis=0), batch
        )
    dataset = tf.data.Dataset.from_tensors(batch).repeat()
    if not distributed or strategy.extended._in_multi_worker_mode():
        return iter(dataset)
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return iter(strategy.experimental_distribute_dataset(dataset.with_options(options)))


@dataclass(slots=True)
class Plan:
    """One phase's calls on the fast path: the ``left`` next calls, as long as they read from
    ``iterator``, are not split, and their start and end go to ``times``. ``base`` is the
    index of the first call the plan held (``planned`` of them)."""

    times: array = field(default_factory=lambda: array("d"))
    steps: int = 1
    """Steps per call of the function the phase runs."""
    left: int = 0
    planned: int = 0
    base: int = 0
    iterator: Any = None

    def next_index(self) -> int:
        return self.base + self.planned - self.left

    def take_index(self) -> int:
        """The index of a call that takes the slow path; the plan ends with it."""
        index = self.next_index()
        self.stop(index + 1)
        return index

    def start(self, calls: int, iterator: Any) -> None:
        self.left = self.planned = calls
        self.iterator = iterator

    def stop(self, next_index: int) -> None:
        self.left = self.planned = 0
        self.base = next_index
        self.iterator = None


PlainSink = Callable[[str, int, array], None]
"""Takes calls from the fast path: (phase, steps per call, start and end of each call in turn)."""


class StepClock:
    """Wraps train and test functions and hands every timed call on, in order: a split call,
    or one that must be looked at alone (long enough to have traced, after the clock's own
    pause), to ``sink`` as a :class:`Call`; the others, from the fast path, to ``plain_sink``
    in bulk, at the latest when :meth:`flush` is called.

    ``active`` is True only while the monitor is inside ``fit``: a wrapper left on a model
    (``fit`` interrupted before ``on_train_end``) then simply calls the function it wraps.
    Nothing raised by the bookkeeping reaches ``fit``: it is counted in ``errors``, and a floor
    that cannot be measured is 0 with a ``note``.
    """

    def __init__(
        self,
        sink: Callable[[Call], None],
        plain_sink: PlainSink,
        backend: str,
        sampler: Sampler | None = None,
        clock: Callable[[], float] = time.perf_counter,
        strategy: Any = None,
    ) -> None:
        self.sink = sink
        self.plain_sink = plain_sink
        self.backend = backend
        self.sampler = sampler or Sampler()
        self.clock = clock
        self.strategy = strategy
        self.errors = 0
        self.note: str | None = None
        self.split = {phase: False for phase in PHASES}
        """Whether this phase's function is one the clock knows how to split."""
        self.floors: dict[str, DequeueFloor | None] = {}
        self.floor_ms: dict[str, float] = {}
        """The last dequeue floor measured per phase, in ms, for the report."""
        self._paused: dict[str, float] = {}
        self._last: dict[str, Any] = {}
        self._last_end: dict[str, float] = {}
        self._iterator_types: tuple[type, ...] = ()
        self._plans = {phase: Plan() for phase in PHASES}
        """Per phase, the calls on the fast path: those planned, and those not handed on yet."""
        self._active = False
        self.train_iterator: Any = None
        """The iterator the train function last read from (TensorFlow): what ``probe`` reads."""

    @property
    def active(self) -> bool:
        return self._active

    @active.setter
    def active(self, on: bool) -> None:
        """Switched off, the wrappers call the functions they wrap and nothing else (the fast
        path included: its plans end)."""
        self._active = on
        if not on:
            for plan in self._plans.values():
                plan.stop(plan.next_index())

    def flush(self, phase: str | None = None) -> float:
        """Hand the calls on the fast path (of ``phase``, or of every phase) to ``plain_sink``;
        the seconds that took (they count in the clock's cost per call)."""
        spent = 0.0
        for name in PHASES if phase is None else (phase,):
            plan = self._plans[name]
            if not plan.times:
                continue
            began = self.clock()
            times = array("d", plan.times)
            del plan.times[:]
            try:
                if name == "train":  # the budget is a share of the training step
                    self.sampler.observe_ends(self._last_end.get(name, times[0]), times[1::2])
                self._last_end[name] = times[-1]
                self.plain_sink(name, plan.steps, times)
            except Exception:  # noqa: BLE001 - a bookkeeping bug must not stop the user's training
                self.errors += len(times) // 2
            seconds = self.clock() - began
            self.sampler.observe_bulk(seconds, len(times) // 2)
            spent += seconds
        return spent

    def restart(self, phase: str) -> None:
        """A new epoch or evaluation: number calls from 0, and measure the floor again."""
        self.flush(phase)
        self._plans[phase].stop(0)
        self._last.pop(phase, None)
        self._last_end.pop(phase, None)
        floor = self.floors.get(phase)
        if floor is not None:
            self._guarded_floor(phase, floor.measure)

    def floor(self, phase: str) -> float:
        floor = self.floors.get(phase)
        return floor.seconds if floor is not None else 0.0

    def take_pause(self, phase: str) -> float:
        return self._paused.pop(phase, 0.0)

    def wrap(self, function: Callable[..., Any], phase: str, steps_per_call: int) -> Callable:
        """A wrapper that times ``function``; wrapping a wrapper wraps its original."""
        function = getattr(function, ORIGINAL, None) or function
        self.flush(phase)
        plan = self._plans[phase]
        plan.stop(plan.next_index())
        plan.steps = max(1, steps_per_call)
        stock = getattr(function, "__qualname__", "") == STOCK_FUNCTIONS.get(self.backend)
        self.split[phase] = stock
        if self.backend == "jax":
            wrapper = self._jax_wrapper(function, phase, stock)
        else:
            if stock:
                self._iterator_types = _tf_iterator_types()
            wrapper = self._tf_wrapper(function, phase, stock, max(1, steps_per_call))
        setattr(wrapper, ORIGINAL, function)
        return wrapper

    def close(self) -> None:
        self.active = False
        self.train_iterator = None
        self._last.clear()
        for plan in self._plans.values():
            del plan.times[:]
        # The floors' tf.data iterators are let go on a thread of their own: their teardown
        # took up to 9.5 s at the end of some fits, and fit should not wait for it.
        floors, self.floors = self.floors, {}
        threading.Thread(target=floors.clear, name="pipedoctor-floors", daemon=True).start()

    def _emit(self, call: Call) -> float:
        """Hand ``call`` on, the calls before it first; the seconds handing those took."""
        paused = self.take_pause(call.phase)
        flushed = self.flush(call.phase)
        if paused:
            call = replace(call, paused=paused)
        try:
            previous = self._last_end.get(call.phase, call.start)
            self._last_end[call.phase] = call.end
            # The budget is a share of the training step: evaluation gives no periods.
            if not call.traced and (call.phase == "train" or call.extra is not None):
                self.sampler.observe(call.end - previous, call.extra)
            self.sink(call)
        except Exception:  # noqa: BLE001 - a bookkeeping bug must not stop the user's training
            self.errors += 1
        return flushed

    def _settle(self, phase: str) -> float:
        """Let the previous call finish on the device before a split call is timed; how long
        that took (time a split costs where steps run asynchronously)."""
        previous = self._last.get(phase)
        start = self.clock()
        if previous is not None:
            read_back(previous)
        return self.clock() - start

    def _calibrate(self, phase: str, batch: Any) -> None:
        """The first split call of a phase: measure the dequeue floor on its batch's shape."""
        if phase in self.floors:
            return
        self.floors[phase] = None

        def make() -> float:
            floor = DequeueFloor(batch, self.strategy, self.clock)
            self.floors[phase] = floor
            return floor.measure()

        self._guarded_floor(phase, make)

    def _guarded_floor(self, phase: str, measure: Callable[[], float]) -> None:
        began = self.clock()
        try:
            self.floor_ms[phase] = round(1000.0 * measure(), 3)
        except Exception as exc:  # noqa: BLE001 - without a floor the wait errs high: say so
            self.floors[phase] = None
            self.note = (
                f"the cost of a ready batch could not be measured ({type(exc).__name__}), so "
                "each dequeue counts whole as waiting: the input-wait share errs high"
            )
        finally:
            self._paused[phase] = self._paused.get(phase, 0.0) + self.clock() - began

    def _tf_wrapper(
        self, function: Callable[..., Any], phase: str, stock: bool, steps_per_call: int
    ) -> Callable[[Any], Any]:
        traces = TraceWatch(TraceCounter(function))
        # Bound once: the fast path runs between two steps, where every lookup counts.
        clock, plan, last = self.clock, self._plans[phase], self._last
        times, observe_fast = plan.times, self.sampler.observe_fast

        def timed(iterator: Any) -> Any:
            entered = clock()
            left = plan.left
            if left and iterator is plan.iterator:  # the fast path: a call planned not split
                plan.left = left - 1
                start = clock()
                outputs = function(iterator)
                end = clock()
                last[phase] = outputs
                if end - start < TRACE_MIN_S:
                    times.append(start)
                    times.append(end)
                    if left == 1:  # the clock's own work, timed on each plan's last call
                        observe_fast(clock() - entered - end + start)
                    return outputs
                index = plan.next_index() - 1  # long enough to have traced: looked at alone
                look(index, start, end, entered)
                return outputs
            if not self._active:
                return function(iterator)
            return slow(iterator, entered)

        def look(index: int, start: float, end: float, entered: float) -> None:
            """A call not split, handed on alone."""
            traced = traces.traced(end - start)
            call = Call(phase, index, start, end, steps_per_call, None, traced=traced)
            flushed = self._emit(call)
            self.sampler.observe_own(clock() - entered - (end - start) - flushed)

        def slow(iterator: Any, entered: float) -> Any:
            index = plan.take_index()
            if phase == "train":
                self.train_iterator = iterator
            splittable = stock and isinstance(iterator, self._iterator_types)
            chance = self.sampler.decide(phase) if splittable else None
            if chance is None:
                start = clock()
                outputs = function(iterator)
                end = clock()
                last[phase] = outputs
                look(index, start, end, entered)
            else:
                outputs = split(iterator, index, chance)
            if self._active and not self._paused:  # a pause is handed on with the next call
                plan.start(self.sampler.not_split(phase) if splittable else UNSPLIT_RUN, iterator)
            return outputs

        def split(iterator: Any, index: int, chance: float) -> Any:
            settled = self._settle(phase)
            start = self.clock()
            first = next(iterator)  # StopIteration at the end of the data, as Keras expects
            batches = TimedIterator(iterator, self.clock, first)
            batches.wait = self.clock() - start
            outputs = function(batches)
            ran = self.clock()
            read_back(outputs)
            end = self.clock()
            traced = traces.traced(end - start)
            floor = self.floor(phase)
            call = self._split_call(phase, index, start, end, batches, chance, floor, traced)
            self._emit(replace(call, extra=settled + end - ran + floor * call.steps))
            last[phase] = outputs
            self._calibrate(phase, first)
            return outputs

        return timed

    def _jax_wrapper(
        self, function: Callable[..., Any], phase: str, stock: bool
    ) -> Callable[[Any, Any], Any]:
        traces = TraceWatch(TraceCounter(function))

        def timed(state: Any, iterator: Any) -> Any:
            if not self.active:
                return function(state, iterator)
            entered = self.clock()
            index = self._plans[phase].take_index()
            chance = self.sampler.decide(phase) if stock else None
            settled = self._settle(phase) if chance is not None else 0.0
            batches = TimedIterator(iterator, self.clock)
            start = self.clock()
            result = function(state, batches)
            outputs = result[0] if isinstance(result, tuple) and len(result) == 2 else result
            ran = self.clock()
            if chance is not None:
                read_back(outputs)
            end = self.clock()
            traced = traces.traced(end - start)
            if chance is not None:
                call = self._split_call(phase, index, start, end, batches, chance, 0.0, traced)
                call = replace(call, extra=settled + end - ran)
            else:
                steps = max(1, batches.taken)
                call = Call(
                    phase, index, start, end, steps, batches.samples, synced=False, traced=traced
                )
            flushed = self._emit(call)
            self._last[phase] = outputs
            if chance is None:
                self.sampler.observe_own(self.clock() - entered - (end - start) - flushed)
            return result

        return timed

    @staticmethod
    def _split_call(
        phase: str, index: int, start: float, end: float, batches: TimedIterator,
        chance: float, floor: float, traced: bool | None,
    ) -> Call:  # fmt: skip
        dequeue = min(batches.wait, end - start)
        return Call(
            phase, index, start, end, max(1, batches.taken), batches.samples, dequeue,
            end - start - dequeue, chance, floor, traced=traced,
        )  # fmt: skip


def _traced(before: int | None, after: int | None) -> bool | None:
    return None if before is None or after is None else after != before


def _tf_iterator_types() -> tuple[type, ...]:
    """The iterators Keras's TensorFlow train function takes through its compiled path."""
    try:
        import tensorflow as tf

        return (tf.data.Iterator, tf.distribute.DistributedIterator)
    except Exception:  # noqa: BLE001 - without TensorFlow nothing is split
        return ()
