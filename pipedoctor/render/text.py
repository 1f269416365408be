"""Terminal output, modelled on ruff: measurements, one block per finding, notes, verdict, summary.

The measurement helpers here (``throughputs``, ``gpu_facts``, ...) are shared with the HTML card,
so a number reads the same in a terminal and in a notebook.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, NamedTuple

from pipedoctor.diagnosis import service_figures, size
from pipedoctor.evidence import CONFIDENCES, FACTS
from pipedoctor.render import Span, shown_findings, span
from pipedoctor.report import Finding, Report, Severity

_RESET = "\x1b[0m"
_BOLD = "1"
_DIM = "2"
_SEVERITY_COLOR = {Severity.ERROR: "31", Severity.WARNING: "33", Severity.INFO: "36"}

# Only the severity labels that read oddly with an "s" are listed.
_PLURALS = {"info": "info"}

# Control characters in a path or message could move the cursor or recolor the terminal (and
# would break "no escape codes without color"); show them as visible escapes instead.
_CONTROLS = {
    code: f"\\x{code:02x}" for code in (*range(0x20), *range(0x7F, 0xA0)) if chr(code) not in "\n\t"
}


BAR_WIDTH = 24

# (row key, label, measurement key, its confidence-interval key); the order the rows are shown in.
_THROUGHPUTS = (
    ("pipeline", "pipeline alone", "pipeline_samples_per_s", "pipeline_ci"),
    ("ceiling", "compute ceiling", "ceiling_samples_per_s", "ceiling_ci"),
    ("training", "training", "training_samples_per_s", "training_ci"),
    ("fixed_pipeline", "pipeline w/ fixes", "fixed_pipeline_samples_per_s", None),
)


def render_text(report: Report, *, color: bool = False) -> str:
    """The report for a person at a terminal; ANSI colors only when ``color`` is true."""
    lines = _measurements(mapping(report.measurements), color)
    if lines:
        lines.append("")
    for finding in shown_findings(report):
        lines.extend(_block(finding, color))
        lines.append("")
    lines.extend(f"note: {_clean(note)}" for note in report.notes)
    if report.verdict is not None:
        lines.append(f"Verdict: {_paint(_clean(report.verdict), _BOLD, color)}")
    lines.append(summary_line(report))
    return "\n".join(lines) + "\n"


def render_findings(findings: Iterable[Finding], *, color: bool = False) -> str:
    """Findings alone, each as the report prints it: for a stream that carries something
    else beside them (``lint --diff`` keeps stdout a patch and says on stderr what it could
    not read)."""
    return "".join("\n".join(_block(finding, color)) + "\n\n" for finding in findings)


def _measurements(measurements: Mapping[str, Any], color: bool) -> list[str]:
    """The check's numbers before the findings, so the verdict's evidence is read first.

    Every line is optional: a check may have measured only part of this (no GPU, a failed stage).
    """
    lines: list[str] = []
    rows = throughputs(measurements)
    if rows:
        top, clipped = bar_top(rows)
        scale = f"; bars to {samples(top)}, ▶ beyond" if clipped else ""
        unit = f"samples/s{rate_scope(measurements)}{scale}"
        lines.append(_paint(f"Throughput ({unit})", _BOLD, color))
        label_w = max(len(row.label) for row in rows)
        value_w = max(len(samples(row.samples_per_s)) for row in rows)
        ci_w = max(len(ci_text(row.ci)) for row in rows)
        for row in rows:
            filled = bar_cells(row.samples_per_s, top, BAR_WIDTH)
            rest = _paint("░" * (BAR_WIDTH - filled), _DIM, color) if filled < BAR_WIDTH else ""
            clipped_bar = "█" * (BAR_WIDTH - 1) + "▶"  # beyond the scale
            bar = clipped_bar if row.samples_per_s > top else "█" * filled + rest
            ci = f"{ci_text(row.ci):<{ci_w}}  " if ci_w else ""
            lines.append(
                f"  {row.label:<{label_w}}  {samples(row.samples_per_s):>{value_w}}  {ci}{bar}"
            )
    gpus = gpu_list(measurements)
    if gpus:
        for position, gpu in enumerate(gpus):
            facts = gpu_facts(gpu, position)
            util = f"util {facts.spread}" if facts.spread else ""
            if facts.util:
                util = f"util mean {facts.util}" + (f" ({facts.spread})" if facts.spread else "")
            mem = f"mem {facts.memory}" if facts.memory else ""
            pcie = f"PCIe {facts.pcie}" if facts.pcie else ""
            details = ", ".join(part for part in (util, mem, pcie) if part)
            lines.append(_clean(f"{facts.label}: {details}" if details else facts.label))
    elif note := string(measurements.get("gpu_note")):
        lines.append(f"GPUs: {_clean(note)}")
    if cpu := host_cpu(measurements):
        lines.append(f"Host CPU: {cpu}")
    if scaling := string(measurements.get("scaling")):
        lines.append(f"Scaling: {_clean(scaling)}")
    lines += [f"{label}: {_clean(text)}" for label, text in detail_lines(measurements)]
    if setup := run_setup(measurements):
        lines.append(f"Run: {_clean(setup)}")
    return lines


def gain_label(finding: Finding) -> str | None:
    """``measured gain x37.8 (x2.0 for training)``: the pipeline's gain, and what training can
    gain when the compute ceiling caps it; or ``headroom up to x6.9``, an upper bound that no
    fix was measured to reach."""
    if finding.gain is None:
        if finding.headroom is not None:
            return f"headroom up to x{finding.headroom:.1f}"
        return None
    label = f"measured gain x{finding.gain:.1f}"
    end_to_end = finding.end_to_end_gain
    if end_to_end is None:
        label += " on the pipeline alone"  # no ceiling was measured to cap it for training
    elif abs(end_to_end - finding.gain) >= 0.05:
        label += f" (x{end_to_end:.1f} for training)"
    return label


def detail_lines(measurements: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The labelled one-line facts every renderer shows under the throughputs, in one order."""
    lines = (
        ("Distribution", distribution_line(measurements)),
        ("Parallelism", string(measurements.get("parallelism"))),
        ("Scaling efficiency", scaling_line(measurements)),
        ("Projection", projection_line(measurements)),
        ("Devices fed", devices_fed_line(measurements)),
        ("Host feeds", host_feeds_line(measurements)),
        ("On N devices", devices_projection_line(measurements)),
        ("Whole run", run_line(measurements)),
        ("Next step", string(mapping(measurements.get("decision")).get("next_step"))),
        ("Slowest stage", limiting_stage(measurements)),
        ("Input wait", input_wait_line(measurements)),
        ("Profile", profile_line(measurements)),
        ("Sharding", string(mapping(measurements.get("sharding")).get("summary"))),
        ("tf.data service", service_line(measurements)),
        ("Time", time_split_line(measurements)),
        ("Workers", workers_line(measurements)),
    )
    return [(label, text) for label, text in lines if text]


def _devices(count: float) -> str:
    """``0.13 of one device``, ``1 device``, ``17 devices``."""
    if count < 1:
        return f"{count:.2f} of one device"
    value = f"{count:.1f}".removesuffix(".0") if count < 10 else f"{count:,.0f}"
    return f"{value} device{'' if value == '1' else 's'}"


def devices_fed_line(measurements: Mapping[str, Any]) -> str | None:
    """``today's pipeline feeds 0.13 of one device (2,023 of the 15,981 samples/s one device
    takes); with the fixes, 17 devices``."""
    decision = mapping(measurements.get("decision"))
    today, one = (
        number(decision.get("devices_fed_today")),
        number(decision.get("one_device_samples_per_s")),
    )
    if today is None or one is None:
        return None
    pipeline = number(measurements.get("pipeline_samples_per_s")) or today * one
    text = (
        f"today's pipeline feeds {_devices(today)} ({samples(pipeline)} samples/s, against "
        f"{samples(one)} that one device's training step takes)"
    )
    fixed = number(decision.get("devices_fed_with_fixes"))
    if fixed is not None:
        text += f"; with the fixes, {_devices(fixed)}"
    return text


def host_feeds_line(measurements: Mapping[str, Any]) -> str | None:
    """``at today's cost per sample (0.05 ms of CPU), this host's 2 cores feed at most 2.5
    devices; 8 devices need about 6.4 cores``."""
    host = mapping(mapping(measurements.get("decision")).get("host"))
    cores, fed = whole(host.get("cores")), number(host.get("devices_fed"))
    if not cores or fed is None:
        return None
    text = (
        f"at today's cost per sample ({number(host.get('cpu_ms_per_sample')) or 0:.2g} ms of "
        f"CPU), this host's "
        f"{cores} cores feed at most {_devices(fed)}"
    )
    needs = sorted(
        (int(key.split("_")[2]), value)
        for key, value in host.items()
        if key.startswith("cores_for_") and isinstance(value, int | float)
    )
    text += "".join(f"; {n} devices need about {value:g} cores" for n, value in needs)
    return text


def devices_projection_line(measurements: Mapping[str, Any]) -> str | None:
    """``--devices N``: the input N devices need against the pipeline, and their compute."""
    projection = mapping(mapping(measurements.get("decision")).get("projection"))
    n, needed = (
        whole(projection.get("devices")),
        number(projection.get("input_needed_samples_per_s")),
    )
    if not n or needed is None:
        return None
    parts = [f"{n} devices take {samples(needed)} samples/s of input"]
    for key, label in (("input_keeps_up_today", "today's pipeline"),
                       ("input_keeps_up_with_fixes", "the fixed pipeline")):  # fmt: skip
        if key in projection:
            parts.append(f"{label} {'keeps up' if projection[key] else 'does not keep up'}")
    efficiency = mapping(projection.get("scaling_efficiency_measured"))
    if efficiency:
        parts.append(
            f"scaling efficiency measured on {efficiency.get('replicas')} replicas: "
            f"{number(efficiency.get('value')):.0%}; on {n} not measured"
        )
    else:
        parts.append(
            "compute scaling not measured: the check saw one device; run it under a strategy "
            "over several devices (on a CPU, logical devices) to measure scaling efficiency"
        )
    return "; ".join(parts)


def run_line(measurements: Mapping[str, Any]) -> str | None:
    """``3 epochs x 16 steps (3,072 samples): about 2 s at the measured 1,850 samples/s``."""
    from pipedoctor.decide import duration, run_size

    run = mapping(mapping(measurements.get("decision")).get("run"))
    if not run:
        return None
    if not run.get("known"):
        return f"length unknown: {run.get('why')}"
    rate = number(measurements.get("training_samples_per_s")) or 0
    return (
        f"{run_size(run)} ({run.get('samples'):,} samples): "
        f"{duration(float(run['seconds']), about=True)} at the measured {samples(rate)} samples/s"
    )


def distribution_line(measurements: Mapping[str, Any]) -> str | None:
    """``ModelParallel over 4 cpu devices (mesh 2 x 2: data 2, model 2); batch axis `data`: 2
    replicas of 32 examples; 1 of 4 weights sharded (98% of 621.1 KB; 159.8 KB per device)``."""
    mesh = mapping(measurements.get("distribution"))
    name, devices = string(mesh.get("name")), whole(mesh.get("devices"))
    if not name or not devices:
        return None
    shape = list(mesh.get("shape") or [devices])
    kind = f"{string(mesh.get('platform')) or ''} device".lstrip()
    text = f"{name} over {_plural(devices, kind)}"
    if len(shape) > 1:
        names = list(mesh.get("axis_names") or [])
        axes = ", ".join(f"{a} {n}" for a, n in zip(names, shape, strict=False))
        text += f" (mesh {' x '.join(str(n) for n in shape)}: {axes})"
    replicas = whole(mesh.get("replicas"))
    per_replica = number(measurements.get("per_replica_batch"))
    if replicas is not None:
        text += f"; batch axis `{mesh.get('batch_axis')}`: {_plural(replicas, 'replica')}"
        if per_replica is not None:
            text += f" of {per_replica:,g} examples"
    weights = whole(mesh.get("weights"))
    sharded = whole(mesh.get("sharded_weights"), minimum=0)
    total = number(mesh.get("parameter_bytes"))
    if weights is not None and sharded is not None:
        if not sharded:
            text += f"; all {_plural(weights, 'weight')} replicated"
        else:
            text += f"; {sharded} of {_plural(weights, 'weight')} sharded"
            if total:
                share = (number(mesh.get("sharded_bytes")) or 0) / total
                held = number(mesh.get("per_device_bytes"))
                text += f" ({share:.0%} of {size(total)}"
                text += f"; {size(held)} per device)" if held is not None else ")"
    return text


def input_wait_line(measurements: Mapping[str, Any]) -> str | None:
    """``64% ±3% of the step time (from 412 timed steps)`` for a monitored run, ``84% of the step
    time (20 steps of 150.2 ms); per device: replica 0 80%; agrees with the verdict`` for a
    profile: the share of step time spent waiting for input."""
    share = number(measurements.get("input_wait_fraction"))
    tentative = share is None
    if tentative:
        share = number(measurements.get("input_wait_estimate"))
    if share is None:
        return None
    ci = number(measurements.get("input_wait_ci"))
    text = f"{share:.0%}" + (f" ±{ci:.0%}" if ci is not None and ci >= 0.005 else "")
    text += " of the step time"
    profile = mapping(measurements.get("profile"))
    hosts = [mapping(h) for h in profile.get("hosts") or []]
    details = []
    if steps := whole(measurements.get("input_wait_steps")):
        details.append(f"from {steps:,} timed steps")
    elif len(hosts) == 1 and (steps := whole(hosts[0].get("steps"))):
        step = number(hosts[0].get("step_ms"))
        details.append(f"{_plural(steps, 'step')}" + (f" of {step:,.1f} ms" if step else ""))
    details += [
        f"{h.get('worker')} {w:.0%}"
        for h in hosts
        if len(hosts) > 1 and (w := number(h.get("input_wait_fraction"))) is not None
    ]
    text += f" ({', '.join(details)})" if details else ""
    devices = [
        f"{d.get('device')} {w:.0%}"
        for d in map(mapping, profile.get("devices") or [])
        if (w := number(d.get("input_wait_fraction"))) is not None
    ]
    if devices:
        text += f"; per device: {', '.join(devices)}"
    agrees = profile.get("agrees")
    if agrees is not None:
        text += "; agrees with the verdict" if agrees else "; disagrees with the verdict (see note)"
    return text + (", too uncertain for a verdict" if tentative else "")


def profile_line(measurements: Mapping[str, Any]) -> str | None:
    """The slowest tf.data stage in the profile, and the command that opens it."""
    profile = mapping(measurements.get("profile"))
    command = string(profile.get("command"))
    if command is None:
        return None
    slow = mapping(profile.get("slowest_stage"))
    line = ""
    if string(slow.get("stage")):
        share = number(slow.get("self_fraction"))
        place = f" at {slow.get('path')}:{slow.get('line')}" if slow.get("line") else ""
        line = (
            f"slowest tf.data stage `{slow.get('stage')}` ({slow.get('dataset')}){place}"
            + (f", busy {share:.0%} of the profiled steps" if share is not None else "")
            + "; "
        )
    return line + f"open it with `{command}`"


def time_split_line(measurements: Mapping[str, Any]) -> str | None:
    """``training 312 s, evaluation 41 s, outside steps 12 s, start-up 9 s, the Monitor 0.8 s``:
    the same kinds of time the timeline draws."""
    split = mapping(measurements.get("time_split"))
    parts = [
        f"{label} {value:,.0f} s" if value >= 10 else f"{label} {value:.1f} s"
        for key, label in (
            ("train_s", "training"),
            ("eval_s", "evaluation"),
            ("stall_s", "outside steps"),
            ("startup_s", "start-up"),
            ("monitor_s", "the Monitor"),
        )
        if (value := number(split.get(key))) and value >= 0.05
    ]
    return ", ".join(parts) or None


def workers_line(measurements: Mapping[str, Any]) -> str | None:
    """``worker-0 35.1 ms/step, input wait 4%; worker-1 36.0 ms/step, input wait 61%``, with
    what each worker's own pipeline gave read alone, where the monitor probed it."""
    entries = []
    for worker in measurements.get("per_worker") or []:
        if not isinstance(worker, Mapping) or not string(worker.get("worker")):
            continue
        text = str(worker["worker"])
        if (step := number(worker.get("step_ms"))) is not None:
            text += f" {step:.1f} ms/step"
        if (wait := number(worker.get("input_wait_fraction"))) is not None:
            text += f", input wait {wait:.0%}"
        if (alone := number(worker.get("pipeline_samples_per_s"))) is not None:
            text += f", own pipeline alone {samples(alone)} samples/s"
        entries.append(text)
    return "; ".join(entries) or None


def service_line(measurements: Mapping[str, Any]) -> str | None:
    """What offloading the pipeline to a local tf.data service measured."""
    figures = service_figures(dict(measurements))
    if figures is None:
        return string(mapping(measurements.get("data_service")).get("note"))
    workers, rate, local = figures
    return (
        f"{samples(rate)} samples/s from {_plural(workers, 'local worker')} against "
        f"{samples(local)} in-process (x{rate / local:.2f})"
    )


def scaling_line(measurements: Mapping[str, Any]) -> str | None:
    """``85% on 2 replicas (ceiling 1 replica 5,000, 2 replicas 8,500 samples/s)``."""
    efficiency = number(measurements.get("scaling_efficiency"))
    replicas = whole(measurements.get("replicas"))
    if efficiency is None or not replicas:
        return None
    unit = "replica"
    devices = whole(mapping(measurements.get("distribution")).get("devices"))
    if devices is not None and devices != replicas:  # a mesh that also splits the model
        replicas, unit = devices, "device"
    one = number(measurements.get("ceiling_1_samples_per_s"))
    all_ = number(measurements.get("ceiling_n_samples_per_s"))
    detail = ""
    if one is not None and all_ is not None:
        detail = f" (ceiling: {samples(one)} on 1 {unit}, {samples(all_)} on {replicas})"
    return f"{efficiency:.0%} on {_plural(replicas, unit)}{detail}"


def projection_line(measurements: Mapping[str, Any]) -> str | None:
    """What the devices deliver with today's pipeline, and with the fixes applied."""
    projected = number(measurements.get("projected_samples_per_s"))
    if projected is None:
        return None
    line = f"{samples(projected)} samples/s with today's pipeline"
    if (fixed := number(measurements.get("projected_fixed_samples_per_s"))) is not None:
        line += f", {samples(fixed)} with the fixes applied"
        details = []
        if (gain := number(measurements.get("fixes_gain"))) is not None:
            details.append(f"x{gain:.2f} on the pipeline, measured together")
        pipeline = number(measurements.get("fixed_pipeline_samples_per_s"))
        if pipeline is not None and pipeline > fixed:
            details.append("capped by the compute ceiling")
        line += f" ({'; '.join(details)})" if details else ""
    return line


def limiting_stage(measurements: Mapping[str, Any]) -> str | None:
    """The stage that limits the pipeline, from the per-stage rates."""
    for stage in measurements.get("stages") or []:
        if isinstance(stage, Mapping) and stage.get("limiting"):
            where = Span(str(stage.get("path")), stage.get("line")).label(column=False)
            place = f" at {where}" if stage.get("line") else ""
            rate = number(stage.get("samples_per_s"))
            before = number(stage.get("input_samples_per_s"))
            if rate and before:
                return (
                    f"`{stage.get('op')}`{place} (throughput falls there from "
                    f"{samples(before)} to {samples(rate)} samples/s)"
                )
            return f"`{stage.get('op')}`{place}" + (f" ({samples(rate)} samples/s)" if rate else "")
    return None


def _block(finding: Finding, color: bool) -> list[str]:
    """``path:line:col: PD102 [warning] name: message`` and, when there is one, its fix."""
    tier = "" if finding.confidence == "high" else f", {finding.confidence} confidence"
    severity = _paint(
        f"{finding.rule} [{finding.severity.label}{tier}]",
        _SEVERITY_COLOR[finding.severity],
        color,
    )
    message = _clean(finding.message)
    if label := gain_label(finding):
        message += f" ({label})"
    name = f" {_clean(finding.name)}" if finding.name else ""
    head = f"{_paint(_where(finding), _BOLD, color)}: {severity}{name}: "
    block = [head + message.replace("\n", "\n  ")]
    for fact in finding.assumed:  # why the finding is not high: what the code does not show
        said = FACTS.get(fact.fact, fact.fact) + (f" ({fact.detail})" if fact.detail else "")
        block.append(_paint(f"  assumed: {_clean(said)}", _DIM, color))
    if finding.fix:
        fix = _clean(finding.fix).replace("\n", "\n  ")
        block.append(_paint(f"  fix: {fix}", _DIM, color))
    return block


def _where(finding: Finding) -> str:
    """``path:line:col`` with what is known, or ``<job>`` for a finding about the whole run."""
    place = span(finding)
    return "<job>" if place.path is None else _clean(place.label())


def summary_line(report: Report) -> str:
    """``Found 3 problems (1 error, 2 warnings) in 2 files.`` or ``No problems found ...``."""
    files = f" in {_plural(report.files_checked, 'file')}" if report.files_checked else ""
    below = below_line(report)
    if not report.findings:
        return f"No problems found{files}.{below}"
    counts = ", ".join(_plural(n, label) for label, n in report.counts().items() if n)
    return f"Found {_plural(len(report.findings), 'problem')} ({counts}){files}.{below}"


def below_line(report: Report) -> str:
    """`` 3 more at lower confidence (medium: 2, low: 1): --confidence low shows them.``"""
    below = {tier: n for tier, n in report.below_confidence.items() if n}
    if not below:
        return ""
    tiers = [t for t in CONFIDENCES if t in below]
    counts = ", ".join(f"{tier}: {below[tier]}" for tier in tiers)
    total = sum(below.values())
    return (
        f" {total} more at lower confidence ({counts}): "
        f"`--confidence {tiers[-1]}` shows {'it' if total == 1 else 'them'}."
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word if count == 1 else _PLURALS.get(word, word + 's')}"


def _paint(text: str, code: str, color: bool) -> str:
    """Wrap every line of ``text`` in an SGR code, so a wrapped line never bleeds color."""
    if not color:
        return text
    return "\n".join(f"\x1b[{code}m{line}{_RESET}" for line in text.split("\n"))


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").translate(_CONTROLS)


# --- measurement helpers, shared with the HTML card ----------------------------------------------


class Throughput(NamedTuple):
    """One measured rate: ``key`` names the row for styling, ``ci`` is a relative half-width."""

    key: str
    label: str
    samples_per_s: float
    ci: float | None


class GpuFacts(NamedTuple):
    """One GPU's sampled numbers, already formatted; a part is "" when it was not measured."""

    label: str
    util: str
    spread: str
    memory: str
    pcie: str


def mapping(value: object) -> Mapping[str, Any]:
    """``value`` if it is a mapping, else empty: measurements come from JSON and may be partial."""
    return value if isinstance(value, Mapping) else {}


def number(value: object) -> float | None:
    """A finite, non-negative measurement, or None (for a missing, NaN, negative or odd value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) and value >= 0 else None


def whole(value: object, *, minimum: int = 1) -> int | None:
    """An int of at least ``minimum`` (a count, an index), or None; ``True`` is not a count."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value >= minimum else None


def string(value: object) -> str | None:
    """A non-blank string, or None, so "None" or an empty label never reaches the output."""
    return value if isinstance(value, str) and value.strip() else None


def samples(value: float) -> str:
    """``1,234``: thousands separators; a decimal only where a rate is too small to round."""
    return f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def percent(value: float) -> str:
    return f"{value:.0f}%"


def ci_text(ci: float | None) -> str:
    """``±3%`` from a relative half-width of 0.03; one decimal below 1% so it never reads ±0%."""
    if ci is None:
        return ""
    pct = ci * 100
    return f"±{pct:.0f}%" if pct >= 1 else f"±{pct:.1f}%"


def bar_cells(value: float, top: float, width: int) -> int:
    """Cells of a ``width`` bar for ``value`` against ``top``; a measured rate gets one, a rate
    beyond ``top`` fills the bar."""
    if top <= 0 or value <= 0:
        return 0
    return min(width, max(1, round(width * value / top)))


BAR_REACH = 2.0
"""The bars span this many times what the model can take (the larger of ceiling and training):
a pipeline or a projection beyond that only needs to be seen to be more than enough."""


def worker_count(measurements: Mapping[str, Any]) -> int:
    """Workers in the job; above 1, a report's rates and batch are one worker's share."""
    return whole(measurements.get("workers")) or 1


def rate_scope(measurements: Mapping[str, Any]) -> str:
    """`` on worker-1`` where the rates are one worker's of a multi-worker job, else nothing."""
    name = string(measurements.get("worker"))
    return f" on {name}" if name and worker_count(measurements) > 1 else ""


def bar_top(rows: list[Throughput]) -> tuple[float, bool]:
    """The rate a full bar stands for, and whether some row goes beyond it (drawn clipped), so
    that a pipeline 100x faster than the model does not shrink the rows that matter to a cell."""
    largest = max(row.samples_per_s for row in rows)
    model = max((r.samples_per_s for r in rows if r.key in ("ceiling", "training")), default=0.0)
    if model <= 0 or largest <= BAR_REACH * model:
        return largest, False
    return BAR_REACH * model, True


def throughputs(measurements: Mapping[str, Any]) -> list[Throughput]:
    """The throughput rows that were measured, in display order."""
    rows = []
    for key, label, rate_key, ci_key in _THROUGHPUTS:
        rate = number(measurements.get(rate_key))
        if rate is not None:
            ci = number(measurements.get(ci_key)) if ci_key else None
            rows.append(Throughput(key, label, rate, ci))
    return rows


def gpu_list(measurements: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    gpus = measurements.get("gpus")
    if not isinstance(gpus, (list, tuple)):
        return []
    return [gpu for gpu in gpus if isinstance(gpu, Mapping)]


def gpu_facts(gpu: Mapping[str, Any], position: int) -> GpuFacts:
    """``GPU0 NVIDIA H200``, ``45%``, ``p5 10%, p95 80%``, ``12.0/139.0 GiB``, ``tx 1 / rx 9 MB/s``.

    Memory is shown in GiB because NVML reports MiB (``memory_*_mb``).
    """
    index = whole(gpu.get("index"), minimum=0)
    index = position if index is None else index
    name = string(gpu.get("name"))
    mean = number(gpu.get("utilization_mean"))
    spread = ", ".join(
        f"{p} {percent(v)}"
        for p in ("p5", "p95")
        if (v := number(gpu.get(f"utilization_{p}"))) is not None
    )
    used, total = number(gpu.get("memory_used_mb")), number(gpu.get("memory_total_mb"))
    memory = ""
    if used is not None:
        memory = f"{used / 1024:.1f}" + (f"/{total / 1024:.1f}" if total is not None else "")
        memory += " GiB"
    pcie = " / ".join(
        f"{d} {v:,.0f}"
        for d in ("tx", "rx")
        if (v := number(gpu.get(f"pcie_{d}_mb_s"))) is not None
    )
    return GpuFacts(
        f"GPU{index}" + (f" {name}" if name else ""),
        percent(mean) if mean is not None else "",
        spread,
        memory,
        f"{pcie} MB/s" if pcie else "",
    )


def host_cpu(measurements: Mapping[str, Any]) -> str | None:
    """``97% of 2 cores (p95 99%)``: a busy host CPU is the usual reason a pipeline is slow."""
    cpu = number(measurements.get("host_cpu_percent"))
    if cpu is None:
        return None
    host = mapping(measurements.get("host"))
    text = percent(cpu)
    if (cores := whole(host.get("cpu_count"))) is not None:
        text += f" of {_plural(cores, 'core')}"
    if (p95 := number(host.get("cpu_percent_p95"))) is not None:
        text += f" (p95 {percent(p95)})"
    return text


def run_setup(measurements: Mapping[str, Any]) -> str | None:
    """``batch 256 on 2 replicas (MirroredStrategy); step 12.3 ms ceiling, 40.1 ms training``."""
    parts = []
    batch = number(measurements.get("batch_size"))
    replicas = whole(measurements.get("replicas"))
    strategy = string(measurements.get("strategy"))
    workers = worker_count(measurements)
    if batch is not None:
        setup = f"batch {batch:,.0f}" + (" per worker" if workers > 1 else "")
        if replicas is not None:
            setup += f" on {_plural(replicas, 'replica')}"
        if workers > 1:
            setup += f" over {workers} workers"
        parts.append(setup + (f" ({strategy})" if strategy else ""))
    step = mapping(measurements.get("step_ms"))
    steps = ", ".join(
        f"{v:.1f} ms {k}" for k in ("ceiling", "training") if (v := number(step.get(k))) is not None
    )
    if steps:
        parts.append(f"step {steps}")
    if (seconds := number(measurements.get("check_seconds"))) is not None:
        parts.append(f"check took {seconds:.0f} s")
    return "; ".join(parts) or None
