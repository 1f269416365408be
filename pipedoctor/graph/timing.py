"""Timing a pipeline, and timing a rewrite of it in turns against the pipeline as it is.

A shared machine speeds up and slows down while it is measured, so a rewrite is never timed
once against a baseline taken earlier: both are timed in turns, ABBA, and the gain is the
median of the per-turn ratios.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from typing import Any

from pipedoctor.measure.protocol import samples_in
from pipedoctor.measure.rates import Rate, RateMeter

MEASURE_S = 2.0
"""Longest the pipeline, or the pipeline cut after a stage, is timed alone."""
TIMING_BATCH = 64
"""Unbatched prefixes are timed in batches of this many elements."""
TURN_S = 1.0
"""Each rewrite is timed in turns against the unmodified pipeline, this long per timing..."""
SCREEN_TURNS = 2
"""...in two turns for each candidate fix alone..."""
CONFIRM_TURNS = 6
"""...and in up to six for all fixes together, the figure the projection rests on."""


def time_dataset(dataset: Any, batched: bool, seconds: float, skip: int = 0) -> Rate | None:
    """Samples per second of ``dataset`` (repeated), in steady state, for at most ``seconds``
    after the first ``skip`` elements."""
    if not batched:  # batch for timing only: iterating single elements in Python costs more
        dataset = dataset.batch(TIMING_BATCH)  # than most stages, and would hide them
        skip = skip // TIMING_BATCH
    meter = RateMeter(warmup_items=3 + skip, warmup_s=0.4, block_s=0.1, min_blocks=5)
    deadline = time.perf_counter() + seconds
    for element in dataset.repeat():
        meter.add(time.perf_counter(), samples_in(element))
        if meter.converged or time.perf_counter() >= deadline:
            break
    return meter.rate()


@dataclass
class Paired:
    """A rewrite timed in turns against the unmodified pipeline."""

    ratios: list[float]
    """Per turn: the rewrite's rate over the unmodified pipeline's."""
    base_rates: list[float]

    @property
    def gain(self) -> float:
        return statistics.median(self.ratios)

    @property
    def spread(self) -> tuple[float, float]:
        """The middle half of the per-turn ratios (quartiles): how noisy the gain is."""
        if len(self.ratios) < 2:
            return (self.gain, self.gain)
        low, _, high = statistics.quantiles(self.ratios, n=4)
        return (low, high)


def paired_gain(
    base: Any, other: Any, batched: bool, turns: int, seconds: float = TURN_S
) -> Paired | None:
    """``other``'s speed-up over ``base``, timed in turns so that a machine that speeds up or
    slows down meanwhile moves both alike, in ABBA order so that neither always goes first."""
    ratios, base_rates = [], []
    for turn in range(turns):
        rates: dict[str, float] = {}
        for which in ("base", "other") if turn % 2 == 0 else ("other", "base"):
            rate = time_dataset(base if which == "base" else other, batched, seconds)
            if rate is None:
                return None
            rates[which] = rate.samples_per_s
        ratios.append(rates["other"] / rates["base"])
        base_rates.append(rates["base"])
    return Paired(ratios, base_rates)


def paired_cost(turns: int) -> float:
    """Seconds that :func:`paired_gain` takes for ``turns``."""
    return turns * 2 * (TURN_S + 0.25)
