"""An HTML card for Jupyter, and the same card as a standalone page for ``--format html``: the
verdict, the throughputs as bars, timelines (throughput per phase, host CPU per core, each GPU's
utilisation and memory), GPUs, host CPU, the ranked findings beside the per-stage rates.

Self-contained on purpose: a notebook may be viewed offline, sanitized or in a dark theme, so the
card has no script and no external resource (charts are inline SVG), every style rule is scoped
under one root class, and colors are neutral enough for light and dark backgrounds (text
inherits the notebook's color). Everything taken from the report is escaped: paths, messages and
GPU names are not ours.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

from pipedoctor.render import measured, shown_findings, span, title
from pipedoctor.render.charts import (
    PALETTE,
    PHASE_COLORS,
    heatmap,
    legend,
    line_chart,
    phase_chart,
    stage_bars,
)
from pipedoctor.render.text import (
    bar_top,
    ci_text,
    detail_lines,
    gain_label,
    gpu_facts,
    gpu_list,
    host_cpu,
    mapping,
    number,
    rate_scope,
    run_setup,
    samples,
    string,
    summary_line,
    throughputs,
)
from pipedoctor.report import Finding, Report

ROOT = "pipedoctor-card"

_VERDICT_COLORS = {"input-bound": "#d9480f", "compute-bound": "#2b8a3e", "balanced": "#1c7ed6"}
_NO_VERDICT_COLOR = "#868e96"

# Mid-tone colors: white text on them, and they themselves, read on light and dark backgrounds.
_STYLE = f"""<style>
.{ROOT} {{color: inherit; font: 13px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif;
  border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 6px; padding: 10px 14px;
  max-width: 56em; margin: 4px 0}}
.{ROOT} .pd-head {{display: flex; align-items: baseline; gap: 10px; flex-wrap: wrap}}
.{ROOT} .pd-badge, .{ROOT} .pd-sev {{display: inline-block; color: #fff; border-radius: 4px;
  padding: 1px 8px; font-weight: 600; white-space: nowrap}}
.{ROOT} .pd-sev {{font-size: 11px; padding: 0 6px; font-weight: 500}}
.{ROOT} .pd-sev-error {{background: #e03131}}
.{ROOT} .pd-sev-warning {{background: #e8590c}}
.{ROOT} .pd-sev-info {{background: #1098ad}}
.{ROOT} .pd-muted {{opacity: 0.75}}
.{ROOT} h4 {{margin: 10px 0 4px; font-size: 13px; color: inherit}}
.{ROOT} .pd-row {{display: grid; grid-template-columns: 10em 1fr 9em; gap: 8px;
  align-items: center; margin: 2px 0}}
.{ROOT} .pd-track {{background: rgba(128, 128, 128, 0.18); border-radius: 3px; height: 12px}}
.{ROOT} .pd-fill {{height: 100%; border-radius: 3px; background: #868e96}}
.{ROOT} .pd-fill-pipeline {{background: #e8590c}}
.{ROOT} .pd-fill-ceiling {{background: #2f9e44}}
.{ROOT} .pd-fill-training {{background: #1c7ed6}}
.{ROOT} .pd-fill-fixed_pipeline {{background: #7048e8}}
.{ROOT} .pd-num {{text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap}}
.{ROOT} table {{border-collapse: collapse; margin: 2px 0; color: inherit; font-size: 12px}}
.{ROOT} th, .{ROOT} td {{border-bottom: 1px solid rgba(128, 128, 128, 0.25);
  padding: 2px 10px 2px 0; text-align: left; background: transparent; color: inherit}}
.{ROOT} ol, .{ROOT} ul {{margin: 4px 0; padding-left: 1.6em}}
.{ROOT} li {{margin: 6px 0}}
.{ROOT} .pd-msg {{white-space: pre-wrap}}
.{ROOT} code {{display: block; white-space: pre-wrap; margin-top: 2px; padding: 3px 6px;
  border-radius: 3px; background: rgba(128, 128, 128, 0.15); color: inherit;
  font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace}}
.{ROOT} .pd-gain {{font-weight: 600; color: #2f9e44}}
.{ROOT} .pd-foot {{margin-top: 8px; font-size: 12px}}
.{ROOT} .pd-chart {{display: block; width: 100%; max-width: 640px; height: auto}}
.{ROOT} .pd-bars {{max-width: 360px}}
.{ROOT} .pd-chart text {{font-size: 10px; fill: currentColor; opacity: 0.8}}
.{ROOT} .pd-axis {{stroke: rgba(128, 128, 128, 0.6); stroke-width: 1}}
.{ROOT} .pd-legend {{font-size: 11px; margin: 0 0 6px}}
.{ROOT} .pd-key {{margin-right: 12px; white-space: nowrap}}
.{ROOT} .pd-key i {{display: inline-block; width: 10px; height: 10px; border-radius: 2px;
  margin-right: 4px; vertical-align: -1px}}
.{ROOT} .pd-split {{display: grid; grid-template-columns: repeat(auto-fit, minmax(320px, 1fr));
  gap: 16px; align-items: start}}
</style>"""


def render_html(report: Report) -> str:
    """The card :meth:`Report._repr_html_` shows; only findings and a summary for a lint."""
    measurements = mapping(report.measurements)
    runtime = measured(report)
    parts = [f'<div class="{ROOT}">', _STYLE]
    if runtime:
        parts.extend(_header(report.verdict, measurements))
        parts.extend(_throughput(measurements))
        parts.extend(_hardware(measurements))
        parts.extend(_timelines(mapping(measurements.get("timeline"))))
        parts.extend(_epochs(measurements))
    findings = _findings(report, ranked=runtime)
    stages = stage_bars([s for s in measurements.get("stages") or [] if isinstance(s, Mapping)])
    if stages and findings:  # the ranked fixes beside where the pipeline spends its time
        parts.append('<div class="pd-split"><div>')
        parts.extend(findings)
        parts.append(f"</div><div><h4>Per-stage rates</h4>{stages}</div></div>")
    else:
        parts.extend(findings)
        if stages:
            parts.append(f"<h4>Per-stage rates</h4>{stages}")
    parts.extend(f'<div class="pd-muted">note: {_e(note)}</div>' for note in report.notes)
    foot = [summary_line(report)]
    if runtime and (setup := run_setup(measurements)):
        foot.append(setup)
    parts.append(f'<div class="pd-foot pd-muted">{" · ".join(_e(t) for t in foot)}</div>')
    parts.append("</div>")
    return "\n".join(parts) + "\n"


def render_page(report: Report) -> str:
    """The card as one standalone HTML document (``--format html``): no script, no network."""
    heading = f"pipedoctor: {report.verdict}" if report.verdict else "pipedoctor report"
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{_e(heading)}</title>\n</head>\n<body>\n"
        + render_html(report)
        + "</body>\n</html>\n"
    )


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def _seconds(timeline: Mapping[str, Any]) -> float:
    """How long the timeline runs: the last time any of its series reaches."""
    ends = [s.get("t1") or 0.0 for s in timeline.get("phases") or [] if isinstance(s, Mapping)]
    host = mapping(timeline.get("host"))
    ends += list(host.get("t") or [])
    for gpu in timeline.get("gpus") or []:
        if isinstance(gpu, Mapping):
            ends += list(gpu.get("t") or [])
    ends.append(number(timeline.get("seconds")) or 0.0)
    return max((t for t in ends if isinstance(t, (int, float))), default=0.0)


def _timelines(timeline: Mapping[str, Any]) -> list[str]:
    """Throughput per phase, host CPU per core, and each GPU's utilisation and memory, over
    the run (or over the check's phases)."""
    if not timeline:
        return []
    t_max = _seconds(timeline)
    out = []
    segments = [s for s in timeline.get("phases") or [] if isinstance(s, Mapping)]
    if segments:
        seen = list(dict.fromkeys(str(s.get("phase")) for s in segments))
        out.append('<h4>Throughput by phase <span class="pd-muted">(samples/s)</span></h4>')
        out.append(phase_chart(segments, t_max))
        out.append(legend([(p, PHASE_COLORS.get(p, "#868e96")) for p in seen]))
    host = mapping(timeline.get("host"))
    rows = [r for r in host.get("per_core") or [] if isinstance(r, list)]
    if rows and host.get("t"):
        out.append(
            f'<h4>Host CPU per core <span class="pd-muted">({len(rows)} cores; darker is '
            "busier)</span></h4>"
        )
        out.append(heatmap(host["t"], rows, t_max))
    gpus = [g for g in timeline.get("gpus") or [] if isinstance(g, Mapping) and g.get("t")]
    if gpus:
        names = [f"GPU{g.get('index')} {g.get('name') or ''}".strip() for g in gpus]
        keys = legend([(n, PALETTE[i % len(PALETTE)]) for i, n in enumerate(names)])
        util = [(n, g["t"], g.get("utilization") or []) for n, g in zip(names, gpus, strict=True)]
        out.append('<h4>GPU utilisation <span class="pd-muted">(%)</span></h4>')
        out.append(line_chart(util, t_max, 100.0, "100%", "GPU utilisation over time"))
        out.append(keys)
        memory = [
            (n, g["t"], [None if v is None else v / 1024 for v in g.get("memory_used_mb") or []])
            for n, g in zip(names, gpus, strict=True)
        ]
        top = max((v for _, _, values in memory for v in values if v is not None), default=1.0)
        out.append('<h4>GPU memory used <span class="pd-muted">(GiB)</span></h4>')
        out.append(line_chart(memory, t_max, top * 1.1, f"{top * 1.1:.1f} GiB",
                              "GPU memory over time"))  # fmt: skip
        out.append(keys)
    return out


def _epochs(measurements: Mapping[str, Any]) -> list[str]:
    """A monitored run's epochs: rate, step, input wait, evaluation, time outside steps."""
    epochs = [e for e in measurements.get("epochs") or [] if isinstance(e, Mapping)]
    if not epochs:
        return []
    head = ("epoch", "samples/s", "step", "input wait", "eval", "outside steps")
    out = ['<h4>Epochs</h4><table class="pd-epochs"><tr>']
    out.append("".join(f"<th>{h}</th>" for h in head) + "</tr>")
    for epoch in epochs:
        rate, step = number(epoch.get("samples_per_s")), number(epoch.get("step_ms"))
        wait, spread = number(epoch.get("input_wait_fraction")), number(epoch.get("input_wait_ci"))
        evaluation = number(mapping(epoch.get("eval")).get("seconds"))
        stall = number(epoch.get("stall_seconds"))
        cells = (
            epoch.get("epoch"),
            samples(rate) if rate is not None else "",
            f"{step:.1f} ms" if step is not None else "",
            (f"{wait:.0%}" + (f" ±{spread:.0%}" if spread else "")) if wait is not None else "",
            f"{evaluation:.1f} s" if evaluation else "",
            f"{stall:.1f} s" if stall else "",
        )
        out.append("<tr>" + "".join(f"<td>{_e(c) or '–'}</td>" for c in cells) + "</tr>")
    out.append("</table>")
    return out


def _header(verdict: str | None, measurements: Mapping[str, Any]) -> list[str]:
    """The verdict as a colored badge, then what it means for adding devices."""
    color = _VERDICT_COLORS.get(verdict or "", _NO_VERDICT_COLOR)
    badge = _e(verdict) if verdict else "no verdict"
    head = [
        '<div class="pd-head"><strong>pipedoctor</strong>',
        f'<span class="pd-badge" style="background: {color}">{badge}</span>',
    ]
    if scaling := string(measurements.get("scaling")):
        head.append(f'<span class="pd-scaling">{_e(scaling)}</span>')
    return ["".join(head) + "</div>"]


def _throughput(measurements: Mapping[str, Any]) -> list[str]:
    """One bar per measured rate, scaled to the largest, so the bottleneck is seen, not read."""
    rows = throughputs(measurements)
    if not rows:
        return []
    top, clipped = bar_top(rows)
    scale = f" · bars to {samples(top)}, longer ones cut" if clipped else ""
    unit = f"samples/s{rate_scope(measurements)}{scale}"
    out = [f'<h4>Throughput <span class="pd-muted">({_e(unit)})</span></h4>']
    for row in rows:
        width = min(100.0, 100 * row.samples_per_s / top) if top > 0 else 0.0
        ci = f' <span class="pd-muted">{_e(ci_text(row.ci))}</span>' if row.ci is not None else ""
        out.append(
            f'<div class="pd-row pd-{row.key}"><span>{_e(row.label)}</span>'
            f'<div class="pd-track"><div class="pd-fill pd-fill-{row.key}" '
            f'style="width: {width:.1f}%"></div></div>'
            f'<span class="pd-num">{_e(samples(row.samples_per_s))}{ci}</span></div>'
        )
    return out


def _hardware(measurements: Mapping[str, Any]) -> list[str]:
    """GPU table (or why there is none) and host CPU: where the time went, device and host."""
    out = []
    gpus = gpu_list(measurements)
    if gpus:
        out.append('<table class="pd-gpus"><tr><th>GPU</th><th>util mean</th><th>spread</th>')
        out.append("<th>memory</th><th>PCIe</th></tr>")
        for position, gpu in enumerate(gpus):
            facts = gpu_facts(gpu, position)
            cells = (facts.label, facts.util, facts.spread, facts.memory, facts.pcie)
            out.append("<tr>" + "".join(f"<td>{_e(c) or '–'}</td>" for c in cells) + "</tr>")
        out.append("</table>")
    elif note := string(measurements.get("gpu_note")):
        out.append(f'<div class="pd-gpu-note">GPUs: {_e(note)}</div>')
    if cpu := host_cpu(measurements):
        out.append(f'<div class="pd-host">Host CPU: {_e(cpu)}</div>')
    lines = detail_lines(measurements)
    out.extend(f'<div class="pd-host">{label}: {_e(text)}</div>' for label, text in lines)
    return out


def _findings(report: Report, *, ranked: bool) -> list[str]:
    """A check's findings in its ranked order (numbered); a lint's in reading order."""
    findings = shown_findings(report)
    if not findings:
        return []
    tag = "ol" if ranked else "ul"
    items = "\n".join(_finding(finding) for finding in findings)
    return ["<h4>Findings</h4>", f'<{tag} class="pd-findings">', items, f"</{tag}>"]


def _finding(finding: Finding) -> str:
    """Rule, severity, gain and place on one line; the message; the fix as code to copy."""
    severity = finding.severity.label
    head = [
        f"<strong>{_e(title(finding))}</strong>",
        f'<span class="pd-sev pd-sev-{severity}">{severity}</span>',
    ]
    if label := gain_label(finding):
        kind = "pd-gain" if finding.gain is not None else "pd-headroom pd-muted"
        head.append(f'<span class="{kind}">{_e(label)}</span>')
    place = span(finding)
    if place.path is not None:
        head.append(f'<span class="pd-loc pd-muted">{_e(place.label(column=False))}</span>')
    body = [" ".join(head), f'<div class="pd-msg">{_e(finding.message)}</div>']
    if finding.fix:
        body.append(f"<code>{_e(finding.fix)}</code>")
    return '<li class="pd-finding">' + "".join(body) + "</li>"
