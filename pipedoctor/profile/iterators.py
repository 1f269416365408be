"""tf.data iterator events, per stage: where the input pipeline's time goes, and the pipeline
itself as the profile shows it running.

Every ``GetNext`` of every tf.data iterator is an event named by its path from the root
(``Iterator::Root::Prefetch::MapAndBatch::TensorSlice``) with the dataset's op name
(``fused(MapDataset:1,BatchDatasetV2:2)``) and its live parameters (``parallelism``,
``autotune``, ``buffer_limit``) as stats. A stage's self time is its events' time less the time
of the child iterators nested in them on the same thread. A prefetch's own time is time spent
waiting for its producer (another thread), so the slowest stage is the one with the largest
self time among the stages that do work.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pipedoctor.graph.ops import OPS
from pipedoctor.pipeline import AUTOTUNE, Files, FunctionFacts, Pipeline, Stage
from pipedoctor.profile.xspace import Plane

PREFIX = "Iterator::"
WAITING = ("Root", "Prefetch", "MemoryCacheImpl", "MemoryWriter", "MemoryReader")
"""Iterators whose own time is spent waiting for others (a buffer, a cache's reader)."""
REPEATS = ("ForeverRepeat", "FiniteRepeat")
"""``ForeverRepeat[3]`` is the fourth epoch of the same input; other ``Kind[i]`` are the
datasets an interleave or flat_map opened for its i-th element."""
READERS = {"TFRecord": "TFRecordDataset", "TextLine": "TextLineDataset",
           "FixedLengthRecord": "FixedLengthRecordDataset"}  # fmt: skip
DISTRIBUTION = ("Rebatch", "LegacyRebatch", "AutoShard")
"""Stages a distribution strategy adds; what it puts after them (a prefetch) is its own."""
INJECTED = "inject/prefetch"
"""The name TensorFlow gives the final prefetch it injects into a pipeline that has none."""
_SEGMENT = re.compile(r"^(?P<kind>[A-Za-z0-9_]+)(?:\[(?P<index>\d+)\])?$")


@dataclass
class IteratorStage:
    path: str
    """Normalised path (``ForeverRepeat[2]`` read as ``ForeverRepeat``)."""
    kind: str
    dataset: str = ""
    """The dataset op's name, e.g. ``fused(MapDataset:1,BatchDatasetV2:2)``."""
    params: dict[str, Any] = field(default_factory=dict)
    calls: int = 0
    wall_ps: int = 0
    self_ps: int = 0
    element: bool = False
    """A dataset an interleave/flat_map opened per element, not a stage of the main chain."""

    def summary(self, window_ps: int | None) -> dict[str, Any]:
        entry = {
            "iterator": self.path, "stage": self.kind, "dataset": self.dataset,
            "calls": self.calls, "wall_ms": round(self.wall_ps / 1e9, 3),
            "self_ms": round(self.self_ps / 1e9, 3),
        }  # fmt: skip
        if window_ps:
            entry["self_fraction"] = round(self.self_ps / window_ps, 4)
        return entry


def _normalise(name: str) -> tuple[str, bool]:
    """The path with epoch indices removed (``Kind[]`` kept for an element dataset's parent),
    and whether the iterator runs inside an element dataset."""
    segments = name.removeprefix(PREFIX).split("::")
    parts, element = [], False
    for i, segment in enumerate(segments):
        match = _SEGMENT.match(segment)
        if match is None:
            return name, element
        kind, index = match.group("kind"), match.group("index")
        opens_element = index is not None and kind not in REPEATS
        element = element or (opens_element and i < len(segments) - 1)
        parts.append(f"{kind}[]" if opens_element else kind)
    return "::".join(parts), element


def iterator_stages(host: Plane, window: tuple[int, int] | None) -> list[IteratorStage]:
    """Every iterator's calls, wall and self time (inside ``window`` when given)."""
    stages: dict[str, IteratorStage] = {}
    for line in host.lines():
        stack: list[tuple[int, str]] = []  # (end, path) of the enclosing iterator events
        for event in host.events(line, (PREFIX,)):
            if window and not (window[0] <= event.start_ps < window[1]):
                continue
            path, element = _normalise(event.name)
            stage = stages.get(path)
            if stage is None:
                kind = path.rsplit("::", 1)[-1].removesuffix("[]")
                stage = stages[path] = IteratorStage(path, kind, element=element)
            if event.stats.get("name") not in (None, "device_prefetch") or not stage.dataset:
                stage.dataset = str(event.stats.get("name", ""))
            stage.params = {k: v for k, v in event.stats.items() if k not in ("id", "parent_id")}
            stage.calls += 1
            stage.wall_ps += event.duration_ps
            stage.self_ps += event.duration_ps
            while stack and stack[-1][0] <= event.start_ps:
                stack.pop()
            if stack:
                stages[stack[-1][1]].self_ps -= event.duration_ps
            stack.append((event.end_ps, path))
    return sorted(stages.values(), key=lambda s: s.path.count("::"))


def slowest(stages: list[IteratorStage]) -> IteratorStage | None:
    """The stage of the training pipeline whose own work takes longest."""
    working = [s for s in pipeline_stages(stages) if s.kind not in WAITING and s.self_ps > 0]
    return max(working, key=lambda s: s.self_ps, default=None)


def pipeline_stages(stages: list[IteratorStage]) -> list[IteratorStage]:
    """The main chain, and the datasets its interleaves and flat_maps open per element."""
    chain = main_chain(stages)
    opened = tuple(s.path + "[]" for s in chain)
    return chain + [s for s in stages if s.element and s.path.startswith(opened)]


def ops_of(dataset: str) -> list[str]:
    """``fused(MapDataset:1,BatchDatasetV2:2)`` -> ``["MapDataset", "BatchDatasetV2"]``."""
    inner = dataset[len("fused(") : -1] if dataset.startswith("fused(") else dataset
    return [part.split(":")[0].strip() for part in inner.split(",") if part.strip()]


def _true(value: Any) -> bool:
    return str(value).lower() == "true"


def main_chain(stages: list[IteratorStage]) -> list[IteratorStage]:
    """From the root down, each time into the busiest child: the pipeline training reads
    (a profile may hold other iterators too, an evaluation set's for one)."""
    by_path = {s.path: s for s in stages if not s.element}
    chain, current = [], "Root"
    while True:
        children = [
            s for p, s in by_path.items() if p.startswith(current + "::") and "::" not in
            p[len(current) + 2 :]
        ]  # fmt: skip
        if not children:
            return chain
        best = max(children, key=lambda s: (_depth(by_path, s.path), s.wall_ps))
        chain.append(best)
        current = best.path


def _depth(by_path: dict[str, IteratorStage], path: str) -> int:
    """How many stages lie below ``path`` on its longest branch."""
    return max((p.count("::") for p in by_path if p.startswith(path + "::")), default=0)


def _prefetch(stage: IteratorStage) -> Stage | None:
    if stage.dataset == "device_prefetch":
        return None  # a distribution strategy's own per-device buffer
    tuned, buffer = _true(stage.params.get("autotune")), stage.params.get("buffer_limit")
    fixed = not tuned and isinstance(buffer, int) and not stage.dataset.startswith(INJECTED)
    return Stage("prefetch", {"buffer_size": buffer if fixed else AUTOTUNE})


def _model_stage(stage: IteratorStage, op: str, name: str, reader: str | None) -> Stage:
    params: dict[str, Any] = {}
    parallel = stage.params.get("parallelism")
    if name in ("map", "interleave") or op == "ParallelBatchDataset":
        if _true(stage.params.get("autotune")):
            params["num_parallel_calls"] = AUTOTUNE
        elif isinstance(parallel, int) and (parallel > 1 or op.startswith(("Parallel", "Legacy"))):
            params["num_parallel_calls"] = parallel
    for key in ("batch_size", "buffer_size", "cycle_length"):
        if isinstance(stage.params.get(key), int) and name in ("batch", "shuffle", "interleave"):
            params[key] = stage.params[key]
    fn = FunctionFacts(known=False, reader=reader) if name in ("interleave", "flat_map") else None
    return Stage(name, params, fn)


def as_pipeline(stages: list[IteratorStage]) -> Pipeline | None:
    """The main chain, source first, as the pipeline model the PD1xx rules read, with the
    parameters it ran with. A map TensorFlow parallelised by itself reads as parallel (its
    ``autotune``), and the prefetch TensorFlow injects counts as a prefetch, so no rule asks
    for what already happens."""
    readers = {
        s.path.split("[]")[0]: READERS[s.kind] for s in stages if s.element and s.kind in READERS
    }
    model: list[Stage] = []
    distributed = False
    for stage in reversed(main_chain(stages)):  # the source first
        distributed = distributed or stage.kind in DISTRIBUTION
        if stage.kind in READERS:
            model.append(Stage(READERS[stage.kind], {"filenames": Files(1)}))
        elif stage.kind == "Prefetch" and distributed:
            model.append(Stage("prefetch", {"buffer_size": AUTOTUNE}))  # the strategy's own
        elif stage.kind == "Prefetch":
            if (found := _prefetch(stage)) is not None:
                model.append(found)
        else:
            for op in ops_of(stage.dataset) or [stage.kind]:
                if (name := OPS.get(op)) is not None:
                    model.append(_model_stage(stage, op, name, readers.get(stage.path)))
    return Pipeline(tuple(model), sink="fit") if model else None
