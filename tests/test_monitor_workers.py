"""The monitor in real processes: two logical replicas, a two-process multi-worker job, and a
worker killed mid-run; then ``pipedoctor report`` over the per-worker records they left."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).parent / "monitored_training.py"


def free_ports(count: int) -> list[int]:
    sockets = [socket.socket() for _ in range(count)]
    for s in sockets:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in sockets]
    for s in sockets:
        s.close()
    return ports


def start(out: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(SCRIPT), str(out), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )


def finish(process: subprocess.Popen, timeout: float = 180) -> str:
    output, _ = process.communicate(timeout=timeout)
    return output


def tf_config(ports: list[int], index: int) -> str:
    workers = [f"localhost:{port}" for port in ports]
    return json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker", "index": index}})


def pipedoctor(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", *args], capture_output=True, text=True, timeout=120
    )


def test_two_logical_replicas_count_the_global_batch_and_learn_the_same(tmp_path: Path) -> None:
    out = tmp_path / "out.json"
    output = finish(start(out, "--strategy", "mirrored", "--twice", "--steps", "20"))
    assert out.exists(), output
    result = json.loads(out.read_text())
    m = result["report"]["measurements"]
    assert (m["replicas"], m["strategy"], m["batch_size"]) == (2, "MirroredStrategy", 32)
    counted = [e["steps"] for e in m["epochs"]]
    assert [e["samples"] for e in m["epochs"]] == [32 * n for n in counted]
    assert result["weights"] == result["plain_weights"]  # bit for bit: the monitor changes nothing


def test_a_two_process_multi_worker_job_is_watched_per_worker(tmp_path: Path) -> None:
    ports = free_ports(2)
    logs = tmp_path / "logs"
    common = ["--strategy", "multiworker", "--log-dir", str(logs), "--steps", "16"]
    chief = start(tmp_path / "w0.json", *common, env={"TF_CONFIG": tf_config(ports, 0)})
    slow = start(
        tmp_path / "w1.json", *common, "--input-ms", "80", env={"TF_CONFIG": tf_config(ports, 1)}
    )
    chief_output, slow_output = finish(chief), finish(slow)
    assert (tmp_path / "w0.json").exists(), chief_output
    assert "pipedoctor[worker-0] epoch 1/2" in chief_output
    assert "pipedoctor[worker-1] epoch 1/2" in slow_output
    report = json.loads((tmp_path / "w0.json").read_text())["report"]
    m = report["measurements"]
    assert (m["worker"], m["strategy"]) == ("worker-0", "CollectiveAllReduceStrategy")
    workers = m["per_worker"]
    assert [w["worker"] for w in workers] == ["worker-0", "worker-1"]
    assert [w["steps"] for w in workers][0] == workers[1]["steps"] > 0
    # Every dequeue waits for both workers' batches: the chief waits for worker 1's input too.
    wait = m["input_wait_fraction"] if m["input_wait_fraction"] is not None else (
        m["input_wait_estimate"]
    )  # fmt: skip
    assert wait > 0.4
    # So the workers' figures mostly come out alike; each one's own pipeline, read alone after
    # the last epoch, tells them apart, and PD307 names the slow one (from the probes, or from
    # the waits where they happened to differ).
    fast, slow_alone = (w["pipeline_samples_per_s"] for w in workers)
    assert slow_alone < 16 / 0.08 * 1.1 < 10 * slow_alone < fast
    assert "pipedoctor[worker-1] own pipeline alone:" in slow_output
    (straggler,) = [f for f in report["findings"] if f["rule"] == "PD307"]
    assert straggler["message"].startswith("Worker worker-1")
    assert f"{slow_alone:,.0f} samples/s against {fast:,.0f}" in straggler["message"]
    assert sorted(p.name for p in (logs / "pipedoctor").glob("*.json")) == [
        "worker-0.json",
        "worker-1.json",
    ]
    assert any((logs / "pipedoctor" / "worker-1").glob("events.out.tfevents.*"))

    # Afterwards, from the files alone: the same workers.
    done = pipedoctor("report", str(logs), "--format", "json")
    assert done.returncode == 0, done.stderr
    again = json.loads(done.stdout)
    assert [w["worker"] for w in again["measurements"]["per_worker"]] == ["worker-0", "worker-1"]
    assert [f["message"] for f in again["findings"] if f["rule"] == "PD307"] == [
        straggler["message"]
    ]
    text = pipedoctor("report", str(logs)).stdout
    assert "Throughput (samples/s on worker-0)" in text  # one worker's rates, said so
    assert "batch 16 per worker on 2 replicas over 2 workers" in text
    assert "worker-1 " in text and "own pipeline alone" in text
    page = pipedoctor("report", str(logs), "--format", "html")
    assert page.returncode == 0 and page.stdout.startswith("<!DOCTYPE html>")


def test_a_worker_killed_mid_run_is_a_note_and_the_chief_finishes(tmp_path: Path) -> None:
    ports = free_ports(2)  # named in TF_CONFIG only: the two train independently here
    logs = tmp_path / "logs"
    common = ["--log-dir", str(logs), "--input-ms", "25", "--steps", "30"]
    chief = start(
        tmp_path / "w0.json", *common, "--epochs", "3", "--wait-for-workers", "2",
        env={"TF_CONFIG": tf_config(ports, 0)},
    )  # fmt: skip
    doomed = start(
        tmp_path / "w1.json", *common, "--epochs", "3", "--kill-after-epoch", "1",
        env={"TF_CONFIG": tf_config(ports, 1)},
    )  # fmt: skip
    finish(doomed)
    assert doomed.returncode == -9
    output = finish(chief)
    assert chief.returncode == 0, output
    report = json.loads((tmp_path / "w0.json").read_text())["report"]
    assert any("worker-1 stopped reporting after epoch 1" in n for n in report["notes"])
    assert len(report["measurements"]["epochs"]) == 3

    done = pipedoctor("report", str(logs))
    assert done.returncode == 0
    assert "worker-1 stopped reporting after epoch 1" in done.stdout


@pytest.mark.parametrize(
    ("content", "message"),
    [(None, "no such file or folder"), ("{not json", "invalid JSON"), ("[1]", "not a pipedoctor")],
)
def test_report_on_bad_input_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    path = tmp_path / "worker-0.json"
    if content is not None:
        path.write_text(content)
    done = pipedoctor("report", str(path))
    assert done.returncode == 2
    assert message in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_on_jax_the_monitor_times_python_dequeues_and_changes_nothing(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    out = tmp_path / "jax.json"
    output = finish(
        start(out, "--twice", "--input-ms", "40", "--steps", "20", env={"KERAS_BACKEND": "jax"})
    )
    assert out.exists(), output
    result = json.loads(out.read_text())
    report = result["report"]
    assert report["measurements"]["backend"] == "jax"
    assert report["verdict"] == "input-bound"
    assert report["measurements"]["input_wait_fraction"] > 0.5
    assert result["weights"] == result["plain_weights"]
