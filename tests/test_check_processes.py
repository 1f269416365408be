"""The processes of a checked job: a child that would train is never started, `fit` in a thread
is measured, and no process the script started outlives the check (real processes, psutil).

Each script runs from a folder holding the user's files; their bytes are compared before and
after, and every process left is looked for."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

psutil = pytest.importorskip("psutil")
pytest.importorskip("tensorflow")

SCRIPTS = Path(__file__).resolve().parent / "data" / "processes"
USER_MODEL = b"the user's trained weights"


def user_folder(tmp_path: Path, script: str) -> Path:
    """A working folder as a user has it: the script, its trainer, a saved model and old
    checkpoints the script would delete after training."""
    for name in (script, "trainer.py"):
        shutil.copy(SCRIPTS / name, tmp_path / name)
    (tmp_path / "model.keras").write_bytes(USER_MODEL)
    (tmp_path / "old_checkpoints").mkdir()
    (tmp_path / "old_checkpoints" / "ckpt-1").write_bytes(b"kept")
    return tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def check(folder: Path, script: str, timeout: str = "60") -> subprocess.CompletedProcess[str]:
    """A check that measures and judges, without timing pipeline fixes (``--select PD2,PD3``):
    what these tests look at is where training runs, not what its pipeline could gain."""
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", script, "--format", "json",
         "--timeout", timeout, "--quiet", "--select", "PD2,PD3"],
        capture_output=True, text=True, cwd=folder, timeout=300,
    )  # fmt: skip


def our_descendants() -> list[int]:
    """Processes of this test's tree still alive (not zombies waiting to be reaped)."""
    alive = []
    for child in psutil.Process().children(recursive=True):
        try:
            if child.status() != psutil.STATUS_ZOMBIE:
                alive.append(child.pid)
        except psutil.Error:
            continue
    return alive


@pytest.mark.parametrize(
    "script, named",
    [
        ("subprocess_launcher.py", "a Python child process (`"),
        ("shell_launcher.py", "a Python child process (`"),
        ("system_launcher.py", "a Python child process (`"),
        ("spawn_launcher.py", "a `multiprocessing` process running `train`"),
        ("fork_launcher.py", "a child process made with `os.fork()`"),
    ],
)
def test_a_child_that_would_train_is_never_started(tmp_path: Path, script: str, named: str) -> None:
    folder = user_folder(tmp_path, script)
    before = snapshot(folder)
    done = check(folder, script)
    assert done.returncode == 2, done.stdout + done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("pipedoctor: error: the script starts ") and named in last
    assert "check the script the child runs" in last and "Traceback" not in done.stderr
    assert snapshot(folder) == before  # the model, the old checkpoints: every byte
    assert our_descendants() == []


def test_a_helper_in_a_session_of_its_own_does_not_outlive_the_check(tmp_path: Path) -> None:
    shutil.copy(SCRIPTS / "new_session.py", tmp_path)
    done = check(tmp_path, "new_session.py", timeout="8")
    assert done.returncode == 2 and "did not start training within 8 s" in done.stderr
    pid = int((tmp_path / "helper.pid").read_text())
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert our_descendants() == []


def test_fit_in_a_thread_of_its_own_is_measured(tmp_path: Path) -> None:
    folder = user_folder(tmp_path, "thread_fit.py")
    before = snapshot(folder)
    done = check(folder, "thread_fit.py")
    assert done.returncode in (0, 1), done.stderr[-2000:]
    data = json.loads(done.stdout)
    for name in ("pipeline", "ceiling", "training"):
        assert data["measurements"][f"{name}_samples_per_s"] > 0, name
    assert data["verdict"] in ("input-bound", "balanced", "compute-bound", "inconclusive")
    assert snapshot(folder) == before  # the save after `fit` never ran
    assert our_descendants() == []


def test_the_output_tail_is_read_from_the_end(tmp_path: Path) -> None:
    """A script that printed a gigabyte costs the check only the tail it shows."""
    import tracemalloc

    from pipedoctor.capture.processes import tail_of

    log = tmp_path / "output.log"
    with open(log, "wb") as handle:
        handle.truncate(200 * 2**20)  # 200 MB of zeros, then the last words
        handle.seek(0, os.SEEK_END)
        handle.write(b"\nthe last line of the script\n")
    tracemalloc.start()
    tail = tail_of(log, 4000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert tail.endswith("the last line of the script\n") and len(tail) == 4000
    assert peak < 2**20  # kilobytes, not the file
