"""Background samplers: GPU utilisation (NVML) and host CPU/memory (psutil) during a training run.

Each sampler polls in a daemon thread and summarises on ``stop()``, as nvitop's collector does:
per device mean, percentiles, min and max. Nothing here may break the run it watches, so (like
gpustat and scalene) every NVML failure at start means "no GPU", a failed sample is counted and
skipped, and no exception ever leaves the sampling thread. Sampling must stay cheap, well under
1% of a training step: see ``benchmarks/sampler_overhead.py``.

Both samplers keep their readings as a time series (``samples()``), which a whole training run
needs for its timelines; with ``max_samples`` the series is thinned to at most that many
readings (every other one is dropped and the stride doubles), so a run of many hours holds a
bounded, evenly spaced series.

Sizes are in MiB ("mb", as NVML and nvidia-smi report them) and PCIe rates in MiB/s.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

NO_GPU_NOTE = "no NVIDIA GPU visible: GPU sampling skipped"
NO_PSUTIL_NOTE = "psutil is not installed: host CPU and memory sampling skipped"
NOT_STARTED_NOTE = "sampler was never started"

_MIB = 1024 * 1024


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100), interpolated linearly between ranks like numpy's default.

    ``statistics.quantiles`` cannot give a clean p5 from a few dozen samples, hence this.
    """
    if not values:
        raise ValueError("percentile of no values")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile q must be within 0..100, not {q}")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 1)


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


# --- GPU -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GpuSample:
    """One NVML reading of one device; PCIe is None when not read this tick or not supported."""

    t: float
    index: int
    utilization_gpu: float
    memory_used_bytes: int
    memory_total_bytes: int
    pcie_tx_kb_s: float | None = None
    pcie_rx_kb_s: float | None = None


@dataclass
class GpuReport:
    """What the GPU sampler saw: one summary dict per device (see :func:`summarize_gpus`)."""

    available: bool
    note: str | None = None
    devices: list[dict[str, Any]] = field(default_factory=list)
    errors: int = 0
    """Device readings that failed and were skipped (a transient NVML error, a lost GPU)."""


def summarize_gpus(samples: list[GpuSample], names: dict[int, str]) -> list[dict[str, Any]]:
    """Per device, sorted by index: utilisation mean/p5/p50/p95/min/max, peak memory, mean PCIe.

    Pure, so samples can be checked without a GPU. A device with no PCIe reading at all
    (unsupported, e.g. under vGPU) gets None rather than 0, which would read as an idle bus.
    """
    by_index: dict[int, list[GpuSample]] = {}
    for sample in samples:
        by_index.setdefault(sample.index, []).append(sample)
    devices = []
    for index in sorted(by_index):
        group = by_index[index]
        util = [s.utilization_gpu for s in group]
        tx = [s.pcie_tx_kb_s for s in group if s.pcie_tx_kb_s is not None]
        rx = [s.pcie_rx_kb_s for s in group if s.pcie_rx_kb_s is not None]
        tx_mean, rx_mean = _mean(tx), _mean(rx)
        devices.append(
            {
                "index": index,
                "name": names.get(index, f"GPU {index}"),
                "samples": len(group),
                "utilization_mean": _round(_mean(util)),
                "utilization_p5": _round(percentile(util, 5)),
                "utilization_p50": _round(percentile(util, 50)),
                "utilization_p95": _round(percentile(util, 95)),
                "utilization_min": _round(min(util)),
                "utilization_max": _round(max(util)),
                "memory_used_mb": _round(max(s.memory_used_bytes for s in group) / _MIB),
                "memory_total_mb": _round(max(s.memory_total_bytes for s in group) / _MIB),
                "pcie_tx_mb_s": None if tx_mean is None else _round(tx_mean / 1024),
                "pcie_rx_mb_s": None if rx_mean is None else _round(rx_mean / 1024),
            }
        )
    return devices


class SampleSeries:
    """Readings in time order, shared between the sampling thread and its readers.

    Unbounded by default. With ``limit``, once it holds ``limit`` readings every other one is
    dropped and from then on only every ``stride``-th new reading is kept (the stride doubles
    each time), so the series stays evenly spaced in time and never exceeds ``limit``.
    """

    def __init__(self, limit: int | None = None) -> None:
        if limit is not None and limit < 2:
            raise ValueError(f"a sample limit must be at least 2, not {limit}")
        self.limit = limit
        self.stride = 1
        self._offered = 0
        self._items: list[Any] = []
        self._lock = threading.Lock()

    def add(self, item: Any) -> None:
        with self._lock:
            self._offered += 1
            if (self._offered - 1) % self.stride:
                return
            self._items.append(item)
            if self.limit is not None and len(self._items) >= self.limit:
                del self._items[1::2]
                self.stride *= 2

    def items(self) -> list[Any]:
        """A copy, safe to read while the sampler keeps adding."""
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


class _Sampler:
    """Thread plumbing shared by both samplers: idempotent start/stop, every wait bounded."""

    thread_name = "pipedoctor-sampler"

    def __init__(
        self, interval_s: float, join_timeout_s: float, max_samples: int | None = None
    ) -> None:
        if interval_s <= 0:
            raise ValueError(f"interval_s must be positive, not {interval_s}")
        self.interval_s = interval_s
        self.join_timeout_s = join_timeout_s
        self.errors = 0
        self.first_error_t: float | None = None
        """When a reading first failed (``time.monotonic()``), for a note on where data ends."""
        self._series = SampleSeries(max_samples)
        self._stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._started = False

    def samples(self) -> list[Any]:
        """The readings so far, oldest first (thinned when ``max_samples`` was given)."""
        return self._series.items()

    def _failed(self) -> None:
        self.errors += 1
        if self.first_error_t is None:
            self.first_error_t = time.monotonic()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def start(self) -> Any:  # each sampler starts its own way
        raise NotImplementedError

    def stop(self) -> Any:
        raise NotImplementedError

    def __enter__(self) -> Any:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def _launch(self) -> None:
        self._thread = threading.Thread(target=self._guarded, name=self.thread_name, daemon=True)
        self._thread.start()

    def _guarded(self) -> None:
        # A sampler must never take the training run down with it, nor print a traceback into it.
        try:
            self._loop()
        except Exception:
            self._failed()

    def _loop(self) -> None:
        raise NotImplementedError

    def _halt(self) -> bool:
        """Ask the thread to end and wait at most ``join_timeout_s``; True if it has ended."""
        self._stop_event.set()
        if self._thread is None:
            return True
        self._thread.join(self.join_timeout_s)
        return not self._thread.is_alive()


class GpuSampler(_Sampler):
    """Samples every NVML device's utilisation, memory and PCIe throughput in the background.

    Device indices are NVML's, which sees every GPU in the machine: ``CUDA_VISIBLE_DEVICES`` does
    not hide a GPU from NVML, and NVML numbers GPUs in PCI bus order, which is CUDA's order only
    under ``CUDA_DEVICE_ORDER=PCI_BUS_ID``. No remapping is attempted: a guess would be wrong on
    some machine, while an unused GPU at 0% is plain to see in the report.

    PCIe throughput is read only every ``pcie_every``-th tick: NVML measures it by counting bytes
    over a 20 ms window, so it is by far the slowest query, and a device that answers
    NotSupported is never asked again. Each NVML call gives up the GIL and waits to get it back,
    so while the training thread holds the GIL a tick runs late; that delays our samples, not
    the training.

    ``with GpuSampler() as gpu: ...`` then ``gpu.report``; or ``start()`` and ``stop()``.
    """

    thread_name = "pipedoctor-gpu-sampler"

    def __init__(
        self,
        interval_s: float = 0.1,
        *,
        pcie_every: int = 10,
        join_timeout_s: float = 2.0,
        max_samples: int | None = None,
    ) -> None:
        super().__init__(interval_s, join_timeout_s, max_samples)
        if pcie_every < 1:
            raise ValueError(f"pcie_every must be at least 1, not {pcie_every}")
        self.pcie_every = pcie_every
        self.report: GpuReport | None = None
        self._nvml: Any = None
        self._handles: list[tuple[int, Any]] = []
        self._names: dict[int, str] = {}
        self._pcie_ok: set[int] = set()
        self._tick = 0

    @property
    def available(self) -> bool:
        return self._nvml is not None

    @property
    def names(self) -> dict[int, str]:
        """Each device's name by NVML index (empty without a GPU)."""
        return dict(self._names)

    def start(self) -> GpuSampler:
        """Initialise NVML and start polling; without a usable GPU this quietly does nothing."""
        if self._started:
            return self
        self._started = True
        if self._open():
            self._launch()
        return self

    def _open(self) -> bool:
        try:
            import pynvml
        except ImportError:
            return False
        try:
            pynvml.nvmlInit()
        except Exception:  # NVMLError_LibraryNotFound, DriverNotLoaded, ...: all mean "no GPU"
            return False
        try:
            for index in range(pynvml.nvmlDeviceGetCount()):
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                name = pynvml.nvmlDeviceGetName(handle)
                self._names[index] = name.decode() if isinstance(name, bytes) else str(name)
                self._handles.append((index, handle))
        except Exception:
            self._handles.clear()
        if not self._handles:
            _shutdown(pynvml)
            return False
        self._nvml = pynvml
        self._pcie_ok = {index for index, _ in self._handles}
        return True

    def _loop(self) -> None:
        while True:
            # One tick (every device's reading) is one entry, so thinning keeps whole ticks.
            self._series.add(self.sample_once())
            if self._stop_event.wait(self.interval_s):
                return

    def samples(self) -> list[GpuSample]:
        """Every device's readings so far, oldest first (whole ticks are thinned)."""
        return [reading for tick in self._series.items() for reading in tick]

    def sample_once(self) -> list[GpuSample]:
        """One reading of every device; a device whose reading fails is counted and left out."""
        nvml = self._nvml
        if nvml is None:
            return []
        now = time.monotonic()
        read_pcie = self._tick % self.pcie_every == 0
        self._tick += 1
        readings = []
        for index, handle in self._handles:
            try:
                utilization = nvml.nvmlDeviceGetUtilizationRates(handle).gpu
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
            except Exception:
                self._failed()
                continue
            tx = rx = None
            if read_pcie and index in self._pcie_ok:
                tx, rx = self._pcie(nvml, index, handle)
            readings.append(
                GpuSample(now, index, float(utilization), memory.used, memory.total, tx, rx)
            )
        return readings

    def _pcie(self, nvml: Any, index: int, handle: Any) -> tuple[float | None, float | None]:
        try:
            tx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_TX_BYTES)
            rx = nvml.nvmlDeviceGetPcieThroughput(handle, nvml.NVML_PCIE_UTIL_RX_BYTES)
        except Exception as exc:
            if isinstance(exc, getattr(nvml, "NVMLError_NotSupported", ())):
                self._pcie_ok.discard(index)
            else:
                self._failed()
            return None, None
        return float(tx), float(rx)

    def stop(self) -> GpuReport:
        """Stop polling, shut NVML down and summarise; a second call returns the same report."""
        if self.report is not None:
            return self.report
        if not self._started:
            self.report = GpuReport(available=False, note=NOT_STARTED_NOTE)
            return self.report
        if self._nvml is None:
            self.report = GpuReport(available=False, note=NO_GPU_NOTE)
            return self.report
        note = None
        if self._halt():
            _shutdown(self._nvml)
        else:
            # Shutting NVML down under a thread still inside an NVML call is not safe; leaking
            # one init reference is.
            note = f"GPU sampler thread still busy after {self.join_timeout_s:g}s: NVML left open"
        devices = summarize_gpus(self.samples(), self._names)
        self.report = GpuReport(available=True, note=note, devices=devices, errors=self.errors)
        return self.report


def _shutdown(nvml: Any) -> None:
    try:
        nvml.nvmlShutdown()
    except Exception:
        pass


def compute_capabilities() -> dict[int, tuple[int, int]]:
    """``{nvml_index: (major, minor)}`` for every GPU NVML sees; empty without one.

    Safe while a :class:`GpuSampler` runs: NVML counts its init and shutdown calls.
    """
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except Exception:
        return {}
    capabilities: dict[int, tuple[int, int]] = {}
    try:
        for index in range(pynvml.nvmlDeviceGetCount()):
            try:
                handle = pynvml.nvmlDeviceGetHandleByIndex(index)
                major, minor = pynvml.nvmlDeviceGetCudaComputeCapability(handle)
            except Exception:
                continue
            capabilities[index] = (int(major), int(minor))
    except Exception:
        pass
    finally:
        _shutdown(pynvml)
    return capabilities


# --- host ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostSample:
    """One psutil reading: busy % per core since the previous one, RSS, RAM still available."""

    t: float
    per_core_percent: tuple[float, ...]
    rss_bytes: int
    available_bytes: int


@dataclass
class HostReport:
    """The host over the run; numbers are None when there were no samples."""

    available: bool
    note: str | None = None
    cpu_count: int | None = None
    cpu_percent_mean: float | None = None
    per_core_percent: list[float] = field(default_factory=list)
    cpu_percent_p95: float | None = None
    cpu_percent_p50: float | None = None
    process_rss_mb_max: float | None = None
    available_ram_mb_min: float | None = None
    samples: int = 0


def summarize_host(samples: list[HostSample], cpu_count: int | None = None) -> HostReport:
    """Mean busy % over cores and samples, per core, p95 of each sample's all-core mean, peaks.

    Pure, so it can be tested on made-up samples. ``cpu_count`` defaults to the widest sample.
    """
    if cpu_count is None:
        cpu_count = max((len(s.per_core_percent) for s in samples), default=os.cpu_count())
    if not samples:
        return HostReport(available=True, cpu_count=cpu_count)
    cores = max(len(s.per_core_percent) for s in samples)
    per_core = []
    for core in range(cores):
        values = [s.per_core_percent[core] for s in samples if core < len(s.per_core_percent)]
        per_core.append(_round(_mean(values)))
    all_values = [v for s in samples for v in s.per_core_percent]
    sample_means = [_mean(s.per_core_percent) or 0.0 for s in samples]
    return HostReport(
        available=True,
        cpu_count=cpu_count,
        cpu_percent_mean=_round(_mean(all_values) or 0.0),
        per_core_percent=per_core,
        cpu_percent_p95=_round(percentile(sample_means, 95)),
        cpu_percent_p50=_round(percentile(sample_means, 50)),
        process_rss_mb_max=_round(max(s.rss_bytes for s in samples) / _MIB),
        available_ram_mb_min=_round(min(s.available_bytes for s in samples) / _MIB),
        samples=len(samples),
    )


class HostSampler(_Sampler):
    """Samples per-core CPU busy %, this process's RSS (children included) and available RAM.

    CPU % comes from ``psutil.cpu_percent(percpu=True)``, whose "since the last call" state is
    global to the process: another caller in the same process shortens our intervals (the
    averages stay right). Listing children reads every process's ``/proc/<pid>/stat``: about
    10 times the cost of the rest of a sample, and far worse while the training thread holds
    the GIL, since every file read waits for the GIL again (over 0.5 s for 80 processes against
    a busy Python thread). So the list is made in ``start()``, before training holds the GIL,
    and refreshed only every ``children_every_s``. The RSS of forked workers counts shared pages
    once per process, so the total errs high; PSS would not, at the price of reading ``smaps``.

    ``with HostSampler() as host: ...`` then ``host.report``; or ``start()`` and ``stop()``.
    """

    thread_name = "pipedoctor-host-sampler"

    def __init__(
        self,
        interval_s: float = 0.2,
        *,
        children_every_s: float = 5.0,
        join_timeout_s: float = 2.0,
        max_samples: int | None = None,
    ) -> None:
        super().__init__(interval_s, join_timeout_s, max_samples)
        self.children_every_s = children_every_s
        self.report: HostReport | None = None
        self._psutil: Any = None
        self._process: Any = None
        self._children: list[Any] = []
        self._children_at = 0.0

    @property
    def available(self) -> bool:
        return self._psutil is not None

    def start(self) -> HostSampler:
        """Prime psutil's CPU counters and start polling; without psutil this does nothing."""
        if self._started:
            return self
        self._started = True
        try:
            import psutil

            self._process = psutil.Process()
            # The first cpu_percent() call only sets the baseline the next one is measured from.
            psutil.cpu_percent(percpu=True)
        except Exception:
            return self
        self._psutil = psutil
        self.refresh_children()
        self._launch()
        return self

    def _loop(self) -> None:
        last = time.monotonic()
        while not self._stop_event.wait(self.interval_s):
            self._record()
            last = time.monotonic()
        # The stretch since the last tick is part of the run too; skip it only when too short
        # for a meaningful CPU percentage.
        if time.monotonic() - last >= self.interval_s / 4:
            self._record()

    def _record(self) -> None:
        try:
            self._series.add(self.sample_once())
        except Exception:
            self._failed()

    def sample_once(self) -> HostSample:
        """One reading: CPU since the previous reading, RSS now, available RAM now."""
        psutil = self._psutil
        if psutil is None:
            raise RuntimeError("HostSampler.sample_once() needs a started sampler with psutil")
        per_core = tuple(float(v) for v in psutil.cpu_percent(percpu=True))
        if time.monotonic() - self._children_at >= self.children_every_s:
            self.refresh_children()
        rss = self._process.memory_info().rss
        for child in list(self._children):
            try:
                rss += child.memory_info().rss
            except psutil.Error:  # vanished (NoSuchProcess, ZombieProcess) or not ours to read
                self._children.remove(child)
        available = psutil.virtual_memory().available
        return HostSample(time.monotonic(), per_core, rss, available)

    def refresh_children(self) -> None:
        """List this process's descendants again (multiprocessing workers come and go)."""
        self._children_at = time.monotonic()
        try:
            self._children = self._process.children(recursive=True)
        except self._psutil.Error:
            pass

    def stop(self) -> HostReport:
        """Stop polling and summarise; a second call returns the same report."""
        if self.report is not None:
            return self.report
        if not self._started:
            self.report = HostReport(available=False, note=NOT_STARTED_NOTE)
            return self.report
        if self._psutil is None:
            self.report = HostReport(available=False, note=NO_PSUTIL_NOTE, cpu_count=os.cpu_count())
            return self.report
        halted = self._halt()
        cpu_count = self._psutil.cpu_count() or os.cpu_count()
        self.report = summarize_host(self.samples(), cpu_count)
        if not halted:
            self.report.note = f"host sampler thread still busy after {self.join_timeout_s:g}s"
        return self.report


# --- report --------------------------------------------------------------------------------------


def to_measurements(gpu: GpuReport, host: HostReport) -> dict[str, Any]:
    """The samplers' part of ``Report.measurements``, keyed as the renderers read them."""
    measurements: dict[str, Any] = {
        "host_cpu_percent": host.cpu_percent_mean,
        "host": {
            "cpu_count": host.cpu_count,
            "per_core_percent": list(host.per_core_percent),
            "cpu_percent_p95": host.cpu_percent_p95,
            "cpu_percent_p50": host.cpu_percent_p50,
            "process_rss_mb_max": host.process_rss_mb_max,
            "available_ram_mb_min": host.available_ram_mb_min,
        },
        "gpus": [dict(device) for device in gpu.devices] if gpu.available else [],
    }
    if not gpu.available:
        measurements["gpu_note"] = gpu.note or NO_GPU_NOTE
    if not host.available and host.note:
        measurements["host_note"] = host.note
    return measurements
