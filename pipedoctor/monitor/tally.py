"""Adding timed calls up per epoch and over the run: throughput, step time, the input-wait share.

Time is split into three kinds: *training* (the train function's calls and the short, regular
gaps between them, which are Keras's own loop), *evaluation* (``on_test_begin`` to
``on_test_end``) and *stalls*: everything else, which is callbacks at epoch ends (checkpoints,
logging), gaps between steps far longer than the usual one (a checkpoint every N batches), and
the epoch boundary. Throughput is counted over training time only, so a stall shows as a stall
and not as drift.

The first call of each phase in a ``fit`` traces the function; it is counted as start-up and
left out of every rate and share.

The input-wait share is worked out in :class:`WaitShare`, with its 95% interval.
"""

from __future__ import annotations

import math
import statistics
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.measure.rates import mean_ci
from pipedoctor.measure.samplers import SampleSeries
from pipedoctor.monitor.steps import Call

STALL_GAP_FACTOR = 10.0
"""A gap between two steps this many times the median gap is a stall, not Keras's loop..."""
STALL_GAP_MIN_S = 0.05
"""...and only when it is longer than this."""
RATE_BLOCKS = 10
"""An epoch's steps are grouped into this many consecutive blocks for its rate's interval..."""
RATE_BLOCK_STEPS = 5
"""...of at least this many timed calls each (steps next to each other are not independent)."""


def _round(value: float | None, digits: int = 1) -> float | None:
    return None if value is None else round(value, digits)


@dataclass(frozen=True)
class WaitEstimate:
    """An estimated total of seconds spent waiting for input, over ``total`` seconds of calls,
    with the estimator's variance (under the random choice of split calls)."""

    estimate: float = 0.0
    variance: float = 0.0
    total: float = 0.0
    split_steps: int = 0
    dequeue: float = 0.0

    def __add__(self, other: WaitEstimate) -> WaitEstimate:
        return WaitEstimate(
            self.estimate + other.estimate,
            self.variance + other.variance,
            self.total + other.total,
            self.split_steps + other.split_steps,
            self.dequeue + other.dequeue,
        )

    @property
    def fraction(self) -> float | None:
        if not self.split_steps or self.total <= 0:
            return None
        return min(1.0, max(0.0, self.estimate / self.total))

    @property
    def ci(self) -> float | None:
        """Half-width of the 95% interval, in share points."""
        if not self.split_steps or self.total <= 0:
            return None
        return 1.96 * math.sqrt(self.variance) / self.total

    def figures(self) -> dict[str, Any]:
        dequeue_ms = 1000.0 * self.dequeue / self.split_steps if self.split_steps else None
        return {
            "input_wait_fraction": _round(self.fraction, 3),
            "input_wait_ci": _round(self.ci, 3),
            "input_wait_steps": self.split_steps,
            "dequeue_ms": _round(dequeue_ms, 3),
        }


@dataclass
class WaitShare:
    """Collects one phase's calls in one epoch and estimates the time they waited for input.

    Every call's time is known; only split calls show their wait. The estimate is the
    difference estimator of survey sampling: each call's wait is first *predicted* from its
    time, ``max(0, time - steps x typical step)``, where the typical step is the median step
    of this epoch's split calls (timed with the batch in hand); then the split calls, a random
    sample with known probabilities, correct the predictions: the total adds, for each split
    call, (its measured wait - its prediction) / the probability it was split with. Whatever
    the predictions' quality, the estimate is unbiased over the random choice of calls; good
    predictions (a long call is a call that waited) make its variance small, so a wait at each
    epoch's first step is counted even in the epochs where that step was not split.

    A call's *time* and *measured wait* depend on the backend. TensorFlow (``direct``): the
    call's duration (it returns when its steps are done), and the split dequeue beyond the
    dequeue floor; a split call's time is predicted as the unsplit path would take it (less
    the floor). JAX (dispatches asynchronously): the call's period from the previous call's
    end, and that period less its steps timed with the device idle.
    """

    direct: bool = True
    times: array = field(default_factory=lambda: array("d"))
    steps: array = field(default_factory=lambda: array("l"))
    total: float = 0.0
    split: list[tuple[int, float, float, float]] = field(default_factory=list)
    """(position, measured wait, probability, busy seconds per step) of each split call."""
    dequeue: float = 0.0
    split_steps: int = 0

    def add(self, call: Call, period: float) -> None:
        seconds = call.end - call.start if self.direct and call.synced else period
        if not (call.split and call.chance):
            self.record(seconds, call.steps)
            return
        if self.direct:
            measured, predicted_from = call.waited, seconds - call.floor * call.steps
        else:
            measured, predicted_from = max(0.0, seconds - (call.busy or 0.0)), seconds
        busy = (call.busy or 0.0) / call.steps
        self.split.append((len(self.times), measured, call.chance, busy))
        self.dequeue += call.dequeue or 0.0
        self.split_steps += call.steps
        self.record(seconds, call.steps, predicted_from)

    def record(self, seconds: float, steps: int, predicted_from: float | None = None) -> None:
        """A call of ``seconds`` (its duration, or on JAX its period) and ``steps`` steps, not
        split unless it was added by :meth:`add`; ``predicted_from``: the time its wait is
        predicted from, when it is not ``seconds``."""
        self.total += seconds
        self.times.append(seconds if predicted_from is None else predicted_from)
        self.steps.append(steps)

    def typical_step(self) -> float | None:
        return statistics.median(busy for *_, busy in self.split) if self.split else None

    def estimate(self, typical: float | None) -> WaitEstimate:
        """The estimate, predicting from ``typical`` seconds per step (None: nothing split)."""
        if typical is None:
            return WaitEstimate(total=self.total)
        predicted = [max(0.0, t - n * typical) for t, n in zip(self.times, self.steps, strict=True)]
        estimate, variance = sum(predicted), 0.0
        for position, measured, chance, _ in self.split:
            residual = measured - predicted[position]
            estimate += residual / chance
            variance += (1.0 - chance) * residual * residual / (chance * chance)
        return WaitEstimate(estimate, variance, self.total, self.split_steps, self.dequeue)


@dataclass
class PhaseTally:
    """One phase (training or one evaluation) within one epoch."""

    phase: str
    direct: bool = True
    batch_size: int | None = None
    steps: int = 0
    samples: int = 0
    samples_known: bool = True
    seconds: float = 0.0
    """Counted time: each counted call from the end of the one before it."""
    startup_seconds: float = 0.0
    stall_seconds: float = 0.0
    longest_stall: float = 0.0
    step_periods: list[float] = field(default_factory=list)
    gaps: list[float] = field(default_factory=list)
    wait: WaitShare = field(init=False)
    last_end: float | None = None

    def __post_init__(self) -> None:
        self.wait = WaitShare(self.direct)

    def add(self, call: Call, *, startup: bool) -> None:
        if self.batch_size is None and call.samples and call.steps:
            self.batch_size = round(call.samples / call.steps)
        if startup:
            self.last_end = call.end
            self.startup_seconds += call.end - call.start
            return
        period = self._count(call.start, call.end, call.steps, call.samples, call.paused)
        self.wait.add(call, period)

    def add_plain(self, steps: int, times: Sequence[float]) -> None:
        """Calls that were not split, with ``steps`` steps each: ``times`` holds each one's
        start and end in turn (TensorFlow: their durations are their times)."""
        record, count = self.wait.record, self._count
        for i in range(0, len(times), 2):
            start, end = times[i], times[i + 1]
            period = count(start, end, steps, None, 0.0)
            record(end - start if self.direct else period, steps)

    def _count(
        self, start: float, end: float, steps: int, samples: int | None, paused: float
    ) -> float:
        """Count a call into the phase's time, steps and samples; its period, stalls left out."""
        previous, self.last_end = self.last_end, end
        if previous is None:
            previous = start
        else:  # the monitor's own time (measuring the floor) is no gap in the training
            previous = min(start, previous + paused)
        gap = max(0.0, start - previous)
        period = end - previous
        if previous != start:
            self.gaps.append(gap)
            if self._is_stall(gap):
                self.stall_seconds += gap
                self.longest_stall = max(self.longest_stall, gap)
                period -= gap
        self.seconds += period
        self.steps += steps
        self.step_periods.append(period / steps)
        if samples is not None:
            self.samples += samples
        elif self.batch_size:
            self.samples += self.batch_size * steps
        else:
            self.samples_known = False
        return period

    def _is_stall(self, gap: float) -> bool:
        if gap < STALL_GAP_MIN_S or len(self.gaps) < 3:
            return gap >= 1.0  # before the usual gap is known, only a clear stall counts
        return gap >= STALL_GAP_FACTOR * statistics.median(self.gaps)

    @property
    def samples_per_s(self) -> float | None:
        if not self.samples_known or self.seconds <= 0 or not self.samples:
            return None
        return self.samples / self.seconds

    @property
    def step_ms(self) -> float | None:
        return 1000.0 * statistics.median(self.step_periods) if self.step_periods else None

    @property
    def rate_ci(self) -> float | None:
        """Relative half-width of the 95% interval of the phase's rate: the mean step period
        of consecutive blocks of calls (batch means), so that a few slow steps in a row widen
        it as they should."""
        periods = self.step_periods
        blocks = min(RATE_BLOCKS, len(periods) // RATE_BLOCK_STEPS)
        if blocks < 2:
            return None
        size = len(periods) // blocks
        means = [statistics.fmean(periods[i * size : (i + 1) * size]) for i in range(blocks)]
        return mean_ci(means)

    def figures(self, wait: WaitEstimate) -> dict[str, Any]:
        return {
            "steps": self.steps,
            "samples": self.samples if self.samples_known else None,
            "samples_per_s": _round(self.samples_per_s),
            "samples_per_s_ci": _round(self.rate_ci, 3),
            "step_ms": _round(self.step_ms, 2),
            **wait.figures(),
        }


@dataclass
class EpochTally:
    """Everything one epoch's calls add up to; ``close`` turns it into the epoch's record."""

    number: int
    began: float
    direct: bool = True
    batch_size: int | None = None
    eval_batch_size: int | None = None
    train: PhaseTally = field(init=False)
    evaluation: PhaseTally = field(init=False)
    eval_seconds: float = 0.0
    eval_began: float | None = None

    def __post_init__(self) -> None:
        self.train = PhaseTally("train", self.direct, self.batch_size)
        self.evaluation = PhaseTally("eval", self.direct, self.eval_batch_size)

    def phase(self, name: str) -> PhaseTally:
        return self.train if name == "train" else self.evaluation

    def add(self, call: Call, *, startup: bool) -> None:
        self.phase(call.phase).add(call, startup=startup)

    def begin_evaluation(self, now: float) -> None:
        self.eval_began = now
        self.evaluation.last_end = None

    def end_evaluation(self, now: float) -> None:
        if self.eval_began is not None:
            self.eval_seconds += now - self.eval_began
            self.eval_began = None

    def close(
        self, ended: float, typical: dict[str, float | None], own: float = 0.0
    ) -> tuple[dict[str, Any], WaitEstimate, WaitEstimate]:
        """The epoch's record (``number`` is 1-based, as Keras's progress bar shows it) and its
        training and evaluation wait estimates. ``typical`` is each phase's typical step from
        earlier epochs, for an epoch whose own calls were never split; it is updated."""
        for phase in (self.train, self.evaluation):
            typical[phase.phase] = phase.wait.typical_step() or typical.get(phase.phase)
        train_wait = self.train.wait.estimate(typical["train"])
        eval_wait = self.evaluation.wait.estimate(typical["eval"])
        seconds = ended - self.began
        train = self.train
        in_train = train.seconds + train.startup_seconds + train.stall_seconds
        boundary = max(0.0, seconds - in_train - self.eval_seconds - own)
        record: dict[str, Any] = {
            "epoch": self.number,
            "seconds": round(seconds, 3),
            "train_seconds": round(train.seconds, 3),
            **train.figures(train_wait),
            "stall_seconds": round(boundary + train.stall_seconds, 3),
            "longest_stall_s": round(max(boundary, train.longest_stall), 3),
        }
        if train.startup_seconds:
            record["startup_seconds"] = round(train.startup_seconds, 3)
        if self.eval_seconds:
            record["eval"] = {
                "seconds": round(self.eval_seconds, 3),
                **self.evaluation.figures(eval_wait),
            }
        return record, train_wait, eval_wait


class RunTally:
    """The epochs of one ``fit`` and the run-wide figures built from them."""

    def __init__(self, started: float, *, direct: bool = True, max_periods: int = 4096) -> None:
        self.direct = direct
        self.started = started
        self.epochs: list[dict[str, Any]] = []
        self.current: EpochTally | None = None
        self.batch_size: int | None = None
        self.eval_batch_size: int | None = None
        self.wait = WaitEstimate()
        self.eval_wait = WaitEstimate()
        self.typical: dict[str, float | None] = {"train": None, "eval": None}
        self.periods = SampleSeries(max_periods)
        self._seen_phases: set[str] = set()
        self._boundary = started
        self.totals = {"train": 0.0, "samples": 0, "eval": 0.0, "stall": 0.0, "startup": 0.0}
        self.own_seconds = 0.0
        """Time spent in the monitor's own hooks, kept out of the stalls and reported apart."""
        self._own_closed = 0.0
        self.samples_known = True

    def begin_epoch(self, number: int, now: float) -> None:
        self.current = EpochTally(
            number, self._boundary, self.direct, self.batch_size, self.eval_batch_size
        )

    def add(self, call: Call) -> None:
        if self.current is None:  # a call outside an epoch (evaluate() called from a callback)
            return
        # A call that traced is start-up; where tracing cannot be told, each phase's first.
        first = call.phase not in self._seen_phases
        self._seen_phases.add(call.phase)
        self.own_seconds += call.paused
        self.current.add(call, startup=call.traced if call.traced is not None else first)
        self.batch_size = self.batch_size or self.current.train.batch_size
        self.eval_batch_size = self.eval_batch_size or self.current.evaluation.batch_size

    def add_plain(self, phase: str, steps: int, times: Sequence[float]) -> None:
        """Calls not split, in bulk (see :meth:`PhaseTally.add_plain`)."""
        if self.current is not None:
            self.current.phase(phase).add_plain(steps, times)

    def end_epoch(self, now: float) -> dict[str, Any] | None:
        epoch, self.current = self.current, None
        if epoch is None:
            return None
        own, self._own_closed = self.own_seconds - self._own_closed, self.own_seconds
        record, train_wait, eval_wait = epoch.close(now, self.typical, own)
        self._boundary = now
        self.epochs.append(record)
        train = epoch.train
        self.wait += train_wait
        self.eval_wait += eval_wait
        for period in train.step_periods:
            self.periods.add(period)
        self.totals["train"] += train.seconds
        self.totals["samples"] += train.samples
        self.samples_known = self.samples_known and train.samples_known
        self.totals["eval"] += epoch.eval_seconds
        self.totals["stall"] += record["stall_seconds"]
        self.totals["startup"] += train.startup_seconds + epoch.evaluation.startup_seconds
        return record

    def figures(self, now: float) -> dict[str, Any]:
        """Run-wide measurements, keyed as ``check`` keys them where the meaning is the same."""
        totals = self.totals
        rate = None
        if self.samples_known and totals["train"] > 0 and totals["samples"]:
            rate = totals["samples"] / totals["train"]
        periods = self.periods.items()
        step_ms = 1000.0 * statistics.median(periods) if periods else None
        data: dict[str, Any] = {
            **self.wait.figures(),
            "training_samples_per_s": _round(rate),
            "batch_size": self.batch_size,
            "epochs": list(self.epochs),
            "run_seconds": round(now - self.started, 2),
            "time_split": {
                "train_s": round(totals["train"], 2),
                "eval_s": round(totals["eval"], 2),
                "stall_s": round(totals["stall"], 2),
                "startup_s": round(totals["startup"], 2),
                "monitor_s": round(self.own_seconds, 3),
            },
        }
        if step_ms is not None:
            data["step_ms"] = {"training": round(step_ms, 2)}
        if self.eval_wait.fraction is not None:
            data["eval_input_wait_fraction"] = _round(self.eval_wait.fraction, 3)
            data["eval_input_wait_ci"] = _round(self.eval_wait.ci, 3)
        return data


DECISIVE_CI = 0.1
"""An input-wait share this precise (± share points) is reported even when its interval
straddles the input-bound limit: it is then truly near the limit."""


def decisive(fraction: float | None, ci: float | None, limit: float) -> bool:
    """Whether a measured share can carry a verdict: its 95% interval is narrow, or lies wholly
    on one side of ``limit``. A share from too few split steps is kept out of the verdict
    (a missed finding costs less than a wrong one)."""
    if fraction is None:
        return False
    if ci is None:
        return False
    return ci <= DECISIVE_CI or fraction - ci >= limit or fraction + ci < limit
