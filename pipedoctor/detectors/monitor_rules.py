"""Detectors for what only a whole monitored run shows (PD315-PD319): they read the per-epoch
records ``pipedoctor.keras.Monitor`` keeps in ``measurements["epochs"]``, never time anything."""

from __future__ import annotations

import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pipedoctor import diagnosis
from pipedoctor.measure.rates import share_text
from pipedoctor.rules import Context, Hit, detector


def _epochs(context: Context) -> list[dict[str, Any]]:
    return [e for e in context.measurements.get("epochs") or [] if isinstance(e, dict)]


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _span(numbers: list[int]) -> str:
    """``epochs 1-4`` or ``epoch 2``."""
    if len(numbers) == 1:
        return f"epoch {numbers[0]}"
    return f"epochs {numbers[0]}-{numbers[-1]}"


@dataclass(frozen=True)
class _Drift:
    """An epoch's rate against the earlier epochs': how much slower, and the noise it beat."""

    drop: float
    reference: float
    """The earlier epochs' median rate..."""
    reference_ci: float | None
    """...their median interval (relative half-width, 95%), when each has one..."""
    strayed: float | None
    """...and how far the furthest of them lay from that median (noise from epoch to epoch),
    when there are two or more."""

    @classmethod
    def of(
        cls, rate: float, ci: float | None, earlier: list[tuple[float, float | None]]
    ) -> _Drift | None:
        """The drift, when the drop passes the noise measured: the epoch's own interval plus
        the earlier epochs' usual one, and how far they strayed. ``None`` within that noise, or
        when no noise was measured (one earlier epoch, records without intervals)."""
        reference = statistics.median(r for r, _ in earlier)
        intervals = [c for _, c in earlier if c is not None]
        reference_ci = statistics.median(intervals) if len(intervals) == len(earlier) else None
        strayed = max(abs(r / reference - 1.0) for r, _ in earlier) if len(earlier) > 1 else None
        within = ci + reference_ci if ci is not None and reference_ci is not None else None
        noises = [n for n in (within, strayed) if n is not None]
        drop = 1.0 - rate / reference
        if not noises or drop <= max(noises):
            return None
        return cls(drop, reference, reference_ci, strayed)


def _rate_text(rate: float, ci: float | None) -> str:
    return f"{rate:,.0f} ±{ci:.0%}" if ci is not None else f"{rate:,.0f}"


@detector("PD315")
def throughput_drift(context: Context) -> Iterator[Hit]:
    rated = [
        (e, rate, _number(e.get("samples_per_s_ci")))
        for e in _epochs(context)
        if (rate := _number(e.get("samples_per_s")))
        and (e.get("steps") or 0) >= context.param("min_steps")
    ]
    worst: tuple[_Drift, int] | None = None
    for position in range(1, len(rated)):
        _, rate, ci = rated[position]
        drift = _Drift.of(rate, ci, [(r, c) for _, r, c in rated[:position]])
        if drift is not None and drift.drop >= context.param("drop"):
            if worst is None or drift.drop > worst[0].drop:
                worst = (drift, position)
    if worst is None:
        return
    drift, position = worst
    epoch, rate, ci = rated[position]
    before = [e["epoch"] for e, _, _ in rated[:position]]
    strayed = "" if drift.strayed is None else f"; they strayed {drift.strayed:.0%} from it"
    message = (
        f"Epoch {epoch['epoch']} trained at {_rate_text(rate, ci)} samples/s against "
        f"{_rate_text(drift.reference, drift.reference_ci)} in {_span(before)} (median{strayed}),"
        f" {drift.drop:.0%} slower, beyond that noise."
    )
    now = _number(epoch.get("input_wait_fraction"))
    waits = [w for e, _, _ in rated[:position] if (w := _number(e.get("input_wait_fraction")))
             is not None]  # fmt: skip
    if now is not None and waits:
        usual = statistics.median(waits)
        if now - usual >= 0.15:
            message += f" Its input wait rose from {usual:.0%} to {now:.0%}: the input slowed."
        else:
            message += (
                f" Its input wait stayed near {usual:.0%} ({now:.0%}): the steps themselves slowed."
            )
    yield Hit(None, message)


@detector("PD316")
def slow_evaluation(context: Context) -> Iterator[Hit]:
    m = context.measurements
    split = m.get("time_split") or {}
    wall, evaluation = _number(m.get("run_seconds")), _number(split.get("eval_s"))
    if not wall or not evaluation or evaluation / wall < context.param("min_share"):
        return
    evaluations = [e.get("eval") or {} for e in _epochs(context)]
    rates = [rate for e in evaluations if (rate := _number(e.get("samples_per_s")))]
    eval_rate = statistics.median(rates) if rates else None
    training = _number(m.get("training_samples_per_s"))
    wait = _number(m.get("eval_input_wait_fraction"))
    spread = _number(m.get("eval_input_wait_ci")) or 0.0
    reasons = []
    if wait is not None and wait - spread >= context.param("eval_wait"):  # beyond its noise
        reasons.append(f"waits for input {share_text(wait, spread)} of its step time")
    if eval_rate is not None and training and eval_rate < training:
        reasons.append(
            f"runs at {eval_rate:,.0f} samples/s against {training:,.0f} for training, although "
            "it has no backward pass"
        )
    if not reasons:
        return
    yield Hit(
        None,
        f"Evaluation takes {evaluation / wall:.0%} of the run's wall time ({evaluation:,.1f} s "
        f"of {wall:,.1f} s) and {' and '.join(reasons)}: the validation pipeline is the "
        "bottleneck there.",
    )


@detector("PD317")
def callback_stall(context: Context) -> Iterator[Hit]:
    m = context.measurements
    wall = _number(m.get("run_seconds"))
    stall = _number((m.get("time_split") or {}).get("stall_s"))
    if not wall or not stall or stall < context.param("min_seconds"):
        return
    if stall / wall < context.param("min_share"):
        return
    message = (
        f"{stall:,.1f} s of the run's {wall:,.1f} s ({stall / wall:.0%}) passed outside training "
        "steps and evaluation: in callbacks (checkpoints, logging) and between epochs (where "
        "Keras also reopens a dataset that does not repeat)."
    )
    epochs = [e for e in _epochs(context) if _number(e.get("longest_stall_s"))]
    if epochs:
        longest = max(epochs, key=lambda e: e["longest_stall_s"])
        message += (
            f" The longest stretch, {longest['longest_stall_s']:,.1f} s, came in epoch "
            f"{longest['epoch']}."
        )
    yield Hit(None, message)


def _bounds(epoch: dict[str, Any]) -> tuple[float, float] | None:
    """The 95% interval of an epoch's input-wait share (the share itself without one)."""
    share = _number(epoch.get("input_wait_fraction"))
    if share is None:
        return None
    spread = _number(epoch.get("input_wait_ci")) or 0.0
    return share - spread, share + spread


@detector("PD318")
def turned_input_bound(context: Context) -> Iterator[Hit]:
    limit = diagnosis.wait_limit(diagnosis.thresholds())
    calm_limit = min(limit, context.param("calm_below"))
    calm: list[tuple[int, float]] = []
    """(epoch, the top of its interval) of each calm epoch so far."""
    for epoch in _epochs(context):
        bounds = _bounds(epoch)
        if bounds is None:
            continue
        low, high = bounds
        if high < calm_limit:
            calm.append((epoch["epoch"], high))
        elif calm and low >= limit:
            now = share_text(epoch["input_wait_fraction"], _number(epoch.get("input_wait_ci")))
            yield Hit(
                None,
                f"Epoch {epoch['epoch']} waited for input {now} of its step time (95% "
                f"interval; input-bound from {limit:.0%}), after {_span([n for n, _ in calm])} "
                f"waited at most {max(h for _, h in calm):.0%} (the top of their intervals): "
                "the run turned input-bound.",
            )
            return


@detector("PD319")
def gpu_fell_behind(context: Context) -> Iterator[Hit]:
    gap = context.param("straggler_gap")
    kept_up: dict[Any, list[int]] = {}
    for epoch in _epochs(context):
        gpus = [
            g for g in epoch.get("gpus") or [] if _number(g.get("utilization_mean")) is not None
        ]
        if len(gpus) < 2:
            continue
        busiest = max(g["utilization_mean"] for g in gpus)
        for gpu in gpus:
            behind = busiest - gpu["utilization_mean"]
            index = gpu.get("index")
            if behind <= gap / 2:
                kept_up.setdefault(index, []).append(epoch["epoch"])
            elif behind >= gap and kept_up.get(index):
                yield Hit(
                    None,
                    f"GPU {index} fell behind in epoch {epoch['epoch']}: "
                    f"{gpu['utilization_mean']:.0f}% busy against {busiest:.0f}% on the busiest "
                    f"GPU, after keeping within {gap / 2:.0f} points in "
                    f"{_span(kept_up[index])}.",
                )
                kept_up[index] = []  # report each fall once
