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


def test_in_a_real_jupyter_kernel_the_line_is_rewritten_and_ticks() -> None:
    # A notebook run by a real IPython kernel (nbclient), as a user's cell runs: the kernel is
    # recognised, and the one line is rewritten in place while a long phase ticks.
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
        "shown(\"reading the pipeline's graph: per-stage rates\")\n"
        "time.sleep(0.5)\n"
        "shown.done()\n"
    )
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    client = nbclient.NotebookClient(notebook, timeout=120, kernel_name="python3")
    client.execute()
    outputs = notebook.cells[0].outputs
    stdout = "".join(o.get("text", "") for o in outputs if o.get("name") == "stdout")
    stderr = "".join(o.get("text", "") for o in outputs if o.get("name") == "stderr")
    assert stdout.strip() == "True"  # the kernel is seen as a notebook
    assert "[1/4]" in stderr and "[4/4]" in stderr
    assert stderr.count("\r") >= 4  # rewritten in place, and ticking while the phase ran
    assert "\n" not in stderr.rstrip("\n")  # one line, not a log of lines
