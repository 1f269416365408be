"""Steady-state throughput with a confidence interval, from item completion times.

The first items (tracing, autotuning, warm caches) are skipped; the rest are grouped into
blocks of at least ``block_s`` seconds, and the 95% interval of the mean block rate (batch
means with Student's t) says how sure the figure is. Measurement stops when the interval is
within ``target`` (±5% by default) or when the caller's budget runs out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# Two-sided 95% Student t quantiles for 1..30 degrees of freedom; 1.96 beyond.
_T95 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip


def t95(dof: int) -> float:
    return _T95[dof - 1] if 1 <= dof <= len(_T95) else 1.96


def mean_ci(values: Sequence[float]) -> float | None:
    """Half-width of the 95% interval of the mean of ``values`` (batch means, Student's t),
    relative to that mean; ``None`` for fewer than two values or a mean that is not positive."""
    k = len(values)
    if k < 2:
        return None
    mean = sum(values) / k
    if mean <= 0:
        return None
    var = sum((v - mean) ** 2 for v in values) / (k - 1)
    return t95(k - 1) * math.sqrt(var / k) / mean


def share_text(share: float, ci: float | None) -> str:
    """A share with its 95% interval in share points: ``64% ±4%``; one whose interval reaches
    past 0% or 100% as the range it can be in (``0%-44%``), never ``0% ±44%``."""
    if ci is None or ci < 0.005:
        return f"{share:.0%}"
    low, high = max(0.0, share - ci), min(1.0, share + ci)
    if low == 0.0 or high == 1.0:
        return f"{low:.0%}-{high:.0%}"
    return f"{share:.0%} ±{ci:.0%}"


@dataclass(frozen=True)
class Rate:
    """A measured throughput: ``samples_per_s`` ± ``ci`` (relative half-width, 95%)."""

    samples_per_s: float
    ci: float | None
    samples: int
    seconds: float
    blocks: int
    converged: bool
    block_times: tuple[tuple[float, float, float], ...] = ()
    """(start, end, samples/s) of each block, on the caller's clock: a timeline."""

    @property
    def confidence(self) -> str:
        if self.ci is None:
            return "too few measurements for an interval"
        sure = "" if self.converged else " (budget ran out before ±5%)"
        return f"±{self.ci:.0%}{sure}"


class RateMeter:
    """Feed it ``add(time, samples)`` as each item completes; ask ``converged`` and ``rate()``."""

    def __init__(
        self,
        *,
        warmup_items: int = 3,
        warmup_s: float = 0.5,
        block_s: float = 0.2,
        target: float = 0.05,
        min_blocks: int = 5,
    ) -> None:
        self.warmup_items = warmup_items
        self.warmup_s = warmup_s
        self.block_s = block_s
        self.target = target
        self.min_blocks = min_blocks
        self.first: float | None = None
        self.seen = 0
        self.start: float | None = None
        self.block_start = 0.0
        self.block_samples = 0
        self.block_rates: list[float] = []
        self.block_times: list[tuple[float, float, float]] = []
        self.total_samples = 0
        self.last = 0.0
        self.rough_samples = 0
        self.rough_last = 0.0

    def add(self, now: float, samples: int) -> None:
        self.seen += 1
        if self.first is None:
            self.first = now
        else:
            self.rough_samples += samples
            self.rough_last = now
        if self.start is None:
            if self.seen >= self.warmup_items and now - self.first >= self.warmup_s:
                self.start = self.block_start = self.last = now
            return
        self.block_samples += samples
        self.total_samples += samples
        self.last = now
        if now - self.block_start >= self.block_s:
            rate = self.block_samples / (now - self.block_start)
            self.block_rates.append(rate)
            self.block_times.append((self.block_start, now, rate))
            self.block_start, self.block_samples = now, 0

    @property
    def warmed_up(self) -> bool:
        return self.start is not None

    def relative_ci(self) -> float | None:
        return mean_ci(self.block_rates)

    @property
    def converged(self) -> bool:
        ci = self.relative_ci()
        return len(self.block_rates) >= self.min_blocks and ci is not None and ci <= self.target

    def rate(self) -> Rate | None:
        """The estimate so far. Before the warm-up is over (a very slow source within a short
        budget), a rough rate over every item but the first, without an interval; ``None``
        when fewer than two items completed."""
        if self.start is None or self.total_samples == 0 or self.last <= self.start:
            if self.first is None or self.rough_samples == 0 or self.rough_last <= self.first:
                return None
            seconds = self.rough_last - self.first
            return Rate(self.rough_samples / seconds, None, self.rough_samples, seconds, 0, False)
        seconds = self.last - self.start
        return Rate(
            samples_per_s=self.total_samples / seconds,
            ci=self.relative_ci(),
            samples=self.total_samples,
            seconds=seconds,
            blocks=len(self.block_rates),
            converged=self.converged,
            block_times=tuple(self.block_times),
        )
