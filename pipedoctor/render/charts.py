"""Inline SVG charts for the HTML report: timelines and bars, with no script and no network.

Each function returns one ``<svg>`` element as text, sized by its ``viewBox`` so it scales to
the page or notebook cell. Text taken from the report (GPU names, stage names) is escaped;
numbers are formatted here. Points that are ``None`` break a line instead of bridging a gap.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any

from pipedoctor.render import Span

WIDTH, HEIGHT = 640, 150
LEFT, RIGHT, TOP, BOTTOM = 52, 12, 10, 22
PALETTE = ("#1c7ed6", "#e8590c", "#2f9e44", "#7048e8", "#d6336c", "#0c8599", "#f08c00", "#5c940d")
PHASE_COLORS = {
    "train": "#1c7ed6",
    "training": "#1c7ed6",
    "eval": "#2f9e44",
    "ceiling": "#2f9e44",
    "pipeline": "#e8590c",
    "outside steps": "#e03131",
    "monitor": "#fab005",
    "startup": "#868e96",
}


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _num(value: float) -> str:
    """Compact axis labels: ``950``, ``12k``, ``1.5M``."""
    if value >= 1e6:
        return f"{value / 1e6:.1f}M"
    if value >= 1e4:
        return f"{value / 1e3:.0f}k"
    if value >= 1e3:
        return f"{value / 1e3:.1f}k"
    if value == 0:
        return "0"
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}"


def nice_step(span: float, ticks: int = 6) -> float:
    """A round tick spacing (1, 2 or 5 times a power of ten) giving at most about ``ticks``."""
    if span <= 0:
        return 1.0
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    return next(f * power for f in (1, 2, 5, 10) if raw <= f * power)


class Frame:
    """The plot area of one chart: maps seconds and values to SVG coordinates."""

    def __init__(self, t_max: float, y_max: float, height: int = HEIGHT) -> None:
        self.t_max = t_max if t_max > 0 else 1.0
        self.y_max = y_max if y_max > 0 else 1.0
        self.height = height

    def x(self, t: float) -> float:
        return LEFT + (WIDTH - LEFT - RIGHT) * min(max(t, 0.0), self.t_max) / self.t_max

    def y(self, value: float) -> float:
        inner = self.height - TOP - BOTTOM
        return TOP + inner * (1 - min(max(value, 0.0), self.y_max) / self.y_max)

    def axes(self, y_label: str, x_unit: str = "s") -> list[str]:
        """The time axis (or another, in ``x_unit``) with round ticks, and the top and zero of
        the value axis."""
        bottom = self.height - BOTTOM
        parts = [
            f'<line x1="{LEFT}" y1="{bottom}" x2="{WIDTH - RIGHT}" y2="{bottom}" class="pd-axis"/>',
            f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" class="pd-axis"/>',
            f'<text x="{LEFT - 4}" y="{TOP + 8}" text-anchor="end">{_e(y_label)}</text>',
            f'<text x="{LEFT - 4}" y="{bottom}" text-anchor="end">0</text>',
        ]
        step = nice_step(self.t_max)
        tick = 0.0
        while tick <= self.t_max + 1e-9:
            x = self.x(tick)
            parts.append(f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 3}" '
                         'class="pd-axis"/>')  # fmt: skip
            text = f"{tick:g} s" if x_unit == "s" else f"{_num(tick)} {_e(x_unit)}"
            parts.append(f'<text x="{x:.1f}" y="{bottom + 14}" text-anchor="middle">'
                         f"{text}</text>")  # fmt: skip
            tick += step
        return parts


def _svg(label: str, body: list[str], height: int = HEIGHT) -> str:
    return (
        f'<svg class="pd-chart" viewBox="0 0 {WIDTH} {height}" role="img" '
        f'aria-label="{_e(label)}" preserveAspectRatio="xMinYMin meet">' + "".join(body) + "</svg>"
    )


def phase_chart(segments: Sequence[dict[str, Any]], t_max: float) -> str:
    """Samples/s over time as steps, one color per phase; stretches without samples (start-up,
    stalls) as shaded bands across the whole height."""
    rates = [
        s["samples_per_s"] for s in segments if isinstance(s.get("samples_per_s"), (int, float))
    ]
    frame = Frame(t_max, max(rates, default=1.0) * 1.1)
    body = frame.axes(f"{_num(frame.y_max)}/s")
    bottom = frame.height - BOTTOM
    for segment in segments:
        phase = str(segment.get("phase", ""))
        color = PHASE_COLORS.get(phase, "#868e96")
        x0, x1 = frame.x(segment.get("t0") or 0.0), frame.x(segment.get("t1") or 0.0)
        width = max(x1 - x0, 0.5)
        rate = segment.get("samples_per_s")
        if isinstance(rate, (int, float)):
            y = frame.y(rate)
            tip = f"{phase} {segment.get('t0'):g}-{segment.get('t1'):g} s: {rate:,.0f} samples/s"
            body.append(
                f'<rect x="{x0:.1f}" y="{y:.1f}" width="{width:.1f}" height="{bottom - y:.1f}" '
                f'fill="{color}" fill-opacity="0.75"><title>{_e(tip)}</title></rect>'
            )
        else:
            tip = f"{phase} {segment.get('t0'):g}-{segment.get('t1'):g} s"
            body.append(
                f'<rect x="{x0:.1f}" y="{TOP}" width="{width:.1f}" height="{bottom - TOP}" '
                f'fill="{color}" fill-opacity="0.18"><title>{_e(tip)}</title></rect>'
            )
    return _svg("throughput by phase over time", body)


def legend(items: Sequence[tuple[str, str]]) -> str:
    """Colored keys under a chart, as HTML (wraps with the page)."""
    keys = "".join(
        f'<span class="pd-key"><i style="background: {color}"></i>{_e(label)}</span>'
        for label, color in items
    )
    return f'<div class="pd-legend">{keys}</div>'


def _polyline(frame: Frame, times: Sequence[float], values: Sequence[float | None]) -> list[str]:
    """Point lists for ``<polyline>``, one per run of values without a gap."""
    runs, current = [], []
    for t, value in zip(times, values, strict=False):
        if value is None:
            if current:
                runs.append(current)
            current = []
            continue
        current.append(f"{frame.x(t):.1f},{frame.y(value):.1f}")
    if current:
        runs.append(current)
    return [" ".join(run) for run in runs]


def line_chart(
    series: Sequence[tuple[str, Sequence[float], Sequence[float | None]]],
    t_max: float,
    y_max: float,
    y_label: str,
    label: str,
    x_unit: str = "s",
    guide: tuple[float, str] | None = None,
) -> str:
    """One line per ``(name, times, values)``, colored from the palette in order; the x axis
    is time unless ``x_unit`` names another quantity; ``guide`` is a value drawn across the
    chart as a dashed line, with its label (a target)."""
    frame = Frame(t_max, y_max)
    body = frame.axes(y_label, x_unit)
    if guide is not None:
        y = frame.y(guide[0])
        body.append(
            f'<line x1="{LEFT}" y1="{y:.1f}" x2="{WIDTH - RIGHT}" y2="{y:.1f}" stroke="#868e96" '
            f'stroke-dasharray="4 3"/><text x="{WIDTH - RIGHT}" y="{y - 3:.1f}" '
            f'text-anchor="end">{_e(guide[1])}</text>'
        )
    for position, (name, times, values) in enumerate(series):
        color = PALETTE[position % len(PALETTE)]
        for points in _polyline(frame, times, values):
            if " " not in points:  # a single reading: a dot
                x, y = points.split(",")
                body.append(f'<circle cx="{x}" cy="{y}" r="2" fill="{color}"/>')
                continue
            body.append(
                f'<polyline points="{points}" fill="none" stroke="{color}" stroke-width="1.5">'
                f"<title>{_e(name)}</title></polyline>"
            )
    return _svg(label, body)


def heatmap(times: Sequence[float], rows: Sequence[Sequence[float | None]], t_max: float) -> str:
    """Busy % of each core over time: one row per core, darker is busier."""
    cores = len(rows)
    row_h = max(3.0, min(14.0, 110.0 / max(cores, 1)))
    height = int(TOP + row_h * cores + BOTTOM)
    frame = Frame(t_max, 100.0, height)
    body = frame.axes("")[:2] + frame.axes("")[4:]  # no value labels: the rows are cores
    widths = _cell_widths(frame, times)
    for core, row in enumerate(rows):
        y = TOP + core * row_h
        cells = []
        for (x, w), value in zip(widths, row, strict=False):
            if value is None:
                continue
            cells.append(
                f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{row_h - 0.5:.1f}" '
                f'fill="#1c7ed6" fill-opacity="{0.05 + 0.95 * min(value, 100.0) / 100:.2f}"/>'
            )
        mean = [v for v in row if v is not None]
        tip = (
            f"core {core}: {sum(mean) / len(mean):.0f}% busy on average" if mean else f"core {core}"
        )
        body.append(f"<g><title>{_e(tip)}</title>{''.join(cells)}</g>")
        if cores <= 16:
            body.append(
                f'<text x="{LEFT - 4}" y="{y + row_h - 1:.1f}" text-anchor="end">{core}</text>'
            )
    return _svg("host CPU busy per core over time", body, height)


def _cell_widths(frame: Frame, times: Sequence[float]) -> list[tuple[float, float]]:
    """Each bin's left edge and width, from the bin centres."""
    if not times:
        return []
    if len(times) == 1:
        return [(frame.x(0.0), frame.x(frame.t_max) - frame.x(0.0))]
    half = (times[1] - times[0]) / 2
    return [(frame.x(t - half), max(frame.x(t + half) - frame.x(t - half), 0.5)) for t in times]


def stage_bars(stages: Sequence[dict[str, Any]]) -> str:
    """Per-stage samples/s as horizontal bars, the limiting stage in the warning color. Narrower
    than the timelines: it sits in a column beside the findings."""
    rated = [s for s in stages if isinstance(s.get("samples_per_s"), (int, float))]
    if not rated:
        return ""
    top = max(s["samples_per_s"] for s in rated) or 1.0
    width, row_h, label_w = 360, 18, 110
    height = len(rated) * row_h + 6
    body = []
    for position, stage in enumerate(rated):
        y = 3 + position * row_h
        rate = stage["samples_per_s"]
        bar = max(1.0, (width - label_w - 56) * rate / top)
        color = "#e8590c" if stage.get("limiting") else "#868e96"
        name = str(stage.get("op") or stage.get("name") or "?")
        place = Span(str(stage.get("path")), stage.get("line")).label(column=False)
        where = f" ({place})" if stage.get("line") else ""
        body.append(
            f'<text x="{label_w - 6}" y="{y + 12}" text-anchor="end">{_e(name[:18])}</text>'
            f'<rect x="{label_w}" y="{y + 2}" width="{bar:.1f}" height="{row_h - 6}" '
            f'fill="{color}"><title>{_e(name + where)}: {rate:,.0f} samples/s</title></rect>'
            f'<text x="{label_w + bar + 4:.1f}" y="{y + 12}">{_num(rate)}/s</text>'
        )
    return (
        f'<svg class="pd-chart pd-bars" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="per-stage rates" preserveAspectRatio="xMinYMin meet">'
        + "".join(body)
        + "</svg>"
    )
