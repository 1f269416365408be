"""Profiles both ways, on real captures made here on CPU: the Keras TensorBoard callback, the raw
profiler API, a MirroredStrategy job on two logical CPU devices, and ``check(profile=...)``."""

from __future__ import annotations

import gzip
import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from pipedoctor import diagnosis
from pipedoctor.checker import build_report
from pipedoctor.cli import main
from pipedoctor.profile import ProfileError, converters, timeline, xspace
from pipedoctor.profile.doctor import read_profile
from pipedoctor.rules import ALL_RULES

JOBS = Path(__file__).parent / "data" / "profile_jobs.py"


def tree(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def captures(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("tensorflow")
    out = tmp_path_factory.mktemp("profiles")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run(
        [sys.executable, str(JOBS), str(out)], capture_output=True, text=True, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def host_file(logdir: Path) -> Path:
    (found,) = logdir.rglob("*.xplane.pb")
    return found


def test_keras_callback_profile_has_no_step_xprof_knows_but_the_doctor_finds_them(
    captures: Path,
) -> None:
    logdir = captures / "callback"
    before = tree(logdir)
    xprof = converters.step_breakdown(converters.tool_data(host_file(logdir)))
    assert not xprof.step_ms and "No step time measured" in xprof.conclusion
    report = read_profile(logdir)
    (host,) = report.measurements["profile"]["hosts"]
    assert host["steps_from"] == "Keras step markers" and host["steps"] >= 3
    assert report.measurements["input_wait_fraction"] >= 0.5
    assert report.verdict == diagnosis.INPUT_BOUND
    rules = {f.rule for f in report.findings}
    assert {"PD301", "PD102"} <= rules  # the numpy_function map runs one element at a time
    assert "PD101" not in rules  # the pipeline ends with its own prefetch
    slowest = report.measurements["profile"]["slowest_stage"]
    assert slowest["stage"] == "MapAndBatch" and "MapDataset" in slowest["dataset"]
    assert tree(logdir) == before  # the converters' caches went elsewhere


def test_raw_profiler_api_steps_are_rebuilt_from_the_training_function(captures: Path) -> None:
    report = read_profile(captures / "raw")
    (host,) = report.measurements["profile"]["hosts"]
    assert host["steps_from"] == "training-function calls"
    assert "step_on_iterator" in host["training_function"]
    assert host["input_wait_fraction"] >= 0.5 and report.verdict == diagnosis.INPUT_BOUND


def test_a_custom_training_loop_waits_between_its_steps(captures: Path) -> None:
    """``for batch in dataset: train_step(batch)``: the wait is an eager GetNext on the Python
    thread between the function's calls, not inside them."""
    report = read_profile(captures / "loop")
    (host,) = report.measurements["profile"]["hosts"]
    assert host["training_function"] == "train_step"
    assert host["input_wait_fraction"] >= 0.5 and report.verdict == diagnosis.INPUT_BOUND


def test_a_compute_bound_profile_is_not_called_input_bound(captures: Path) -> None:
    report = read_profile(captures / "compute")
    assert report.measurements["input_wait_fraction"] < 0.2
    assert report.verdict == diagnosis.COMPUTE_BOUND
    assert not [f for f in report.findings if f.rule == "PD301"]


def test_each_replica_on_logical_devices_gets_its_own_wait_share(captures: Path) -> None:
    report = read_profile(captures / "replicas")
    devices = report.measurements["profile"]["devices"]
    assert [d["device"] for d in devices] == ["replica 0", "replica 1"]
    host = report.measurements["input_wait_fraction"]
    for device in devices:  # each replica waits at most as long as the host's union of waits
        assert 0.0 <= device["input_wait_fraction"] <= host + 1e-6


def with_gpu_planes(source: Path, target: Path, busy: tuple[float, ...]) -> Path:
    """The real two-replica capture plus one device plane per share in ``busy``: a stand-in
    for what the GPU tracer writes (no GPU here), kernels covering that share of every step."""
    space = xspace.load(host_file(source))
    host = timeline.host_plane(xspace.planes(space))
    steps = timeline.find_steps(host).spans
    base_ns = min(line.timestamp_ns for line in host.raw.lines)
    for index, share in enumerate(busy):
        plane = space.planes.add(id=100 + index, name=f"/device:GPU:{index}")
        plane.event_metadata[1].id = 1
        plane.event_metadata[1].name = "volta_sgemm_128x64_nn"
        line = plane.lines.add(id=1, name="Stream #7(Compute)", timestamp_ns=base_ns)
        for start, end in steps:
            length = int((end - start) * share)
            line.events.add(metadata_id=1, offset_ps=start - base_ns * 1000, duration_ps=length)
    out = target / "plugins" / "profile" / "run" / "gpuhost.xplane.pb"
    out.parent.mkdir(parents=True)
    out.write_bytes(space.SerializeToString())
    return target


def test_device_planes_give_busy_time_per_gpu_and_pd303_for_the_idle_one(
    captures: Path, tmp_path: Path
) -> None:
    logdir = with_gpu_planes(captures / "replicas", tmp_path / "gpus", (0.8, 0.15))
    report = read_profile(logdir)
    devices = {d["device"]: d for d in report.measurements["profile"]["devices"]}
    assert devices["device:GPU:0"]["busy_fraction"] == pytest.approx(0.8, abs=0.02)
    assert devices["device:GPU:1"]["busy_fraction"] == pytest.approx(0.15, abs=0.02)
    assert "input_wait_fraction" in devices["device:GPU:1"]  # replica 1 on the second GPU
    (idle,) = [f for f in report.findings if f.rule == "PD303"]
    assert "device:GPU:1" in idle.message and "busy only 15%" in idle.message


def test_several_hosts_are_compared_and_the_straggler_named(captures: Path) -> None:
    report = read_profile([captures / "compute", captures / "raw"])
    workers = report.measurements["per_worker"]
    assert len(workers) == 2 and workers[0]["worker"] != workers[1]["worker"]
    (straggler,) = [f for f in report.findings if f.rule == "PD307"]
    assert "(raw)" in straggler.message and "its input is slower" in straggler.message


def test_cli_profile_text_json_and_gate(captures: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["profile", str(captures / "raw")]) == 0
    text = capsys.readouterr().out
    assert "Input wait: " in text and "tensorboard --logdir" in text
    assert "Verdict: input-bound" in text
    assert main(["profile", str(captures / "raw"), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["verdict"] == "input-bound"
    assert data["measurements"]["profile"]["iterators"]
    assert main(["profile", str(captures / "raw"), "--fail-on", "input-bound"]) == 1
    assert main(["profile", str(captures / "compute"), "--fail-on", "input-bound"]) == 0


def test_reading_a_profile_never_imports_tensorflow(captures: Path) -> None:
    code = (
        "import sys, pipedoctor; r = pipedoctor.read_profile(sys.argv[1]); "
        "assert r.verdict and 'tensorflow' not in sys.modules, sorted(sys.modules)"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(captures / "raw")], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]


def write_space(path: Path, plane_names: list[str]) -> None:
    space = xspace.messages()["XSpace"]()
    for name in plane_names:
        space.planes.add(name=name)
    path.parent.mkdir(parents=True)
    path.write_bytes(space.SerializeToString())


@pytest.mark.parametrize("case", ["empty", "truncated", "unknown-version", "legacy", "missing"])
def test_bad_profiles_get_one_line_and_exit_2(
    case: str, captures: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    logdir = tmp_path / case
    run = logdir / "plugins" / "profile" / "2026_01_01_00_00_00"
    expected = {
        "empty": "no profiles here",
        "truncated": "truncated or corrupt",
        "unknown-version": "profiler version pipedoctor does not know",
        "legacy": "TensorFlow 2.1 or older",
        "missing": "no such file or folder",
    }[case]
    if case == "empty":
        logdir.mkdir()
    elif case == "truncated":
        run.mkdir(parents=True)
        data = host_file(captures / "raw").read_bytes()
        (run / "host.xplane.pb").write_bytes(data[: len(data) // 3])
    elif case == "unknown-version":
        write_space(run / "host.xplane.pb", ["/host:TPU_CORE_V9", "Task Environment"])
    elif case == "legacy":
        run.mkdir(parents=True)
        (run / "host.trace.json.gz").write_bytes(b"\x1f\x8b")
    assert main(["profile", str(logdir)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err and "Traceback" not in err
    with pytest.raises(ProfileError):
        read_profile(logdir)


def test_a_disagreement_between_the_profile_and_the_throughputs_is_reported() -> None:
    measurements = {
        "pipeline_samples_per_s": 9000.0, "ceiling_samples_per_s": 1000.0,
        "training_samples_per_s": 950.0, "input_wait_fraction": 0.6,
        "profile": {"hosts": [], "devices": [], "command": "tensorboard --logdir x"},
    }  # fmt: skip
    report = build_report(measurements, [], ALL_RULES)
    assert report.verdict == diagnosis.COMPUTE_BOUND
    assert report.measurements["profile"]["agrees"] is False
    assert any("the profile disagrees with the verdict" in n for n in report.notes)
    measurements["input_wait_fraction"] = 0.05
    agreeing = build_report(measurements, [], ALL_RULES)
    assert agreeing.measurements["profile"]["agrees"] is True and not agreeing.notes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_check_profile_api_writes_steps_that_xprof_analyses(tmp_path: Path) -> None:
    """``check(profile=...)`` on a real input-bound job: xprof's own analyzer sees the steps
    (the Keras callback's profile gives it none), and the report carries the wait share and
    whether it agrees with the verdict from the throughputs."""
    tf = pytest.importorskip("tensorflow")
    import numpy as np

    import pipedoctor

    def wait(x: np.ndarray) -> np.ndarray:
        time.sleep(0.002)
        return x

    def parse(a: tf.Tensor, b: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        return tf.ensure_shape(tf.numpy_function(wait, [a], tf.float32), (16,)), b

    x = np.random.default_rng(0).normal(size=(2048, 16)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, np.zeros(2048, "int32"))).map(parse)
    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(4)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    weights = [w.copy() for w in model.get_weights()]
    report = pipedoctor.check(data.batch(32), model, timeout=20, profile=tmp_path / "logs")
    m = report.measurements
    assert report.verdict == diagnosis.INPUT_BOUND and m["training_samples_per_s"]
    (host,) = m["profile"]["hosts"]
    assert host["steps_from"] == "step markers" and host["steps"] >= 3
    assert host["input_wait_from"] == "xprof input_pipeline_analyzer"
    assert "input-bound" in host["xprof_conclusion"]
    assert m["profile"]["agrees"] is True
    assert all((a == b).all() for a, b in zip(weights, model.get_weights(), strict=True))


SCRIPT = """\
import time

import keras
import numpy as np
import tensorflow as tf


def wait(x):
    time.sleep(0.002)
    return x


def parse(x, y):
    return tf.ensure_shape(tf.numpy_function(wait, [x], tf.float32), (16,)), y


ds = tf.data.Dataset.from_tensor_slices((np.zeros((4096, 16), "float32"), np.zeros(4096, "int32")))
model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(10)])
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds.map(parse).batch(32).prefetch(1), epochs=3)
"""


def test_check_cli_profile_prints_a_command_that_serves_the_profile_tab(tmp_path: Path) -> None:
    """``pipedoctor check --profile DIR``: the script's working directory gets only DIR, and
    the command the report prints opens the profile in TensorBoard's Profile tab. The profile
    is written right after the three throughputs (about 11 s into the check), before the graph
    doctor, which nothing here asserts on."""
    pytest.importorskip("tensorflow")
    (tmp_path / "train.py").write_text(SCRIPT)
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", "train.py", "--timeout", "24", "-q",
         "--profile", "logs", "--ignore", "PD108"],
        capture_output=True, text=True, cwd=tmp_path, timeout=150,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    logdir = (tmp_path / "logs").resolve()
    assert f"open it with `tensorboard --logdir {logdir}`" in done.stdout
    assert "Input wait: " in done.stdout and "Verdict: input-bound" in done.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "train.py"]
    (profile,) = logdir.rglob("*.xplane.pb")

    tensorboard = shutil.which("tensorboard", path=str(Path(sys.executable).parent))
    if tensorboard is None:
        pytest.skip("tensorboard is not installed")
    port = free_port()
    server = subprocess.Popen(
        [tensorboard, "--logdir", str(logdir), "--port", str(port), "--host", "127.0.0.1"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}/data/plugin/profile"
        runs = _poll(f"{base}/runs", 60)
        assert json.loads(runs) == [profile.parent.name]
        host = profile.name.removesuffix(".xplane.pb")
        tools = json.loads(_poll(f"{base}/run_tools?run={profile.parent.name}", 30))
        assert {"overview_page", "input_pipeline_analyzer", "trace_viewer@"} <= set(tools)
        page = _poll(f"{base}/data?run={profile.parent.name}&tag=overview_page&host={host}", 30)
        assert "input-bound" in page
    finally:
        server.terminate()
        server.wait(timeout=10)


def _poll(url: str, seconds: float) -> str:
    deadline = time.monotonic() + seconds
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                raw = answer.read()
                if answer.headers.get("Content-Encoding") == "gzip":
                    raw = gzip.decompress(raw)
                body = raw.decode()
                if body and body != "[]":
                    return body
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"no answer from {url}")
        time.sleep(0.5)
