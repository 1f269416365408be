"""Time to a target, compared across monitored runs: samples per second is not the goal.

A configuration that doubles throughput while needing three times the epochs to converge is a
loss. ``pipedoctor compare LOG_DIR LOG_DIR ... --target val_accuracy=0.9`` reads what
``pipedoctor.keras.Monitor`` recorded for each run (per epoch: the logs Keras passed, the wall
time and the samples seen) and says, per run, when it reached the target, interpolated between
epochs, and how the runs compare. It reads records and never times anything.
"""

from __future__ import annotations

import re
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipedoctor.decide import duration


class CompareError(ValueError):
    """Nothing could be compared: the one-line reason."""


FRACTIONS = r"acc|auc|precision|recall|f1|iou"
"""Metric names Keras logs as fractions between 0 and 1 (accuracy, AUC, precision, recall)."""


@dataclass(frozen=True)
class Target:
    """``val_accuracy>=0.9``: a logged metric, a threshold and its direction."""

    metric: str
    value: float
    higher_is_better: bool

    @classmethod
    def parse(cls, text: str) -> Target:
        """``metric>=v``, ``metric<=v`` or ``metric=v`` (lower is better for a name with
        ``loss`` or ``error`` in it, higher otherwise)."""
        match = re.fullmatch(r"\s*([A-Za-z_][\w./-]*)\s*(>=|<=|=)\s*([-+0-9.eE]+)\s*", text)
        if match is None:
            raise CompareError(
                f"--target {text!r}: expected METRIC=VALUE, METRIC>=VALUE or METRIC<=VALUE "
                "(for example val_accuracy=0.9 or loss<=0.3)"
            )
        name, op, number = match.groups()
        try:
            value = float(number)
        except ValueError:
            raise CompareError(f"--target {text!r}: {number!r} is not a number") from None
        if op == "=":
            higher = not re.search(r"loss|error|mse|mae", name)
        else:
            higher = op == ">="
        if re.search(FRACTIONS, name) and not 0 <= value <= 1:
            raise CompareError(
                f"--target {text!r}: {name} is a fraction between 0 and 1, so no run can reach "
                f"{value:g} (for 90%, write {name}=0.9)"
            )
        return cls(name, value, higher)

    def met(self, value: float) -> bool:
        return value >= self.value if self.higher_is_better else value <= self.value

    def __str__(self) -> str:
        return f"{self.metric} {'>=' if self.higher_is_better else '<='} {self.value:g}"


@dataclass
class Run:
    """One monitored run and its time to the target."""

    name: str
    devices: int
    global_batch: int | None
    steady_samples_per_s: float | None
    epochs: list[dict[str, Any]]
    reached: dict[str, float] | None = None
    scaling_efficiency: float | None = None
    notes: list[str] = field(default_factory=list)
    model: str | None = None
    """``Sequential, 9 parameters``: to tell runs of different models apart."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "devices": self.devices,
            "global_batch": self.global_batch,
            "steady_samples_per_s": self.steady_samples_per_s,
            "epochs_run": len(self.epochs),
            "model": self.model,
            "scaling_efficiency": self.scaling_efficiency,
            "reached": self.reached,
            "curve": [
                {
                    "epoch": e["epoch"],
                    "wall_s": e["wall_s"],
                    "samples": e["samples_seen"],
                    "value": e["value"],
                }  # fmt: skip
                for e in self.epochs
            ],
            "notes": self.notes,
        }


def load_run(folder: Path, target: Target) -> Run:
    """A run's figures from its records (the chief's, for a multi-worker job)."""
    from pipedoctor.monitor.records import read_job

    try:
        job = read_job([folder])
    except ValueError as exc:
        raise CompareError(f"{folder}: {exc}") from None
    m = job.measurements()
    raw = m.get("epochs") if isinstance(m.get("epochs"), list) else []
    name = folder.name or str(folder)
    notes = [str(n) for n in job.all_notes()]
    epochs = []
    logged: set[str] = set()
    for e in raw:
        if not isinstance(e, Mapping) or not isinstance(e.get("logs"), Mapping):
            continue
        logged.update(e["logs"])
        value = e["logs"].get(target.metric)
        wall, seen = e.get("wall_s"), e.get("samples_seen")
        if isinstance(value, int | float) and isinstance(wall, int | float):
            epochs.append({"epoch": int(e.get("epoch") or len(epochs) + 1), "wall_s": float(wall),
                           "samples_seen": int(seen or 0), "value": float(value),
                           "samples_per_s": e.get("samples_per_s")})  # fmt: skip
    if raw and not logged:
        notes.append(
            "its records hold no per-epoch logs (written by an older pipedoctor): run it again "
            "with this version's Monitor"
        )
    elif logged and not epochs:
        notes.append(f"it did not log {target.metric} (it logged {', '.join(sorted(logged))})")
    rates = [float(e["samples_per_s"]) for e in epochs[1:] if e.get("samples_per_s")]
    steady = statistics.median(rates) if rates else _number(m.get("training_samples_per_s"))
    if len(epochs) == 1:
        notes.append("one epoch only: its throughput includes start-up")
    info = m.get("model") if isinstance(m.get("model"), Mapping) else {}
    size = info.get("parameters")
    model = f"{info.get('class')}, {size:,} parameters" if isinstance(size, int) else None
    return Run(
        model=model,
        name=name,
        devices=int(m.get("replicas") or 1),
        global_batch=_int(m.get("batch_size")),
        steady_samples_per_s=round(steady, 1) if steady else None,
        epochs=epochs,
        reached=time_to(epochs, target),
        notes=notes,
    )


def time_to(epochs: Sequence[Mapping[str, Any]], target: Target) -> dict[str, float] | None:
    """Epochs, samples and wall time to the target, interpolated linearly between the two
    epoch ends around the crossing (from the run's start when the first epoch meets it)."""
    previous: Mapping[str, Any] = {"epoch": 0, "wall_s": 0.0, "samples_seen": 0, "value": None}
    for e in epochs:
        if target.met(e["value"]):
            share = 1.0
            if previous["value"] is not None and e["value"] != previous["value"]:
                share = (target.value - previous["value"]) / (e["value"] - previous["value"])
                share = min(1.0, max(0.0, share))
            return {
                key: round(previous[src] + share * (e[src] - previous[src]), 3)
                for key, src in (
                    ("epochs", "epoch"),
                    ("seconds", "wall_s"),
                    ("samples", "samples_seen"),
                )  # fmt: skip
            }
        previous = e
    return None


def compare(folders: Sequence[Path], target: Target) -> dict[str, Any]:
    """Every run's figures, and the verdict in words. Raises ``CompareError`` when no run
    logged the target's metric."""
    runs = [load_run(folder, target) for folder in folders]
    if not any(run.epochs for run in runs):
        reasons = "; ".join(f"{run.name}: {n}" for run in runs for n in run.notes[-1:])
        raise CompareError(f"no run logged {target.metric} at its epochs' ends ({reasons})")
    single = [r for r in runs if r.devices == 1 and r.steady_samples_per_s]
    if single:
        base = single[0].steady_samples_per_s
        for run in runs:
            if run.devices > 1 and run.steady_samples_per_s and base:
                run.scaling_efficiency = round(run.steady_samples_per_s / (run.devices * base), 3)
    models = {run.model for run in runs if run.model}
    notes = []
    if len(models) > 1:
        notes.append(
            "the runs trained different models ("
            + "; ".join(f"{run.name}: {run.model}" for run in runs if run.model)
            + "): their times compare the models as well as the setups"
        )
    return {
        "notes": notes,
        "target": {
            "metric": target.metric,
            "value": target.value,
            "higher_is_better": target.higher_is_better,
        },  # fmt: skip
        "runs": [run.to_dict() for run in runs],
        "verdict": verdict(runs, target),
    }


def verdict(runs: Sequence[Run], target: Target) -> list[str]:
    """One sentence per run against the first that reached the target soonest, in the seed's
    words: throughput per sample, epochs needed, and what they make of time to target."""
    sentences = []
    reached = [r for r in runs if r.reached]
    for run in runs:
        if run.epochs and not run.reached:
            sentences.append(
                f"run {run.name} does not reach {target} in {len(run.epochs)} epochs "
                f"(best {best(run, target):.3g})"
            )
    if not reached:
        return sentences
    first = min(reached, key=lambda r: r.reached["seconds"])
    sentences.insert(
        0,
        f"run {first.name} reaches {target} first: after {first.reached['epochs']:.1f} epochs, "
        f"{first.reached['samples']:,.0f} samples, {duration(first.reached['seconds'])}",
    )
    for run in reached:
        if run is first:
            continue
        speed = _ratio(run.steady_samples_per_s, first.steady_samples_per_s)
        epochs = run.reached["epochs"] / max(first.reached["epochs"], 1e-9)
        later = run.reached["seconds"] / max(first.reached["seconds"], 1e-9)
        if not speed:
            pace = "trains at a pace not recorded"
        elif speed >= 1:
            pace = f"trains {speed:.1f}x faster per sample"
        else:
            pace = f"trains {1 / speed:.1f}x slower per sample"
        faster, fewer = bool(speed and speed >= 1), epochs < 1
        link = "but" if faster != fewer else "and"
        need = f"only {epochs:.1f}x" if fewer else f"{epochs:.1f}x"
        sentences.append(
            f"run {run.name} {pace} {link} needs {need} the epochs: it reaches "
            f"{target.metric} {target.value:g} {later:.1f}x later than run {first.name}"
        )
    return sentences


def best(run: Run, target: Target) -> float:
    values = [e["value"] for e in run.epochs]
    return max(values) if target.higher_is_better else min(values)


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a and b else None


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and value > 0 else None


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and value > 0 else None


def render_text(result: Mapping[str, Any]) -> str:
    """A table of the runs, then the verdict's sentences."""
    head = ("run", "devices", "batch", "samples/s", "efficiency", "epochs", "samples", "time")
    rows = [head]
    for run in result["runs"]:
        reached = run["reached"] or {}
        eff = run["scaling_efficiency"]
        rows.append((
            run["name"], str(run["devices"]), str(run["global_batch"] or "?"),
            f"{run['steady_samples_per_s']:,.0f}" if run["steady_samples_per_s"] else "?",
            f"{eff:.0%}" if eff is not None else "-",
            f"{reached['epochs']:.1f}" if reached else f"not in {run['epochs_run']}",
            f"{reached['samples']:,.0f}" if reached else "-",
            duration(reached["seconds"]) if reached else "-",
        ))  # fmt: skip
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    target = result["target"]
    op = ">=" if target["higher_is_better"] else "<="
    lines = [f"Time to {target['metric']} {op} {target['value']:g}"]
    lines += ["  " + "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip()
              for row in rows]  # fmt: skip
    lines.append("")
    lines += [f"{sentence}." for sentence in result["verdict"]]
    lines += [f"note: run {run['name']}: {n}" for run in result["runs"] for n in run["notes"]]
    lines += [f"note: {n}" for n in result.get("notes", [])]
    return "\n".join(lines) + "\n"
