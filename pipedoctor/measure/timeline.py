"""Time series for the report's timelines, bounded in size, in seconds from the run's start.

A report is plain data that a browser must draw, so every series is averaged into at most
``max_points`` equal time bins. Where readings stop for a while, a ``None`` marks the gap, so a
chart shows where a sampler lost its device (NVML failing halfway) instead of a line across it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

MAX_POINTS = 240
"""Bins per series: finer than a chart a few hundred pixels wide can show."""


def binned(
    points: Sequence[tuple[float, Sequence[float]]], origin: float, max_points: int = MAX_POINTS
) -> tuple[list[float], list[list[float | None]]]:
    """``points`` (time, one value per channel) as times and each channel's values, averaged
    into at most ``max_points`` equal time bins when there are more readings than that.

    Times are seconds after ``origin``. Where readings stop for a while (more than three times
    the usual spacing: a sampler that lost its device), a ``None`` in every channel marks the
    gap, so a chart does not draw a line across it.
    """
    if not points:
        return [], []
    channels = max(len(values) for _, values in points)
    if len(points) <= max_points:
        rows = [(t, [values[c] if c < len(values) else None for c in range(channels)])
                for t, values in points]  # fmt: skip
    else:
        rows = _bins(points, channels, max_points)
    rows = _with_gaps(rows, channels)
    times = [round(t - origin, 2) for t, _ in rows]
    means = [[None if v[c] is None else round(v[c], 1) for _, v in rows] for c in range(channels)]
    return times, means


def _bins(
    points: Sequence[tuple[float, Sequence[float]]], channels: int, count: int
) -> list[tuple[float, list[float | None]]]:
    first, last = points[0][0], points[-1][0]
    width = (last - first) / count if last > first else 1.0
    sums = [[0.0] * channels for _ in range(count)]
    counts = [[0] * channels for _ in range(count)]
    for t, values in points:
        slot = min(count - 1, int((t - first) / width))
        for channel, value in enumerate(values):
            if value is not None:
                sums[slot][channel] += value
                counts[slot][channel] += 1
    return [
        (first + (slot + 0.5) * width,
         [s / n if n else None for s, n in zip(sums[slot], counts[slot], strict=True)])
        for slot in range(count)
        if any(counts[slot])
    ]  # fmt: skip


def _with_gaps(
    rows: list[tuple[float, list[float | None]]], channels: int
) -> list[tuple[float, list[float | None]]]:
    if len(rows) < 3:
        return rows
    steps = sorted(b[0] - a[0] for a, b in zip(rows, rows[1:], strict=False))
    usual = steps[len(steps) // 2]
    out = [rows[0]]
    for before, row in zip(rows, rows[1:], strict=False):
        if usual > 0 and row[0] - before[0] > 3 * usual:
            out.append(((before[0] + row[0]) / 2, [None] * channels))
        out.append(row)
    return out


def host_series(samples: Sequence[Any], origin: float, max_points: int = MAX_POINTS) -> dict:
    """Busy % of every core over time, from :class:`~pipedoctor.measure.samplers.HostSample`."""
    times, cores = binned([(s.t, s.per_core_percent) for s in samples], origin, max_points)
    return {"t": times, "per_core": cores} if times else {}


def gpu_series(
    samples: Sequence[Any], names: dict[int, str], origin: float, max_points: int = MAX_POINTS
) -> list[dict[str, Any]]:
    """Each GPU's utilisation % and memory used (MiB) over time, from ``GpuSample`` readings."""
    by_index: dict[int, list[tuple[float, tuple[float, float]]]] = {}
    for s in samples:
        mib = s.memory_used_bytes / (1024 * 1024)
        by_index.setdefault(s.index, []).append((s.t, (s.utilization_gpu, mib)))
    series = []
    for index in sorted(by_index):
        times, (util, memory) = binned(by_index[index], origin, max_points)
        series.append(
            {
                "index": index,
                "name": names.get(index, f"GPU {index}"),
                "t": times,
                "utilization": util,
                "memory_used_mb": memory,
            }
        )
    return series


@dataclass
class Segment:
    phase: str
    t0: float
    t1: float
    samples: int = 0
    rated: bool = True
    """False for stretches that process no samples (start-up, stalls)."""

    def to_dict(self) -> dict[str, Any]:
        span = self.t1 - self.t0
        rate = round(self.samples / span, 1) if self.rated and span > 0 else None
        return {
            "phase": self.phase,
            "t0": round(self.t0, 3),
            "t1": round(self.t1, 3),
            "samples_per_s": rate,
        }


@dataclass
class PhaseTimeline:
    """Throughput per phase over time, as segments of at least ``resolution`` seconds.

    Consecutive stretches of one phase merge into one segment until it is ``resolution`` long;
    past ``max_segments`` neighbours of the same phase merge pairwise and the resolution
    doubles, so a run of days keeps a bounded timeline.
    """

    origin: float
    resolution: float = 0.5
    max_segments: int = 400
    segments: list[Segment] = field(default_factory=list)

    def add(self, phase: str, start: float, end: float, samples: int | None) -> None:
        """A stretch of ``phase`` that processed ``samples`` (None: no rate, e.g. a stall)."""
        t0, t1 = start - self.origin, end - self.origin
        rated = samples is not None
        last = self.segments[-1] if self.segments else None
        if (
            last is not None
            and last.phase == phase
            and last.rated == rated
            and last.t1 - last.t0 < self.resolution
        ):
            last.t1 = t1
            last.samples += samples or 0
            return
        self.segments.append(Segment(phase, t0, t1, samples or 0, rated))
        if len(self.segments) > self.max_segments:
            self._coarsen()

    def _coarsen(self) -> None:
        self.resolution *= 2
        merged: list[Segment] = []
        for segment in self.segments:
            last = merged[-1] if merged else None
            if (
                last is not None
                and last.phase == segment.phase
                and last.rated == segment.rated
                and last.t1 - last.t0 < self.resolution
            ):
                last.t1 = segment.t1
                last.samples += segment.samples
            else:
                merged.append(segment)
        self.segments = merged

    def to_list(self) -> list[dict[str, Any]]:
        return [segment.to_dict() for segment in self.segments]


def phases_from_rates(rates: dict[str, Any], origin: float) -> list[dict[str, Any]]:
    """Segments from measured phases (``check``): each ``Rate`` with its blocks' times."""
    segments = []
    for phase, rate in rates.items():
        for t0, t1, samples_per_s in getattr(rate, "block_times", None) or ():
            segments.append(
                {
                    "phase": phase,
                    "t0": round(t0 - origin, 3),
                    "t1": round(t1 - origin, 3),
                    "samples_per_s": round(samples_per_s, 1),
                }
            )
    return sorted(segments, key=lambda s: s["t0"])
