"""TensorBoard scalars for each epoch a monitor sees, under ``<log_dir>/pipedoctor/<worker>/``.

Written with ``tf.summary`` (each worker its own run, so TensorBoard shows them side by side).
A failure to write (no TensorFlow, a full disk, a read-only folder) turns the writer off and
leaves one note: training goes on.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipedoctor.measure.protocol import brief
from pipedoctor.monitor.records import record_dir


def epoch_scalars(record: dict[str, Any]) -> dict[str, float]:
    """The figures of one epoch record worth a TensorBoard chart, by tag."""
    scalars: dict[str, float] = {}
    for key in ("samples_per_s", "input_wait_fraction", "step_ms", "stall_seconds"):
        if isinstance(record.get(key), (int, float)):
            scalars[f"pipedoctor/{key}"] = float(record[key])
    if isinstance(record.get("host_cpu_percent"), (int, float)):
        scalars["pipedoctor/host_cpu_percent"] = float(record["host_cpu_percent"])
    evaluation = record.get("eval") or {}
    for key in ("seconds", "samples_per_s", "input_wait_fraction"):
        if isinstance(evaluation.get(key), (int, float)):
            scalars[f"pipedoctor/eval_{key}"] = float(evaluation[key])
    for gpu in record.get("gpus") or []:
        for key in ("utilization_mean", "memory_used_mb"):
            if isinstance(gpu.get(key), (int, float)):
                scalars[f"pipedoctor/gpu{gpu.get('index')}_{key}"] = float(gpu[key])
    return scalars


class ScalarWriter:
    """Writes each epoch's scalars; ``note`` says why it stopped, if it did."""

    def __init__(self, log_dir: str, worker: str) -> None:
        self.directory = Path(record_dir(log_dir)) / worker
        self.note: str | None = None
        self._writer: Any = None
        self._off = False

    def write(self, scalars: dict[str, float], step: int) -> None:
        """One epoch's ``epoch_scalars`` at ``step`` (the epoch)."""
        if self._off:
            return
        try:
            writer = self._open()
            import tensorflow as tf

            with writer.as_default():
                for tag, value in scalars.items():
                    tf.summary.scalar(tag, value, step=step)
            writer.flush()
        except Exception as exc:  # noqa: BLE001 - a full disk or a missing TF: note it, go on
            self._off = True
            self.note = f"TensorBoard scalars stopped: {type(exc).__name__}: {brief(exc)}"

    def _open(self) -> Any:
        if self._writer is None:
            import tensorflow as tf

            self._writer = tf.summary.create_file_writer(str(self.directory))
        return self._writer

    def close(self) -> None:
        if self._writer is not None:
            try:
                self._writer.close()
            except Exception as exc:  # noqa: BLE001 - the last flush can hit a full disk too
                if self.note is None:
                    self.note = f"TensorBoard scalars stopped: {type(exc).__name__}: {brief(exc)}"
            self._writer = None
