"""JSON output: exactly :meth:`Report.to_json`, the versioned contract other tools parse."""

from __future__ import annotations

from pipedoctor.report import Report


def render_json(report: Report) -> str:
    """The report's JSON, unchanged (the contract lives in ``report.py``), plus a newline."""
    return report.to_json() + "\n"
