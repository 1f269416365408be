"""Host and GPU samplers around the real training steps, as one context for the protocol."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from pipedoctor.measure.samplers import (
    GpuSampler,
    HostSampler,
    compute_capabilities,
    to_measurements,
)
from pipedoctor.measure.timeline import gpu_series, host_series


class Sampling:
    """Start both samplers for the duration of ``during()``; read the summaries afterwards."""

    def __init__(self) -> None:
        self.gpu_report: Any = None
        self.host_report: Any = None
        self.gpu: GpuSampler | None = None
        self.host: HostSampler | None = None

    @contextmanager
    def during(self) -> Iterator[None]:
        self.gpu, self.host = GpuSampler(), HostSampler()
        self.gpu.start()
        self.host.start()
        try:
            yield
        finally:
            self.host_report = self.host.stop()
            self.gpu_report = self.gpu.stop()

    def series(self, origin: float) -> dict[str, Any]:
        """Host CPU per core and each GPU over time (``time.monotonic()`` seconds after
        ``origin``), for the report's timelines."""
        if self.host is None or self.gpu is None:
            return {}
        return {
            "host": host_series(self.host.samples(), origin),
            "gpus": gpu_series(self.gpu.samples(), self.gpu.names, origin),
        }

    def measurements(self) -> dict[str, Any]:
        if self.gpu_report is None or self.host_report is None:
            return {}
        data = to_measurements(self.gpu_report, self.host_report)
        if data.get("gpus"):
            capabilities = compute_capabilities()
            for gpu in data["gpus"]:
                major_minor = capabilities.get(gpu.get("index"))
                if major_minor:
                    gpu["compute_capability"] = f"{major_minor[0]}.{major_minor[1]}"
        return data

    def notes(self) -> list[str]:
        """Nothing beyond the measurements: the GPU note travels as ``gpu_note`` and is shown
        once, where the GPUs would be."""
        return []
