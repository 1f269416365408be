"""`pipedoctor check SCRIPT` end to end: real child processes, real scripts, real timeouts."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

INPUT_BOUND = """\
import sys
import time

import keras
import numpy as np
import tensorflow as tf

print("epochs from argv:", sys.argv[1:])


def wait(x):
    time.sleep(0.002)
    return x


def slow(x, y):
    x = tf.py_function(wait, [x], tf.float32)
    x.set_shape((16,))
    return x, y


x = np.zeros((4096, 16), "float32")
y = np.zeros((4096,), "int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).map(slow).batch(32)
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=int(sys.argv[2]))
raise SystemExit("the script must not get here: training was to be stopped")
"""


def check(*args: str, cwd: Path, timeout: float = 150) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=timeout,
    )


# Three epochs of about 8 s each after a check of at most RUN_AFTER_BUDGET s: longer than the
# check's budget and than any wait inside pipedoctor (the old code killed the script after 10 s).
RUN_AFTER = INPUT_BOUND.replace(
    "model.fit(ds, epochs=int(sys.argv[2]))",
    "history = model.fit(ds, epochs=int(sys.argv[2]), verbose=2)",
).replace(
    'raise SystemExit("the script must not get here: training was to be stopped")',
    "open('trained.txt', 'w').write(str(len(history.epoch)))\nraise SystemExit(3)",
)

RUN_AFTER_BUDGET = 30
"""The run-after check's budget: its verdict, which the test reads, needs its three rates
timed beside another check on two cores (at 20 s one came back inconclusive there)."""

SLOW_CHECKS = {
    "run_after": (
        RUN_AFTER,
        ["--format", "json", "--timeout", str(RUN_AFTER_BUDGET), "--run-after", "--ignore", "PD108",
         "--", "--epochs", "3"],
    ),
    "gate": (
        INPUT_BOUND,
        ["--format", "json", "--timeout", "45", "--fail-on", "input-bound", "--devices", "8",
         "--ignore", "PD108", "--", "--epochs", "5"],
    ),
    **{
        f"min_ratio_to_file={to_file}": (
            INPUT_BOUND,
            ["--format", "json", "--timeout", "20", "--min-ratio", "0.95",
             *(["-o", "report.json"] if to_file else []), "--show-output", "-q",
             "--", "--epochs", "5"],
        )
        for to_file in (True, False)
    },
}  # fmt: skip
"""The checks of the input-bound script (as ``train.py`` in a folder of its own) that the
tests below assert on, by name: the script and the arguments after it; longest first (about
55, 45, 18 and 18 s)."""
SLOW_LANES = 2
"""The input-bound script's checks run two at a time, as the style matrix's do: its pipeline
sleeps 2 ms per example on one thread, so two of them keep well under the 2 cores busy."""


@dataclass
class Ran:
    done: subprocess.CompletedProcess[str]
    folder: Path
    before: list[str]
    """What the folder held before the check."""
    seconds: float


def run_slow_check(name: str, folder: Path) -> Ran:
    source, args = SLOW_CHECKS[name]
    (folder / "train.py").write_text(source)
    before = sorted(p.name for p in folder.iterdir())
    started = time.monotonic()
    done = check("train.py", *args, cwd=folder, timeout=240)
    return Ran(done, folder, before, time.monotonic() - started)


@pytest.fixture(scope="module")
def slow_checks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    """The selected tests' checks of the input-bound script, all run (in ``SLOW_LANES``
    lanes, longest first) before the first of those tests asserts, so that nothing else runs
    beside them."""
    wanted = {
        name
        for item in request.session.items
        if item.module is request.module
        for name in getattr(item.obj, "slow_checks", lambda _: ())(item)
    }
    with ThreadPoolExecutor(SLOW_LANES) as lanes:
        running = {
            name: lanes.submit(run_slow_check, name, tmp_path_factory.mktemp(name))
            for name in SLOW_CHECKS
            if name in wanted
        }
        return {name: future.result() for name, future in running.items()}


def uses(*names: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Marks a test as asserting on these checks of ``SLOW_CHECKS``; for a parametrised test,
    a name with ``{param}`` in it is the check of each case."""

    def checks_of(item: pytest.Function) -> list[str]:
        params = getattr(item, "callspec", None)
        return [name.format(**(params.params if params else {})) for name in names]

    def mark(test: Callable[..., None]) -> Callable[..., None]:
        test.slow_checks = checks_of  # type: ignore[attr-defined]
        return test

    return mark


@uses("gate")
def test_input_bound_script_json_gate_and_clean_directory(slow_checks) -> None:
    ran = slow_checks["gate"]
    done = ran.done
    assert done.returncode == 1, done.stderr[-3000:]
    data = json.loads(done.stdout)  # stdout is only the JSON: progress went to stderr
    assert data["verdict"] == "input-bound"
    m = data["measurements"]
    for key in (
        "pipeline_samples_per_s",
        "ceiling_samples_per_s",
        "training_samples_per_s",
        "replicas",
        "host_cpu_percent",
        "gpus",
    ):
        assert key in m
    assert m["gpus"] == [] and m["gpu_note"] == "no NVIDIA GPU visible: GPU sampling skipped"
    # the devices this pipeline feeds: the pipeline over one device's step, as reported
    fed = m["decision"]["devices_fed_today"]
    assert fed == round(m["pipeline_samples_per_s"] / m["ceiling_samples_per_s"], 2)
    assert m["decision"]["projection"]["input_keeps_up_today"] is False
    assert m["decision"]["next_step"].startswith("step 1 of 3, fix the input pipeline")
    rules = [f["rule"] for f in data["findings"]]
    assert rules[0] == "PD301" and "PD102" in rules  # the verdict leads; static findings too
    pd301 = data["findings"][0]
    assert "gain" not in pd301 and pd301["headroom"] > 1  # an upper bound, not a measured gain
    # Then the fixes measured to pay off, largest end-to-end gain first, then the rest by
    # severity; on a saturated host (PD302) the fixes that only add parallelism come after.
    later = {"PD101", "PD102", "PD103", "PD104"} if "PD302" in rules else set()
    severity = {"error": 3, "warning": 2, "info": 1}
    for group in (
        [f for f in data["findings"][1:] if f["rule"] not in later],
        [f for f in data["findings"][1:] if f["rule"] in later],
    ):
        gains = [f.get("end_to_end_gain") or f.get("gain") or 1.0 for f in group]
        paying = [g for g in gains if g >= 1.05]
        assert gains[: len(paying)] == sorted(paying, reverse=True)
        rest = [severity[f["severity"]] for f in group[len(paying) :]]
        assert rest == sorted(rest, reverse=True)
    assert "PD108" not in rules  # ignored by the user: neither the source nor the graph reports it
    assert next(f for f in data["findings"] if f["rule"] == "PD102")["path"] == "train.py"
    assert "gate failed: the verdict is input-bound" in done.stderr
    assert "measuring" in done.stderr
    assert sorted(p.name for p in ran.folder.iterdir()) == ran.before


def alive(pid: int) -> bool:
    """Running (a zombie left for a container's init to reap does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    status = Path(f"/proc/{pid}/status")
    return not (status.exists() and "\nState:\tZ" in status.read_text())


def test_a_script_that_raises_shows_its_own_traceback(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text(
        textwrap.dedent(
            """\
            def load():
                raise FileNotFoundError("data/train.csv")

            load()
            """
        )
    )
    done = check("broken.py", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert 'broken.py", line 2, in load' in done.stderr
    assert "FileNotFoundError: data/train.csv" in done.stderr
    assert "pipedoctor/" not in done.stderr.replace("pipedoctor: error", "")
    assert done.stderr.strip().splitlines()[-1].startswith("pipedoctor: error: the script raised")


def stuck_script(tmp_path: Path) -> Path:
    """A script that starts a child of its own and never trains; returns where the child's pid
    will be written. The child is not Python (a Python child is refused before it starts: see
    test_check_processes)."""
    marker = tmp_path / "child.pid"
    (tmp_path / "stuck.py").write_text(
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '300'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(300)\n"
    )
    return marker


def test_a_script_that_never_trains_times_out_and_leaves_nothing_running(tmp_path: Path) -> None:
    marker = stuck_script(tmp_path)
    started = time.monotonic()
    done = check("stuck.py", "--timeout", "12", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert time.monotonic() - started < 30
    assert "did not start training within 12 s" in done.stderr
    grandchild = int(marker.read_text())
    time.sleep(0.5)
    assert not alive(grandchild)


def test_a_script_that_ends_without_training(tmp_path: Path) -> None:
    (tmp_path / "plain.py").write_text("print('no training here')\n")
    done = check("plain.py", cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert "without starting training" in done.stderr


def test_missing_script_and_bad_options_are_usage_errors(tmp_path: Path) -> None:
    assert "no such script" in check("nope.py", cwd=tmp_path).stderr
    bad = check("nope.py", "--fail-on", "slow", cwd=tmp_path)
    assert bad.returncode == 2 and "unknown value 'slow'" in bad.stderr


CUSTOM_LOOP = """\
import numpy as np
import tensorflow as tf

strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
x = np.zeros((512, 8), "float32")
ds = tf.data.Dataset.from_tensor_slices(x).batch(16).prefetch(tf.data.AUTOTUNE)
for batch in strategy.experimental_distribute_dataset(ds):
    pass
"""


def test_custom_training_loop_is_timed_in_place(tmp_path: Path) -> None:
    (tmp_path / "loop.py").write_text(CUSTOM_LOOP)
    done = check("loop.py", "--format", "json", "--timeout", "30", cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr[-3000:]
    m = json.loads(done.stdout)["measurements"]
    assert m["pipeline_samples_per_s"] > 0 and m["training_samples_per_s"] > 0
    # The loop's body does nothing: fed one batch over and over, it runs far faster.
    assert m["ceiling_samples_per_s"] > m["training_samples_per_s"]
    assert m["strategy"] == "OneDeviceStrategy" and m["batch_size"] == 16


@uses("run_after")
def test_run_after_trains_to_the_end_report_first_with_the_scripts_exit_code(slow_checks) -> None:
    ran = slow_checks["run_after"]
    done = ran.done
    assert done.returncode == 3, done.stderr[-3000:]  # the script's own exit code
    assert ran.seconds > RUN_AFTER_BUDGET  # past its budget: it trained on
    assert json.loads(done.stdout)["verdict"] == "input-bound"  # the report, alone on stdout
    assert (ran.folder / "trained.txt").read_text() == "3"  # every epoch ran
    after = done.stderr.split("the script trains on (--run-after)", 1)[1]
    assert "Epoch 3/3" in after and "exit code 3" in after
    assert sorted(p.name for p in ran.folder.iterdir()) == ["train.py", "trained.txt"]


def test_ctrl_c_stops_the_check_and_its_children(tmp_path: Path) -> None:
    import signal

    marker = stuck_script(tmp_path)
    process = subprocess.Popen(
        [sys.executable, "-m", "pipedoctor", "check", "stuck.py", "--timeout", "120"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        # As from a terminal: Ctrl-C at its default. A disposition a library in this test
        # process may have set to "ignore" is inherited through exec, and Python then leaves
        # it ignored. Where the check hangs anyway, SIGABRT makes it print its stack.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        env={**os.environ, "PYTHONFAULTHANDLER": "1"},
    )  # fmt: skip
    deadline = time.monotonic() + 60
    while not marker.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert marker.exists(), "the script never started"
    process.send_signal(signal.SIGINT)
    try:
        _, stderr = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGABRT)  # its stack, where it hangs, then its end
        try:
            _, stderr = process.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()  # never left running: later tests count the processes they leave
            _, stderr = process.communicate()
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(marker.read_text()), signal.SIGKILL)
        pytest.fail(f"the check did not stop within 60 s of Ctrl-C; its stderr: {stderr[-3000:]}")
    assert process.returncode == 2
    assert "interrupted" in stderr and "Traceback" not in stderr
    time.sleep(0.5)
    assert not alive(int(marker.read_text()))


@pytest.mark.parametrize("to_file", [True, False])
@uses("min_ratio_to_file={to_file}")
def test_min_ratio_output_file_and_the_scripts_own_output(slow_checks, to_file: bool) -> None:
    ran = slow_checks[f"min_ratio_to_file={to_file}"]
    done = ran.done
    assert done.returncode == 1, done.stderr[-3000:]
    # --show-output: the script's own output, on stderr; stdout belongs to the report (which
    # parses as JSON there), or stays empty when the report goes to a file
    text = (ran.folder / "report.json").read_text() if to_file else done.stdout
    data = json.loads(text)
    m = data["measurements"]
    ratio = m["training_samples_per_s"] / m["ceiling_samples_per_s"]
    assert ratio < 0.95
    assert f"training reaches {ratio:.2f} of the compute ceiling (< 0.95)" in done.stderr
    assert "epochs from argv: ['--epochs', '5']" in done.stderr
    assert done.stdout == ("" if to_file else text)


@pytest.mark.parametrize(
    "args, message",
    [
        (["--demo", "other.py"], "--demo checks the bundled demo: drop it to check other.py"),
        (["train.py", "--timeout", "nan"], "--timeout must be a positive number of seconds"),
        (["train.py", "--timeout", "inf"], "--timeout must be a positive number of seconds"),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(
    tmp_path: Path, args: list[str], message: str
) -> None:
    (tmp_path / "train.py").write_text("print('never run')\n")
    done = check(*args, cwd=tmp_path, timeout=60)
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"pipedoctor: error: {message}"]


def test_the_gate_reads_the_ratio_from_the_report() -> None:
    from pipedoctor.cli import gate_failed
    from pipedoctor.report import Report

    report = Report(
        verdict="compute-bound",
        measurements={"training_samples_per_s": 900.0, "ceiling_samples_per_s": 1000.0},
    )
    assert gate_failed(report, [], 0.85) is None
    assert gate_failed(report, [], 0.95) == "training reaches 0.90 of the compute ceiling (< 0.95)"
    assert gate_failed(report, ["compute-bound"], None) == "the verdict is compute-bound"
    assert "were not measured" in gate_failed(Report(verdict="input-bound"), [], 0.5)
