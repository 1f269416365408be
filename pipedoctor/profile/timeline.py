"""Steps, input waits and device activity, read from one host's trace.

Where the capture has step markers (``tf.profiler.experimental.Trace(..., step_num=i, _r=1)``,
as ``check --profile`` writes them, or the Keras callback's ``Profiled batch`` spans) each step
is a marker. Keras 3 (TensorFlow backend) with ``tf.profiler.experimental.start/stop`` leaves
none; then each call of the training function on the Python thread starts a step, and the
step runs until the next call. The input wait of a step is the time the iterator's ``GetNext``
blocked inside it (the union over replicas, so two replicas waiting at once count once).
"""

from __future__ import annotations

import re
import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.profile.xspace import DEVICE_PLANE_PREFIX, HOST_PLANE, Event, Plane

GET_NEXT = "IteratorGetNextOp::DoCompute"
KERAS_MARKER = "Profiled batch"
DERIVED_LINES = frozenset(
    {"Steps", "XLA Modules", "XLA Ops", "TensorFlow Ops", "TensorFlow Name Scope", "Source code",
     "Framework Ops", "Framework Name Scope", "Launch Stats", "XLA TraceMe"}
)  # fmt: skip
"""Lines xprof derives from the others: counting them would count the same time twice."""

Span = tuple[int, int]


@dataclass
class Steps:
    spans: list[Span]
    source: str
    """``step markers``, ``Keras step markers`` or ``training-function calls``."""
    function: str | None = None

    def window(self) -> Span | None:
        return (self.spans[0][0], self.spans[-1][1]) if self.spans else None

    def median_ms(self) -> float | None:
        return statistics.median((b - a) / 1e9 for a, b in self.spans) if self.spans else None


@dataclass
class HostTimeline:
    steps: Steps
    wait_fraction: float | None
    replica_waits: list[dict[str, Any]] = field(default_factory=list)


def union(spans: Iterable[Span]) -> list[Span]:
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [(a, b) for a, b in merged]


def overlap(spans: list[Span], window: Span) -> int:
    """Picoseconds of the (merged, sorted) ``spans`` inside ``window``."""
    lo, hi = window
    return sum(max(0, min(b, hi) - max(a, lo)) for a, b in spans if b > lo and a < hi)


def host_plane(planes: list[Plane]) -> Plane | None:
    return next((p for p in planes if p.name == HOST_PLANE), None)


def find_steps(host: Plane) -> Steps:
    """Step markers where there are any, else the training function's calls."""
    marked, keras, calls = [], [], defaultdict(list)
    for line in host.lines():
        for event in host.events(line):
            if "step_num" in event.stats and event.stats.get("_r") == 1:
                marked.append((event.start_ps, event.end_ps))
            elif event.name == KERAS_MARKER and "step_num" in event.stats:
                keras.append((event.start_ps, event.end_ps))
            elif "tf_function_call" in event.stats:
                calls[event.name].append((event.start_ps, event.end_ps))
    if marked:
        return Steps(sorted(marked), "step markers")
    if keras:
        return Steps(sorted(keras), "Keras step markers")
    waits = union(get_next_spans(host))
    if not calls:
        return Steps([], "no steps")
    # The training function is the one the input waits happen in, or failing that the one
    # called most often.
    name = max(calls, key=lambda n: (sum(overlap(waits, s) for s in calls[n]), len(calls[n])))
    starts = sorted(calls[name])
    spans = [(a, starts[i + 1][0]) for i, (a, _) in enumerate(starts[:-1])] + [starts[-1]]
    return Steps(spans, "training-function calls", name)


def get_next_spans(host: Plane, per_iterator: bool = False) -> Any:
    """Spans in which the training loop waited for its iterator's next element: inside the
    training function (Keras 3, on an iterator thread) or eagerly between its calls (a custom
    loop's ``for batch in dataset``, on the Python thread). With ``per_iterator``, grouped by
    the replica's GetNext op (``IteratorGetNext``, ``IteratorGetNext_1``, ... under a
    distribution strategy)."""
    spans: list[Span] = []
    groups: dict[str, list[Span]] = defaultdict(list)
    for line in host.lines():
        pending: list[Event] = []
        for event in host.events(line, (GET_NEXT, "ExecutorState::ProcessAsync::Done")):
            if event.name == GET_NEXT:
                spans.append((event.start_ps, event.end_ps))
                pending.append(event)
            elif pending and event.stats.get("kernel_type") == "IteratorGetNext":
                for waited in pending:
                    groups[str(event.stats.get("name", "IteratorGetNext"))].append(
                        (waited.start_ps, waited.end_ps)
                    )
                pending = []
    return groups if per_iterator else spans


def _replica_index(op_name: str) -> int:
    found = re.search(r"_(\d+)$", op_name)
    return int(found.group(1)) if found else 0


def host_timeline(host: Plane) -> HostTimeline:
    steps = find_steps(host)
    waits = union(get_next_spans(host))
    total = sum(b - a for a, b in steps.spans)
    fraction = sum(overlap(waits, s) for s in steps.spans) / total if total > 0 else None
    replicas = []
    groups = get_next_spans(host, per_iterator=True)
    if len(groups) > 1 and total > 0:
        for op in sorted(groups, key=_replica_index):
            merged = union(groups[op])
            share = sum(overlap(merged, s) for s in steps.spans) / total
            replicas.append({"replica": _replica_index(op), "input_wait_fraction": round(share, 4)})
    return HostTimeline(steps, round(fraction, 4) if fraction is not None else None, replicas)


def device_activity(planes: list[Plane], window: Span | None, waits: list[Span]) -> list[dict]:
    """Per accelerator plane: busy and idle time over the profiled steps (the union of its
    kernels and copies on its stream lines), and how much of its idle time the host spent
    waiting for input."""
    devices = []
    for plane in planes:
        if not plane.name.startswith(DEVICE_PLANE_PREFIX):
            continue
        spans = union(
            (e.start_ps, e.end_ps)
            for line in plane.lines()
            if line.name not in DERIVED_LINES
            for e in plane.events(line)
            if e.duration_ps > 0
        )
        if not spans:
            continue
        lo, hi = window or (spans[0][0], spans[-1][1])
        length = hi - lo
        if length <= 0:
            continue
        busy = overlap(spans, (lo, hi))
        idle_spans = _gaps(spans, (lo, hi))
        starved = sum(overlap(idle_spans, w) for w in waits)
        devices.append({
            "device": plane.name.removeprefix("/"),
            "busy_ms": round(busy / 1e9, 3),
            "idle_ms": round((length - busy) / 1e9, 3),
            "busy_fraction": round(busy / length, 4),
            "idle_waiting_for_input_fraction": round(starved / length, 4),
        })  # fmt: skip
    return devices


def _gaps(spans: list[Span], window: Span) -> list[Span]:
    """The parts of ``window`` that no span covers."""
    gaps, cursor = [], window[0]
    for a, b in spans:
        if a > cursor:
            gaps.append((cursor, min(a, window[1])))
        cursor = max(cursor, b)
        if cursor >= window[1]:
            break
    if cursor < window[1]:
        gaps.append((cursor, window[1]))
    return [g for g in gaps if g[1] > g[0]]
