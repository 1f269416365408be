"""Terminal output, modelled on ruff: one block per finding, then notes, verdict and a summary."""

from __future__ import annotations

from pipedoctor.render import sorted_findings, span
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


def render_text(report: Report, *, color: bool = False) -> str:
    """The report for a person at a terminal; ANSI colors only when ``color`` is true."""
    lines: list[str] = []
    for finding in sorted_findings(report):
        lines.extend(_block(finding, color))
        lines.append("")
    lines.extend(f"note: {_clean(note)}" for note in report.notes)
    if report.verdict is not None:
        lines.append(f"Verdict: {_paint(_clean(report.verdict), _BOLD, color)}")
    lines.append(_summary(report))
    return "\n".join(lines) + "\n"


def _block(finding: Finding, color: bool) -> list[str]:
    """``path:line:col: PD102 [warning] name: message`` and, when there is one, its fix."""
    severity = _paint(
        f"{finding.rule} [{finding.severity.label}]", _SEVERITY_COLOR[finding.severity], color
    )
    message = _clean(finding.message)
    if finding.gain is not None:
        message += f" (measured gain x{finding.gain:.1f})"
    name = f" {_clean(finding.name)}" if finding.name else ""
    head = f"{_paint(_where(finding), _BOLD, color)}: {severity}{name}: "
    block = [head + message.replace("\n", "\n  ")]
    if finding.fix:
        fix = _clean(finding.fix).replace("\n", "\n  ")
        block.append(_paint(f"  fix: {fix}", _DIM, color))
    return block


def _where(finding: Finding) -> str:
    """``path:line:col`` with what is known, or ``<job>`` for a finding about the whole run."""
    place = span(finding)
    if place.path is None:
        return "<job>"
    parts = [_clean(place.path)]
    parts.extend(str(n) for n in (place.line, place.column) if n is not None)
    return ":".join(parts)


def _summary(report: Report) -> str:
    """``Found 3 problems (1 error, 2 warnings) in 2 files.`` or ``No problems found ...``."""
    files = f" in {_plural(report.files_checked, 'file')}" if report.files_checked else ""
    if not report.findings:
        return f"No problems found{files}."
    counts = ", ".join(_plural(n, label) for label, n in report.counts().items() if n)
    return f"Found {_plural(len(report.findings), 'problem')} ({counts}){files}."


def _plural(count: int, word: str) -> str:
    return f"{count} {word if count == 1 else _PLURALS.get(word, word + 's')}"


def _paint(text: str, code: str, color: bool) -> str:
    """Wrap every line of ``text`` in an SGR code, so a wrapped line never bleeds color."""
    if not color:
        return text
    return "\n".join(f"\x1b[{code}m{line}{_RESET}" for line in text.split("\n"))


def _clean(text: str) -> str:
    return text.replace("\r\n", "\n").translate(_CONTROLS)
