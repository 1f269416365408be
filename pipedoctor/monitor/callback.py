"""``Monitor``: a Keras callback that watches the user's real ``fit`` and ends in a ``Report``.

It needs no other change to the training code: add ``callbacks=[Monitor()]``. For the length of
``fit`` it times the train function's calls (``steps.StepClock``), samples the host CPU per
core and every GPU through NVML (``measure.samplers``, once a second by default), prints one
line per epoch and each finding as it first appears, writes a record per worker and
TensorBoard scalars under ``log_dir``, and after ``fit`` leaves ``monitor.report``: the same
:class:`~pipedoctor.report.Report` ``check`` returns, judged by the same rules.

It never changes what the model learns (the same steps run on the same batches), and nothing
it does raises into ``fit``: every failure of its own becomes a note in the report.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import keras

from pipedoctor import diagnosis
from pipedoctor.measure.samplers import (
    GpuReport,
    GpuSampler,
    HostSampler,
    summarize_gpus,
    summarize_host,
    to_measurements,
)
from pipedoctor.measure.timeline import PhaseTimeline, gpu_series, host_series
from pipedoctor.monitor import lines
from pipedoctor.monitor.background import BackgroundWrites
from pipedoctor.monitor.probe import local_dataset, probe
from pipedoctor.monitor.records import (
    FINISHED,
    RUNNING,
    make_record,
    missing_workers,
    read_record,
    record_path,
    worker_summary,
    write_text,
)
from pipedoctor.monitor.scalars import ScalarWriter, epoch_scalars
from pipedoctor.monitor.steps import Call, Sampler, StepClock
from pipedoctor.monitor.tally import RunTally, decisive
from pipedoctor.monitor.worker import Worker, identify
from pipedoctor.report import Finding, Report

MULTI_WORKER_FRACTION = 0.25
"""The share of calls split in a multi-worker job, where the share cannot adapt per worker."""
DRAIN_S = 60.0
"""How long the end of ``fit`` waits for the record and scalars still being written."""
RAISED_DRAIN_S = 5.0
"""The same wait when ``fit`` raised: short, the error is what the user waits for."""
MIN_INTERVAL_S = 1.0
"""NVML and host sampling at most once a second: enough for minutes-long epochs, and cheap."""
OUTSIDE = "outside steps"
"""The timeline's name for time between calls that is neither the Monitor's nor a step's."""
TIMELINE_GAP_S = 0.2
"""A gap between calls shorter than this is Keras's own loop, too short to draw."""


def _brief(exc: BaseException) -> str:
    from pipedoctor.measure.protocol import brief

    return f"{type(exc).__name__}: {brief(exc)}"


class Monitor(keras.callbacks.Callback):
    """Watch a real ``fit``: input-wait share, samples/s, host CPU per core, GPUs, per worker.

    ``log_dir``: where each worker writes its record (``<log_dir>/pipedoctor/<worker>.json``)
    and its TensorBoard scalars; in a multi-worker job, a folder every worker can write to, so
    the chief can compare them. ``verbose=0`` prints nothing. ``interval_s``: seconds between
    host and GPU samples (1 or more). ``split_fraction``: the share of the train function's
    calls split into waiting for input and stepping (default: adapted so the split costs at
    most ``overhead_budget`` of the step time, between 0.5% and 50% of the calls).
    ``select``/``ignore``: rule codes, as for ``check``. ``wait_for_workers_s``: how long the
    chief waits at the end for the other workers' last records. ``probe_s``: in a multi-worker
    job on TensorFlow, how long each worker reads its own pipeline alone after the last epoch,
    so the chief can tell which one is slow (0: not at all). ``print_fn`` receives each line.
    """

    def __init__(
        self,
        log_dir: str | Path | None = None,
        *,
        verbose: int = 1,
        interval_s: float = MIN_INTERVAL_S,
        split_fraction: float | None = None,
        overhead_budget: float = 0.005,
        select: list[str] | None = None,
        ignore: list[str] | None = None,
        wait_for_workers_s: float = 10.0,
        probe_s: float = 3.0,
        max_samples: int = 2048,
        print_fn: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__()
        if interval_s < MIN_INTERVAL_S:
            raise ValueError(f"interval_s must be at least {MIN_INTERVAL_S:g} s, not {interval_s}")
        self.log_dir = None if log_dir is None else str(log_dir)
        self.verbose = verbose
        self.interval_s = interval_s
        Sampler(split_fraction)  # a bad fraction is the caller's error: say so at once
        self.split_fraction, self.overhead_budget = split_fraction, overhead_budget
        self.select, self.ignore = select, ignore
        self.wait_for_workers_s = wait_for_workers_s
        if not probe_s >= 0:
            raise ValueError(f"probe_s must be 0 or more seconds, not {probe_s}")
        self.probe_s = probe_s
        self.max_samples = max_samples
        self.print_fn = print_fn or (lambda line: print(line, flush=True))
        self.report: Report | None = None
        """The run's report, set when ``fit`` ends."""
        self.notes: list[str] = []
        self._reset()

    # --- Keras hooks: each one guarded, so nothing reaches fit ----------------------------------

    def on_train_begin(self, logs: Any = None) -> None:
        self._close_previous()
        self._reset()
        with self._guard("starting"):
            self._start()

    def on_epoch_begin(self, epoch: int, logs: Any = None) -> None:
        with self._guard("at an epoch's start"):
            if self._running:
                self._ensure_wrapped("train")
                self._clock.restart("train")
                self._tally.begin_epoch(epoch + 1, self._now())

    def on_test_begin(self, logs: Any = None) -> None:
        with self._guard("at evaluation's start"):
            if self._running and self._tally.current is not None:
                self._clock.flush()
                self._ensure_wrapped("eval")
                self._clock.restart("eval")
                now = self._now()
                self._tally.current.begin_evaluation(now)
                self._phase_mark = ("eval", now)

    def on_test_end(self, logs: Any = None) -> None:
        with self._guard("at evaluation's end"):
            if self._running and self._tally.current is not None:
                self._clock.flush()
                now = self._now()
                self._tally.current.end_evaluation(now)
                self._unwrap("eval")
                self._phase_mark = None

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        with self._guard("at an epoch's end"):
            if self._running:
                self._epoch_end(logs)

    def on_train_end(self, logs: Any = None) -> None:
        with self._guard("finishing"):
            if self._running:
                self._finish()
        self._close_previous()

    # --- the run ------------------------------------------------------------------------------

    def _reset(self) -> None:
        self._running = False
        self._clock: Any = None
        self._tally: Any = None
        self._gpu: Any = None
        self._host: Any = None
        self._scalars: ScalarWriter | None = None
        self._worker: Worker | None = None
        self._timeline: PhaseTimeline | None = None
        self._phase_mark: tuple[str, float] | None = None
        self._printed: set[str] = set()
        self._findings: list[Finding] = []
        self._wrapped: dict[str, Any] = {}
        self._origin = 0.0
        self._mono_offset = 0.0
        self._last_end: float | None = None
        self._closed_at: float | None = None
        """When the latest epoch closed: the end of the last gap the timeline draws."""
        self._setup: dict[str, Any] = {}
        self._config: Any = None
        self._wait_limit = 0.2
        self._record_failure: str | None = None
        self._writes = BackgroundWrites()
        self.notes = []

    def _now(self) -> float:
        return time.perf_counter()

    def _start(self) -> None:
        backend = keras.backend.backend()
        self._worker = identify(backend)
        if self._worker.note:
            self.notes.append(self._worker.note)
        self._origin = self._now()
        self._mono_offset = self._origin - time.monotonic()
        self._tally = RunTally(self._origin, direct=backend != "jax")
        self._timeline = PhaseTimeline(self._origin)
        fraction = self.split_fraction
        if self._worker.multi and fraction is None:
            # Every worker must split the same calls: a split call runs the step through
            # another traced path, and collectives from different paths would not match up.
            # An adaptive fraction follows each worker's own timings, so it is fixed here
            # (the seed is the same everywhere).
            fraction = MULTI_WORKER_FRACTION
        sampler = Sampler(fraction, budget=self.overhead_budget)
        strategy = getattr(self.model, "distribute_strategy", None)
        self._clock = StepClock(
            self._on_call, self._on_plain_calls, backend, sampler, self._now, strategy
        )
        self._setup = {"backend": backend, **_strategy(self.model, backend), **_model(self.model)}
        self._config = self._load_config()
        self._wait_limit = diagnosis.wait_limit(
            diagnosis.thresholds(self._config.selection.params.get("PD301"))
        )
        self._gpu = GpuSampler(self.interval_s, max_samples=self.max_samples).start()
        self._host = HostSampler(
            self.interval_s, children_every_s=30.0, max_samples=self.max_samples
        ).start()
        if self.log_dir is not None:
            self._scalars = ScalarWriter(self.log_dir, self._worker.name)
        elif self._worker.multi:
            self.notes.append(
                "no log_dir: the workers cannot be compared; give every worker the same "
                "log_dir on a shared filesystem"
            )
        self._running = True
        self._clock.active = True
        self._ensure_wrapped("train")
        if not self._clock.split["train"]:
            self.notes.append(
                "the model's train function is not Keras's own: steps are timed whole, and the "
                "input-wait share is not measured"
            )

    def _ensure_wrapped(self, phase: str) -> None:
        """Wrap the phase's function (again, if Keras made a new one since)."""
        attribute = "train_function" if phase == "train" else "test_function"
        current = getattr(self.model, attribute, None)
        if current is None or current is self._wrapped.get(phase):
            return
        steps = int(getattr(self.model, "steps_per_execution", 1) or 1)
        wrapper = self._clock.wrap(current, phase, steps)
        setattr(self.model, attribute, wrapper)
        self._wrapped[phase] = wrapper

    def _unwrap(self, phase: str) -> None:
        attribute = "train_function" if phase == "train" else "test_function"
        wrapper = self._wrapped.pop(phase, None)
        if wrapper is not None and getattr(self.model, attribute, None) is wrapper:
            setattr(self.model, attribute, wrapper.__pipedoctor_original__)

    def _on_call(self, call: Call) -> None:
        """A call handed on alone: into the tally and the throughput timeline."""
        self._tally.add(call)
        startup = call.index == 0 and not self._timeline.segments
        samples = call.samples
        if samples is None:
            samples = self._samples(call.phase, call.steps)
        self._on_timeline("startup" if startup else call.phase, call.start, call.end,
                          None if startup else samples, call.paused)  # fmt: skip

    def _on_plain_calls(self, phase: str, steps: int, times: Any) -> None:
        """Calls from the clock's fast path, in bulk: ``times`` holds each one's start and end."""
        self._tally.add_plain(phase, steps, times)
        samples = self._samples(phase, steps)
        for i in range(0, len(times), 2):
            self._on_timeline(phase, times[i], times[i + 1], samples)

    def _samples(self, phase: str, steps: int) -> int | None:
        """Samples in a call whose batches were not seen, from the phase's batch size."""
        size = self._tally.batch_size if phase == "train" else self._tally.eval_batch_size
        return None if size is None else size * steps

    def _on_timeline(
        self, phase: str, start: float, end: float, samples: int | None, paused: float = 0.0
    ) -> None:
        """A call on the timeline, after the gap before it: time outside steps (callbacks,
        epoch ends), then the Monitor's own (``paused``: measuring the input floor as an epoch
        or a phase starts). Each is drawn when long enough to see, and they add up as in the
        text, where the Monitor's own time is no stall of the run."""
        self._draw_gap(start, paused)
        self._timeline.add(phase, start, end, samples)
        self._last_end = end

    def _draw_gap(self, until: float, paused: float = 0.0) -> None:
        if self._last_end is None:
            return
        own = max(self._last_end, until - paused)
        for kind, t0, t1 in ((OUTSIDE, self._last_end, own), ("monitor", own, until)):
            if t1 - t0 >= TIMELINE_GAP_S:
                self._timeline.add(kind, t0, t1, None)

    def _epoch_end(self, logs: Any = None) -> None:
        self._clock.flush()
        now = self._now()
        record = self._tally.end_epoch(now)
        if record is None:
            return
        self._closed_at = now
        # For time to a target (``pipedoctor compare``): what Keras logged at this epoch's end,
        # when, and after how many training samples.
        record["wall_s"] = round(now - self._origin, 3)
        record["samples_seen"] = int(self._tally.totals["samples"])
        if metrics := epoch_logs(logs):
            record["logs"] = metrics
        record.update(self._epoch_hardware(record, now))
        measurements = self._measurements(now, final=False)
        self._write(RUNNING, measurements)
        if self._scalars is not None:
            self._writes.submit(
                partial(self._scalars.write, epoch_scalars(record), int(record["epoch"]))
            )
        if self._worker.is_chief and self._worker.multi:
            self._compare_workers(measurements, wait_s=0.0)
        self._say(lines.epoch_line(record, self.params.get("epochs"), self._label()))
        self._live_findings(measurements, record["epoch"], record)

    def _finish(self) -> None:
        now = self._now()
        if self._tally.current is not None:  # stopped inside an epoch (stop_training, steps)
            self._epoch_end()
        if self._closed_at is not None:  # the last epoch's end, as its record counts it
            self._draw_gap(self._closed_at)
        iterator = self._clock.train_iterator
        self._clock.close()
        self._unwrap("train")
        self._unwrap("eval")
        gpu_report, host_report = self._gpu.stop(), self._host.stop()
        measurements = self._measurements(now, final=True, reports=(gpu_report, host_report))
        if self._worker.multi and self._setup["backend"] == "tensorflow" and self.probe_s > 0:
            self._probe(iterator, measurements)
        if self._worker.is_chief and self._worker.multi:
            self._compare_workers(measurements, wait_s=self.wait_for_workers_s)
        self._notes_from_parts()
        if (estimate := measurements.get("input_wait_estimate")) is not None:
            spread = measurements.get("input_wait_ci") or 0.0
            self.notes.append(
                f"the input-wait share, {estimate:.0%} ±{spread:.0%}, rests on too few split "
                "steps for a verdict: a longer run, or Monitor(split_fraction=0.5), narrows it"
            )
        self.report = self._build(measurements)
        self._write(FINISHED, measurements)
        if self._scalars is not None:
            self._writes.submit(self._scalars.close)
        if self.log_dir is not None:  # the finished record is on disk when fit returns
            if not self._writes.close(DRAIN_S):
                self.notes.append(
                    f"the record and scalars were still being written {DRAIN_S:.0f} s after "
                    "training ended: the disk under log_dir is slow or hangs"
                )
            self._notes_from_parts()
            self.report.notes = list(dict.fromkeys([*self.report.notes, *self.notes]))
        self._live_findings(measurements, None, None)
        self._say(lines.verdict_line(self.report.verdict, measurements, self._label()))
        for note in self.report.notes:
            self._say(lines.note_line(note, self._label()))
        self._running = False

    # --- measurements and findings -------------------------------------------------------------

    def _epoch_hardware(self, record: dict[str, Any], now: float) -> dict[str, Any]:
        """Host CPU and GPUs over this epoch's stretch of time."""
        began = now - record["seconds"] - self._mono_offset
        ended = now - self._mono_offset
        host = [s for s in self._host.samples() if began <= s.t < ended]
        gpu = [s for s in self._gpu.samples() if began <= s.t < ended]
        extra: dict[str, Any] = {}
        if host:
            summary = summarize_host(host)
            extra["host_cpu_percent"] = summary.cpu_percent_mean
            extra["host"] = {"cpu_count": summary.cpu_count}
        if gpu:
            extra["gpus"] = [
                {k: d[k] for k in ("index", "name", "utilization_mean", "memory_used_mb")}
                for d in summarize_gpus(gpu, self._gpu.names)
            ]
        return extra

    def _measurements(
        self, now: float, *, final: bool, reports: tuple[Any, Any] | None = None
    ) -> dict[str, Any]:
        data = self._tally.figures(now)
        if not decisive(data["input_wait_fraction"], data["input_wait_ci"], self._wait_limit):
            data["input_wait_estimate"] = data.pop("input_wait_fraction")
            data["input_wait_fraction"] = None
        if reports is None:
            gpu = GpuReport(
                available=self._gpu.available,
                devices=summarize_gpus(self._gpu.samples(), self._gpu.names),
            )
            host = summarize_host(self._host.samples())
            host.available = self._host.available
            reports = (gpu, host)
        data.update(to_measurements(*reports))
        data.update(self._setup)
        data["worker"] = self._worker.name
        if self._worker.multi:  # the rates and the batch are this worker's share of the job
            data["workers"] = len(self._worker.peers)
        origin = self._origin - self._mono_offset
        data["timeline"] = {
            "seconds": round(now - self._origin, 2),
            "phases": self._timeline.to_list(),
            "host": host_series(self._host.samples(), origin),
            "gpus": gpu_series(self._gpu.samples(), self._gpu.names, origin),
        }
        data["monitor"] = {
            "method": "split dequeue" if self._clock.split["train"] else "whole calls",
            "split_fraction": round(self._clock.sampler.chance(), 3),
            **_split_cost(self._clock.sampler),
            "dequeue_floor_ms": self._clock.floor_ms.get("train"),
            "interval_s": self.interval_s,
            "final": final,
        }
        return data

    def _probe(self, iterator: Any, measurements: dict[str, Any]) -> None:
        """Time this worker's own pipeline alone (``probe``): ``worker_pipeline``."""
        dataset = local_dataset(iterator)
        if dataset is None:
            self.notes.append(
                "this worker's own pipeline could not be reached, so it was not timed alone"
            )
            return
        probed = probe(dataset, self.probe_s)
        if probed.note is not None:
            self.notes.append(f"{probed.note}, so this worker was not timed alone")
            return
        measurements["worker_pipeline"] = probed.figures()
        self._say(
            lines.probe_line(probed.samples_per_s, probed.seconds, probed.startup_s, self._label())
        )

    def _compare_workers(self, measurements: dict[str, Any], wait_s: float) -> None:
        """The chief's view: every worker's summary (PD307), and notes on missing ones."""
        if self.log_dir is None:
            return
        state = FINISHED if wait_s > 0 else RUNNING  # the end of the run: this one is done
        own = make_record(self._worker.name, self._worker.peers, state, measurements, [])
        deadline = time.monotonic() + wait_s
        while True:
            records = [own]
            for peer in self._worker.others:
                try:
                    records.append(read_record(record_path(self.log_dir, peer)))
                except ValueError:
                    continue
            done = all(r.get("state") == FINISHED for r in records[1:])
            if (done and len(records) == len(self._worker.peers)) or time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        measurements["per_worker"] = [worker_summary(r) for r in records]
        if wait_s > 0:  # what is missing now is missing for good
            self.notes.extend(n for n in missing_workers(records) if n not in self.notes)

    def _load_config(self) -> Any:
        from pipedoctor.config import load_config

        return load_config(Path.cwd(), select=self.select, ignore=self.ignore)

    def _build(self, measurements: dict[str, Any]) -> Report:
        from pipedoctor.checker import build_report

        return build_report(measurements, list(self.notes), self._config.selection)

    def _live_findings(
        self, measurements: dict[str, Any], epoch: int | None, record: dict[str, Any] | None
    ) -> None:
        """Print each finding the first time it appears (by rule and subject)."""
        report = self._build(measurements)
        found = list(report.findings)
        if record is not None and record.get("gpus"):  # a straggler this epoch, as it happens
            found += self._build({"gpus": record["gpus"]}).findings
        for finding in found:
            # Once per rule and subject (a GPU, a worker): the figures in a message change as
            # the run goes on, what it says does not.
            subject = re.search(r"\b(GPU \d+|Worker \S+)", finding.message)
            key = f"{finding.rule}:{subject.group(1) if subject else ''}"
            if key in self._printed:
                continue
            self._printed.add(key)
            self._say(lines.finding_line(finding, self._label(), epoch))
        self._notes_from_parts()

    def _notes_from_parts(self) -> None:
        """Notes from the samplers and writers, each once."""
        parts = []
        for sampler, what in ((self._gpu, "GPU"), (self._host, "host")):
            if sampler is not None and sampler.errors and sampler.first_error_t is not None:
                at = sampler.first_error_t + self._mono_offset - self._origin
                parts.append(
                    f"{sampler.errors} {what} readings failed from {max(0.0, at):.0f} s into the "
                    f"run; the {what} timelines have gaps from there"
                )
        if self._scalars is not None and self._scalars.note:
            parts.append(self._scalars.note)
        if self._record_failure is not None:
            parts.append(self._record_failure)
        if self._clock is not None and self._clock.errors:
            parts.append(f"{self._clock.errors} timed calls could not be counted")
        if self._clock is not None and self._clock.note:
            parts.append(self._clock.note)
        for note in parts:
            if note not in self.notes and not any(_same_note(note, n) for n in self.notes):
                self.notes.append(note)
                self._say(lines.note_line(note, self._label()))

    def _write(self, state: str, measurements: dict[str, Any]) -> None:
        if self.log_dir is None:
            return
        path = record_path(self.log_dir, self._worker.name)
        record = make_record(self._worker.name, self._worker.peers, state, measurements, self.notes)
        # Serialised here, as the record is now; written on the writes thread.
        self._writes.submit(partial(self._write_text, path, json.dumps(record)))

    def _write_text(self, path: Path, text: str) -> None:
        """On the writes thread: the first failure becomes a note (``_notes_from_parts``)."""
        try:
            write_text(path, text)
        except OSError as exc:
            if self._record_failure is None:
                self._record_failure = f"the record {path} could not be written: {_brief(exc)}"

    # --- small helpers ------------------------------------------------------------------------

    def _label(self) -> str | None:
        return self._worker.name if self._worker is not None and self._worker.multi else None

    def _say(self, line: str) -> None:
        if self.verbose:
            try:
                self.print_fn(line)
            except Exception:  # noqa: BLE001 - a closed stdout must not stop training
                pass

    @contextmanager
    def _guard(self, where: str) -> Iterator[None]:
        """Anything the monitor raises becomes a note and ends the monitoring, never fit; the
        time the hook takes is the monitor's own, kept out of the run's stalls."""
        began = time.perf_counter()
        try:
            yield
        except Exception as exc:  # noqa: BLE001
            note = f"monitoring stopped {where}: {_brief(exc)}"
            self.notes.append(note)
            self._say(lines.note_line(note, self._label()))
            self._close_previous()
        finally:
            if self._tally is not None:
                self._tally.own_seconds += time.perf_counter() - began

    def _close_previous(self) -> None:
        """Stop the samplers and the writes thread and take the wrappers off the model
        (idempotent)."""
        self._writes.close(RAISED_DRAIN_S)  # a fit that raised: what it queued is written
        if self._clock is not None:
            self._clock.close()
        for phase in list(self._wrapped):
            try:
                self._unwrap(phase)
            except Exception:  # noqa: BLE001
                pass
        for sampler in (self._gpu, self._host):
            if sampler is not None:
                try:
                    sampler.stop()
                except Exception:  # noqa: BLE001
                    pass
        self._running = False


def _split_cost(sampler: Sampler) -> dict[str, float]:
    """What the monitor adds to the calls, and so the share of training time it costs: its own
    estimate of its overhead, from this run's timings. Every call pays the wrapper's own work;
    a split call also pays what splitting adds (medians of many calls)."""
    cost = sampler.cost()
    if cost is None:
        return {}
    extra, whole = cost
    return {
        "split_cost_ms": round(1000 * extra, 3),
        "call_cost_ms": round(1000 * sampler.call_cost, 4),
        "overhead_estimate": round((sampler.chance() * extra + sampler.call_cost) / whole, 4),
    }


def _same_note(a: str, b: str) -> bool:
    """Sampler failure notes count up; one per sampler is enough."""
    return "readings failed" in a and "readings failed" in b and a.split()[1] == b.split()[1]


def _strategy(model: Any, backend: str) -> dict[str, Any]:
    """Replicas and strategy of the run: ``tf.distribute`` or Keras's distribution (JAX)."""
    if backend == "tensorflow":
        strategy = getattr(model, "distribute_strategy", None)
        if strategy is not None:
            name = type(strategy).__name__.replace("_DefaultDistributionStrategy", "default")
            return {"replicas": int(strategy.num_replicas_in_sync), "strategy": name}
    try:
        distribution = keras.distribution.distribution()
    except Exception:  # noqa: BLE001
        distribution = None
    if distribution is None:
        return {"replicas": 1, "strategy": "default"}
    mesh = getattr(distribution, "device_mesh", None)
    axis = getattr(distribution, "batch_dim_name", None)
    replicas = 1
    if mesh is not None and axis in getattr(mesh, "axis_names", ()):
        replicas = int(mesh.shape[list(mesh.axis_names).index(axis)])
    return {"replicas": replicas, "strategy": type(distribution).__name__}


def epoch_logs(logs: Any) -> dict[str, float]:
    """The finite numbers among the logs Keras passes at an epoch's end (loss, metrics,
    validation metrics), as plain floats."""
    metrics: dict[str, float] = {}
    for name, value in dict(logs or {}).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        if math.isfinite(number):
            metrics[str(name)] = number
    return metrics


def _model(model: Any) -> dict[str, Any]:
    """What tells one model from another across runs (``compare``): its class and size."""
    try:
        parameters = int(model.count_params())
    except (ValueError, AttributeError, TypeError):  # not built yet
        parameters = None
    return {"model": {"class": type(model).__name__, "parameters": parameters}}
