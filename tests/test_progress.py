"""The progress line: rewritten in place and ticking on a terminal, plain lines in a log."""

from __future__ import annotations

import io
import time

import pytest

from pipedoctor.progress import Progress


def test_a_live_line_names_the_phase_and_keeps_ticking_during_a_long_phase() -> None:
    stream = io.StringIO()
    progress = Progress(stream, live=True, tick_s=0.05)
    progress("measuring the compute ceiling (synthetic batches, no input cost)")
    progress("reading the pipeline's graph: per-stage rates and what-if fixes")
    time.sleep(0.5)  # nothing new is said, yet the line is redrawn with the time so far
    progress.done()
    frames = [f for f in stream.getvalue().split("\r") if f.strip()]
    graph = [f for f in frames if "reading the pipeline's graph" in f]
    assert frames[0].startswith("pipedoctor [2/4] [")
    assert graph[0].startswith("pipedoctor [4/4] [") and len(graph) >= 4
    stamps = [float(f.split("[")[2].split("s]")[0]) for f in graph]
    assert stamps == sorted(stamps) and stamps[-1] > stamps[0]
    assert stream.getvalue().endswith("\r")  # the line is cleared at the end


def test_a_log_gets_each_message_once_on_its_own_line() -> None:
    stream = io.StringIO()
    progress = Progress(stream, live=False, tick_s=0.05)
    progress("measuring the input pipeline alone")
    time.sleep(0.2)
    progress.done()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("] measuring the input pipeline alone")
    assert "\r" not in stream.getvalue()


def test_in_a_real_jupyter_kernel_the_line_is_one_display_that_updates() -> None:
    # A notebook run by a real IPython kernel (nbclient), as a user's cell runs: the kernel is
    # recognised, and the line is one display updated in place while a long phase ticks, so
    # the saved notebook holds one output, not a stderr output per rewrite.
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel")
    cell = (
        "import time\n"
        "from pipedoctor.progress import Progress, in_notebook\n"
        "print(in_notebook())\n"
        "shown = Progress(tick_s=0.2)\n"
        "shown('measuring the input pipeline alone')\n"
        "time.sleep(1.0)\n"
        'shown("reading the pipeline\'s graph: per-stage rates")\n'
        "time.sleep(0.5)\n"
        "shown.done()\n"
    )
    updates: list[str] = []

    class Recording(nbclient.NotebookClient):  # type: ignore[misc, name-defined]
        def process_message(self, msg, cell, cell_index):  # noqa: ANN001, ANN201
            if msg["msg_type"] == "update_display_data":
                updates.append(msg["content"]["data"]["text/plain"])
            return super().process_message(msg, cell, cell_index)

    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    Recording(notebook, timeout=120, kernel_name="python3").execute()
    outputs = notebook.cells[0].outputs
    stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    assert stdout.strip() == "True"  # the kernel is seen as a notebook
    assert not [o for o in outputs if o.get("name") == "stderr"]
    displays = [o for o in outputs if o["output_type"] == "display_data"]
    assert len(displays) == 1 and displays[0]["data"]["text/plain"] == ""  # cleared at the end
    assert any("[1/4]" in u for u in updates) and any("[4/4]" in u for u in updates)
    assert len(updates) >= 5  # ticking while the phase ran, then cleared
    assert all("\n" not in u for u in updates)  # one line each time
