"""``pipedoctor check --diff`` / ``--fix``: the measured fixes written into the user's code.

The check has just timed, on the live pipeline, what each fix is worth. Its findings point at
the lines that built each stage (in the script or in a module it imports), so the same edits
``lint --fix`` makes apply there; each hunk of the diff is headed by the gain the check
measured for the findings it fixes. ``--fix`` writes them (the safe ones; ``--unsafe-fixes``
adds the rest), then checks the patched script again: the speed-up it measures is reported
beside the one the first check projected, and a patch the second check does not confirm is
taken back.

Only files inside the working directory are written, each through a temporary file and a
rename, and only when its fixed text compiles and the fixed rules fire less on it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.fix.edits import (
    AddedStage,
    CacheMove,
    Edit,
    FixError,
    MeasuredCache,
    Moves,
    write_bytes,
)
from pipedoctor.fix.run import FixRun, fix_report
from pipedoctor.report import Finding, Report

CONFIRM_AT = 1.05
"""A patched script must train at least this much faster than the original for its patch to
be kept: below it the second check cannot tell the patch from the noise between two runs."""

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")


@dataclass
class MeasuredFix:
    """What ``check --diff`` or ``--fix`` did, and what the second check measured."""

    run: FixRun
    originals: dict[str, bytes] = field(default_factory=dict)
    """Each written file's bytes before the fix, to take the patch back."""
    before: float | None = None
    """Training (else pipeline) samples/s of the script as it was."""
    after: float | None = None
    """The same figure for the patched script."""
    projected: float | None = None
    """The largest end-to-end gain the first check measured among the fixed findings."""
    kept: bool = True
    reason: str = ""


def in_working_directory(report: Report, cwd: Path) -> tuple[Report, list[tuple[Finding, str]]]:
    """The report's findings in files under ``cwd`` (paths made relative to it, as a diff
    shows them), and the others with why they are left alone."""
    inside: list[Finding] = []
    outside: list[tuple[Finding, str]] = []
    root = cwd.resolve()
    for finding in report.findings:
        if finding.path is None or finding.line is None:
            continue
        path = Path(finding.path)
        try:
            relative = path.resolve().relative_to(root)
        except (ValueError, OSError):
            outside.append((finding, "outside the working directory: not written"))
            continue
        inside.append(replace(finding, path=relative.as_posix()))
    return Report(findings=inside), outside


def paying(report: Report) -> tuple[Report, list[tuple[Finding, str]]]:
    """The findings whose fix the check did not measure to buy nothing for training, and the
    others with the figure: a fix that pays nothing end to end is not written, so the patch,
    the report's "Next step" and its ranked fixes give one answer."""
    kept: list[Finding] = []
    left: list[tuple[Finding, str]] = []
    for finding in report.findings:
        gain = finding.end_to_end_gain
        if gain is not None and gain < NO_GAIN:
            left.append((finding, f"measured x{gain:.2f} for training: nothing to gain"))
        else:
            kept.append(finding)
    return replace(report, findings=kept), left


def cache_entry(finding: Finding, whatif: list[dict]) -> dict | None:
    """The measured cache a PD106 finding stands for (the what-if at its line), if any, with
    the stage it follows (``op``)."""
    for entry in whatif:
        cache = entry.get("cache")
        if entry.get("rule") == "PD106" and isinstance(cache, dict):
            if entry.get("line") == finding.line and str(entry.get("path", "")).endswith(
                str(finding.path)
            ):
                return {**cache, "op": entry.get("op")}
    return None


def placed_caches(
    report: Report, whatif: list[dict], cwd: Path
) -> tuple[Report, list[tuple[Finding, str]], Moves]:
    """The findings to fix, a cache among them only where the check measured it in memory,
    with the stages it moves (a ``shuffle`` or ``repeat`` after it, the shuffle of file names
    turned off) when each is a call in the same file. A cache on local disk, or one whose
    moves reach another file or a notebook, is a rewrite to make by hand, as the report
    describes it."""
    kept, left = [], []
    moves: Moves = {}
    for finding in report.findings:
        if finding.rule != "PD106":
            kept.append(finding)
            continue
        cache = cache_entry(finding, whatif)
        moved = _moves(finding, cache, cwd) if cache is not None else None
        if cache is None:
            left.append((finding, "no cache was measured at this line"))
        elif cache.get("kind") != "memory":
            left.append((finding, "the measured cache lives on local disk: make it by hand, "
                                  "as the report says"))  # fmt: skip
        elif moved is None:
            left.append((finding, "the measured cache moves stages of another file or cell: "
                                  "make it by hand, as the report says"))  # fmt: skip
        else:
            kept.append(replace(finding, message=finding.message, fix=_size(cache)))
            added = tuple(
                AddedStage(str(a.get("op")), a.get("value"), bool(a.get("drop_remainder")))
                for a in cache.get("added") or ()
            )
            op = cache.get("op")
            key = (finding.path or "", finding.line or 0, finding.column or 1)
            moves[key] = MeasuredCache(op if isinstance(op, str) else None, moved, added)
    return Report(findings=kept, measurements=report.measurements), left, moves


def _moves(finding: Finding, cache: dict, cwd: Path) -> tuple[CacheMove, ...] | None:
    """The cache's moves as places in the finding's own file, or ``None`` when one is not."""
    found = []
    here = (cwd / (finding.path or "")).resolve()
    for move in cache.get("moved") or ():
        path, line, column = move.get("path"), move.get("line"), move.get("column")
        same_file = isinstance(path, str) and (cwd / path).resolve() == here
        if finding.cell is not None or not same_file or not line or not column:
            return None
        found.append(CacheMove(
            str(move.get("op")), line, column, bool(move.get("taken_out")),
            bool(move.get("in_call")),
        ))  # fmt: skip
    return tuple(found)


def _size(cache: dict) -> str:
    return f"cache: {cache.get('bytes', 0) / 2**20:,.0f} MiB in RAM, measured"


def throughput(report: Report) -> float | None:
    """What the check measured the job doing: training, else the pipeline alone."""
    m = report.measurements
    value = m.get("training_samples_per_s") or m.get("pipeline_samples_per_s")
    return float(value) if value else None


def plan_fixes(
    report: Report,
    relint: Callable[[str, str], list[Finding]],
    cwd: Path,
    *,
    unsafe: bool,
    write: bool,
) -> MeasuredFix:
    """The fixes for the report's findings inside ``cwd``: shown as a diff whose hunks carry
    the measured gains, and written when ``write``."""
    inside, outside = in_working_directory(report, cwd)
    inside, unpaid = paying(inside)
    outside += unpaid
    inside, unplaced, moves = placed_caches(inside, report.measurements.get("whatif") or [], cwd)
    outside += unplaced
    originals = {}
    if write:
        for shown in {f.path for f in inside.findings if f.path}:
            try:
                originals[shown] = (cwd / shown).read_bytes()
            except OSError:
                pass  # fix_report says why it cannot be fixed
    run = fix_report(inside, relint, unsafe=unsafe, write=write, root=cwd, moves=moves)
    run.skipped += outside
    run.diff = headed_by_gains(run.diff, run.edits, inside.findings)
    written = {e.path for e in run.edits}
    result = MeasuredFix(run, {k: v for k, v in originals.items() if k in written})
    gains = [
        f.end_to_end_gain or f.gain
        for f in inside.findings
        if any(e.path == f.path and e.line == f.line and e.rule == f.rule for e in run.edits)
        and (f.end_to_end_gain or f.gain)
    ]
    result.projected = max(gains) if gains else None
    result.before = throughput(report)
    return result


def confirm(result: MeasuredFix, after: Report, cwd: Path) -> None:
    """Judge the patch by the second check: kept when the patched script trains at least
    ``CONFIRM_AT`` times faster, else every file is written back as it was."""
    result.after = throughput(after)
    if result.before and result.after and result.after / result.before >= CONFIRM_AT:
        return
    measured = (
        f"x{result.after / result.before:.2f}"
        if result.before and result.after
        else "nothing comparable"
    )
    result.kept = False
    result.reason = (
        f"the second check measured {measured}, not a speed-up it can tell from the noise "
        f"between two runs (x{CONFIRM_AT:g} or more): the files were written back as they were"
    )
    for shown, data in result.originals.items():
        try:
            write_bytes(cwd / shown, data)  # every byte as it was
        except (FixError, OSError) as exc:
            result.reason += f"; {shown} could not be written back ({exc})"


def headed_by_gains(diff: str, edits: list[Edit], findings: list[Finding]) -> str:
    """Each hunk of ``diff`` headed (after its ``@@ ... @@``, where git puts a section name)
    by the rules it fixes and the gain the check measured for each."""
    gains = {(f.path, f.line, f.rule): f for f in findings}
    out: list[str] = []
    path = ""
    for line in diff.splitlines(keepends=True):
        if line.startswith("--- a/"):
            path = line[len("--- a/") :].rstrip("\n")
        match = HUNK.match(line)
        if match:
            start = int(match.group(1))
            length = int(match.group(2) or 1)
            labels = [
                gain_label(gains.get((e.path, e.line, e.rule)), e.rule)
                for e in edits
                if e.path == path and start <= e.line < start + max(length, 1)
            ]
            if labels:
                line = f"{match.group(0)} {'; '.join(labels)}\n"
        out.append(line)
    return "".join(out)


def gain_label(finding: Finding | None, rule: str) -> str:
    if finding is None:
        return rule
    size = f" ({finding.fix})" if rule == "PD106" and finding.fix.startswith("cache:") else ""
    if finding.end_to_end_gain is not None:
        return f"{rule}: x{finding.end_to_end_gain:.2f} end to end, measured{size}"
    if finding.gain is not None:
        return f"{rule}: x{finding.gain:.2f} on the pipeline alone, measured{size}"
    return f"{rule}: not measured"


def summary(result: MeasuredFix, *, wrote: bool) -> str:
    """One line per what happened: the fixes, then (after ``--fix``) the two checks' figures."""
    from pipedoctor.fix.run import summary as fix_summary

    lines = [fix_summary(result.run, wrote=wrote)]
    for finding, why in result.run.skipped:
        if finding.gain is not None and not why.startswith("unsafe fix"):
            lines.append(f"Not fixed: {finding.path}:{finding.line} {finding.rule}: {why}")
    if result.projected is not None:
        lines.append(f"Projected by the check: x{result.projected:.2f} (its largest fix, measured)")
    if wrote and result.run.edits:
        if result.before and result.after:
            lines.append(
                f"Measured after the fix: {result.before:,.0f} -> {result.after:,.0f} samples/s, "
                f"x{result.after / result.before:.2f}"
            )
        if not result.kept:
            lines.append(f"Not kept: {result.reason}")
    return "\n".join(lines)
