"""The notebook card: a check's evidence and findings, escaped, scoped and robust to gaps."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from pipedoctor.render.html import ROOT, render_html
from pipedoctor.report import Finding, Report, Severity

FULL = {
    "pipeline_samples_per_s": 1234.4,
    "pipeline_ci": 0.03,
    "ceiling_samples_per_s": 5210.0,
    "ceiling_ci": 0.02,
    "training_samples_per_s": 790.0,
    "training_ci": 0.004,
    "fixed_pipeline_samples_per_s": 2400.0,
    "batch_size": 256,
    "replicas": 2,
    "strategy": "MirroredStrategy",
    "step_ms": {"ceiling": 49.1, "training": 324.0},
    "host_cpu_percent": 97.0,
    "host": {"cpu_count": 2, "per_core_percent": [96, 98], "cpu_percent_p95": 99.0},
    "gpus": [
        {
            "index": 0,
            "name": "NVIDIA H200",
            "samples": 40,
            "utilization_mean": 45.0,
            "utilization_p5": 10.0,
            "utilization_p50": 44.0,
            "utilization_p95": 80.0,
            "memory_used_mb": 12288.0,
            "memory_total_mb": 143360.0,
            "pcie_tx_mb_s": 3.0,
            "pcie_rx_mb_s": 1500.0,
        },
        {"index": 1, "name": "NVIDIA H200"},
    ],
    "scaling": "More GPUs would wait on the same pipeline: fix the input first.",
    "check_seconds": 31.0,
}

EVIL = "<script>alert('x')</script> & \"q\""
# Ranked by the check (most valuable first), which is not reading order: PD201 (no path) would
# sort first, then "<img..." before "a.py".
RANKED = [
    Finding(
        "PD102",
        "sequential-map",
        Severity.WARNING,
        f"map is sequential {EVIL}",
        fix="ds.map(f, num_parallel_calls=tf.data.AUTOTUNE)</code><script>x()</script>",
        path="<img src=x onerror=alert(1)>&.py",
        line=12,
        column=3,
        gain=1.8,
    ),
    Finding("PD101", "shuffle-after-batch", Severity.ERROR, "Shuffles.", path="a.py", line=3),
    Finding("PD201", "no-prefetch", Severity.INFO, "Never prefetches.", fix="ds.prefetch(1)"),
]


ALLOWED_TAGS = {
    "div",
    "style",
    "strong",
    "span",
    "h4",
    "table",
    "tr",
    "th",
    "td",
    "ol",
    "li",
    "code",
}


def check_report(**measurements: object) -> Report:
    return Report(
        findings=list(RANKED), verdict="input-bound", measurements={**FULL, **measurements}
    )


class _Tags(HTMLParser):
    """Records the tags and checks they nest, so the card never leaves an element open."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[str] = set()
        self.open: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.seen.add(tag)
        self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        assert self.open and self.open.pop() == tag, f"</{tag}> does not close {self.open}"


def tags(out: str) -> set[str]:
    parser = _Tags()
    parser.feed(out)
    parser.close()
    assert parser.open == []
    return parser.seen


def widths(out: str) -> dict[str, float]:
    return {
        key: float(width)
        for key, width in re.findall(r'pd-fill pd-fill-(\w+)" style="width: ([\d.]+)%"', out)
    }


def rule_order(out: str) -> list[str]:
    return re.findall(r"<strong>(PD\d+) ", out)


def test_repr_html_is_render_html() -> None:
    report = check_report()
    assert report._repr_html_() == render_html(report)


def test_full_card() -> None:
    out = render_html(check_report())
    assert out.startswith(f'<div class="{ROOT}">')
    assert re.search(r'class="pd-badge" style="background: #[0-9a-f]{6}">input-bound</span>', out)
    assert FULL["scaling"][:40] in out
    for label in ("pipeline alone", "compute ceiling", "training", "pipeline w/ fixes"):
        assert f"<span>{label}</span>" in out
    for number in ("1,234", "5,210", "790", "2,400"):
        assert f'<span class="pd-num">{number}' in out
    assert "±3%" in out and "±2%" in out and "±0.4%" in out
    bars = widths(out)
    assert bars["ceiling"] == 100.0
    assert bars["pipeline"] == pytest.approx(100 * 1234.4 / 5210, abs=0.05)
    assert bars["training"] == pytest.approx(100 * 790 / 5210, abs=0.05)
    assert bars["fixed_pipeline"] == pytest.approx(100 * 2400 / 5210, abs=0.05)
    assert "Host CPU: 97% of 2 cores (p95 99%)" in out
    assert "batch 256 on 2 replicas (MirroredStrategy)" in out
    assert "x1.8" in out
    assert tags(out) == ALLOWED_TAGS


def test_gpu_table_rows_or_note() -> None:
    out = render_html(check_report(gpu_note="ignored when GPUs were sampled"))
    rows = re.findall(r"<tr>(.*?)</tr>", out, re.S)
    assert len(rows) == 3  # header and one per GPU
    assert "<td>GPU0 NVIDIA H200</td><td>45%</td><td>p5 10%, p95 80%</td>" in rows[1]
    assert "<td>12.0/140.0 GiB</td><td>tx 3 / rx 1,500 MB/s</td>" in rows[1]
    assert rows[2] == "<td>GPU1 NVIDIA H200</td>" + "<td>–</td>" * 4
    assert "ignored when" not in out

    note = "no NVIDIA GPU visible: GPU sampling skipped"
    out = render_html(check_report(gpus=[], gpu_note=note))
    assert "<table" not in out
    assert f"GPUs: {note}" in out


def test_ranked_order_kept_for_a_check_sorted_for_a_lint() -> None:
    out = render_html(check_report())
    assert rule_order(out) == ["PD102", "PD101", "PD201"]
    assert '<ol class="pd-findings">' in out  # numbered: the rank is the point
    lint = render_html(Report(findings=list(RANKED), files_checked=2))
    assert rule_order(lint) == ["PD201", "PD102", "PD101"]


def test_lint_only_report_has_findings_and_summary_only() -> None:
    out = render_html(Report(findings=list(RANKED), files_checked=2))
    assert "<h4>Throughput" not in out and 'class="pd-badge"' not in out
    assert "Host CPU" not in out and 'class="pd-row' not in out
    assert "<ul" in out and "<ol" not in out
    assert "Found 3 problems (1 error, 1 warning, 1 info) in 2 files." in out
    assert "a.py:3" in out and "ds.prefetch(1)" in out

    empty = render_html(Report(files_checked=4))
    assert "No problems found in 4 files." in empty and "Findings" not in empty


def test_everything_from_the_report_is_escaped() -> None:
    report = check_report(
        scaling=EVIL,
        gpu_note=EVIL,
        strategy=EVIL,
        gpus=[{"index": 0, "name": EVIL}],
    )
    report.notes.append(EVIL)
    out = render_html(report)
    assert "<script" not in out.lower() and "<img" not in out
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &quot;q&quot;" in out
    assert "&lt;img src=x onerror=alert(1)&gt;&amp;.py:12" in out
    assert tags(out) <= ALLOWED_TAGS
    note = render_html(check_report(gpus=[], gpu_note=EVIL))
    assert "<script" not in note and "GPUs: &lt;script&gt;" in note

    verdict = render_html(Report(verdict="<b>odd</b>"))
    assert "&lt;b&gt;odd&lt;/b&gt;" in verdict and "<b>" not in verdict


def test_css_is_scoped_and_self_contained() -> None:
    # Clean findings here: the evil ones carry "src=" as (escaped) text.
    out = render_html(Report(findings=[RANKED[1]], verdict="balanced", measurements=FULL))
    css = re.search(r"<style>(.*?)</style>", out, re.S).group(1)
    selectors = [s.strip() for block in re.findall(r"([^{}]+)\{", css) for s in block.split(",")]
    assert selectors and all(s == f".{ROOT}" or s.startswith(f".{ROOT} ") for s in selectors), (
        selectors
    )
    for banned in ("<script", "url(", "@import", "http:", "https:", "src="):
        assert banned not in out.lower()


@pytest.mark.parametrize(
    "measurements",
    [
        {"training_samples_per_s": 800.0},
        {
            "pipeline_samples_per_s": 1000.0,
            "pipeline_ci": None,
            "ceiling_samples_per_s": None,
            "training_ci": 0.1,
            "host": None,
            "host_cpu_percent": None,
            "gpus": None,
            "gpu_note": None,
            "scaling": None,
            "strategy": None,
            "replicas": None,
            "batch_size": 64,
            "step_ms": {"ceiling": None},
            "check_seconds": None,
            "stages": None,
        },
        {
            "pipeline_samples_per_s": float("nan"),
            "ceiling_samples_per_s": "fast",
            "training_samples_per_s": -1,
            "host_cpu_percent": True,
            "host": [],
            "gpus": [None, {"name": None, "index": None, "memory_total_mb": 1024}],
            "step_ms": None,
        },
        {"pipeline_samples_per_s": 0, "ceiling_samples_per_s": 0},
    ],
)
def test_partial_measurements_render_without_none(measurements: dict) -> None:
    out = render_html(Report(findings=[RANKED[2]], verdict=None, measurements=measurements))
    assert "None" not in out and "nan" not in out.lower()
    assert "no verdict" in out
    for width in widths(out).values():
        assert 0 <= width <= 100
    if "training_samples_per_s" in measurements and measurements["training_samples_per_s"] == 800:
        assert widths(out) == {"training": 100.0}
        assert "±" not in out


def test_verdict_badges_differ() -> None:
    """Each verdict has its own color; a check without one (still measured) gets a grey badge."""
    badge = re.compile(r'class="pd-badge" style="background: (#\w+)">([^<]+)<')
    seen = {}
    for verdict in ("input-bound", "compute-bound", "balanced", None):
        out = render_html(Report(verdict=verdict, measurements={"check_seconds": 1.0}))
        color, text = badge.search(out).groups()
        assert text == (verdict or "no verdict")
        seen[verdict] = color
    assert len(set(seen.values())) == 4


def test_card_shows_slowest_stage_scaling_and_projection() -> None:
    report = Report(
        verdict="input-bound",
        measurements={
            "replicas": 2,
            "scaling_efficiency": 0.9,
            "ceiling_1_samples_per_s": 100.0,
            "ceiling_n_samples_per_s": 180.0,
            "projected_samples_per_s": 50.0,
            "stages": [
                {"op": "map", "path": "a<b>.py", "line": 3, "samples_per_s": 60.0, "limiting": True}
            ],
        },
    )
    card = render_html(report)
    assert "Slowest stage: `map` at a&lt;b&gt;.py:3 (60 samples/s)" in card
    assert "Scaling efficiency: 90% on 2 replicas" in card
    assert "Projection: 50 samples/s with today&#x27;s pipeline" in card
    sharded = Report(measurements={"sharding": {"summary": "worker 0: 3 files <a>"}})
    assert "Sharding: worker 0: 3 files &lt;a&gt;" in render_html(sharded)
