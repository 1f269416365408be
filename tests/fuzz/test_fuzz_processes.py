"""The command lines a checked script may start before training, in every shape a launcher
writes them: whether a child runs Python (and so could train out of the check's reach) is
read the same way from an argument list, a shell's ``-c`` line, ``os.system`` and wrappers
(``env``, ``nohup``, ``timeout``), on a seeded, deterministic budget."""

from __future__ import annotations

import shlex
import sys

import pytest

pytest.importorskip("hypothesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pipedoctor.capture.processes import runs_python, shell_runs_python  # noqa: E402

CI = settings(
    deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)

PYTHONS = ["python", "python3", "python3.11", "/usr/bin/python3", "/opt/conda/bin/python",
           "pypy3", sys.executable]  # fmt: skip
OTHERS = ["git", "nvidia-smi", "ls", "/usr/bin/rsync", "echo", "make", "pythonic-tool"]
WRAPPERS = [[], ["env"], ["env", "CUDA_VISIBLE_DEVICES=0"], ["nohup"], ["nice", "-n", "10"],
            ["timeout", "30s"], ["exec"], ["time"]]  # fmt: skip
SHELLS = ["sh", "/bin/sh", "bash", "/usr/bin/env bash"]


@st.composite
def commands(draw: st.DrawFn) -> tuple[list[str], bool]:
    """One program's words and whether it runs Python other than ``pip``."""
    assignments = draw(st.lists(st.sampled_from(["A=1", "TF_CPP_MIN_LOG_LEVEL=2"]), max_size=2))
    wrapper = draw(st.sampled_from(WRAPPERS))
    if draw(st.booleans()):
        program = draw(st.sampled_from(PYTHONS))
        rest = draw(st.sampled_from([["train.py", "--epochs", "3"], ["-m", "trainer.task"],
                                     ["-m", "pip", "install", "x"], ["-c", "print(1)"],
                                     ["-u", "train.py"]]))  # fmt: skip
        python = rest[:2] != ["-m", "pip"]
    else:
        program = draw(st.sampled_from(OTHERS))
        rest = draw(st.sampled_from([[], ["--version"], ["python", "is", "text", "here"]]))
        python = False
    return [*assignments, *wrapper, program, *rest], python


@st.composite
def command_lines(draw: st.DrawFn) -> tuple[str, bool]:
    """A shell command line of one to three commands joined by operators, maybe nested in
    another shell's ``-c``, and whether any of them runs Python."""
    parts = draw(st.lists(commands(), min_size=1, max_size=3))
    operators = draw(st.lists(st.sampled_from([" ; ", " && ", " || ", " | ", "; "]),
                              min_size=len(parts), max_size=len(parts)))  # fmt: skip
    line = "".join(
        (operators[i - 1] if i else "") + shlex.join(words) for i, (words, _) in enumerate(parts)
    )
    python = any(runs for _, runs in parts)
    if draw(st.booleans()):
        line = f"{draw(st.sampled_from(SHELLS))} -c {shlex.quote(line)}"
    return line, python


@settings(CI, max_examples=200)
@given(commands())
def test_an_argument_list_runs_python_exactly_when_it_does(command: tuple[list[str], bool]) -> None:
    words, python = command
    assert (runs_python(None, words) is not None) is python, words


@settings(CI, max_examples=200)
@given(command_lines())
def test_a_shell_line_runs_python_exactly_when_one_of_its_commands_does(
    line: tuple[str, bool],
) -> None:
    text, python = line
    assert (shell_runs_python(text) is not None) is python, text
    # subprocess with shell=True hands the audit hook the shell and its ``-c`` arguments
    assert (runs_python("/bin/sh", ["/bin/sh", "-c", text]) is not None) is python, text
