"""``pipedoctor.keras.Monitor`` in real ``fit`` calls on CPU, and its parts on their own.

The input-bound pipeline makes each batch wait on a sleep (known ground truth: most of every
step is waiting), the compute-bound one serves batches from memory to a wider model. NVML cannot
exist here: the GPU lines come from a test double that replays synthetic readings
(tests/data/nvml_run.json), and a full disk is a real, full tmpfs where one can be mounted.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from monitored_training import make_dataset, make_model  # noqa: E402

from pipedoctor import diagnosis  # noqa: E402
from pipedoctor.keras import Monitor  # noqa: E402
from pipedoctor.monitor.steps import ORIGINAL, Call  # noqa: E402
from pipedoctor.monitor.tally import WaitShare, decisive  # noqa: E402
from pipedoctor.render import render  # noqa: E402
from pipedoctor.report import Report  # noqa: E402

DATA = Path(__file__).parent / "data" / "nvml_run.json"


def share(report: Report) -> float:
    """The run's input-wait share, decisive or not."""
    m = report.measurements
    value = m["input_wait_fraction"] if m["input_wait_fraction"] is not None else None
    return value if value is not None else m["input_wait_estimate"]


def test_input_bound_fit_is_judged_input_bound_and_the_model_is_left_as_it_was() -> None:
    model = make_model(width=256)
    original = model.make_train_function() or model.train_function
    printed: list[str] = []
    monitor = Monitor(print_fn=printed.append)
    model.fit(make_dataset(input_ms=40, steps=24), epochs=2, verbose=0, callbacks=[monitor])

    report = monitor.report
    assert isinstance(report, Report)
    assert report.verdict == diagnosis.INPUT_BOUND
    assert report.measurements["input_wait_fraction"] > 0.5
    assert "PD301" in [f.rule for f in report.findings]
    assert [line.split(":")[0] for line in printed if "/2:" in line] == [
        "pipedoctor epoch 1/2",
        "pipedoctor epoch 2/2",
    ]
    live = "pipedoctor after epoch 1, run so far: PD301 input-bound"
    assert any(line.startswith(live) for line in printed)
    assert any("input wait" in line for line in printed)
    assert len(report.measurements["epochs"]) == 2
    assert report.measurements["batch_size"] == 32
    # The wrapper is gone after fit: the model trains as before, monitored or not.
    assert model.train_function is original and not hasattr(model.train_function, ORIGINAL)
    page = render(report, "html")
    assert page.startswith("<!DOCTYPE html>") and "Throughput by phase" in page


def test_compute_bound_fit_has_a_low_wait_share() -> None:
    model = make_model(width=1024)
    monitor = Monitor(verbose=0, split_fraction=0.5)
    model.fit(make_dataset(input_ms=0, steps=40), epochs=2, verbose=0, callbacks=[monitor])
    assert share(monitor.report) < 0.2
    assert monitor.report.verdict in (diagnosis.COMPUTE_BOUND, None)
    # Its estimate of its own cost counts what timing costs every call, beside the splits.
    own = monitor.report.measurements["monitor"]
    step_ms = monitor.report.measurements["step_ms"]["training"]
    assert 0 < own["call_cost_ms"] < 1
    assert own["overhead_estimate"] >= own["call_cost_ms"] / step_ms * 0.9


def test_every_step_is_counted_when_most_calls_are_handed_on_in_bulk() -> None:
    """Calls not split are kept as two floats each and counted at the next split call or
    phase edge: none may be lost or counted twice, and the timeline stays in time order."""
    model = make_model(width=64)
    monitor = Monitor(verbose=0, split_fraction=0.05)
    model.fit(make_dataset(input_ms=0, steps=80), validation_data=make_dataset(0, steps=10),
              validation_freq=2, epochs=3, verbose=0, callbacks=[monitor])  # fmt: skip
    m = monitor.report.measurements
    train_steps = [e["steps"] for e in m["epochs"]]
    # less the calls that traced: the first one on each path (split or not)
    assert train_steps[1:] == [80, 80] and 78 <= train_steps[0] <= 79
    evaluated = [e.get("eval", {}).get("steps") for e in m["epochs"]]
    assert evaluated[::2] == [None, None] and 8 <= evaluated[1] <= 9
    assert m["time_split"]["train_s"] > 0 and m["training_samples_per_s"] > 0
    starts = [segment["t0"] for segment in m["timeline"]["phases"]]
    assert starts == sorted(starts) and len(starts) >= 3
    assert not [note for note in monitor.report.notes if "could not be counted" in note]


class EpochEndWork(keras.callbacks.Callback):
    """A callback that takes 0.3 s at every epoch's end, as a checkpoint does."""

    def on_epoch_end(self, epoch: int, logs: object = None) -> None:
        time.sleep(0.3)


def test_the_timeline_draws_outside_steps_what_the_text_counts_there() -> None:
    """The HTML timeline's "outside steps" bands add up to the text's "outside steps" (the last
    epoch's end included); the Monitor's own time is drawn apart, as the text names it apart."""
    model = make_model(width=64)
    monitor = Monitor(verbose=0)
    model.fit(make_dataset(input_ms=0, steps=40), epochs=4, verbose=0,
              callbacks=[EpochEndWork(), monitor])  # fmt: skip
    m = monitor.report.measurements
    drawn: dict[str, float] = {}
    for segment in m["timeline"]["phases"]:
        drawn[segment["phase"]] = drawn.get(segment["phase"], 0.0) + segment["t1"] - segment["t0"]
    split = m["time_split"]
    assert split["stall_s"] >= 4 * 0.3  # every epoch's callback, the last one's too
    outside = drawn.get("outside steps", 0.0)
    assert abs(outside - split["stall_s"]) <= max(0.2, 0.15 * split["stall_s"]), (drawn, split)
    assert drawn.get("monitor", 0.0) <= split["monitor_s"] + 0.05, (drawn, split)
    text = render(monitor.report, "text")
    assert f"outside steps {split['stall_s']:.1f} s" in text


# --- NVML: a test double replaying synthetic readings ----------------------------------------


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801
    pass


class ReplayNvml:
    """Two devices playing ``tests/data/nvml_run.json``; ``phase`` picks the sequence, and
    ``"failing"`` makes every reading raise, as a driver that goes away mid-run."""

    def __init__(self) -> None:
        self.data = json.loads(DATA.read_text())
        self.phase = "steady"
        self.reads = [0, 0]

    def module(self) -> types.ModuleType:
        module = types.ModuleType("pynvml")
        module.NVMLError = NVMLError
        module.NVMLError_NotSupported = NVMLError_NotSupported
        module.NVML_PCIE_UTIL_TX_BYTES, module.NVML_PCIE_UTIL_RX_BYTES = 0, 1
        for name in dir(self):
            if name.startswith("nvml"):
                setattr(module, name, getattr(self, name))
        return module

    def nvmlInit(self) -> None:  # noqa: N802
        pass

    def nvmlShutdown(self) -> None:  # noqa: N802
        pass

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> str:  # noqa: N802
        return self.data["names"][handle]

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> types.SimpleNamespace:  # noqa: N802
        if self.phase == "failing":
            raise NVMLError("GPU is lost")
        sequence = self.data["utilization"][self.phase][handle]
        self.reads[handle] += 1
        return types.SimpleNamespace(gpu=sequence[self.reads[handle] % len(sequence)], memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> types.SimpleNamespace:  # noqa: N802
        mib = 1024 * 1024
        used = (self.data["memory_start_mb"][handle] + 64 * self.reads[handle]) * mib
        return types.SimpleNamespace(used=used, total=self.data["memory_total_mb"] * mib, free=0)

    def nvmlDeviceGetPcieThroughput(self, handle: int, counter: int) -> int:  # noqa: N802
        raise NVMLError_NotSupported("no PCIe counters")


def test_gpu_lines_a_gpu_falling_behind_and_nvml_failing_halfway(monkeypatch) -> None:
    nvml = ReplayNvml()
    monkeypatch.setitem(sys.modules, "pynvml", nvml.module())

    class Script(keras.callbacks.Callback):
        """Epoch 2: GPU 1 falls behind; epoch 3: the driver is gone."""

        def on_epoch_end(self, epoch: int, logs: object = None) -> None:
            nvml.phase = ("fell_behind", "failing", "failing")[epoch]

    printed: list[str] = []
    monitor = Monitor(print_fn=printed.append)
    model = make_model(width=128)
    model.fit(
        make_dataset(input_ms=45, steps=30), epochs=3, verbose=0, callbacks=[monitor, Script()]
    )
    report = monitor.report
    epoch_lines = [line for line in printed if " epoch " in line and "/3:" in line]
    assert "GPU0 9" in epoch_lines[0] and "GPU1 9" in epoch_lines[0]
    assert "GPU1 4" in epoch_lines[1] or "GPU1 3" in epoch_lines[1]
    (fell,) = [f for f in report.findings if f.rule == "PD319"]
    assert "GPU 1 fell behind in epoch 2" in fell.message
    assert any("GPU readings failed" in note for note in report.notes)
    gpus = report.measurements["timeline"]["gpus"]
    assert [g["name"] for g in gpus] == ["Synthetic GPU A", "Synthetic GPU B"]
    assert report.measurements["gpus"][0]["memory_used_mb"] > 30000


# --- a full disk ------------------------------------------------------------------------------


@pytest.fixture
def full_disk(tmp_path: Path):
    """A 64 KiB tmpfs, filled up: writes fail with ENOSPC, as on a full disk."""
    mount = tmp_path / "full"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip("cannot mount a tmpfs here (needs root)")
    try:
        (mount / "filler").write_bytes(b"\0" * 200_000)
    except OSError:
        pass
    yield mount
    subprocess.run(["umount", str(mount)], capture_output=True)


def test_a_full_disk_for_the_log_is_a_note_and_training_goes_on(full_disk: Path) -> None:
    monitor = Monitor(full_disk, verbose=0)
    model = make_model(width=64)
    history = model.fit(make_dataset(0, 12), epochs=2, verbose=0, callbacks=[monitor])
    assert len(history.history["loss"]) == 2
    notes = " ".join(monitor.report.notes)
    assert "could not be written" in notes and "No space left on device" in notes
    assert "TensorBoard scalars stopped" in notes


def test_epoch_ends_do_not_wait_for_the_disk_and_fit_returns_with_the_record_written(
    tmp_path: Path,
) -> None:
    """A disk that blocks (here a FIFO where the first record's temporary file goes: opening
    it for writing waits for a reader) holds up the monitor's writes thread, not training:
    every epoch ends while the first write still waits, and ``fit`` returns with the finished
    record on disk once the disk lets go."""
    import os
    import threading

    from pipedoctor.monitor.records import FINISHED, read_record, record_path

    path = record_path(tmp_path, "worker-0")
    path.parent.mkdir(parents=True)
    blocked = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    os.mkfifo(blocked)
    epochs_ended: list[float] = []
    released: list[float] = []

    class Ends(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None) -> None:
            epochs_ended.append(time.monotonic())

    def release() -> None:  # the disk lets go once training has ended, or after 30 s
        deadline = time.monotonic() + 30
        while len(epochs_ended) < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        released.append(time.monotonic())
        with open(blocked, encoding="utf-8") as fifo:
            fifo.read()

    reader = threading.Thread(target=release, daemon=True)
    reader.start()
    monitor = Monitor(tmp_path, verbose=0)
    model = make_model(width=16)
    model.fit(make_dataset(0, 6), epochs=3, verbose=0, callbacks=[monitor, Ends()])
    reader.join(5)
    assert len(epochs_ended) == 3 and released and epochs_ended[-1] <= released[0]
    record = read_record(path)
    assert record["state"] == FINISHED and len(record["measurements"]["epochs"]) == 3


def test_record_write_failure_from_a_real_enospc(tmp_path: Path) -> None:
    from pipedoctor.monitor.records import record_path, write_record

    path = record_path(tmp_path, "worker-0")
    path.parent.mkdir(parents=True)
    (path.parent / f".{path.name}.{__import__('os').getpid()}.tmp").symlink_to("/dev/full")
    with pytest.raises(OSError, match="No space left"):
        write_record(path, {"x": 1})
    assert not path.exists()


# --- the estimator on its own -----------------------------------------------------------------


def population(rng: random.Random) -> list[tuple[float, float, float]]:
    """(duration, wait, busy) of 64 calls: a 300 ms wait at every 16th (an epoch's first step,
    a shuffle buffer refilling), ~0.5 ms otherwise, and steps of 7 ms with heavy jitter."""
    calls = []
    for i in range(64):
        wait = 0.3 if i % 16 == 0 else abs(rng.gauss(0.0005, 0.0003))
        busy = 0.007 * rng.lognormvariate(0, 0.4)
        calls.append((wait + busy, wait, busy))
    return calls


def test_the_difference_estimator_is_unbiased_and_its_interval_covers() -> None:
    rng = random.Random(1)
    calls = population(rng)
    truth = sum(w for _, w, _ in calls) / sum(d for d, _, _ in calls)
    estimates, covered = [], 0
    for seed in range(400):
        draw = random.Random(seed)
        share = WaitShare(direct=True)
        for i, (duration, wait, busy) in enumerate(calls):
            chance = 0.2
            if draw.random() < chance:
                call = Call("train", i, 0.0, duration, 1, 32, wait, busy, chance)
            else:
                call = Call("train", i, 0.0, duration, 1, None)
            share.add(call, duration)
        estimate = share.estimate(share.typical_step())
        if estimate.fraction is None:
            continue
        estimates.append(estimate.fraction)
        covered += abs(estimate.fraction - truth) <= estimate.ci
    mean = sum(estimates) / len(estimates)
    assert abs(mean - truth) < 0.02, (mean, truth)
    assert covered / len(estimates) > 0.85
    # The waits sit in a few calls, yet each estimate is close: the long calls are predicted.
    spread = math.sqrt(sum((e - mean) ** 2 for e in estimates) / len(estimates))
    assert spread < 0.05


def test_a_share_from_too_few_steps_carries_no_verdict() -> None:
    assert decisive(0.66, 0.05, 0.2)
    assert decisive(0.05, 0.03, 0.2)
    assert decisive(0.22, 0.08, 0.2)  # near the limit, but precise
    assert not decisive(0.27, 0.51, 0.2)
    assert not decisive(0.3, None, 0.2) and not decisive(None, 0.1, 0.2)


def test_bad_options_are_refused_at_once() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Monitor(interval_s=0.1)
    with pytest.raises(ValueError, match="within"):
        Monitor(split_fraction=1.5)


def test_an_interrupted_fit_leaves_a_passive_wrapper_and_the_next_fit_cleans_up() -> None:
    class Boom(keras.callbacks.Callback):
        def on_epoch_end(self, epoch: int, logs: object = None) -> None:
            raise RuntimeError("the user's own callback failed")

    model = make_model(width=32)
    monitor = Monitor(verbose=0)
    with pytest.raises(RuntimeError, match="the user's own callback failed"):
        model.fit(make_dataset(0, 8), epochs=2, verbose=0, callbacks=[monitor, Boom()])
    assert hasattr(model.train_function, ORIGINAL)  # still on, but it only passes calls through
    model.fit(make_dataset(0, 8), epochs=1, verbose=0)  # without the monitor: trains as usual
    model.fit(make_dataset(0, 8), epochs=1, verbose=0, callbacks=[monitor])
    assert not hasattr(model.train_function, ORIGINAL)
    assert len(monitor.report.measurements["epochs"]) == 1


# --- the probe of a worker's own pipeline ---------------------------------------------------------


def pause(value, seconds: float):  # noqa: ANN001, ANN201
    time.sleep(seconds)
    return value


def test_the_probe_reads_the_dataset_a_distributed_iterator_takes_its_batches_from() -> None:
    from pipedoctor.monitor.probe import local_dataset, probe

    strategy = tf.distribute.MirroredStrategy(["/cpu:0"])
    source = tf.data.Dataset.range(4096).batch(32)
    local = local_dataset(iter(strategy.experimental_distribute_dataset(source)))
    assert [int(b[0]) for b in local.take(2)] == [0, 32]  # the batches the replicas get
    assert local_dataset(iter(source)) is not None and local_dataset(object()) is None

    slow = (
        tf.data.Dataset.range(10**6)
        .batch(8)
        .map(lambda b: tf.numpy_function(lambda x: pause(x, 0.02), [b], tf.int64))
    )
    fast, held_back = probe(source, 1.0), probe(slow, 1.0)
    assert held_back.samples_per_s < 8 / 0.02 * 1.1 < fast.samples_per_s
    assert held_back.note is None and 0.9 < held_back.seconds < 3

    # A start that takes long (a shuffle buffer to fill) is kept out of the rate and the time.
    late = (
        tf.data.Dataset.range(10**6)
        .batch(32)
        .map(
            lambda b: tf.numpy_function(
                lambda x: pause(x, 1.5 if x[0] == 0 else 0.0), [b], tf.int64
            )
        )
    )
    started = probe(late, 1.0)
    assert started.startup_s > 1.4 and started.seconds < 1.4 and started.samples_per_s > 1000


def test_a_probe_that_gets_no_batch_or_an_error_ends_with_a_note(monkeypatch) -> None:
    from pipedoctor.monitor import probe as probing

    monkeypatch.setattr(probing, "GRACE_S", 1.0)
    never = tf.data.Dataset.range(3).map(
        lambda x: tf.numpy_function(lambda v: pause(v, 6), [x], tf.int64)
    )
    started = time.perf_counter()
    outcome = probing.probe(never, 0.5)
    assert time.perf_counter() - started < 4
    assert outcome.samples_per_s is None and "gave no batch within 1.5 s" in outcome.note

    broken = tf.data.Dataset.range(3).map(
        lambda x: tf.debugging.check_numerics(tf.cast(x, tf.float32) / 0.0, "a division by 0")
    )
    failed = probing.probe(broken, 0.5)
    assert failed.samples_per_s is None and "could not be read alone" in failed.note
    assert "a division by 0" in failed.note
