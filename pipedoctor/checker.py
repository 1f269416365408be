"""Measured diagnosis: a training script (in a child process) or a live dataset and model.

Both paths end in :func:`build_report`: measurements and notes in, a ranked :class:`Report`
with a verdict out. The script path also lints the script, so static and measured findings
arrive in one report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pipedoctor import diagnosis
from pipedoctor.config import Config
from pipedoctor.graph.doctor import BOUND, NOT_MEASURED, measured
from pipedoctor.pipeline import Analysis
from pipedoctor.report import Finding, Report, ranked
from pipedoctor.rules import Selection, only, run_rules

if TYPE_CHECKING:
    from pipedoctor.capture.runner import Continuation

MEASURED_RULES = "PD3"
"""Rules that judge the job's measurements rather than a line of code."""


class CheckError(RuntimeError):
    """The check could not measure; ``details`` is the user's own traceback where there is one,
    ``continuation`` the script still training when ``--run-after`` asked it to go on."""

    def __init__(self, message: str, details: str = "", continuation: Any = None) -> None:
        super().__init__(message)
        self.details = details
        self.continuation = continuation


@dataclass
class ScriptCheck:
    """A script's report, and with ``run_after`` the script itself, still training."""

    report: Report
    continuation: Continuation | None = None


def _without(selection: Selection, prefix: str) -> Selection:
    return replace(selection, ignore=selection.ignore + (prefix,))


def merge(
    static: list[Finding], graph: list[Finding], stages: Sequence[dict[str, Any]] = ()
) -> list[Finding]:
    """Static and graph findings as one list, one finding per rule and place: where both saw
    the same rule on the same line, keep the static one (its exact column, and its message,
    which the check's measurements already informed) with what the graph measured: the fix's
    gain, or a bound. Where the graph reported a rule for the pipeline it measured (``stages``
    gives that pipeline's lines), a static finding of the same rule elsewhere in those lines is
    the same problem seen less exactly, and the graph's stands for it."""
    static_setup_rules = {f.rule for f in static if f.rule.startswith("PD2")}
    graph = [f for f in graph if f.rule not in static_setup_rules]  # the source line is better
    by_place = {(f.rule, f.path, f.line): f for f in graph}
    spans = _line_spans(stages)
    measured_rules = {(f.rule, f.path) for f in graph}
    merged = []
    for finding in static:
        twin = by_place.pop((finding.rule, finding.path, finding.line), None)
        if twin is not None and twin.gain is not None:
            finding = measured(finding, twin.gain, twin.end_to_end_gain)
        elif twin is not None and BOUND in twin.message:
            bound = BOUND + twin.message.split(BOUND, 1)[1]
            finding = replace(finding, message=finding.message + bound)
        elif twin is not None and NOT_MEASURED in twin.message:
            finding = replace(finding, message=finding.message + _not_measured(twin.message))
        elif twin is None and (finding.rule, finding.path) in measured_rules:
            low, high = spans.get(finding.path, (0, -1))
            if finding.line is not None and low <= finding.line <= high:
                continue
        merged.append(finding)
    return merged + list(by_place.values())


def _not_measured(message: str) -> str:
    return NOT_MEASURED + message.split(NOT_MEASURED, 1)[1]


def _line_spans(stages: Sequence[dict[str, Any]]) -> dict[str, tuple[int, int]]:
    """Per file, the first and last line of the measured pipeline's stages."""
    spans: dict[str, tuple[int, int]] = {}
    for stage in stages:
        path, line = stage.get("path"), stage.get("line")
        if path is None or line is None:
            continue
        low, high = spans.get(path, (line, line))
        spans[path] = (min(low, line), max(high, line))
    return spans


def build_report(
    measurements: dict[str, Any],
    notes: list[str],
    selection: Selection,
    *,
    file_findings: Sequence[Finding] = (),
    files: int = 0,
    devices: int | None = None,
) -> Report:
    """The verdict, the scaling sentence, the decisions (``devices``: the count the user is
    about to buy) and the measured findings, ranked with the file's."""
    from pipedoctor.decide import decide, next_step, shared_host

    found = diagnosis.verdict(measurements, selection.params.get("PD301"))
    measurements = dict(measurements)
    limits = diagnosis.thresholds(selection.params.get("PD301"))
    if found == diagnosis.INCONCLUSIVE:
        measurements["undecided"] = diagnosis.undecided(measurements, limits)
    elif found == diagnosis.COMPUTE_BOUND and (note := diagnosis.noise_note(measurements, limits)):
        notes = [*notes, note]
    if decision := decide(measurements, devices):
        measurements["decision"] = decision
    gains = [f.end_to_end_gain for f in file_findings if f.end_to_end_gain is not None]
    if step := next_step(measurements, found, max(gains, default=None)):
        measurements.setdefault("decision", {})["next_step"] = step
    if shared := shared_host(measurements) if found == "balanced" else None:
        measurements.setdefault("decision", {})["shared_host"] = shared
    if "profile" in measurements:
        from pipedoctor.profile.reader import agreement

        notes = [*notes, *agreement(measurements, found, selection.params.get("PD301"))]
    measurements["scaling"] = diagnosis.scaling_sentence(measurements, found)
    if isinstance(memory := measurements.get("memory"), dict):
        measurements["parallelism"] = diagnosis.parallelism_sentence(
            memory, selection.params.get("PD213")
        )
    job = list(
        run_rules(Analysis("<job>"), "runtime", only(selection, MEASURED_RULES), measurements)
    )
    findings = [*job, *file_findings]
    later: frozenset[str] = frozenset()
    if any(f.rule == SATURATED for f in job):
        later = parallelism_rules()
        findings = [_on_a_saturated_host(f) if f.rule in later else f for f in findings]
    findings = ranked(findings, later)
    return Report(
        findings=findings,
        files_checked=files,
        verdict=found,
        measurements=measurements,
        notes=list(dict.fromkeys(notes)),
    )


SATURATED = "PD302"
"""The rule that finds the host CPU saturated."""
BUSY_HOST = (
    " The host CPU is saturated during training (PD302): more parallelism has no idle core to "
    "use there, so the fixes that remove work come first; this fix's gain was measured on the "
    "pipeline alone, without training's own use of the CPU."
)


def parallelism_rules() -> frozenset[str]:
    from pipedoctor.rules import load_catalog

    return frozenset(r.id for r in load_catalog().values() if r.fix_kind == "parallelism")


def _on_a_saturated_host(finding: Finding) -> Finding:
    if BUSY_HOST in finding.message:
        return finding
    return replace(finding, message=finding.message + BUSY_HOST)


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
    devices: int | None = None,
) -> Report:
    """Measure a live ``tf.data.Dataset`` (and, with a compiled Keras ``model``, the compute
    ceiling and real training on a copy of it) and return the :class:`Report`.

    Without a model only the pipeline is measured. In a notebook, progress is shown in the
    cell's output unless ``progress`` is given. The model itself is never trained or
    changed. ``workers`` explains which files each of that many workers would read (default:
    the workers in ``TF_CONFIG``). ``profile`` is a log directory to write a profile of a few
    more training steps to, for TensorBoard's Profile tab; the report gains its input-wait
    share. ``devices``: a device count to project the job onto (how much input it would need,
    what is known of its compute). Raises :class:`CheckError` when nothing could be measured.
    """
    from pipedoctor.config import load_config
    from pipedoctor.measure.job import JobOptions, measure_job
    from pipedoctor.measure.protocol import MeasureError
    from pipedoctor.progress import Progress, in_notebook

    _require_dataset(dataset)
    config = load_config(Path.cwd(), select=select, ignore=ignore)
    shown = Progress() if progress is None and in_notebook() else None  # as the CLI shows it
    try:
        options = JobOptions(
            config.selection,
            workers=workers,
            profile=Path(profile).resolve() if profile is not None else None,
        )
        job = measure_job(dataset, model, timeout, progress or shown or (lambda _: None), options)
    except MeasureError as exc:
        raise CheckError(str(exc)) from None
    finally:
        if shown is not None:
            shown.done()
    notes = list(job.notes)
    if model is None:
        notes.append("no model given: only the input pipeline was measured")
    return build_report(
        job.measurements, notes, config.selection, file_findings=job.findings, devices=devices
    )


def _require_dataset(dataset: Any) -> None:
    """``check`` measures a ``tf.data.Dataset``: anything else is the caller's mistake, said
    in one line (a ``TypeError``, as Python says it), not an ``AttributeError`` from inside."""
    import tensorflow as tf

    if not isinstance(dataset, tf.data.Dataset):
        raise TypeError(
            f"check() needs a tf.data.Dataset, got {type(dataset).__name__}: for arrays, "
            "pass tf.data.Dataset.from_tensor_slices((x, y)).batch(n)"
        )


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
    devices: int | None = None,
) -> ScriptCheck:
    """Run ``script`` until it starts training, measure there, and lint it as well. With
    ``run_after`` the script trains on: wait for it with the result's ``continuation``;
    ``profile``: a log directory for a profile of a few training steps."""
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
        raise CheckError(result.message, details, result.continuation)
    measurements = dict(result.measurements)
    measurements["check_seconds"] = round(result.seconds, 1)
    notes = list(result.notes)
    if (reason := incomplete(measurements, notes)) is not None:
        measurements["incomplete"] = reason
        notes.append(f"the check is incomplete: {reason}")
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
    file_findings = merge(file_findings, graph_findings, measurements.get("stages") or ())
    ignored = config.ignored_for(shown)
    file_findings = [f for f in file_findings if not any(f.rule.startswith(c) for c in ignored)]
    report = build_report(
        measurements, notes, config.selection, file_findings=file_findings, files=1,
        devices=devices,
    )  # fmt: skip
    return ScriptCheck(report, result.continuation)


THROUGHPUTS = ("pipeline", "ceiling", "training")


def incomplete(measurements: dict[str, Any], notes: Sequence[str]) -> str | None:
    """Why a check that caught the script training is no diagnosis: one of the three
    throughputs is missing. The reason is the child's, or the note that says what failed."""
    if isinstance(measurements.get("incomplete"), str):
        return measurements["incomplete"]
    missing = [n for n in THROUGHPUTS if not measurements.get(f"{n}_samples_per_s")]
    if not missing:
        return None
    named = " and ".join(f"the {n}" if n != "pipeline" else "the pipeline alone" for n in missing)
    why = next(
        (
            n
            for n in notes
            if n.startswith(("training could not be measured", "no compiled", "the script's loop "))
        ),
        None,
    )
    if why is None:
        why = "the check's budget ran out before it could be timed: give it a longer --timeout"
    return f"{named} {'was' if len(missing) == 1 else 'were'} not measured ({why})"
