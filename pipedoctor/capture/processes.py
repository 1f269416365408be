"""Processes a checked script starts: the ones that may train are stopped, every one is ended.

A script that trains in a child process (``subprocess.run([sys.executable, "trainer.py"])``,
``multiprocessing`` with any start method, ``os.fork``) would train for real there, out of
the check's reach, and overwrite the user's saved model. Inside the checked script, before
training starts, such a child ends the check first: the script is stopped before the child
exists, and the report names it (exit 2). Children that run no Python (``nvidia-smi``,
``git``) and ``python -m pip`` are let through; once training is measured, the processes
``fit`` starts for its own input (a ``PyDataset`` with workers) belong to it.

On the parent's side, :class:`ProcessTree` remembers every process the script's tree held,
whatever session or group it moved to, and ends them all when the check ends.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import PurePath
from typing import Any

PYTHON_NAME = re.compile(r"^(python|pypy)[\d.]*[dmw]*(\.exe)?$")
"""An interpreter's program name: ``python``, ``python3.11``, ``pypy3``, ``pythonw.exe``."""
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "ash", "busybox"})
WRAPPERS = frozenset(
    {"env", "nohup", "exec", "time", "nice", "command", "sudo", "timeout", "stdbuf"}
)
"""Programs that run the command after their own options: ``nohup python train.py``."""
OPERAND = re.compile(r"^(-.*|[A-Za-z_][A-Za-z0-9_]*=.*|\d+(\.\d+)?[smhd]?)$")
"""A wrapper's own word before the command: an option, ``VAR=value``, a number or duration."""


def runs_python(executable: object, args: object) -> str | None:
    """The command line of a child that runs Python other than ``pip``, shown as the user
    wrote it; None for a child that runs something else. A shell's ``-c`` command line is
    read for the Python it runs (``sh -c "cd data && python train.py"``)."""
    if isinstance(args, (list, tuple)):
        argv = [os.fsdecode(a) if isinstance(a, bytes) else str(a) for a in args]
    elif isinstance(args, (str, bytes)):  # a program's path, run without a shell
        argv = [os.fsdecode(args)]
    else:
        argv = [str(args)]
    if executable:
        argv = [os.fsdecode(executable) if isinstance(executable, bytes) else str(executable)]
        argv += [str(a) for a in (args[1:] if isinstance(args, (list, tuple)) else [])]
    return _python_in(argv, depth=0)


def shell_runs_python(command: object, depth: int = 0) -> str | None:
    """The first command of a shell command line that runs Python other than ``pip``
    (``os.system``, ``shell=True``), split at ``;``, ``&&``, ``||``, ``|`` and ``&``."""
    text = os.fsdecode(command) if isinstance(command, bytes) else str(command)
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        tokens = list(lexer)
    except ValueError:  # an unclosed quote: the shell refuses it too, but read what is there
        tokens = text.split()
    command_words: list[str] = []
    for token in [*tokens, ";"]:
        if token and all(c in "();<>|&" for c in token):
            found = _python_in(command_words, depth) if command_words else None
            if found is not None:
                return found
            command_words = []
        else:
            command_words.append(token)
    return None


def _python_in(words: list[str], depth: int) -> str | None:
    while words and OPERAND.match(words[0]) and "=" in words[0]:  # VAR=value python ...
        words = words[1:]
    while words and PurePath(words[0]).name in WRAPPERS:
        words = words[1:]
        while words and OPERAND.match(words[0]):
            words = words[1:]
    if not words:
        return None
    program = words[0]
    name = PurePath(program).name.lower()
    if name in SHELLS:
        if "-c" in words[1:-1] and depth < 4:
            return shell_runs_python(words[words.index("-c", 1) + 1], depth + 1)
        return None
    if not (PYTHON_NAME.match(name) or program == sys.executable):
        return None
    if "-m" in words and words[words.index("-m") + 1 : words.index("-m") + 2] == ["pip"]:
        return None
    return " ".join(words)


class ChildGuard:
    """Stops the script before it starts a child process that could train, as long as
    training has not started (``before_training()``); ``stop(what)`` ends the check."""

    def __init__(self, before_training: Callable[[], bool], stop: Callable[[str], None]):
        self.before_training = before_training
        self.stop = stop

    def install(self) -> None:
        sys.addaudithook(self._audit)
        import multiprocessing.process

        guard = self
        original = multiprocessing.process.BaseProcess.start

        def start(process: Any) -> None:
            if guard.before_training():
                target = getattr(process, "_target", None)
                name = getattr(target, "__qualname__", None) or process.name
                guard.stop(f"a `multiprocessing` process running `{name}`")
            return original(process)

        multiprocessing.process.BaseProcess.start = start  # type: ignore[method-assign]

    def _audit(self, event: str, args: tuple[Any, ...]) -> None:
        if event not in ("subprocess.Popen", "os.posix_spawn", "os.exec", "os.fork", "os.system"):
            return
        if not self.before_training():
            return
        if event == "os.fork":
            self.stop("a child process made with `os.fork()`")
            return
        if event == "os.system":
            command = shell_runs_python(args[0]) if args else None
        else:
            executable, argv = (args[0], args[1]) if len(args) >= 2 else (None, args)
            command = runs_python(executable, argv)
        if command is not None:
            self.stop(f"a Python child process (`{command}`)")


class ProcessTree:
    """Every process descended from ``pid``, remembered while it runs (a sampler thread, as
    nvitop samples its devices), so that one that moved to a session of its own, or was
    orphaned and adopted by init, is still ended at the end (``end``)."""

    def __init__(self, pid: int, interval: float = 0.2) -> None:
        import psutil

        self._psutil = psutil
        self.pid = pid
        self.seen: dict[int, float] = {}
        """pid → create time, for every process the tree held (a reused pid is another)."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(interval,), daemon=True)

    def start(self) -> ProcessTree:
        self._thread.start()
        return self

    def _run(self, interval: float) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(interval)

    def sample(self) -> None:
        try:
            root = self._psutil.Process(self.pid)
            found = [root, *root.children(recursive=True)]
        except (self._psutil.Error, OSError):
            return
        for process in found:
            try:
                self.seen.setdefault(process.pid, process.create_time())
            except (self._psutil.Error, OSError):
                continue

    def alive(self) -> list[Any]:
        """The remembered processes still running (the same ones: their create time)."""
        living = []
        for pid, created in self.seen.items():
            try:
                process = self._psutil.Process(pid)
                if abs(process.create_time() - created) < 0.01 and process.is_running():
                    if process.status() != self._psutil.STATUS_ZOMBIE:
                        living.append(process)
            except (self._psutil.Error, OSError):
                continue
        return living

    def end(self, grace: float = 3.0) -> None:
        """Stop sampling, then SIGTERM every remembered process still running, and SIGKILL
        what is left after ``grace`` seconds."""
        self.sample()
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.sample()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            living = self.alive()
            if not living:
                return
            for process in living:
                try:
                    process.send_signal(sig)
                except (self._psutil.Error, OSError):
                    continue
            deadline = time.time() + grace
            while time.time() < deadline and self.alive():
                time.sleep(0.05)


def wait_for_threads(exclude: Sequence[threading.Thread] = ()) -> None:
    """Wait for the script's non-daemon threads, as the interpreter does before it exits: a
    ``fit`` started in one is training the main thread did not do itself."""
    main = threading.main_thread()
    for thread in threading.enumerate():
        if thread is main or thread.daemon or thread in exclude:
            continue
        thread.join()


def tail_of(path: os.PathLike[str] | str, chars: int) -> str:
    """The last ``chars`` characters (about) of a log, read from its end: a script that
    printed a gigabyte costs the check only the tail it shows."""
    with open(path, "rb") as log:
        log.seek(0, os.SEEK_END)
        size = log.tell()
        log.seek(max(0, size - 4 * chars))
        return log.read().decode("utf-8", errors="replace")[-chars:]
