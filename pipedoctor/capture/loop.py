"""A custom training loop, timed from inside: the loop's own steps are the training throughput.

A custom loop (``for batch in strategy.experimental_distribute_dataset(ds): step(batch)``) has
no ``fit`` to copy: its step is the user's own function, and nothing outside it can run that.
What the check can see is the loop asking for its next batch. The time between two requests is
one step of the loop, whatever the step does, so:

- the **compute ceiling** is the loop fed the same batch, already on the devices, at every
  request: no input cost at all;
- **real training** is the loop fed real batches, from a repeated copy of its own distributed
  dataset (so an epoch's end never cuts a measurement short);
- the **pipeline alone** is timed before the loop starts, on the tf.data dataset it was given.

The loop trains the user's model while it is timed, so the script is stopped right after
(``child.stop_script``), before any line after the loop can save or log anything. Under
``--run-after`` the loop's training must stay the user's: only real training is timed, on the
loop's own batches, and the ceiling is left out.

A loop that reads its batches inside a ``tf.function`` (``train_step(iterator)`` with
``next(iterator)`` in the compiled step, as the multi-worker tutorial and most model-garden
loops do) asks for no batch from Python. There the clock is the call of the compiled step that
takes the iterator: one call runs as many steps as its trace reads batches, and the iterator is
made to read, from the next call on, what the phase serves (the same batch, then the repeated
copy), since a compiled step takes its iterator's resources afresh at every call. A step that
reads its batches inside a graph loop (``for _ in tf.range(n)``), where the number of batches
per call cannot be read from its trace, and an iterator the step captures instead of taking as
an argument, still end with the pipeline alone measured and the reason in the report.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from pipedoctor.capture import writes
from pipedoctor.measure.protocol import time_to_stop
from pipedoctor.measure.rates import RateMeter

PLAN_ATTR = "_pipedoctor_loop"
SERVES_ATTR = "_pipedoctor_serves"
TRACE_ATTR = "_pipedoctor_reads"
"""On a compiled function: (batches its latest trace reads, whether it reads them in a loop)."""
IN_GRAPH = (
    "the loop reads its batches inside a tf.function from an iterator the function does not "
    "take as an argument, where the check cannot time its steps: only the input pipeline was "
    "measured. Pass the iterator to the compiled step (`train_step(iterator)`), or iterate the "
    "distributed dataset in Python (`for batch in dist_dataset: step(batch)`), to measure it"
)
IN_GRAPH_LOOP = (
    "the loop's compiled step reads its batches inside a graph loop (`for _ in tf.range(n)`), "
    "so how many batches one call takes cannot be read from its trace: only the input pipeline "
    "was measured. Check it with one batch per call (n = 1) to measure it"
)
NO_READS = (
    "the loop's compiled step takes the iterator but its trace reads no batch with "
    "`next(iterator)`, so its steps cannot be counted: only the input pipeline was measured"
)


class LoopPlan:
    """The phases of one timed loop: ``start`` (no batch served yet), ``ceiling``, ``training``,
    then ``done``, when ``finish`` gets the figures (and, unless the loop may train on, stops
    the script). ``source`` makes the repeated copy real training reads; ``fixed`` makes a
    dataset of the same kind that serves its first batch for ever (the ceiling of a compiled
    step, which reads whatever its iterator holds)."""

    def __init__(
        self,
        strategy: Any,
        source: Callable[[], Any],
        budget: Any,
        start: Callable[[], None],
        finish: Callable[[LoopPlan], None],
        progress: Callable[[str], None],
        *,
        run_after: bool,
        fixed: Callable[[], Any] | None = None,
        probe: Callable[[], Callable[[], bool]] | None = None,
    ) -> None:
        self.strategy = strategy
        self._on_start = start
        self._source_factory = source
        self._fixed_factory = fixed
        self._source: Any = None
        self._fixed: Any = None
        self.budget = budget
        self._finish = finish
        self.progress = progress
        self.run_after = run_after
        self.phase = "start"
        self.first: Any = None
        self.samples = 0
        self.per_call = 1
        """Batches one call of a compiled step reads (1 for a loop that reads in Python)."""
        self.rates: dict[str, Any] = {}
        self.untimed = False
        """Whether only the input pipeline could be timed (``incomplete`` says why)."""
        self.incomplete: str | None = None
        """Why the loop's steps could not be timed, when they could not."""
        self.compiled = False
        """Whether the loop is timed by the calls of a compiled step (see the module's text)."""
        self.ended_in: str | None = None
        """The phase the script's loop ended in, when it ended before the measurement did."""
        self.ended_by = "ended"
        """What ended it: the loop running out of steps, or the script about to write."""
        self._meter: RateMeter | None = None
        self._deadline = 0.0
        self.in_call = False
        self._sampling = ExitStack()
        self.sampling_context: Callable[[], Any] | None = None
        self._probe = probe
        """Where the loop may not train (a dataset distributed for an evaluation loop): called
        at the loop's first batch, it returns what says, at its second, whether the step
        between trained. Until then the loop runs on its own batches, untimed."""
        self._trained: Callable[[], bool] | None = None
        self.on_pass: Callable[[LoopPlan], None] = lambda plan: None
        """Called when the probe found the loop does not train: it is left as written."""

    @property
    def active(self) -> bool:
        return self.phase in ("start", "ceiling", "training")

    @property
    def routing(self) -> bool:
        """Whether the loop's requests come to the plan: while timed, and while its first step
        shows whether it trains."""
        return self.active or self.phase == "probe"

    def _probing(self) -> bool:
        """At a request of the loop: whether it stays the script's own (its first step runs
        untimed, or it turned out not to train). Moves the phase on."""
        if self.phase == "start" and self._probe is not None:
            self.phase, self._trained = "probe", self._probe()
            return True
        if self.phase == "probe":
            assert self._trained is not None
            if not self._trained():
                self.phase = "passed"
                self.on_pass(self)
                return True
            self.phase = "start"
        return False

    def next(self, iterator: Any, original: Callable[[Any], Any]) -> Any:
        """The batch the loop gets at this request; the request ends the step before it."""
        if self.phase in ("start", "probe") and self._probing():
            return original(iterator)
        if self.phase == "start":
            return self._start(iterator, original)
        self._tick(self.samples)
        if not self.active:
            return original(iterator)  # only under --run-after: the loop trains on
        if self.phase == "ceiling":
            return self.first
        return original(iterator) if self.run_after else next(self._source)

    def call(self, function: Any, iterator: Any, run: Callable[[], Any]) -> Any:
        """One call of the compiled step ``function`` that reads ``iterator``: the call ends
        the one before it, and its iterator reads this phase's batches."""
        if self.phase in ("start", "probe") and self._probing():
            return run()
        if self.phase == "start":
            self._start_compiled()
        else:
            self._tick(self.samples * self.per_call)
        if self.phase in ("ceiling", "training") and not self.run_after:
            _adopt(iterator, self._fixed if self.phase == "ceiling" else self._source)
        self.in_call = True
        try:
            result = run()
        finally:
            self.in_call = False
        reads = getattr(function, TRACE_ATTR, None)
        if self.active and reads is not None:
            batches, in_loop = reads
            if in_loop or batches == 0:
                self.stop_untimed(IN_GRAPH_LOOP if in_loop else NO_READS)
            self.per_call = batches
        return result

    def serving(self) -> Any:
        """The iterator a new epoch of a compiled loop gets while a phase is timed: the one the
        phase reads, not a fresh copy of the script's pipeline (starting one each epoch would
        spend the host's cores on batches nobody reads)."""
        if not self.compiled or self.run_after or self.phase not in ("ceiling", "training"):
            return None
        served = self._fixed if self.phase == "ceiling" else self._source
        vars(served).update({PLAN_ATTR: self, SERVES_ATTR: served})
        return served

    def _tick(self, samples: int) -> None:
        """A step (or a call's steps) of ``samples`` ended now: move on when the phase has
        its figure."""
        now = time.perf_counter()
        assert self._meter is not None
        self._meter.add(now, samples)
        if time_to_stop(self._meter, self._deadline, self.budget.deadline):
            self.rates[self.phase] = self._meter.rate()
            if self.phase == "ceiling":
                self._begin("training")
            else:
                self._end()

    def _start(self, iterator: Any, original: Callable[[Any], Any]) -> Any:
        self.phase = "pipeline"  # not active: the check's own reads pass through
        self._on_start()
        if self.run_after:  # the user's own batches, untouched
            batch = original(iterator)
            self.samples = self.batch_samples(batch)
            self._begin("training")
            return batch
        self._source = iter(self._source_factory())
        self.first = next(self._source)
        self.samples = self.batch_samples(self.first)
        self._begin("ceiling")
        return self.first

    def _start_compiled(self) -> None:
        self.phase = "pipeline"
        self.compiled = True
        self._on_start()
        if self._fixed_factory is None:
            self.stop_untimed()
            return
        self._fixed = iter(self._fixed_factory())
        self.samples = self.batch_samples(next(self._fixed))
        if self.run_after:  # the user's own batches: only real training is timed
            self._begin("training")
            return
        self._source = iter(self._source_factory())
        self._begin("ceiling")

    def _begin(self, phase: str) -> None:
        if not self.run_after:  # the loop now trains on the check's batches
            writes.arm(lambda what: self.finish_now(f"was about to {what}"))
        self.phase = phase
        # A loop's length is the script's: shorter blocks and a ±10% target leave a loop of a
        # few hundred steps room for both phases.
        self._meter = RateMeter(warmup_items=2, warmup_s=0.3, block_s=0.1, target=0.10)
        self._deadline = self.budget.phase_deadline(phase)
        if phase == "ceiling":
            self.progress("measuring the compute ceiling: the loop fed one batch, on the devices")
        else:
            self.progress("measuring real training steps of the loop")
            if self.sampling_context is not None:
                self._sampling.enter_context(self.sampling_context())

    def _end(self) -> None:
        self.phase = "done"
        writes.disarm()
        self._sampling.close()
        self._finish(self)

    def finish_now(self, why: str = "ended") -> None:
        """The script's loop ended while it was timed (it ran out of steps, or the script was
        about to write, ``why``): what was measured so far is the result, and ``ended_in``
        says in which phase."""
        if self.phase not in ("ceiling", "training"):
            return
        if self._meter is not None:
            self.rates[self.phase] = self._meter.rate()
        self.ended_in, self.ended_by = self.phase, why
        self._end()

    def stop_untimed(self, reason: str = IN_GRAPH) -> None:
        """The loop's steps cannot be timed from here (``reason``: they are read inside a
        graph, or the loop was about to write before its first timed step): the pipeline is
        still timed, eagerly, outside any function being traced."""
        import tensorflow as tf

        self.untimed = True
        self.incomplete = reason
        self.rates.clear()
        with tf.init_scope():
            if self.phase in ("start", "probe"):
                self.phase = "pipeline"
                self._on_start()
            self._end()

    def batch_samples(self, batch: Any) -> int:
        """Samples in one step's batch: every replica's share added up."""
        from pipedoctor.measure.protocol import samples_in

        local = self.strategy.experimental_local_results(batch)
        return sum(samples_in(part) for part in local) or 1


def _adopt(iterator: Any, substitute: Any) -> None:
    """Make the script's ``iterator`` read what ``substitute`` reads: a compiled step is handed
    its iterator's resources at every call, so from the next call on it reads the substitute's
    batches. ``substitute`` comes from the same dataset, distributed the same way, so the step's
    trace still fits (the same type spec)."""
    state = vars(iterator)
    if state.get(SERVES_ATTR) is substitute:
        return
    plan = state.get(PLAN_ATTR)
    state.update(vars(substitute))
    state[PLAN_ATTR], state[SERVES_ATTR] = plan, substitute


_RECENT: list[Callable[[], Any]] = [lambda: None]
"""The iterator that last served a batch to Python (a weak reference)."""


def watch_iterators() -> None:
    """From now on, remember which tf.data iterator last served a batch to Python, or was last
    handed to a compiled function: when a plain loop (no strategy) takes its first optimizer
    step, that is the loop's iterator. And count the batches each compiled function's trace
    reads from the iterators it takes (``TRACE_ATTR``)."""
    from tensorflow.python.data.ops.iterator_ops import OwnedIterator

    _patch_next(OwnedIterator)
    _patch_compiled_calls()


def last_served() -> Any:
    """The tf.data iterator the script read its latest batch from in Python, if alive."""
    return _RECENT[0]()


def mark_iterator(iterator: Any, plan: LoopPlan) -> None:
    """Time the loop reading ``iterator`` (already watched) with ``plan`` from its next batch."""
    setattr(iterator, PLAN_ATTR, plan)
    _patch_next(type(iterator))


def mark(dataset: Any, plan: LoopPlan) -> None:
    """Time the loop over ``dataset`` (a distributed dataset, or under the default strategy the
    tf.data dataset itself) with ``plan``: its iterators serve the plan's batches."""
    setattr(dataset, PLAN_ATTR, plan)
    _patch_iter(type(dataset))


def _patch_iter(cls: type) -> None:
    if getattr(cls, "_pipedoctor_iter", False):
        return
    original_iter = cls.__iter__

    def __iter__(dataset: Any) -> Any:
        import tensorflow as tf

        plan = getattr(dataset, PLAN_ATTR, None)
        if plan is not None and plan.active and not tf.inside_function():
            serving = plan.serving()
            if serving is not None:  # a new epoch of a compiled loop: the phase's own reads on
                return serving
        iterator = original_iter(dataset)
        if plan is not None and plan.routing:
            if tf.inside_function():
                if plan.active:
                    plan.stop_untimed()
            else:
                setattr(iterator, PLAN_ATTR, plan)
                _patch_next(type(iterator))
        return iterator

    cls.__iter__ = __iter__  # type: ignore[method-assign]
    cls._pipedoctor_iter = True  # type: ignore[attr-defined]


_TRACING: list[dict[int, list[int]] | None] = [None]
"""While a compiled function that takes an iterator runs: for each graph traced (by id),
[batches read, reads in a loop]. A first call can trace its function more than once."""


def _patch_compiled_calls() -> None:
    """Wrap every call of a ``tf.function``: a call that takes a timed iterator is a step (or
    several) of the loop, and the trace of any function that takes an iterator counts the
    batches it reads."""
    import tensorflow as tf
    from tensorflow.python.data.ops.iterator_ops import OwnedIterator
    from tensorflow.python.distribute.input_lib import DistributedIteratorBase
    from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function

    if getattr(Function, "_pipedoctor_call", False):
        return
    original_call = Function.__call__
    kinds = (OwnedIterator, DistributedIteratorBase)

    def __call__(function: Any, *args: Any, **kw: Any) -> Any:
        iterators = [a for a in (*args, *kw.values()) if isinstance(a, kinds)]
        if not iterators or tf.inside_function():
            return original_call(function, *args, **kw)
        plans = [(getattr(it, PLAN_ATTR, None), it) for it in iterators]
        timed = next(((p, it) for p, it in plans if p is not None and p.routing), None)
        if timed is None:
            _RECENT[0] = weakref.ref(iterators[0])
        outer, _TRACING[0] = _TRACING[0], {}
        traces = _TRACING[0]

        def run() -> Any:
            return original_call(function, *args, **kw)

        try:
            return run() if timed is None else timed[0].call(function, timed[1], run)
        finally:
            _TRACING[0] = outer
            if traces:  # it traced: what the latest trace reads is the count now
                batches, in_loop = list(traces.values())[-1]
                setattr(function, TRACE_ATTR, (batches, bool(in_loop)))

    Function.__call__ = __call__  # type: ignore[method-assign]
    Function._pipedoctor_call = True  # type: ignore[attr-defined]


def _count_traced_read() -> None:
    """A batch read while a function is traced: counted for the function that takes the
    iterator, and marked when it sits in a graph loop (a ``while`` body runs any number of
    times per call)."""
    traces = _TRACING[0]
    if traces is None:
        return
    from tensorflow.python.framework import ops

    chain = [ops.get_default_graph()]  # the graph being built, out to the eager one
    while getattr(chain[-1], "outer_graph", None) is not None:
        chain.append(chain[-1].outer_graph)
    names = [getattr(graph, "name", "") for graph in chain]
    in_loop = int(any("while_body" in n or "while_cond" in n for n in names))
    function_graph = chain[-2] if len(chain) > 1 else chain[-1]  # the outermost traced
    reads = traces.setdefault(id(function_graph), [0, 0])
    reads[0] += 1
    reads[1] |= in_loop


def _patch_next(cls: type) -> None:
    if getattr(cls, "_pipedoctor_next", False):
        return
    original_next = cls.__next__

    def __next__(iterator: Any) -> Any:
        import tensorflow as tf

        plan = getattr(iterator, PLAN_ATTR, None)
        if tf.inside_function():
            _count_traced_read()
            if plan is not None and plan.active and not plan.compiled:
                plan.stop_untimed()  # an iterator the compiled function captured
            return original_next(iterator)
        if plan is None or not plan.routing:
            _RECENT[0] = weakref.ref(iterator)
            return original_next(iterator)
        return plan.next(iterator, original_next)

    cls.__next__ = __next__  # type: ignore[method-assign]
    _patch_type_spec(cls)
    cls._pipedoctor_next = True  # type: ignore[attr-defined]


def _patch_type_spec(cls: type) -> None:
    """An iterator handed to a ``tf.function`` is turned into graph inputs through its type
    spec, and the function reads it in-graph through a new object: the moment the spec of a
    timed iterator is asked for is the loop's last chance to say it cannot be timed."""
    prop = getattr(cls, "_type_spec", None)
    if not isinstance(prop, property) or prop.fget is None:
        return
    original = prop.fget

    def _type_spec(iterator: Any) -> Any:
        plan = getattr(iterator, PLAN_ATTR, None)
        if plan is not None and plan.active and not plan.in_call:
            plan.stop_untimed()
        return original(iterator)

    cls._type_spec = property(_type_spec)  # type: ignore[attr-defined]
