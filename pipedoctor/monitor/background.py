"""The monitor's file writes, on a thread of their own.

An epoch's end hands its record and TensorBoard scalars over and goes on: an ``fsync`` on a
busy disk, or TensorFlow's summary writer starting up, can take longer than a step, and
training should not wait for either. The writes run in the order given; ``drain`` at the end
of ``fit`` waits for the last of them (the finished record must be on disk when ``fit``
returns, for ``pipedoctor report`` and for the other workers).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

_STOP = object()
"""Ends the writes thread (``close``)."""


class BackgroundWrites:
    """One daemon thread that runs the jobs given to ``submit``, in order. A job handles its own
    errors (a full disk is a note, not a crash); one that raises anyway is counted in
    ``failed`` and the next job runs."""

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self.failed = 0

    def submit(self, job: Callable[[], None]) -> None:
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self._run, name="pipedoctor-monitor-writes", daemon=True
            )
            self._thread.start()
        self._jobs.put(job)

    def close(self, timeout_s: float) -> bool:
        """``drain``, then end the thread: it never outlives the ``fit`` it wrote for."""
        done = self.drain(timeout_s)
        thread, self._thread = self._thread, None
        if thread is not None:
            self._jobs.put(_STOP)
            if done:
                thread.join(timeout_s)
        return done

    def drain(self, timeout_s: float) -> bool:
        """Wait until every job submitted so far has run; ``False`` when ``timeout_s`` ran
        out first (a disk that hangs: ``fit`` returns anyway)."""
        if self._thread is None:
            return True
        done = threading.Event()
        self._jobs.put(done)
        return done.wait(timeout_s)

    def _run(self) -> None:
        while True:
            job = self._jobs.get()
            if job is _STOP:
                return
            if isinstance(job, threading.Event):
                job.set()
                continue
            try:
                job()
            except Exception:  # noqa: BLE001 - a job's own failure must not end the thread
                self.failed += 1
