"""The text renderer's measurements block: the check's evidence, read before the findings."""

from __future__ import annotations

import re

import pytest

from pipedoctor.render.text import render_text
from pipedoctor.report import Finding, Report, Severity

MEASURED = {
    "pipeline_samples_per_s": 1234.4,
    "pipeline_ci": 0.03,
    "ceiling_samples_per_s": 5210.0,
    "ceiling_ci": 0.02,
    "training_samples_per_s": 790.0,
    "training_ci": 0.04,
    "fixed_pipeline_samples_per_s": 2400.0,
    "host_cpu_percent": 97.2,
    "host": {"cpu_count": 2},
    "gpu_note": "no NVIDIA GPU visible: GPU sampling skipped",
    "scaling": "More GPUs would wait on the same pipeline.",
}
FINDING = Finding(
    "PD102", "sequential-map", Severity.WARNING, "m", path="t.py", line=1, gain=1.8,
    end_to_end_gain=1.8,
)  # fmt: skip


def block(out: str) -> list[str]:
    """The lines before the first blank one: the measurements block."""
    return out.split("\n\n", 1)[0].splitlines()


def bar(line: str) -> str:
    return re.search(r"[█░]+$", line).group(0)


def test_block_comes_first_and_reads_as_specified() -> None:
    out = render_text(Report([FINDING], 1, verdict="input-bound", measurements=MEASURED))
    assert "\x1b" not in out
    lines = block(out)
    assert lines[0] == "Throughput (samples/s)"
    rows = lines[1:5]
    assert [r[:35] for r in rows] == [
        "  pipeline alone     1,234  ±3%  ██",
        "  compute ceiling    5,210  ±2%  ██",
        "  training             790  ±4%  ██",
        "  pipeline w/ fixes  2,400       ██",
    ]
    filled = [bar(r).count("█") for r in rows]
    assert filled == [6, 24, 4, 11]  # round(24 * rate / 5210)
    assert all(len(bar(r)) == 24 for r in rows)
    assert lines[5:] == [
        "GPUs: no NVIDIA GPU visible: GPU sampling skipped",
        "Host CPU: 97% of 2 cores",
        "Scaling: More GPUs would wait on the same pipeline.",
    ]
    rest = out.splitlines()[len(lines) + 1 :]
    assert rest[0].startswith("t.py:1: PD102 [warning] sequential-map: m (measured gain x1.8)")
    assert rest[-2:] == ["Verdict: input-bound", "Found 1 problem (1 warning) in 1 file."]


def test_color_adds_only_escape_codes() -> None:
    report = Report([FINDING], 1, verdict="balanced", measurements=MEASURED)
    colored = render_text(report, color=True)
    assert "\x1b[1mThroughput (samples/s)\x1b[0m" in colored
    assert re.sub(r"\x1b\[[0-9;]*m", "", colored) == render_text(report)


def test_gpu_lines_replace_the_note() -> None:
    gpus = [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "utilization_mean": 45.0,
            "utilization_p5": 10.0,
            "utilization_p50": 40.0,
            "utilization_p95": 80.0,
            "memory_used_mb": 12288.0,
            "memory_total_mb": 142336.0,
            "pcie_tx_mb_s": 2.6,
            "pcie_rx_mb_s": 1500.0,
        },
        {"index": 3, "name": "NVIDIA H200", "utilization_p95": 5.0},
        {"name": "\x1b[31mevil"},
    ]
    lines = block(render_text(Report(measurements={**MEASURED, "gpus": gpus})))
    assert lines[5:8] == [
        "GPU0 NVIDIA H200: util mean 45% (p5 10%, p95 80%), mem 12.0/139.0 GiB, "
        "PCIe tx 3 / rx 1,500 MB/s",
        "GPU3 NVIDIA H200: util p95 5%",
        "GPU2 \\x1b[31mevil",
    ]
    assert not any(line.startswith("GPUs:") for line in lines)


def test_run_setup_line() -> None:
    measurements = {
        "training_samples_per_s": 10.0,
        "batch_size": 1024,
        "replicas": 8,
        "strategy": "MirroredStrategy",
        "step_ms": {"ceiling": 12.34, "training": 102.0},
        "check_seconds": 41.6,
    }
    lines = block(render_text(Report(measurements=measurements)))
    assert lines == [
        "Throughput (samples/s)",
        "  training  10  " + "█" * 24,
        "Run: batch 1,024 on 8 replicas (MirroredStrategy); "
        "step 12.3 ms ceiling, 102.0 ms training; check took 42 s",
    ]


@pytest.mark.parametrize(
    ("measurements", "expected"),
    [
        ({"training_samples_per_s": 790.0, "training_ci": None}, ["  training  790  " + "█" * 24]),
        ({"host_cpu_percent": 50.0, "host": None}, ["Host CPU: 50%"]),
        (
            {"host_cpu_percent": 50.0, "host": {"cpu_count": 1, "cpu_percent_p95": 88}},
            ["Host CPU: 50% of 1 core (p95 88%)"],
        ),
        ({"scaling": "  ", "gpu_note": None, "gpus": None, "host_cpu_percent": None}, []),
        (
            {"pipeline_samples_per_s": 0, "ceiling_samples_per_s": 0.0},
            ["  pipeline alone   0.0  " + "░" * 24, "  compute ceiling  0.0  " + "░" * 24],
        ),
        (
            {"pipeline_samples_per_s": 1.0, "ceiling_samples_per_s": 1e6},
            [
                "  pipeline alone         1.0  █" + "░" * 23,
                "  compute ceiling  1,000,000  " + "█" * 24,
            ],
        ),
        ({"pipeline_samples_per_s": float("nan"), "ceiling_samples_per_s": "x", "replicas": 2}, []),
    ],
)
def test_partial_measurements(measurements: dict, expected: list[str]) -> None:
    out = render_text(Report(measurements=measurements))
    assert "None" not in out and "nan" not in out
    body = out.splitlines()[:-1]  # the summary line
    if expected and expected[0].startswith("  "):
        assert body[0] == "Throughput (samples/s)"
        body = body[1:]
    assert body[: len(expected)] == expected
    if not expected:
        assert out == "No problems found.\n"
    else:
        assert body[len(expected)] == ""


def test_scaling_projection_and_slowest_stage_lines() -> None:
    from pipedoctor.render.text import render_text
    from pipedoctor.report import Report

    report = Report(
        verdict="input-bound",
        measurements={
            "replicas": 4,
            "scaling_efficiency": 0.62,
            "ceiling_1_samples_per_s": 1000.0,
            "ceiling_n_samples_per_s": 2480.0,
            "projected_samples_per_s": 900.0,
            "projected_fixed_samples_per_s": 2480.0,
            "fixed_pipeline_samples_per_s": 3100.0,
            "fixes_gain": 3.44,
            "stages": [
                {
                    "op": "map",
                    "path": "train.py",
                    "line": 12,
                    "samples_per_s": 950.0,
                    "limiting": True,
                },
                {
                    "op": "batch",
                    "path": "train.py",
                    "line": 13,
                    "samples_per_s": 940.0,
                    "limiting": False,
                },
            ],
        },
    )
    text = render_text(report)
    assert "Scaling efficiency: 62% on 4 replicas (ceiling: 1,000 on 1 replica, 2,480 on 4)" in text
    assert (
        "Projection: 900 samples/s with today's pipeline, 2,480 with the fixes applied "
        "(x3.44 on the pipeline, measured together; capped by the compute ceiling)" in text
    )
    assert "pipeline w/ fixes  3,100" in text  # the same figure the JSON carries
    assert "Slowest stage: `map` at train.py:12 (950 samples/s)" in text


def test_sharding_and_data_service_lines() -> None:
    from pipedoctor.render.text import render_text
    from pipedoctor.report import Report

    measured = Report(
        measurements={
            "sharding": {"summary": "With auto-shard policy AUTO on 2 workers, file i goes"},
            "data_service": {"workers": 2, "samples_per_s": 1500.0, "local_samples_per_s": 1200.0},
        }
    )
    text = render_text(measured)
    assert "Sharding: With auto-shard policy AUTO on 2 workers, file i goes" in text
    service = "tf.data service: 1,500 samples/s from 2 local workers against 1,200 in-process"
    assert service + " (x1.25)" in text
    skipped = Report(measurements={"data_service": {"workers": 2, "note": "not measured: why"}})
    assert "tf.data service: not measured: why" in render_text(skipped)


def test_gain_label_says_what_training_can_gain() -> None:
    from pipedoctor.render.text import gain_label
    from pipedoctor.report import Finding, Severity

    capped = Finding(
        "PD106", "missing-cache", Severity.WARNING, "m", gain=37.8, end_to_end_gain=2.0
    )
    assert gain_label(capped) == "measured gain x37.8 (x2.0 for training)"
    plain = Finding("PD102", "sequential-map", Severity.WARNING, "m", gain=1.8, end_to_end_gain=1.8)
    assert gain_label(plain) == "measured gain x1.8"
    assert gain_label(Finding("PD101", "missing-prefetch", Severity.INFO, "m")) is None
    uncapped = Finding("PD109", "unvectorized-map", Severity.WARNING, "m", gain=5.9)
    assert gain_label(uncapped) == "measured gain x5.9 on the pipeline alone"


def test_without_a_ceiling_no_gain_passes_for_an_end_to_end_one() -> None:
    from pipedoctor.graph.doctor import measured
    from pipedoctor.graph.whatif import _end_to_end
    from pipedoctor.report import Finding, Severity

    assert _end_to_end(6700.0, 1000.0, None) is None
    assert _end_to_end(6700.0, 1000.0, 2000.0) == 2.0
    info = Finding("PD106", "missing-cache", Severity.INFO, "m")
    assert measured(info, 6.7, None).severity is Severity.INFO  # no ceiling: not "worth" x6.7
    assert measured(info, 6.7, 2.0).severity is Severity.WARNING


def test_bars_stay_readable_when_the_pipeline_or_projection_is_far_faster_than_the_model() -> None:
    from pipedoctor.render.html import render_html

    measurements = {"pipeline_samples_per_s": 2004.0, "ceiling_samples_per_s": 15664.0,
                    "training_samples_per_s": 1816.0,
                    "fixed_pipeline_samples_per_s": 291874.0}  # fmt: skip
    lines = render_text(Report(measurements=measurements)).splitlines()
    assert lines[0] == "Throughput (samples/s; bars to 31,328, ▶ beyond)"
    pipeline, ceiling, training, fixes = (line.split()[-1] for line in lines[1:5])
    assert ceiling.count("█") == 12  # half the scale: the ceiling is what matters
    assert training.count("█") == 1 and pipeline.count("█") == 2
    assert fixes == "█" * 23 + "▶"
    page = render_html(Report(measurements=measurements))
    assert "bars to 31,328, longer ones cut" in page and "width: 100.0%" in page
    close = {**measurements, "fixed_pipeline_samples_per_s": 9000.0}
    assert render_text(Report(measurements=close)).startswith("Throughput (samples/s)\n")
