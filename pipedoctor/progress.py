"""A progress display on stderr while a check measures (never on stdout, which may be JSON).

On a terminal one line of stderr is rewritten in place: the phase (``[2/4]``), the time so
far, and what is being measured. In a notebook the same line is one display that updates (a
display id, as tqdm's notebook bar does): written to stderr, every rewrite would be saved in
the notebook as an output of its own. The line keeps ticking while a long phase runs (the
graph doctor can take half the budget), so a check never looks stuck. Anywhere else (a CI
log, a pipe) each message is one plain timestamped line, written once.
"""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

GRAPH_PHASE = "reading the pipeline's graph"
"""The last phase; its messages name each stage and what-if as it is timed."""
PHASES = (
    "measuring the input pipeline alone",
    "measuring the compute ceiling",
    "measuring real training",
    GRAPH_PHASE,
)
"""The check's four phases, as its progress messages begin."""


def in_notebook() -> bool:
    """Running inside a Jupyter kernel: its stderr shows a rewritten line as a terminal does."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    return type(shell).__name__ == "ZMQInteractiveShell"


class NotebookLine:
    """One plain-text display in the running cell's output, updated in place."""

    def __init__(self) -> None:
        from IPython.display import display

        self.handle = display({"text/plain": ""}, raw=True, display_id=True)

    def show(self, text: str) -> None:
        self.handle.update({"text/plain": text}, raw=True)


class Progress:
    """One updating, ticking line on a terminal or in a notebook; plain timestamped lines when
    stderr is neither."""

    def __init__(
        self,
        stream: TextIO | None = None,
        enabled: bool = True,
        *,
        live: bool | None = None,
        tick_s: float = 1.0,
    ) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        notebook = stream is None and live is None and in_notebook()
        self.tty = (tty or notebook) if live is None else live
        self.notebook: NotebookLine | None = None
        self._notebook = notebook
        self.started = time.monotonic()
        self.width = 0
        self.message = ""
        self.phase = 0
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self.tick_s = tick_s

    def __call__(self, message: str) -> None:
        if not self.enabled or not message:
            return
        with self._lock:
            self.message = message
            for number, start in enumerate(PHASES, 1):
                if message.startswith(start):
                    self.phase = number
            if not self.tty:
                elapsed = time.monotonic() - self.started
                self.stream.write(f"pipedoctor [{elapsed:5.1f}s] {message}\n")
                self.stream.flush()
                return
            self._draw()
        if self._ticker is None:
            self._ticker = threading.Thread(target=self._tick, daemon=True)
            self._ticker.start()

    def line(self) -> str:
        """The live line: phase, time so far, message."""
        elapsed = time.monotonic() - self.started
        phase = f"[{self.phase}/{len(PHASES)}] " if self.phase else ""
        return f"pipedoctor {phase}[{elapsed:5.1f}s] {self.message}"

    def _draw(self) -> None:
        line = self.line()
        if self._notebook:
            if self.notebook is None:
                self.notebook = NotebookLine()
            self.notebook.show(line)
            self.width = len(line)
            return
        padding = " " * max(0, self.width - len(line))
        self.stream.write(f"\r{line}{padding}")
        self.stream.flush()
        self.width = len(line)

    def _tick(self) -> None:
        while not self._stop.wait(self.tick_s):
            with self._lock:
                if self.width:
                    self._draw()

    def done(self) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * self.tick_s)
        with self._lock:
            if self.notebook is not None:
                self.notebook.show("")
            elif self.enabled and self.tty and self.width:
                self.stream.write("\r" + " " * self.width + "\r")
                self.stream.flush()
                self.width = 0
