"""Offloading the pipeline to tf.data service, measured rather than asserted.

When the host CPU is saturated, the advice is to move preprocessing elsewhere. Before giving it,
pipedoctor starts a real dispatcher (in this process) and K workers (separate local processes on
loopback), reads the user's pipeline through them, and times it in turns against the pipeline
read in-process. On one host the workers share the same cores, so the figure says what
process-level parallelism and escaping this process's Python buy; workers on other hosts add
their own cores on top.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

WORKERS = 2
START_S = 15.0
"""Longest the worker processes may take to start (each imports TensorFlow)."""
TURNS = 2


def measure_service(
    dataset: Any, batched: bool, deadline: float, workers: int = WORKERS
) -> dict[str, Any]:
    """``samples_per_s`` through the service and ``local_samples_per_s`` in-process, or a
    ``note`` saying why the service could not be measured."""
    import tensorflow as tf

    from pipedoctor.graph.timing import paired_cost, paired_gain
    from pipedoctor.measure.protocol import brief

    result: dict[str, Any] = {"workers": workers}
    needed = paired_cost(TURNS) + 2.0
    dispatcher, processes = None, []
    try:
        if _runs_python(dataset):
            result["note"] = (
                "not measured: the pipeline calls Python (py_function, numpy_function or a "
                "generator), which service workers in other processes cannot run"
            )
            return result
        wait = min(START_S, deadline - time.perf_counter() - needed)
        if wait < 5.0:
            result["note"] = "not measured: the check's budget ran out"
            return result
        service = tf.data.experimental.service
        dispatcher = service.DispatchServer(service.DispatcherConfig(port=0))
        address = dispatcher.target.split("://", 1)[1]
        for _ in range(workers):
            processes.append(_start_worker(address))
        if why := _not_ready(processes, time.perf_counter() + wait):
            result["note"] = f"not measured: {why}"
            return result
        distributed = dataset.apply(
            service.distribute(processing_mode="parallel_epochs", service=dispatcher.target)
        )

        def timed() -> Any:
            next(iter(distributed))  # the workers' first element (tracing) is not timed
            return paired_gain(dataset, distributed, batched, TURNS)

        limit = min(needed + 10.0, max(needed, deadline - time.perf_counter()))
        finished, paired = within(timed, limit)
        if not finished:
            result["note"] = f"not measured: the service stopped answering for {limit:.0f} s"
            return result
    except (tf.errors.OpError, ValueError, TypeError, OSError, StopIteration) as exc:
        result["note"] = f"not measured: the service could not run this pipeline ({brief(exc)})"
        return result
    finally:
        for process in processes:
            process.kill()
            process.wait()
        if dispatcher is not None:
            dispatcher._stop()
    if paired is None:
        result["note"] = "not measured: the pipeline yielded too little through the service"
        return result
    local = sum(paired.base_rates) / len(paired.base_rates)
    result.update(local_samples_per_s=round(local, 1), samples_per_s=round(local * paired.gain, 1))
    return result


def within(work: Callable[[], Any], seconds: float) -> tuple[bool, Any]:
    """``(True, work())``, or ``(False, None)`` when it has not finished after ``seconds``.

    A service client whose workers stop answering retries for minutes; the work then runs on in
    a daemon thread, blocked inside TensorFlow, while the check goes on without it. The work's
    exceptions are raised here."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["value"] = work()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread below
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="pipedoctor-service-timing", daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return False, None
    if "error" in outcome:
        raise outcome["error"]
    return True, outcome.get("value")


def _runs_python(dataset: Any) -> bool:
    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.frontend import PYTHON_OPS

    graph = g.serialize(dataset)
    ops = {n.op for n in graph.node}
    ops.update(n.op for f in graph.library.function for n in f.node_def)
    return bool(ops & (PYTHON_OPS | {"GeneratorDataset"}))


def _start_worker(dispatcher: str) -> subprocess.Popen[bytes]:
    """A worker in the same process group as this process, so a check that is stopped takes
    its workers with it; it also exits on its own when this process is gone."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL=os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2"))
    return subprocess.Popen(
        [sys.executable, "-m", "pipedoctor.measure.service_worker", dispatcher, str(os.getpid())],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )


def _not_ready(processes: list[subprocess.Popen[bytes]], deadline: float) -> str:
    """Why the workers are not all serving by ``deadline`` (``""`` once each said ``ready``)."""
    waiting = {p.stdout.fileno(): p for p in processes if p.stdout is not None}
    while waiting:
        left = deadline - time.perf_counter()
        if left <= 0:
            return f"{len(waiting)} service worker(s) did not start in time"
        readable, _, _ = select.select(list(waiting), [], [], left)
        for fd in readable:
            process = waiting.pop(fd)
            if not (process.stdout and process.stdout.readline().startswith(b"ready")):
                return f"a service worker exited while starting (exit code {process.wait()})"
    return ""
