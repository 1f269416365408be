"""What the monitor prints: one line per epoch, one per finding as it happens, one at the end.

Every line starts with ``pipedoctor`` and, in a multi-worker job, the worker's name, so the
interleaved logs of many workers can be told apart (and grepped).
"""

from __future__ import annotations

from typing import Any

from pipedoctor.measure.rates import share_text
from pipedoctor.render.text import gpu_facts, host_cpu, samples
from pipedoctor.report import Finding


def prefix(worker: str | None) -> str:
    return f"pipedoctor[{worker}]" if worker else "pipedoctor"


def wait_text(fraction: float | None, ci: float | None) -> str | None:
    """``input wait 64% ±4%`` of the step time (``share_text``)."""
    return None if fraction is None else f"input wait {share_text(fraction, ci)}"


def epoch_line(record: dict[str, Any], epochs: int | None, worker: str | None) -> str:
    """``pipedoctor epoch 3/10: 1,234 samples/s ±2%, step 51.9 ms, input wait 64% ±4%, ...``."""
    total = f"/{epochs}" if epochs else ""
    parts = []
    if (rate := record.get("samples_per_s")) is not None:
        ci = record.get("samples_per_s_ci")
        parts.append(f"{samples(rate)} samples/s" + (f" ±{ci:.0%}" if ci and ci >= 0.005 else ""))
    if (step := record.get("step_ms")) is not None:
        parts.append(f"step {step:.1f} ms")
    if wait := wait_text(record.get("input_wait_fraction"), record.get("input_wait_ci")):
        parts.append(wait)
    if cpu := host_cpu(record):
        parts.append(f"host CPU {cpu}")
    for position, gpu in enumerate(record.get("gpus") or []):
        facts = gpu_facts(gpu, position)
        short = (facts.label.split(" ")[0], facts.util, facts.memory)
        parts.append(" ".join(part for part in short if part))
    evaluation = record.get("eval") or {}
    if (seconds := evaluation.get("seconds")) is not None:
        rate = evaluation.get("samples_per_s")
        parts.append(f"eval {seconds:.1f} s" + (f" at {samples(rate)} samples/s" if rate else ""))
    if (stall := record.get("stall_seconds") or 0) >= 0.1:
        parts.append(f"outside steps {stall:.1f} s")
    body = ", ".join(parts) or "no training steps timed"
    return f"{prefix(worker)} epoch {record.get('epoch')}{total}: {body}"


def finding_line(finding: Finding, worker: str | None, epoch: int | None) -> str:
    """A finding as it first appears. Its figures cover the run so far, not the epoch the
    line before shows (``after epoch 3, run so far: PD301 ...``); at the end, the run."""
    when = f" after epoch {epoch}, run so far:" if epoch is not None else " run:"
    return f"{prefix(worker)}{when} {finding.rule} {finding.name}: {finding.message}"


def note_line(note: str, worker: str | None) -> str:
    return f"{prefix(worker)} note: {note}"


def verdict_line(verdict: str | None, measurements: dict[str, Any], worker: str | None) -> str:
    """The run in one line: the verdict, the rate and the wait share over the whole run."""
    parts = [f"verdict {verdict}" if verdict else "no verdict"]
    if (rate := measurements.get("training_samples_per_s")) is not None:
        parts.append(f"{samples(rate)} samples/s")
    wait = wait_text(measurements.get("input_wait_fraction"), measurements.get("input_wait_ci"))
    if wait:
        parts.append(f"{wait} over the run")
    return f"{prefix(worker)} run: " + ", ".join(parts)


def probe_line(rate: float | None, seconds: float, startup_s: float, worker: str | None) -> str:
    """What this worker's own pipeline gave, read alone after training."""
    read = f"read for {seconds:.1f} s after a {startup_s:.1f} s start"
    return f"{prefix(worker)} own pipeline alone: {samples(rate)} samples/s ({read})"
