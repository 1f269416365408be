"""One set of figures: the projection, and notes for figures that look wrong at first sight."""

from __future__ import annotations

from pipedoctor.checker import build_report
from pipedoctor.measure.job import projection, surprises
from pipedoctor.render.html import render_html
from pipedoctor.render.json import render_json
from pipedoctor.render.text import render_text
from pipedoctor.rules import ALL_RULES


def measured(**extra: float) -> dict:
    return {
        "batch_size": 64, "pipeline_samples_per_s": 1332.0, "pipeline_ci": 0.04,
        "ceiling_samples_per_s": 8286.0, "ceiling_ci": 0.05,
        "training_samples_per_s": 1203.0, "training_ci": 0.05,
        "graph_pipeline_samples_per_s": 1500.0, **extra,
    }  # fmt: skip


def test_the_fixed_pipeline_is_on_the_pipeline_alones_scale_and_every_renderer_shows_it() -> None:
    m = measured(fixed_pipeline_samples_per_s=2715.0)  # x1.81 on the graph's own baseline
    projection(m)
    assert m["fixes_gain"] == 1.81
    assert m["fixed_pipeline_samples_per_s"] == round(1332.0 * 2715.0 / 1500.0, 1) == 2410.9
    assert m["projected_fixed_samples_per_s"] == 2410.9  # below the ceiling: the same figure
    report = build_report(m, [], ALL_RULES)
    assert "2,411" in render_text(report).split("pipeline w/ fixes", 1)[1].split("\n")[0]
    assert "2,411 with the fixes applied" in render_text(report)
    assert '"fixed_pipeline_samples_per_s": 2410.9' in render_json(report)
    assert "2,411" in render_html(report)


def test_the_projection_is_capped_by_the_ceiling_and_says_so() -> None:
    m = measured(fixed_pipeline_samples_per_s=60_000.0)
    projection(m)
    assert m["fixed_pipeline_samples_per_s"] > m["ceiling_samples_per_s"]
    assert m["projected_fixed_samples_per_s"] == 8286.0
    assert "capped by the compute ceiling" in render_text(build_report(m, [], ALL_RULES))


def test_without_a_fixed_rate_there_is_no_fixed_figure_anywhere() -> None:
    m = measured(fixed_pipeline_samples_per_s=None)
    projection(m)
    assert m["fixed_pipeline_samples_per_s"] is None and "projected_fixed_samples_per_s" not in m
    assert "pipeline w/ fixes" not in render_text(build_report(m, [], ALL_RULES))


def test_training_faster_than_the_pipeline_alone_is_explained() -> None:
    filling = measured(training_samples_per_s=2400.0, stages=[{"op": "cache"}])
    (note,) = surprises(filling)
    assert "faster than the pipeline alone (2,400 against 1,332" in note
    assert "while its `cache()` was still filling" in note
    (noise,) = surprises(measured(training_samples_per_s=1390.0))
    assert "within the two measurements' 95% intervals" in noise
    fast = measured(
        pipeline_samples_per_s=85_000.0, training_samples_per_s=120_000.0,
        ceiling_samples_per_s=200_000.0, batch_size=32,
    )  # fmt: skip
    (python,) = surprises(fast)
    assert "read batch by batch from Python" in python
    assert surprises(measured()) == []


def test_without_intervals_a_faster_training_is_never_called_beyond_them() -> None:
    slow = measured(training_samples_per_s=9000.0, pipeline_samples_per_s=20_000.0, ceiling_ci=None)
    (note,) = surprises(slow)
    assert "too few timed blocks for a 95% interval" in note and "beyond" not in note


def test_training_faster_than_the_ceiling_is_explained() -> None:
    (note,) = surprises(measured(training_samples_per_s=9000.0, pipeline_samples_per_s=20_000.0))
    assert "faster than the compute ceiling" in note


def test_one_finding_per_rule_and_place_when_static_and_graph_lines_differ() -> None:
    from pipedoctor.checker import merge
    from pipedoctor.report import Finding, Severity

    def at(line: int, message: str = "m") -> Finding:
        return Finding(
            "PD108", "python-in-pipeline", Severity.WARNING, message, path="t.py", line=line
        )

    stages = [{"path": "t.py", "line": 11}, {"path": "t.py", "line": 16}]
    graph = [at(13, "measured")]
    merged = merge([at(12), at(40)], graph, stages)
    assert [(f.line, f.message) for f in merged] == [(40, "m"), (13, "measured")]
    assert [f.line for f in merge([at(12)], [], stages)] == [12]  # the graph saw nothing: kept


def test_a_pipeline_measured_below_training_is_not_called_headroom() -> None:
    from pipedoctor.diagnosis import scaling_sentence

    m = measured(pipeline_samples_per_s=817.0, ceiling_samples_per_s=861.0,
                 training_samples_per_s=1133.0)  # fmt: skip
    sentence = scaling_sentence(m, "compute-bound")
    assert "headroom" not in sentence and "measured slower than training" in sentence
