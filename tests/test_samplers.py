"""The background samplers: summaries checked against synthetic NVML readings, and threads.

No NVIDIA driver can exist on a CPU-only CI machine, so the NVML thread is driven by a stand-in
``pynvml`` module; the no-GPU path and the host sampler run against the real libraries.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import threading
import time
import types
from pathlib import Path

import pytest

from pipedoctor.measure.samplers import (
    NO_GPU_NOTE,
    NO_PSUTIL_NOTE,
    GpuReport,
    GpuSample,
    GpuSampler,
    HostReport,
    HostSample,
    HostSampler,
    compute_capabilities,
    percentile,
    summarize_gpus,
    summarize_host,
    to_measurements,
)
from pipedoctor.render.text import gpu_facts, host_cpu

DATA = Path(__file__).parent / "data" / "nvml_samples.json"
MIB = 1024 * 1024
DEVICE_KEYS = [
    "index",
    "name",
    "samples",
    "utilization_mean",
    "utilization_p5",
    "utilization_p50",
    "utilization_p95",
    "utilization_min",
    "utilization_max",
    "memory_used_mb",
    "memory_total_mb",
    "pcie_tx_mb_s",
    "pcie_rx_mb_s",
]


def rank_percentile(values: list[float], q: float) -> float:
    """Hyndman & Fan type 7 written from its 1-based rank formula: an independent oracle."""
    ordered = sorted(values)
    h = (len(ordered) - 1) * q / 100 + 1
    below = ordered[int(h) - 1]
    above = ordered[int(h)] if int(h) < len(ordered) else below
    return below + (h - int(h)) * (above - below)


def expected_device(values: list[float], used: list[int], total: int) -> dict:
    return {
        "samples": len(values),
        "utilization_mean": round(sum(values) / len(values), 1),
        "utilization_p5": round(rank_percentile(values, 5), 1),
        "utilization_p50": round(rank_percentile(values, 50), 1),
        "utilization_p95": round(rank_percentile(values, 95), 1),
        "utilization_min": round(min(values), 1),
        "utilization_max": round(max(values), 1),
        "memory_used_mb": round(max(used) / MIB, 1),
        "memory_total_mb": round(total / MIB, 1),
    }


def no_sampler_threads() -> bool:
    return not any(t.name.endswith("sampler") for t in threading.enumerate())


# --- percentile ----------------------------------------------------------------------------------


@pytest.mark.parametrize("q", [0, 5, 25, 50, 95, 100])
def test_percentile_matches_rank_formula(q: float) -> None:
    values = [13.0, 2.0, 97.0, 41.0, 41.0, 8.0, 66.0]
    assert percentile(values, q) == pytest.approx(rank_percentile(values, q))


def test_percentile_interpolates_between_ranks() -> None:
    # Four values: p5 sits 0.15 of the way from the first to the second.
    assert percentile([10, 20, 30, 40], 5) == pytest.approx(11.5)
    assert percentile([10, 20, 30, 40], 50) == pytest.approx(25.0)
    assert percentile([7], 95) == 7
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile([1, 2], 101)


def test_percentile_agrees_with_numpy() -> None:
    np = pytest.importorskip("numpy")
    values = [float((i * 37) % 101) for i in range(43)]
    for q in (5, 50, 95):
        assert percentile(values, q) == pytest.approx(float(np.percentile(values, q)))


# --- summarize_gpus on synthetic readings -----------------------------------------------------


@pytest.fixture(scope="module")
def synthetic() -> tuple[list[GpuSample], dict[int, str]]:
    doc = json.loads(DATA.read_text())
    samples = [GpuSample(**s) for s in doc["samples"]]
    names = {int(k): v for k, v in doc["names"].items()}
    return samples, names


def test_synthetic_samples_summarised_per_device(synthetic) -> None:
    samples, names = synthetic
    devices = summarize_gpus(samples, names)
    assert [d["index"] for d in devices] == [0, 1]
    for device in devices:
        assert list(device) == DEVICE_KEYS
        mine = [s for s in samples if s.index == device["index"]]
        expected = expected_device(
            [s.utilization_gpu for s in mine],
            [s.memory_used_bytes for s in mine],
            mine[0].memory_total_bytes,
        )
        assert {k: device[k] for k in expected} == expected
        assert device["name"] == "NVIDIA A100-SXM4-40GB"


def test_synthetic_straggler_stands_out(synthetic) -> None:
    busy, straggler = summarize_gpus(*synthetic)
    assert busy["samples"] == straggler["samples"] == 40
    assert 85 <= busy["utilization_mean"] <= 95
    assert 15 <= straggler["utilization_mean"] <= 25
    assert straggler["utilization_p95"] < busy["utilization_p5"]
    assert busy["memory_total_mb"] == 40960.0


def test_synthetic_pcie_mean_skips_missing_readings(synthetic) -> None:
    samples, names = synthetic
    busy, straggler = summarize_gpus(samples, names)
    tx = [s.pcie_tx_kb_s for s in samples if s.index == 0 and s.pcie_tx_kb_s is not None]
    rx = [s.pcie_rx_kb_s for s in samples if s.index == 0 and s.pcie_rx_kb_s is not None]
    assert 0 < len(tx) < 40  # the recording has gaps, which must not count as zero
    assert busy["pcie_tx_mb_s"] == round(sum(tx) / len(tx) / 1024, 1)
    assert busy["pcie_rx_mb_s"] == round(sum(rx) / len(rx) / 1024, 1)
    assert straggler["pcie_tx_mb_s"] is None
    assert straggler["pcie_rx_mb_s"] is None


def test_summarize_gpus_edge_cases() -> None:
    assert summarize_gpus([], {}) == []
    samples = [GpuSample(0.0, 3, 50.0, 2 * MIB, 8 * MIB), GpuSample(0.1, 1, 0.0, MIB, 8 * MIB)]
    devices = summarize_gpus(samples, {1: "A"})
    assert [(d["index"], d["name"]) for d in devices] == [(1, "A"), (3, "GPU 3")]
    assert devices[1]["utilization_p5"] == devices[1]["utilization_p95"] == 50.0


def test_device_dicts_fill_the_text_renderer(synthetic) -> None:
    busy = summarize_gpus(*synthetic)[0]
    facts = gpu_facts(busy, 0)
    assert facts.util and facts.spread and facts.memory and facts.pcie


# --- GpuSampler against the real (absent) NVML ---------------------------------------------------


def nvml_works() -> bool:
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return False
    pynvml.nvmlShutdown()
    return True


@pytest.mark.skipif(nvml_works(), reason="an NVIDIA GPU is visible here")
def test_no_gpu_for_real() -> None:
    sampler = GpuSampler()
    sampler.start()
    time.sleep(0.05)
    report = sampler.stop()
    assert report == GpuReport(available=False, note=NO_GPU_NOTE, devices=[])
    assert not sampler.available and not sampler.running
    assert no_sampler_threads()
    assert sampler.stop() is report
    assert compute_capabilities() == {}


@pytest.mark.skipif(not nvml_works(), reason="no NVIDIA GPU visible here")
def test_real_gpu_sampling() -> None:
    with GpuSampler(interval_s=0.05) as sampler:
        time.sleep(0.3)
    report = sampler.report
    assert report is not None and report.available
    assert report.devices and all(d["samples"] >= 2 for d in report.devices)
    assert compute_capabilities()


def test_missing_pynvml_means_no_gpu(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # makes ``import pynvml`` fail
    report = GpuSampler().start().stop()
    assert not report.available and report.note == NO_GPU_NOTE
    assert compute_capabilities() == {}


# --- GpuSampler's thread, driven by a stand-in pynvml --------------------------------------------


class NVMLError(Exception):
    pass


class NVMLError_NotSupported(NVMLError):  # noqa: N801 (pynvml's spelling)
    pass


class NVMLError_Unknown(NVMLError):  # noqa: N801
    pass


class NVMLError_DriverNotLoaded(NVMLError):  # noqa: N801
    pass


class FakeNvml:
    """Two devices: 0 busy with PCIe, 1 a straggler without PCIe and one transient failure.

    Each device plays its utilisation sequence, then repeats the last value; ``played`` is set
    once both have played theirs, so a test knows every value reached a sample.
    """

    UTIL = {0: [90, 95, 88, 92, 97, 85, 91, 93], 1: [20, 15, 25, 10, 30, 22, 18, 21]}
    FAIL_AT = {1: 3}  # device 1's 4th utilisation call raises, without using up a value
    PCIE_KB_S = {0: (2048, 10240)}  # tx, rx

    def __init__(self, init_error: Exception | None = None, devices: int = 2) -> None:
        self.init_error = init_error
        self.devices = devices
        self.init_calls = 0
        self.shutdown_calls = 0
        self.util_calls = {0: 0, 1: 0}
        self.pcie_calls = {0: 0, 1: 0}
        self.memory_used: dict[int, list[int]] = {0: [], 1: []}
        self.played = threading.Event()

    def module(self) -> types.ModuleType:
        module = types.ModuleType("pynvml")
        module.NVMLError = NVMLError
        module.NVMLError_NotSupported = NVMLError_NotSupported
        module.NVML_PCIE_UTIL_TX_BYTES = 0
        module.NVML_PCIE_UTIL_RX_BYTES = 1
        for name in dir(self):
            if name.startswith("nvml"):
                setattr(module, name, getattr(self, name))
        return module

    def nvmlInit(self) -> None:  # noqa: N802
        self.init_calls += 1
        if self.init_error is not None:
            raise self.init_error

    def nvmlShutdown(self) -> None:  # noqa: N802
        self.shutdown_calls += 1

    def nvmlDeviceGetCount(self) -> int:  # noqa: N802
        return self.devices

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:  # noqa: N802
        return index

    def nvmlDeviceGetName(self, handle: int) -> str | bytes:  # noqa: N802
        return "Fake H100" if handle == 0 else b"Fake T4"  # old pynvml returned bytes

    def nvmlDeviceGetCudaComputeCapability(self, handle: int) -> tuple[int, int]:  # noqa: N802
        return (9, 0) if handle == 0 else (7, 5)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> types.SimpleNamespace:  # noqa: N802
        calls = self.util_calls[handle]
        self.util_calls[handle] += 1
        fail_at = self.FAIL_AT.get(handle)
        if fail_at is not None and calls == fail_at:
            raise NVMLError_Unknown("transient")
        played = calls - (1 if fail_at is not None and calls > fail_at else 0)
        sequence = self.UTIL[handle]
        if played >= len(sequence) - 1 and handle == 1:
            self.played.set()
        return types.SimpleNamespace(gpu=sequence[min(played, len(sequence) - 1)], memory=0)

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> types.SimpleNamespace:  # noqa: N802
        used = (1000 + 10 * len(self.memory_used[handle])) * MIB + handle
        self.memory_used[handle].append(used)
        return types.SimpleNamespace(used=used, total=16 * 1024 * MIB, free=0)

    def nvmlDeviceGetPcieThroughput(self, handle: int, counter: int) -> int:  # noqa: N802
        self.pcie_calls[handle] += 1
        if handle not in self.PCIE_KB_S:
            raise NVMLError_NotSupported("no PCIe counters")
        return self.PCIE_KB_S[handle][counter]


@pytest.fixture
def fake_nvml(monkeypatch) -> FakeNvml:
    fake = FakeNvml()
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    return fake


def test_sampling_thread_summarises_each_device(fake_nvml: FakeNvml) -> None:
    sampler = GpuSampler(interval_s=0.002, pcie_every=1).start()
    assert sampler.available and sampler.running
    assert fake_nvml.played.wait(5)
    report = sampler.stop()

    assert report.available and report.note is None
    assert report.errors == 1  # the transient failure, skipped rather than raised
    busy, straggler = report.devices
    assert (busy["name"], straggler["name"]) == ("Fake H100", "Fake T4")
    assert straggler["samples"] == busy["samples"] - 1  # the failed reading is left out
    for device in (busy, straggler):
        index, played = device["index"], FakeNvml.UTIL[device["index"]]
        values = played + [played[-1]] * (device["samples"] - len(played))
        assert device["samples"] >= len(played)
        expected = expected_device(values, fake_nvml.memory_used[index], 16 * 1024 * MIB)
        assert {k: device[k] for k in expected} == expected
    assert (busy["pcie_tx_mb_s"], busy["pcie_rx_mb_s"]) == (2.0, 10.0)
    assert (straggler["pcie_tx_mb_s"], straggler["pcie_rx_mb_s"]) == (None, None)
    assert fake_nvml.pcie_calls[1] == 1  # NotSupported once: never asked again

    assert fake_nvml.shutdown_calls == fake_nvml.init_calls == 1
    assert not sampler.running and no_sampler_threads()
    assert sampler.stop() is report and fake_nvml.shutdown_calls == 1


def test_pcie_read_every_nth_tick_and_stop_is_prompt(fake_nvml: FakeNvml) -> None:
    sampler = GpuSampler(interval_s=60, pcie_every=3).start()  # the thread's first tick, then idle
    deadline = time.monotonic() + 5
    while fake_nvml.util_calls[0] < 1 and time.monotonic() < deadline:
        time.sleep(0.001)
    ticks = [sampler.sample_once() for _ in range(5)]  # ticks 1..5 of the sampler's count
    with_pcie = [tick[0].pcie_tx_kb_s is not None for tick in ticks]
    assert with_pcie == [False, False, True, False, False]
    started = time.monotonic()
    report = sampler.stop()
    assert time.monotonic() - started < 1.0  # the 60 s wait is interrupted, not sat out
    assert report.devices[0]["samples"] == 1  # only the thread's own tick was recorded
    assert not sampler.running


def test_hung_nvml_call_does_not_hang_stop(monkeypatch) -> None:
    fake = FakeNvml()
    entered, release = threading.Event(), threading.Event()

    def hanging_utilization(handle: int) -> types.SimpleNamespace:
        entered.set()
        release.wait(5)
        return types.SimpleNamespace(gpu=50, memory=0)

    module = fake.module()
    module.nvmlDeviceGetUtilizationRates = hanging_utilization
    monkeypatch.setitem(sys.modules, "pynvml", module)
    sampler = GpuSampler(join_timeout_s=0.2).start()
    assert entered.wait(5)
    started = time.monotonic()
    report = sampler.stop()
    try:
        assert time.monotonic() - started < 1.0
        assert report.available and "still busy" in report.note
        assert fake.shutdown_calls == 0  # never shut NVML down under a thread inside a call
    finally:
        release.set()
    sampler._thread.join(5)
    assert not sampler.running


def test_context_manager_and_capabilities(fake_nvml: FakeNvml) -> None:
    with GpuSampler(interval_s=0.01) as sampler:
        assert sampler.running
        assert compute_capabilities() == {0: (9, 0), 1: (7, 5)}
    assert sampler.report is not None and sampler.report.available
    assert not sampler.running
    assert fake_nvml.init_calls == fake_nvml.shutdown_calls == 2  # sampler + capabilities


def test_init_failure_means_no_gpu(monkeypatch) -> None:
    fake = FakeNvml(init_error=NVMLError_DriverNotLoaded("Driver Not Loaded"))
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    sampler = GpuSampler().start()
    assert not sampler.running
    report = sampler.stop()
    assert report == GpuReport(available=False, note=NO_GPU_NOTE, devices=[])
    assert fake.shutdown_calls == 0  # nothing was initialised
    assert compute_capabilities() == {}


def test_zero_devices_means_no_gpu(monkeypatch) -> None:
    fake = FakeNvml(devices=0)
    monkeypatch.setitem(sys.modules, "pynvml", fake.module())
    report = GpuSampler().start().stop()
    assert not report.available and report.note == NO_GPU_NOTE
    assert fake.shutdown_calls == fake.init_calls == 1


# --- HostSampler ---------------------------------------------------------------------------------


def busy_python(seconds: float) -> int:
    end, n = time.perf_counter() + seconds, 0
    while time.perf_counter() < end:
        n += sum(i * i for i in range(200))
    return n


def test_host_sampler_for_real() -> None:
    pytest.importorskip("psutil")
    sampler = HostSampler().start()
    assert sampler.running
    busy_python(0.6)
    started = time.monotonic()
    report = sampler.stop()
    assert time.monotonic() - started < 1.0
    assert not sampler.running and no_sampler_threads()

    assert report.available and report.note is None
    assert report.samples >= 2
    assert report.cpu_count == os.cpu_count()
    assert len(report.per_core_percent) == report.cpu_count
    for value in [report.cpu_percent_mean, report.cpu_percent_p95, *report.per_core_percent]:
        assert 0 <= value <= 100
    assert report.cpu_percent_mean > 0  # this process kept at least one core busy
    assert report.process_rss_mb_max > 0
    assert report.available_ram_mb_min > 0
    assert sampler.stop() is report


def test_children_rss_counted_and_vanished_children_dropped() -> None:
    psutil = pytest.importorskip("psutil")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        child_rss = 0
        deadline = time.monotonic() + 5
        while child_rss < 4 * MIB and time.monotonic() < deadline:  # until Python is loaded
            time.sleep(0.02)
            child_rss = psutil.Process(child.pid).memory_info().rss
        sampler = HostSampler(interval_s=60).start()  # start() lists the children
        own = psutil.Process().memory_info().rss
        with_child = sampler.sample_once().rss_bytes
        assert with_child - own >= 0.8 * child_rss
    finally:
        child.kill()
        child.wait(5)
    without_child = sampler.sample_once().rss_bytes  # the vanished child is skipped, not raised
    assert without_child - own < 0.5 * child_rss
    assert sampler.stop().available and sampler.errors == 0


def test_summarize_host() -> None:
    samples = [
        HostSample(0.0, (100.0, 0.0), 100 * MIB, 900 * MIB),
        HostSample(0.2, (80.0, 20.0), 300 * MIB, 700 * MIB),
        HostSample(0.4, (90.0, 50.0), 200 * MIB, 800 * MIB),
    ]
    report = summarize_host(samples, cpu_count=2)
    assert report == HostReport(
        available=True,
        cpu_count=2,
        cpu_percent_mean=round(340 / 6, 1),
        per_core_percent=[90.0, round(70 / 3, 1)],
        cpu_percent_p95=round(rank_percentile([50.0, 50.0, 70.0], 95), 1),
        cpu_percent_p50=50.0,
        process_rss_mb_max=300.0,
        available_ram_mb_min=700.0,
        samples=3,
    )
    empty = summarize_host([], cpu_count=4)
    assert (empty.samples, empty.cpu_count, empty.cpu_percent_mean) == (0, 4, None)


def test_missing_psutil(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "psutil", None)
    sampler = HostSampler().start()
    assert not sampler.running
    report = sampler.stop()
    assert not report.available and report.note == NO_PSUTIL_NOTE
    assert to_measurements(GpuReport(available=False, note=NO_GPU_NOTE), report)["host_note"]


# --- measurements ---------------------------------------------------------------------------------


def test_to_measurements(synthetic) -> None:
    host = summarize_host([HostSample(0.0, (97.0, 99.0), 2 * MIB, 8 * MIB)], cpu_count=2)
    none = to_measurements(GpuReport(available=False, note=NO_GPU_NOTE), host)
    assert none == {
        "host_cpu_percent": 98.0,
        "host": {
            "cpu_count": 2,
            "per_core_percent": [97.0, 99.0],
            "cpu_percent_p95": 98.0,
            "cpu_percent_p50": 98.0,
            "process_rss_mb_max": 2.0,
            "available_ram_mb_min": 8.0,
        },
        "gpus": [],
        "gpu_note": NO_GPU_NOTE,
    }
    assert host_cpu(none) == "98% of 2 cores (p95 98%)"

    devices = summarize_gpus(*synthetic)
    some = to_measurements(GpuReport(available=True, devices=devices), host)
    assert "gpu_note" not in some and "host_note" not in some
    assert some["gpus"] == devices and some["gpus"][0] is not devices[0]
    assert json.loads(json.dumps(some)) == some  # plain JSON, as the report contract needs
    assert not any(isinstance(v, float) and math.isnan(v) for v in some["gpus"][0].values())


def test_a_check_on_stand_in_gpus_gets_the_gpu_rules(fake_nvml: FakeNvml) -> None:
    """The whole check on real TensorFlow (CPU), with only the NVML driver stood in for: the
    starved device draws PD303 and the Tensor-Core device under a float32 policy PD209."""
    tf = pytest.importorskip("tensorflow")
    keras = pytest.importorskip("keras")
    import numpy as np

    import pipedoctor

    x = np.random.default_rng(0).normal(size=(1024, 32)).astype("float32")
    ds = tf.data.Dataset.from_tensor_slices((x, np.zeros(1024, "int32"))).batch(32).repeat()
    model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    report = pipedoctor.check(ds, model, timeout=15)  # the GPUs are sampled while training is timed
    gpus = {g["index"]: g for g in report.measurements["gpus"]}
    assert gpus[0]["compute_capability"] == "9.0" and gpus[1]["compute_capability"] == "7.5"
    assert gpus[1]["utilization_mean"] < 50 < gpus[0]["utilization_mean"]
    by_rule = {f.rule: f for f in report.findings}
    assert "GPU 1 (Fake T4) is busy only" in by_rule["PD303"].message
    assert "GPU 0" not in by_rule["PD303"].message
    assert "GPU 0 (Fake H100, compute capability 9.0) has Tensor Cores" in by_rule["PD209"].message
    assert "float32" in by_rule["PD209"].message
