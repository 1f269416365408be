"""Measured diagnosis: a training script (in a child process) or a live dataset and model.

Both paths end in :func:`build_report`: measurements and notes in, a ranked :class:`Report`
with a verdict out. The script path also lints the script, so static and measured findings
arrive in one report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pipedoctor import diagnosis
from pipedoctor.config import Config
from pipedoctor.graph.doctor import BOUND, measured
from pipedoctor.pipeline import Analysis
from pipedoctor.report import Finding, Report, ranked
from pipedoctor.rules import Selection, only, run_rules

MEASURED_RULES = "PD3"
"""Rules that judge the job's measurements rather than a line of code."""


class CheckError(RuntimeError):
    """The check could not measure; ``details`` is the user's own traceback where there is one."""

    def __init__(self, message: str, details: str = "") -> None:
        super().__init__(message)
        self.details = details


def _without(selection: Selection, prefix: str) -> Selection:
    return replace(selection, ignore=selection.ignore + (prefix,))


def merge(static: list[Finding], graph: list[Finding]) -> list[Finding]:
    """Static and graph findings as one list: where both saw the same rule on the same line,
    keep the static one (its exact column, and its message, which the check's measurements
    already informed) with what the graph measured: the fix's gain, or a bound."""
    static_setup_rules = {f.rule for f in static if f.rule.startswith("PD2")}
    graph = [f for f in graph if f.rule not in static_setup_rules]  # the source line is better
    by_place = {(f.rule, f.path, f.line): f for f in graph}
    merged = []
    for finding in static:
        twin = by_place.pop((finding.rule, finding.path, finding.line), None)
        if twin is not None and twin.gain is not None:
            finding = measured(finding, twin.gain, twin.end_to_end_gain)
        elif twin is not None and BOUND in twin.message:
            bound = BOUND + twin.message.split(BOUND, 1)[1]
            finding = replace(finding, message=finding.message + bound)
        merged.append(finding)
    return merged + list(by_place.values())


def build_report(
    measurements: dict[str, Any],
    notes: list[str],
    selection: Selection,
    *,
    file_findings: Sequence[Finding] = (),
    files: int = 0,
) -> Report:
    """The verdict, the scaling sentence and the measured findings, ranked with the file's."""
    found = diagnosis.verdict(measurements, selection.params.get("PD301"))
    measurements = dict(measurements)
    if "profile" in measurements:
        from pipedoctor.profile.reader import agreement

        notes = [*notes, *agreement(measurements, found, selection.params.get("PD301"))]
    measurements["scaling"] = diagnosis.scaling_sentence(measurements, found)
    job = run_rules(Analysis("<job>"), "runtime", only(selection, MEASURED_RULES), measurements)
    findings = ranked([*job, *file_findings])
    return Report(
        findings=findings,
        files_checked=files,
        verdict=found,
        measurements=measurements,
        notes=list(dict.fromkeys(notes)),
    )


def check(
    dataset: Any,
    model: Any = None,
    *,
    timeout: float = 60.0,
    workers: int | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    progress: Callable[[str], None] | None = None,
    profile: str | Path | None = None,
) -> Report:
    """Measure a live ``tf.data.Dataset`` (and, with a compiled Keras ``model``, the compute
    ceiling and real training on a copy of it) and return the :class:`Report`.

    Without a model only the pipeline is measured. The model itself is never trained or
    changed. ``workers`` explains which files each of that many workers would read (default:
    the workers in ``TF_CONFIG``). ``profile`` is a log directory to write a profile of a few
    more training steps to, for TensorBoard's Profile tab; the report gains its input-wait
    share. Raises :class:`CheckError` when nothing could be measured.
    """
    from pipedoctor.config import load_config
    from pipedoctor.measure.job import measure_job
    from pipedoctor.measure.protocol import MeasureError

    config = load_config(Path.cwd(), select=select, ignore=ignore)
    try:
        job = measure_job(
            dataset, model, timeout, progress or (lambda _: None), config.selection,
            workers=workers, profile=Path(profile).resolve() if profile is not None else None,
        )  # fmt: skip
    except MeasureError as exc:
        raise CheckError(str(exc)) from None
    notes = list(job.notes)
    if model is None:
        notes.append("no model given: only the input pipeline was measured")
    return build_report(job.measurements, notes, config.selection, file_findings=job.findings)


def check_script(
    script: Path,
    args: Sequence[str],
    config: Config,
    *,
    timeout: float,
    run_after: bool = False,
    workers: int | None = None,
    progress: Callable[[str], None] = lambda _: None,
    show_output: bool = False,
    profile: Path | None = None,
) -> Report:
    """Run ``script`` until it starts training, measure there, and lint it as well."""
    from pipedoctor.capture.runner import run_script
    from pipedoctor.lint import decode, display_path, lint_text

    if not script.is_file():
        raise CheckError(f"no such script: {script}")
    result = run_script(
        script, args, timeout=timeout, run_after=run_after, workers=workers,
        selection=config.selection, progress=progress,
        show_output=show_output, profile=profile,
    )  # fmt: skip
    if result.status != "ok":
        details = result.traceback or (result.output_tail if result.status != "interrupted" else "")
        raise CheckError(result.message, details)
    measurements = dict(result.measurements)
    measurements["check_seconds"] = round(result.seconds, 1)
    shown = display_path(script)
    text = decode(script.read_bytes(), shown)
    file_findings: list[Finding] = []
    if isinstance(text, Finding):
        file_findings = [text]
    else:
        selection = _without(config.selection, MEASURED_RULES)
        outcome = lint_text(text, shown, selection, ("runtime", "static"), measurements)
        file_findings = outcome.findings
    graph_findings = [Finding.from_dict(f) for f in result.findings]
    file_findings = merge(file_findings, graph_findings)
    ignored = config.ignored_for(shown)
    file_findings = [f for f in file_findings if not any(f.rule.startswith(c) for c in ignored)]
    return build_report(
        measurements, result.notes, config.selection, file_findings=file_findings, files=1
    )
