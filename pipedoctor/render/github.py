"""GitHub Actions workflow commands, so findings show up as annotations on a pull request.

The escaping is exactly that of ``@actions/core`` (``escapeData`` / ``escapeProperty`` in
actions/toolkit ``command.ts``): the runner undoes exactly that, and no more.
"""

from __future__ import annotations

from pipedoctor.render import cell_place, sorted_findings, span, title
from pipedoctor.report import Finding, Report, Severity

_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}

_DATA_ESCAPES = (("%", "%25"), ("\r", "%0D"), ("\n", "%0A"))
_PROPERTY_ESCAPES = (*_DATA_ESCAPES, (":", "%3A"), (",", "%2C"))


def render_github(report: Report) -> str:
    """One ``::error``/``::warning``/``::notice`` line per finding, then one ``::notice`` per
    note (a file that could not be analysed must not look like a clean pass); "" when there
    is nothing to say."""
    lines = [_command(finding) for finding in sorted_findings(report)]
    lines += [f"::notice title=pipedoctor::{_escape(note, _DATA_ESCAPES)}" for note in report.notes]
    below = sum(report.below_confidence.values())
    if below:
        more = f"{below} more finding{'s' * (below > 1)}"
        note = f"{more} at lower confidence (`--confidence low` shows them)"
        lines.append(f"::notice title=pipedoctor::{_escape(note, _DATA_ESCAPES)}")
    return "".join(line + "\n" for line in lines)


def _command(finding: Finding) -> str:
    place = span(finding)
    cell = cell_place(place)
    if cell:  # a notebook: annotate the file at a fallback place, as ruff does; cell in text
        properties: dict[str, object] = {"file": place.path, "line": 1, "col": 1}
    else:
        properties = {
            "file": place.path,
            "line": place.line,
            "col": place.column,
            "endLine": place.end_line,
            "endColumn": place.end_column,
        }
    tier = "" if finding.confidence == "high" else f" ({finding.confidence} confidence)"
    properties["title"] = title(finding) + tier
    message = f"{cell}: {finding.message}" if cell else finding.message
    joined = ",".join(
        f"{key}={_escape(str(value), _PROPERTY_ESCAPES)}"
        for key, value in properties.items()
        if value is not None
    )
    return f"::{_COMMAND[finding.severity]} {joined}::{_escape(message, _DATA_ESCAPES)}"


def _escape(text: str, table: tuple[tuple[str, str], ...]) -> str:
    # "%" comes first in both tables, so an escape is never escaped twice.
    for raw, escaped in table:
        text = text.replace(raw, escaped)
    return text
