"""A profile on disk (one host's or several hosts') to the check's measurements dict.

It reads what the TensorFlow profiler wrote under ``LOGDIR/plugins/profile/RUN/HOST.xplane.pb``
(the Keras TensorBoard callback, ``tf.profiler.experimental.start/stop``, or ``pipedoctor check
--profile``), with xprof's own converters for the step breakdown and the overview page, and the
host trace for what they leave out: steps where Keras 3 wrote no marker xprof knows, the
tf.data iterators per stage, and each accelerator's busy time.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipedoctor.pipeline import Pipeline
from pipedoctor.profile import converters, iterators, timeline
from pipedoctor.profile.xspace import DEVICE_PLANE_PREFIX, HOST_PLANE, ProfileError, load, planes

SUFFIX = ".xplane.pb"
LEGACY = {
    "*.trace.json.gz": "a trace.json.gz from TensorFlow 2.1 or older",
    "*.xplane.riegeli": "an xplane.riegeli, a format newer than this version of pipedoctor reads",
    "local.trace": "a TensorFlow 1.x local.trace",
}


def open_command(logdir: Path) -> str:
    """The one command that shows the profile in TensorBoard's Profile tab."""
    return f"tensorboard --logdir {_quoted(str(logdir))}"


def _quoted(text: str) -> str:
    import shlex

    return shlex.quote(text)


@dataclass
class HostProfile:
    """What one host's profile says, before it is put into measurements."""

    host: str
    path: Path
    run: str
    summary: dict[str, Any]
    devices: list[dict[str, Any]] = field(default_factory=list)
    stages: list[iterators.IteratorStage] = field(default_factory=list)
    window_ps: int | None = None
    pipeline: Pipeline | None = None
    logdir: Path | None = None
    """The log directory it was found under, as given."""
    notes: list[str] = field(default_factory=list)


def find_profiles(logdir: Path) -> tuple[list[Path], list[str]]:
    """The host files of the newest run under ``logdir`` (a log directory, a run directory or
    one ``.xplane.pb``), and notes; a :class:`ProfileError` when there is none to read."""
    if logdir.is_file():
        if not logdir.name.endswith(SUFFIX):
            raise ProfileError(f"{logdir}: not a profile (expected a {SUFFIX} file or a folder)")
        return [logdir], []
    if not logdir.is_dir():
        raise ProfileError(f"{logdir}: no such file or folder")
    found = sorted(logdir.rglob(f"*{SUFFIX}"))
    if not found:
        for pattern, what in LEGACY.items():
            if next(logdir.rglob(pattern), None) is not None:
                raise ProfileError(
                    f"{logdir}: holds {what}, from a profiler version pipedoctor cannot read; "
                    "capture again with TensorFlow 2.2 or later"
                )
        raise ProfileError(
            f"{logdir}: no profiles here (no plugins/profile/*/*{SUFFIX}); capture one with "
            "`pipedoctor check --profile DIR` or the Keras TensorBoard callback's profile_batch"
        )
    runs: dict[Path, list[Path]] = {}
    for path in found:
        runs.setdefault(path.parent, []).append(path)
    newest = max(runs, key=lambda run: (run.name, max(p.stat().st_mtime for p in runs[run])))
    notes = []
    if len(runs) > 1:
        notes.append(f"{logdir} holds {len(runs)} profiles; read the newest ({newest.name})")
    return runs[newest], notes


def read_host(path: Path) -> HostProfile:
    """One host's profile: steps and input wait, iterators, devices, xprof's own figures."""
    space = load(path)
    found = planes(space)
    host = timeline.host_plane(found)
    if host is None:
        names = ", ".join(sorted({p.name for p in found})) or "none"
        if not any(p.name.startswith(DEVICE_PLANE_PREFIX) for p in found):
            raise ProfileError(
                f"{path}: written by a profiler version pipedoctor does not know: it has no "
                f"{HOST_PLANE} plane (planes: {names})"
            )
    name = (list(space.hostnames) or [path.name.removesuffix(SUFFIX)])[0]
    notes: list[str] = []
    tools = converters.tool_data(path)
    if tools.get("input_pipeline_analyzer") is None:
        notes.append(f"{path.name}: xprof could not convert this profile; read from the trace only")
    breakdown = converters.step_breakdown(tools)
    summary: dict[str, Any] = {"host": name, "run_dir": str(path.parent), "run": path.parent.name}
    overview = {k: v for k, v in converters.overview(tools).items() if v not in (None, "")}
    if overview:
        summary["xprof_overview"] = overview
    if host is not None:
        line = timeline.host_timeline(host)
        window = line.steps.window()
        summary.update(_wait_summary(line, breakdown))
        stages = iterators.iterator_stages(host, window)
        waits = timeline.union(timeline.get_next_spans(host))
        devices = timeline.device_activity(found, window, waits)
        _replicas_onto(devices, line.replica_waits)
        result = HostProfile(name, path, path.parent.name, summary, devices, stages, notes=notes)
        result.window_ps = (window[1] - window[0]) if window else None
        result.pipeline = iterators.as_pipeline(stages)
        return result
    devices = timeline.device_activity(found, None, [])
    return HostProfile(name, path, path.parent.name, summary, devices, notes=notes)


def _wait_summary(line: timeline.HostTimeline, breakdown: converters.StepBreakdown) -> dict:
    """The host's steps and input wait: xprof's figures where it measured steps (the figures
    TensorBoard shows), the trace's own where it found none."""
    steps = line.steps
    entry: dict[str, Any] = {"steps_from": steps.source}
    if breakdown.step_ms:
        entry.update(
            steps=len(breakdown.step_ms),
            step_ms=round(statistics.median(breakdown.step_ms), 3),
            input_wait_fraction=round(breakdown.input_wait_fraction or 0.0, 4),
            input_wait_from="xprof input_pipeline_analyzer",
        )  # fmt: skip
    elif steps.spans:
        entry.update(
            steps=len(steps.spans),
            step_ms=round(steps.median_ms() or 0.0, 3),
            input_wait_fraction=line.wait_fraction,
            input_wait_from=f"GetNext time within {steps.source}",
        )  # fmt: skip
    else:
        entry.update(steps=0, step_ms=None, input_wait_fraction=None)
    if line.wait_fraction is not None:
        entry["trace_input_wait_fraction"] = line.wait_fraction
    if breakdown.conclusion:
        entry["xprof_conclusion"] = breakdown.conclusion
    if breakdown.hardware:
        entry["hardware"] = breakdown.hardware
    if steps.function:
        entry["training_function"] = steps.function
    return entry


def _replicas_onto(devices: list[dict[str, Any]], replicas: list[dict[str, Any]]) -> None:
    """Each replica's input wait, onto its accelerator (replica i on the i-th device plane), or
    as entries of their own on a host without accelerator planes (logical CPU devices)."""
    for replica in replicas:
        index = replica["replica"]
        if index < len(devices):
            devices[index]["input_wait_fraction"] = replica["input_wait_fraction"]
        else:
            devices.append({"device": f"replica {index}", **replica})


def _worker_names(hosts: list[HostProfile]) -> list[str]:
    """Host names, made unique by their run's log directory where two hosts share one."""
    names = [h.host for h in hosts]
    if len(set(names)) == len(names):
        return names
    return [f"{h.host} ({(h.logdir or h.path.parent).name})" for h in hosts]


def read_measurements(logdirs: list[Path]) -> tuple[dict[str, Any], list[str], list[Pipeline]]:
    """Measurements, notes and the pipelines the profiles show, for one or more log
    directories (one host each, or a run with every host's file)."""
    hosts: list[HostProfile] = []
    notes: list[str] = []
    for logdir in logdirs:
        try:
            paths, found_notes = find_profiles(logdir)
        except OSError as exc:
            raise ProfileError(f"{logdir}: cannot read: {exc.strerror or exc}") from None
        notes += found_notes
        for path in paths:
            hosts.append(read_host(path))
            hosts[-1].logdir = logdir
    for host in hosts:
        notes += host.notes
    names = _worker_names(hosts)
    summaries = [{"worker": n, **h.summary} for n, h in zip(names, hosts, strict=True)]
    devices = [{"worker": n, **d} for n, h in zip(names, hosts, strict=True) for d in h.devices]
    section: dict[str, Any] = {
        "logdirs": [str(p) for p in logdirs],
        "hosts": summaries,
        "devices": devices,
        "command": open_command(logdirs[0]),
    }
    measured = [s for s in summaries if s.get("input_wait_fraction") is not None and s["steps"]]
    measurements: dict[str, Any] = {"profile": section}
    if measured:
        weights = [s["steps"] * s["step_ms"] for s in measured]
        wait = sum(w * s["input_wait_fraction"] for w, s in zip(weights, measured, strict=True))
        measurements["input_wait_fraction"] = round(wait / sum(weights), 4)
        section["input_wait_fraction"] = measurements["input_wait_fraction"]
    else:
        notes.append("the profile holds no training steps: no input-wait share, so no verdict")
    stages = []
    for name, host in zip(names, hosts, strict=True):
        for stage in iterators.pipeline_stages(host.stages):
            stages.append({"worker": name, **stage.summary(host.window_ps)})
        slow = iterators.slowest(host.stages)
        if slow is not None and "slowest_stage" not in section:
            section["slowest_stage"] = {"worker": name, **slow.summary(host.window_ps)}
    section["iterators"] = stages
    if len(measured) > 1:
        measurements["per_worker"] = [
            {key: s.get(key) for key in ("worker", "step_ms", "input_wait_fraction", "steps")}
            for s in measured
        ]
    pipelines = [h.pipeline for h in hosts[:1] if h.pipeline is not None]
    return measurements, notes, pipelines


def agreement(measurements: dict[str, Any], verdict: str | None, params: Any = None) -> list[str]:
    """Set ``profile.agrees``: does the profile's input-wait share give the verdict the
    throughputs gave? A disagreement is a note, never hidden. The wait share cannot tell a
    ``balanced`` job from the others, so it is not compared there."""
    from pipedoctor import diagnosis

    section = measurements.get("profile")
    if not isinstance(section, dict) or measurements.get("input_wait_fraction") is None:
        return []
    if not all(measurements.get(f"{k}_samples_per_s") for k in ("pipeline", "ceiling", "training")):
        return []  # the verdict came from the wait share itself
    limits = diagnosis.thresholds(params)
    from_wait = diagnosis.wait_verdict(measurements, limits)
    section["verdict_from_input_wait"] = from_wait
    if verdict not in (diagnosis.INPUT_BOUND, diagnosis.COMPUTE_BOUND):
        section["agrees"] = None
        return []
    section["agrees"] = from_wait == verdict
    if section["agrees"]:
        return []
    wait = measurements["input_wait_fraction"]
    return [
        f"the profile disagrees with the verdict: in the profiled steps training waited for "
        f"input {wait:.0%} of its step time, which reads as {from_wait} (from "
        f"{diagnosis.wait_limit(limits):.0%}), while the measured throughputs say {verdict}"
    ]


def attach_sources(measurements: dict[str, Any]) -> None:
    """Each profiled iterator gets the source line of the pipeline stage it runs, where the
    graph doctor found one: the stages are matched by kind, source first."""
    section = measurements.get("profile")
    graph = [s for s in measurements.get("stages") or [] if isinstance(s, dict)]
    if not isinstance(section, dict) or not graph:
        return
    from pipedoctor.graph.ops import OPS

    entries = [e for e in section.get("iterators", []) if "[]" not in e["iterator"]]
    entries.sort(key=lambda e: -e["iterator"].count("::"))  # the source first
    position = 0
    for entry in entries:
        ops = [OPS.get(op) for op in iterators.ops_of(entry.get("dataset", ""))]
        for index in range(position, len(graph)):
            if graph[index].get("op") in ops:
                if graph[index].get("line"):
                    entry["path"], entry["line"] = graph[index]["path"], graph[index]["line"]
                position = index + 1
                break
    slow = section.get("slowest_stage")
    if isinstance(slow, dict):
        match = next((e for e in entries if e["iterator"] == slow["iterator"]), None)
        if match is not None and "line" in match:
            slow["path"], slow["line"] = match["path"], match["line"]
