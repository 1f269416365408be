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

A loop that reads its batches inside a ``tf.function`` (``next(iterator)`` in a compiled step)
cannot be timed from Python: it is stopped at its first trace, with the pipeline alone measured
and the reason in the report.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from pipedoctor.measure.protocol import time_to_stop
from pipedoctor.measure.rates import RateMeter

PLAN_ATTR = "_pipedoctor_loop"
IN_GRAPH = (
    "the loop reads its batches inside a tf.function (`next(iterator)` in a compiled step), "
    "where the check cannot time its steps: only the input pipeline was measured. Iterate the "
    "distributed dataset in Python (`for batch in dist_dataset: step(batch)`) to measure it"
)


class LoopPlan:
    """The phases of one timed loop: ``start`` (no batch served yet), ``ceiling``, ``training``,
    then ``done``, when ``finish`` gets the figures (and, unless the loop may train on, stops
    the script)."""

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
    ) -> None:
        self.strategy = strategy
        self._on_start = start
        self._source_factory = source
        self._source: Any = None
        self.budget = budget
        self._finish = finish
        self.progress = progress
        self.run_after = run_after
        self.phase = "start"
        self.first: Any = None
        self.samples = 0
        self.rates: dict[str, Any] = {}
        self.in_graph = False
        self.ended_in: str | None = None
        """The phase the script's loop ended in, when it ended before the measurement did."""
        self._meter: RateMeter | None = None
        self._deadline = 0.0
        self._sampling = ExitStack()
        self.sampling_context: Callable[[], Any] | None = None

    @property
    def active(self) -> bool:
        return self.phase in ("start", "ceiling", "training")

    def next(self, iterator: Any, original: Callable[[Any], Any]) -> Any:
        """The batch the loop gets at this request; the request ends the step before it."""
        if self.phase == "start":
            return self._start(iterator, original)
        now = time.perf_counter()
        assert self._meter is not None
        self._meter.add(now, self.samples)
        if time_to_stop(self._meter, self._deadline, self.budget.deadline):
            self.rates[self.phase] = self._meter.rate()
            if self.phase == "ceiling":
                self._begin("training")
            else:
                self._end()
                return original(iterator)  # only under --run-after: the loop trains on
        if self.phase == "ceiling":
            return self.first
        return original(iterator) if self.run_after else next(self._source)

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

    def _begin(self, phase: str) -> None:

        self.phase = phase
        self._meter = RateMeter(warmup_items=2, warmup_s=0.3)
        self._deadline = self.budget.phase_deadline(phase)
        if phase == "ceiling":
            self.progress("measuring the compute ceiling: the loop fed one batch, on the devices")
        else:
            self.progress("measuring real training steps of the loop")
            if self.sampling_context is not None:
                self._sampling.enter_context(self.sampling_context())

    def _end(self) -> None:
        self.phase = "done"
        self._sampling.close()
        self._finish(self)

    def finish_now(self) -> None:
        """The script ended while its loop was timed (the loop ran out of steps): what was
        measured so far is the result, and ``ended_in`` says in which phase."""
        if self.phase not in ("ceiling", "training"):
            return
        if self._meter is not None:
            self.rates[self.phase] = self._meter.rate()
        self.ended_in = self.phase
        self._end()

    def stop_in_graph(self) -> None:
        """The loop reads batches inside a compiled function: nothing to time from here. The
        pipeline is still timed, eagerly, outside the function being traced."""
        import tensorflow as tf

        self.in_graph = True
        with tf.init_scope():
            if self.phase == "start":
                self.phase = "pipeline"
                self._on_start()
            self._end()

    def batch_samples(self, batch: Any) -> int:
        """Samples in one step's batch: every replica's share added up."""
        from pipedoctor.measure.protocol import samples_in

        local = self.strategy.experimental_local_results(batch)
        return sum(samples_in(part) for part in local) or 1


_RECENT: list[Callable[[], Any]] = [lambda: None]
"""The iterator that last served a batch to Python (a weak reference)."""


def watch_iterators() -> None:
    """From now on, remember which tf.data iterator last served a batch to Python: when a
    plain loop (no strategy) takes its first optimizer step, that is the loop's iterator."""
    from tensorflow.python.data.ops.iterator_ops import OwnedIterator

    _patch_next(OwnedIterator)


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

        iterator = original_iter(dataset)
        plan = getattr(dataset, PLAN_ATTR, None)
        if plan is not None and plan.active:
            if tf.inside_function():
                plan.stop_in_graph()
            else:
                setattr(iterator, PLAN_ATTR, plan)
                _patch_next(type(iterator))
        return iterator

    cls.__iter__ = __iter__  # type: ignore[method-assign]
    cls._pipedoctor_iter = True  # type: ignore[attr-defined]


def _patch_next(cls: type) -> None:
    if getattr(cls, "_pipedoctor_next", False):
        return
    original_next = cls.__next__

    def __next__(iterator: Any) -> Any:
        import tensorflow as tf

        plan = getattr(iterator, PLAN_ATTR, None)
        if plan is None or not plan.active:
            if not tf.inside_function():
                _RECENT[0] = weakref.ref(iterator)
            return original_next(iterator)
        if tf.inside_function():
            plan.stop_in_graph()
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
        if plan is not None and plan.active:
            plan.stop_in_graph()
        return original(iterator)

    cls._type_spec = property(_type_spec)  # type: ignore[attr-defined]
