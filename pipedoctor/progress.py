"""A progress display on stderr while a check measures (never on stdout, which may be JSON)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    """One updating line on a terminal; plain timestamped lines when stderr is not a terminal."""

    def __init__(self, stream: TextIO | None = None, enabled: bool = True) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.started = time.monotonic()
        self.width = 0

    def __call__(self, message: str) -> None:
        if not self.enabled or not message:
            return
        elapsed = time.monotonic() - self.started
        line = f"pipedoctor [{elapsed:5.1f}s] {message}"
        if self.tty:
            padding = " " * max(0, self.width - len(line))
            self.stream.write(f"\r{line}{padding}")
            self.width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def done(self) -> None:
        if self.enabled and self.tty and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0
