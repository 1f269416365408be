"""Take the documentation's screenshots from the HTML reports kept beside them, in headless
Chromium, so an image in the docs is always a rendering of a real report, never an edited one.

    python docs/screenshots.py                    # every report listed in PAGES
    python docs/screenshots.py --browser /usr/bin/chromium monitor-report.html

Each PNG is the whole page at the width the report is laid out for (no scroll bars, no
cropping by hand). The reports come from real runs: ``docs/monitor_example.py`` (then
``pipedoctor report OUT_DIR/logs --format html -o docs/monitor-report.html``) and
``docs/compare_example.py`` (then ``pipedoctor compare ... --format html -o
docs/compare.html``). Standard library only: Chromium is driven through the DevTools protocol
on a pipe (``--remote-debugging-pipe``), so neither Playwright nor a WebSocket client is needed.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parent
PAGES = {"monitor-report.html": 820, "compare.html": 720}
"""Each report and the width in CSS pixels its card is laid out for."""
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


class DevTools:
    """A Chromium started headless with the DevTools protocol on two pipes: commands go to its
    file descriptor 3, answers and events come from its descriptor 4, NUL-terminated."""

    def __init__(self, browser: str) -> None:
        to_browser, self._commands = os.pipe()
        self._answers, from_browser = os.pipe()
        flags = ["--headless", "--remote-debugging-pipe", "--hide-scrollbars", "--disable-gpu"]
        if os.geteuid() == 0:
            flags.append("--no-sandbox")  # Chromium refuses to start as root with its sandbox
        self.process = subprocess.Popen(
            [browser, *flags, "about:blank"],
            preexec_fn=_on_fds_3_and_4(to_browser, from_browser),
            close_fds=False,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser)
        os.close(from_browser)
        self._buffer = b""
        self._next_id = 0

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        """Call ``method`` and wait for its answer (events that arrive meanwhile are dropped)."""
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        while True:
            answer = self._read()
            if answer.get("id") == self._next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method}: {answer['error'].get('message')}")
                return answer.get("result", {})

    def wait_for(self, event: str) -> None:
        while self._read().get("method") != event:
            pass

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._answers, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed its DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except (OSError, RuntimeError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
        os.close(self._commands)
        os.close(self._answers)


def _on_fds_3_and_4(read_end: int, write_end: int) -> Callable[[], None]:
    """In the child, before exec: the two pipe ends become descriptors 3 and 4, where
    ``--remote-debugging-pipe`` looks for them (moved up first, so neither overwrites the
    other)."""

    def wire() -> None:
        read_high = fcntl.fcntl(read_end, fcntl.F_DUPFD, 10)
        write_high = fcntl.fcntl(write_end, fcntl.F_DUPFD, 10)
        os.dup2(read_high, 3)
        os.dup2(write_high, 4)

    return wire


def screenshot(tools: DevTools, page: Path, width: int, out: Path) -> None:
    """The whole of ``page`` at ``width`` CSS pixels as a PNG."""
    target = tools.send("Target.createTarget", url="about:blank")["targetId"]
    session = tools.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    tools.send("Page.enable", session)
    metrics = {"width": width, "height": 600, "deviceScaleFactor": 1, "mobile": False}
    tools.send("Emulation.setDeviceMetricsOverride", session, **metrics)
    tools.send("Page.navigate", session, url=page.resolve().as_uri())
    tools.wait_for("Page.loadEventFired")
    size = tools.send("Page.getLayoutMetrics", session)["cssContentSize"]
    metrics["height"] = math.ceil(size["height"])
    tools.send("Emulation.setDeviceMetricsOverride", session, **metrics)
    shot = tools.send("Page.captureScreenshot", session, format="png")
    out.write_bytes(base64.b64decode(shot["data"]))
    tools.send("Target.closeTarget", targetId=target)


def find_browser(given: str | None) -> str:
    found = given or next((b for b in map(shutil.which, BROWSERS) if b), None)
    if not found:
        sys.exit(f"no Chromium found (looked for {', '.join(BROWSERS)}): pass --browser PATH")
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pages", nargs="*", help="reports in docs/ (default: all of PAGES)")
    parser.add_argument("--browser", help="a Chromium or Chrome executable")
    args = parser.parse_args()
    names = args.pages or list(PAGES)
    tools = DevTools(find_browser(args.browser))
    try:
        for name in names:
            page = DOCS / name
            out = page.with_suffix(".png")
            screenshot(tools, page, PAGES.get(page.name, 820), out)
            print(f"{out.relative_to(DOCS.parent)}: from {page.relative_to(DOCS.parent)}")
    finally:
        tools.close()


if __name__ == "__main__":
    main()
