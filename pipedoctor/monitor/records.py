"""Per-worker record files: each worker's measurements so far, and the job built from them.

Each worker writes ``<log_dir>/pipedoctor/<worker>.json`` at every epoch end and at the end of
``fit`` (state ``finished``), replacing the file atomically so a reader never sees half of one.
The chief reads its peers' files to compare the workers while the job runs, and
``pipedoctor report LOG_DIR`` reads them all afterwards; both build the same per-worker
summaries (the ``per_worker`` measurement that PD307 judges).
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RECORD_VERSION = 1
FOLDER = "pipedoctor"
RUNNING, FINISHED = "running", "finished"


def record_dir(log_dir: str | os.PathLike[str]) -> Path:
    return Path(log_dir) / FOLDER


def record_path(log_dir: str | os.PathLike[str], worker: str) -> Path:
    return record_dir(log_dir) / f"{worker}.json"


def make_record(
    worker: str, peers: Iterable[str], state: str, measurements: dict[str, Any], notes: list[str]
) -> dict[str, Any]:
    return {
        "pipedoctor_record": RECORD_VERSION,
        "worker": worker,
        "peers": list(peers),
        "state": state,
        "updated": time.time(),
        "measurements": measurements,
        "notes": list(notes),
    }


def write_record(path: Path, record: dict[str, Any]) -> None:
    """Write atomically (a temporary file renamed over the old one). Raises ``OSError`` (a full
    disk, a missing permission) for the caller to note."""
    write_text(path, json.dumps(record))


def write_text(path: Path, text: str) -> None:
    """``write_record`` for a record already serialised (the monitor serialises on its own
    thread and writes on another)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    except BaseException:
        try:
            temporary.unlink()
        except OSError:
            pass
        raise


def read_record(path: Path) -> dict[str, Any]:
    """One record; raises ``ValueError`` with a one-line reason when it is not one, or when a
    field the Monitor writes holds a value of another type (a hand-edited or corrupt file)."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):  # a pipe would block the read
            raise ValueError(f"{path}: not a regular file")
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except RecursionError:
        raise ValueError(f"{path}: not a pipedoctor record (JSON nested too deeply)") from None
    except ValueError as exc:
        if str(exc).startswith(f"{path}:"):
            raise
        raise ValueError(f"{path}: not a pipedoctor record (invalid JSON: {exc})") from None
    if not isinstance(data, dict) or data.get("pipedoctor_record") != RECORD_VERSION:
        raise ValueError(f"{path}: not a pipedoctor record")
    if not isinstance(data.get("worker"), str) or not isinstance(data.get("measurements"), dict):
        raise ValueError(f"{path}: a pipedoctor record without a worker or measurements")
    problem = _mistyped(data, RECORD, "")
    if problem is not None:
        raise ValueError(f"{path}: not a valid pipedoctor record: {problem}")
    return data


# --- what a record holds, as the Monitor writes it ---------------------------------------------
# A spec is one of the kinds below, ``("list", spec)`` (a list of such values), ``("map",
# spec)`` (an object whose every value is such) or a dict of key -> spec (an object; keys not
# named are not checked, so records written by a newer Monitor still read). Every key may be
# missing and its value ``null``, the Monitor leaves out or nulls what it could not measure;
# the items of a list may not be ``null``.

NUMBER, INTEGER, TEXT, FLAG = "a number", "an integer", "a string", "true or false"
NUMBERS = ("list", NUMBER)
GPU = {"index": INTEGER, "name": TEXT, "utilization_mean": NUMBER, "memory_used_mb": NUMBER}
HOST = {
    "cpu_count": INTEGER,
    "per_core_percent": NUMBERS,
    "cpu_percent_p95": NUMBER,
    "cpu_percent_p50": NUMBER,
    "process_rss_mb_max": NUMBER,
    "available_ram_mb_min": NUMBER,
}
PHASE = {
    "steps": INTEGER,
    "samples": INTEGER,
    "samples_per_s": NUMBER,
    "samples_per_s_ci": NUMBER,
    "step_ms": NUMBER,
    "input_wait_fraction": NUMBER,
    "input_wait_ci": NUMBER,
    "input_wait_steps": INTEGER,
    "dequeue_ms": NUMBER,
}
EPOCH = {
    **PHASE,
    "epoch": INTEGER,
    "seconds": NUMBER,
    "train_seconds": NUMBER,
    "stall_seconds": NUMBER,
    "longest_stall_s": NUMBER,
    "startup_seconds": NUMBER,
    "wall_s": NUMBER,
    "samples_seen": INTEGER,
    "logs": ("map", NUMBER),
    "host_cpu_percent": NUMBER,
    "host": HOST,
    "gpus": ("list", GPU),
    "eval": {**PHASE, "seconds": NUMBER},
}
WORKER = {
    "worker": TEXT,
    "step_ms": NUMBER,
    "input_wait_fraction": NUMBER,
    "samples_per_s": NUMBER,
    "pipeline_samples_per_s": NUMBER,
    "steps": INTEGER,
    "samples": INTEGER,
    "epochs": INTEGER,
    "state": TEXT,
}
MEASUREMENTS = {
    **{key: NUMBER for key in (
        "input_wait_fraction", "input_wait_ci", "input_wait_estimate", "dequeue_ms",
        "training_samples_per_s", "run_seconds", "host_cpu_percent",
    )},
    **{key: INTEGER for key in ("input_wait_steps", "batch_size", "replicas", "workers")},
    **{key: TEXT for key in ("backend", "strategy", "worker", "gpu_note", "host_note")},
    "epochs": ("list", EPOCH),
    "time_split": ("map", NUMBER),
    "step_ms": ("map", NUMBER),
    "host": HOST,
    "gpus": ("list", GPU),
    "timeline": {
        "seconds": NUMBER,
        "phases": ("list", {"phase": TEXT, "t0": NUMBER, "t1": NUMBER, "samples_per_s": NUMBER}),
        "host": {"t": NUMBERS, "per_core": ("list", NUMBERS)},
        "gpus": ("list", dict),
    },
    "monitor": {
        "method": TEXT,
        "split_fraction": NUMBER,
        "split_cost_ms": NUMBER,
        "call_cost_ms": NUMBER,
        "overhead_estimate": NUMBER,
        "dequeue_floor_ms": NUMBER,
        "interval_s": NUMBER,
        "final": FLAG,
    },
    "worker_pipeline": {"samples_per_s": NUMBER, "seconds": NUMBER, "startup_s": NUMBER},
    "per_worker": ("list", WORKER),
}  # fmt: skip
RECORD = {
    "worker": TEXT,
    "peers": ("list", TEXT),
    "state": TEXT,
    "updated": NUMBER,
    "notes": ("list", TEXT),
    "measurements": MEASUREMENTS,
}


def _mistyped(value: Any, spec: Any, where: str, nullable: bool = True) -> str | None:
    """Where ``value`` departs from ``spec``, in words; ``None`` when it does not. A value
    may be ``null``, an item of a list may not."""
    if value is None:
        return None if nullable else f"{where} must not be null"
    if isinstance(spec, dict):
        if not isinstance(value, dict):
            return f"{where or 'the record'} must be an object"
        for key, inner in spec.items():
            if key in value:
                found = _mistyped(value[key], inner, f"{where}.{key}" if where else key)
                if found is not None:
                    return found
        return None
    if spec is dict:
        return None if isinstance(value, dict) else f"{where} must be an object"
    if isinstance(spec, tuple):
        kind, inner = spec
        if kind == "list":
            if not isinstance(value, list):
                return f"{where} must be a list"
            items: Iterable[tuple[str, Any]] = ((f"{where}[{i}]", v) for i, v in enumerate(value))
        else:
            if not isinstance(value, dict):
                return f"{where} must be an object"
            items = ((f"{where}.{k}", v) for k, v in value.items())
        for place, item in items:
            found = _mistyped(item, inner, place, nullable=kind != "list")
            if found is not None:
                return found
        return None
    ok = {
        NUMBER: isinstance(value, (int, float)) and not isinstance(value, bool),
        INTEGER: isinstance(value, int) and not isinstance(value, bool),
        TEXT: isinstance(value, str),
        FLAG: isinstance(value, bool),
    }[spec]
    return None if ok else f"{where} must be {spec}, not {json.dumps(value)[:40]}"


def find_records(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Record files named directly, or found in ``<dir>/pipedoctor/`` or ``<dir>`` itself."""
    found: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            folder = record_dir(path) if record_dir(path).is_dir() else path
            found.extend(sorted(p for p in folder.glob("*.json") if not p.name.startswith(".")))
        else:
            found.append(path)
    return list(dict.fromkeys(found))


def worker_summary(record: dict[str, Any]) -> dict[str, Any]:
    """One ``per_worker`` entry: the worker's name, median step time, input-wait share, rate,
    and what its own pipeline gave alone (``probe``)."""
    m = record.get("measurements") or {}
    epochs = m.get("epochs") or []
    step = (m.get("step_ms") or {}).get("training")
    return {
        "worker": record["worker"],
        "step_ms": step,
        "input_wait_fraction": m.get("input_wait_fraction"),
        "samples_per_s": m.get("training_samples_per_s"),
        "pipeline_samples_per_s": (m.get("worker_pipeline") or {}).get("samples_per_s"),
        "steps": sum(int(e.get("steps") or 0) for e in epochs),
        "samples": sum(int(e.get("samples") or 0) for e in epochs),
        "epochs": len(epochs),
        "state": record.get("state", RUNNING),
    }


@dataclass
class Job:
    """The records of one job: the chief's measurements with every worker's summary."""

    records: list[dict[str, Any]]
    notes: list[str] = field(default_factory=list)

    def lead(self) -> dict[str, Any]:
        """The chief's record, or the first worker's when the chief left none."""
        return _by_name(self.records)[0]

    def measurements(self) -> dict[str, Any]:
        lead = self.lead()
        merged = dict(lead["measurements"])
        if len(self.records) > 1:
            merged["per_worker"] = [worker_summary(r) for r in _by_name(self.records)]
        return merged

    def all_notes(self) -> list[str]:
        notes = list(self.notes)
        for record in _by_name(self.records):
            notes.extend(f"{record['worker']}: {n}" for n in record.get("notes") or [])
        return notes


def _by_name(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = {"chief": 0, "worker": 1, "process": 2}

    def key(record: dict[str, Any]) -> tuple:
        kind, _, index = record["worker"].rpartition("-")
        return (order.get(kind, 3), int(index) if index.isdigit() else 0, record["worker"])

    return sorted(records, key=key)


def missing_workers(records: list[dict[str, Any]], now: float | None = None) -> list[str]:
    """Notes for workers the records name as peers but that left no record, or stopped."""
    now = time.time() if now is None else now
    have = {r["worker"]: r for r in records}
    peers = {p for r in records for p in r.get("peers") or []}
    notes = [
        f"no record from {peer}: it never wrote one to this folder (it may have failed to start, "
        "or writes elsewhere: give every worker the same log_dir on a shared filesystem)"
        for peer in sorted(peers - set(have))
    ]
    finished = [r for r in records if r.get("state") == FINISHED]
    for record in records:
        if record.get("state") == FINISHED or not finished:
            continue
        epochs = len(record["measurements"].get("epochs") or [])
        last = max(0.0, now - float(record.get("updated") or now))
        notes.append(
            f"{record['worker']} stopped reporting after epoch {epochs} ({last:.0f} s before the "
            "last check) while other workers finished: it was killed or hung"
        )
    return notes


def read_job(paths: Iterable[str | os.PathLike[str]]) -> Job:
    """Every readable record among ``paths``; unreadable ones become notes. Raises
    ``ValueError`` when none could be read."""
    records, notes = [], []
    files = find_records(paths)
    for path in files:
        try:
            records.append(read_record(path))
        except ValueError as exc:
            notes.append(str(exc))
    if not records:
        reason = notes[0] if notes else "no pipedoctor records found"
        raise ValueError(reason)
    latest = max(float(r.get("updated") or 0.0) for r in records)
    notes.extend(missing_workers(records, now=latest))
    return Job(records, notes)
