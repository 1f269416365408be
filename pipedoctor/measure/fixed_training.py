"""Training on the pipeline with its best fix, where the pipeline and the model share a host.

There the pipeline alone and the model alone each keep up, and training is slower only because
they compete for the same cores. A fix's gain on the pipeline alone, capped by the compute
ceiling, then says nothing about training (the pipeline is already faster than the ceiling);
what a fix that removes work (a cache) buys is the cores it hands back to the model. Only
training on the fixed pipeline says how much that is, so it is measured: real training steps
of a copy of the model on the rewritten pipeline, against the training rate measured before.
"""

from __future__ import annotations

from typing import Any

from pipedoctor.measure.protocol import MeasureError, copy_model, endless, measure_fit

RESERVE_S = 8.0
"""Budget kept from the graph doctor for this measurement where the host is shared."""


def best_fix(graph: Any) -> tuple[Any, dict[str, Any]] | None:
    """The applied fix with the largest gain on the pipeline, and its what-if entry; ``None``
    where none was applied or the best one writes files (they are gone once measured)."""
    outcome = getattr(graph, "outcome", None)
    if outcome is None or not outcome.chosen:
        return None
    entries = {e["title"]: e for e in graph.measurements.get("whatif") or []}
    ranked = [(c, entries[c.title]) for c in outcome.chosen if c.title in entries]
    if not ranked:
        return None
    candidate, entry = max(ranked, key=lambda pair: pair[1].get("gain") or 0.0)
    return None if candidate.writes_files else (candidate, entry)


def measure_training_with_fix(
    dataset: Any,
    model: Any,
    graph: Any,
    measurements: dict[str, Any],
    deadline: float,
) -> list[str]:
    """Time training on the pipeline with its best fix and put the measured gain for training
    on that fix's what-if entry and finding. Returns notes (what was measured, or why not)."""
    from pipedoctor.graph.candidate import rebuilt
    from pipedoctor.graph.doctor import measured

    training = measurements.get("training_samples_per_s")
    batch = measurements.get("batch_size")
    found = best_fix(graph)
    if found is None or not training or not isinstance(batch, int) or graph.pipeline is None:
        return []
    candidate, entry = found
    notes: list[str] = []
    try:
        fixed = endless(rebuilt(graph.pipeline, [candidate], dataset.element_spec), notes)
        rate = measure_fit(copy_model(model), fixed, deadline, batch, deadline)
    except MeasureError as exc:
        return [f"training with {candidate.title} could not be timed: {exc}"]
    if rate is None:
        return [f"training with {candidate.title}: the check's budget ran out before it was timed"]
    gain = round(rate.samples_per_s / training, 2)
    measurements["training_with_fix_samples_per_s"] = round(rate.samples_per_s, 1)
    entry.update(
        end_to_end_gain=gain,
        training_samples_per_s=round(rate.samples_per_s, 1),
        end_to_end_measured=True,
    )
    graph.findings = [
        measured(f, f.gain, gain)
        if (f.rule, f.path, f.line) == (entry["rule"], entry["path"], entry["line"])
        else f
        for f in graph.findings
    ]
    return [
        f"training with {candidate.title} measured {rate.samples_per_s:,.0f} samples/s against "
        f"{training:,.0f} as it is (x{gain:.2f}): the cores the pipeline no longer spends go "
        "to the model"
    ]
