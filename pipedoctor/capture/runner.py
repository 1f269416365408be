"""The parent side of ``pipedoctor check``: start the user's script in a child process with the
capture hooks, follow its events within the time budget, and always clean up.

The child runs in its own process group with its temporary files in a private folder, so a
timeout or Ctrl-C kills the whole tree and nothing is left behind, in the user's working
directory or anywhere else.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from pipedoctor.capture.processes import ProcessTree, tail_of
from pipedoctor.rules import ALL_RULES, Selection

KILL_GRACE_S = 3.0
LOG_TAIL_CHARS = 4000


WHEN_RAISED = {
    False: "before training",
    True: "once training had started, before any step was timed",
}


@dataclass
class CaptureResult:
    """What came back from the child. ``status``: ``ok``, ``timeout``, ``user-error``,
    ``error``, ``exited`` (the script ended without training) or ``interrupted``."""

    status: str
    message: str = ""
    measurements: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    capture: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    traceback: str = ""
    output_tail: str = ""
    seconds: float = 0.0
    continuation: Continuation | None = None
    """With ``run_after``: the script, still training, for the caller to wait on."""


@dataclass
class Continuation:
    """A script that trains on after its check (``--run-after``). The caller shows the report
    first, then calls :meth:`wait`, which passes the script's output through until it ends."""

    process: subprocess.Popen[bytes]
    log_path: Path
    private: Path
    shown: int = 0
    tree: ProcessTree | None = None
    """Bytes of the log already passed through (none: the check's part stays hidden)."""

    def wait(self, out: BinaryIO | None = None) -> int:
        """The script's exit code, once it has ended; its output goes to ``out`` (stderr by
        default, so that a report on stdout stays machine-readable). Ctrl-C is passed on to the
        script (it runs in its own session, away from the terminal's signals), then its tree is
        stopped. The private temporary folder is removed at the end."""
        out = out or sys.stderr.buffer
        try:
            with open(self.log_path, "rb") as log:
                log.seek(self.shown)
                while True:
                    chunk = log.read(65536)
                    if chunk:
                        out.write(chunk)
                        out.flush()
                        continue
                    if self.process.poll() is not None:
                        out.write(log.read())
                        out.flush()
                        return self.process.returncode
                    time.sleep(0.1)
        except KeyboardInterrupt:
            _interrupt_tree(self.process)
            return 130
        finally:
            _kill_tree(self.process)  # the script's own children, if it left any
            if self.tree is not None:
                self.tree.end()
            shutil.rmtree(self.private, ignore_errors=True)


def _stderr_fd() -> int:
    """The file descriptor behind ``sys.stderr`` (2 where it has none, as under a capture)."""
    try:
        return sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        return 2


def _interrupt_tree(process: subprocess.Popen[bytes]) -> None:
    """Ctrl-C for the script's process group, as a terminal would send it; then the usual stop."""
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(timeout=KILL_GRACE_S)
    except (ProcessLookupError, PermissionError, subprocess.TimeoutExpired):
        pass
    _kill_tree(process)


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM the child's process group, then SIGKILL what is still there."""
    for sig, wait in ((signal.SIGTERM, KILL_GRACE_S), (signal.SIGKILL, KILL_GRACE_S)):
        try:
            os.killpg(process.pid, sig)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            process.wait(timeout=wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:  # stragglers the script started in the same group after the leader exited
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run_script(
    script: Path,
    args: Sequence[str],
    *,
    timeout: float,
    run_after: bool = False,
    workers: int | None = None,
    selection: Selection = ALL_RULES,
    progress: Callable[[str], None] = lambda _: None,
    show_output: bool = False,
    profile: Path | None = None,
) -> CaptureResult:
    """Run ``script`` with ``args`` under the capture hooks; never longer than ``timeout``.

    With ``run_after`` the script is left training once it was measured (or once measuring it
    failed): the result's ``continuation`` waits for its end, and removes its private folder.

    ``profile``: a log directory the child writes a profile of a few training steps to."""
    started = time.time()
    deadline = started + timeout
    private = tempfile.mkdtemp(prefix="pipedoctor-")
    continuation = None
    try:
        log_path = Path(private) / "output.log"
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.update(
            TMPDIR=private,
            TMP=private,
            TEMP=private,
            PYTHONUNBUFFERED="1",
            TF_CPP_MIN_LOG_LEVEL=env.get("TF_CPP_MIN_LOG_LEVEL", "2"),
        )
        command = [
            sys.executable, "-m", "pipedoctor.capture.child",
            "--events", str(write_fd), "--deadline", f"{deadline - 2.0:.3f}",
            *(["--run-after"] if run_after else []),
            *(["--workers", str(workers)] if workers else []),
            *(["--profile", str(profile.resolve())] if profile is not None else []),
            "--selection", json.dumps(asdict(selection)),
            str(script), *args,
        ]  # fmt: skip
        with open(log_path, "wb") as log:
            try:
                process = subprocess.Popen(
                    command,
                    stdin=subprocess.DEVNULL,
                    # The report owns stdout: the script's own output, when shown, goes to
                    # stderr, so `--show-output --format json` still parses.
                    stdout=_stderr_fd() if show_output else log,
                    stderr=None if show_output else subprocess.STDOUT,
                    pass_fds=(write_fd,),
                    start_new_session=True,
                    env=env,
                )
            finally:
                os.close(write_fd)
            tree = ProcessTree(process.pid).start()  # every process it starts, wherever
            try:
                result = _follow(process, read_fd, deadline, timeout, progress, run_after)
            except KeyboardInterrupt:
                _kill_tree(process)
                result = CaptureResult("interrupted", "interrupted (Ctrl-C): the check was stopped")
            finally:
                os.close(read_fd)
            if run_after and result.status in ("ok", "error") and process.poll() is None:
                continuation = Continuation(process, log_path, Path(private), tree=tree)
                continuation.shown = log_path.stat().st_size if not show_output else 0
            else:
                _kill_tree(process)  # still running, or the script's own children
                tree.end()  # and those in sessions of their own, or orphaned
        result.output_tail = tail_of(log_path, LOG_TAIL_CHARS)
    finally:
        if continuation is None:
            shutil.rmtree(private, ignore_errors=True)
    result.continuation = continuation
    result.seconds = time.time() - started
    return result


def _follow(
    process: subprocess.Popen[bytes],
    read_fd: int,
    deadline: float,
    timeout: float,
    progress: Callable[[str], None],
    run_after: bool = False,
) -> CaptureResult:
    buffer = b""
    state: dict[str, Any] = {"captured": False, "result": None, "partial": None}
    open_pipe = True
    while True:
        remaining = deadline - time.time()
        if remaining <= 0:
            _kill_tree(process)
            if not state["captured"]:
                return CaptureResult(
                    "timeout", f"did not start training within {timeout:g} s{_cluster_hint()}"
                )
            if state["partial"] is not None:  # all but the graph's analysis: that is a report
                return state["partial"]
            return CaptureResult("timeout", f"the check did not finish within {timeout:g} s")
        if open_pipe:
            ready, _, _ = select.select([read_fd], [], [], min(remaining, 0.5))
            if ready:
                chunk = os.read(read_fd, 65536)
                if not chunk:
                    open_pipe = False
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    outcome = _on_event(line, state, progress)
                    if outcome is not None:
                        if not (run_after and outcome.status in ("ok", "error")):
                            _wait(process, deadline)  # the script stops itself: let it
                        return outcome
        else:
            try:
                process.wait(timeout=min(remaining, 0.5))
            except subprocess.TimeoutExpired:
                continue
            code = process.returncode
            return CaptureResult(
                "error", f"the script's process ended unexpectedly (exit code {code})"
            )


def _on_event(
    line: bytes, state: dict[str, Any], progress: Callable[[str], None]
) -> CaptureResult | None:
    try:
        event = json.loads(line)
    except (ValueError, UnicodeDecodeError):
        return None
    kind = event.get("event")
    if kind == "started":
        progress("running the script until it starts training")
    elif kind == "captured":
        state["captured"] = True
        progress(f"training starts ({event.get('hook')}): measuring")
    elif kind == "progress":
        progress(event.get("message", ""))
    elif kind in ("result", "partial"):
        result = CaptureResult(
            "ok",
            measurements=event.get("measurements", {}),
            notes=event.get("notes", []),
            capture=event.get("capture", {}),
            findings=event.get("findings", []),
        )
        if kind == "partial":  # kept in case the graph doctor runs past the deadline
            state["partial"] = result
            return None
        return result
    elif kind == "error":
        return CaptureResult("error", event.get("message", "the check failed"))
    elif kind == "user-error":
        return CaptureResult(
            "user-error",
            f"the script raised {WHEN_RAISED[bool(event.get('trained'))]}: "
            f"{event.get('summary', '')}",
            traceback=event.get("traceback", ""),
        )
    elif kind == "child":
        return CaptureResult(
            "error",
            f"the script starts {event.get('what', 'a child process')} before it trains: the "
            "check does not follow training into another process, so it stopped the script "
            "before the child started (nothing ran in it); check the script the child runs",
        )
    elif kind == "exited":
        code = event.get("code", 0)
        return CaptureResult(
            "exited", f"the script ended (exit code {code}) without starting training"
        )
    return None


def _wait(process: subprocess.Popen[bytes], deadline: float) -> None:
    try:
        process.wait(timeout=max(0.5, min(10.0, deadline - time.time())))
    except subprocess.TimeoutExpired:
        _kill_tree(process)


def _cluster_hint() -> str:
    """Why a multi-worker script may never start: its strategy waits for the other workers."""
    from pipedoctor.measure.setup import cluster

    found = cluster()
    if found is None:
        return ""
    return (
        f" (TF_CONFIG names {found['workers']} workers: a multi-worker job started on one "
        "worker waits for the others, so run the check on every worker or without TF_CONFIG)"
    )
