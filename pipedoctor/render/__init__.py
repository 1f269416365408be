"""Renderers: turn a :class:`~pipedoctor.report.Report` into text for a person or a tool.

Every renderer is a pure function of the report (and, for SARIF, the rule catalog), so the CLI,
the CI gate and the tests all see byte-identical output. What more than one renderer needs
(ordering, the span of a finding, how a rule is named) lives here so the formats cannot drift
apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from pipedoctor.pipeline import KERNEL_CELL
from pipedoctor.report import Finding, Report

if TYPE_CHECKING:
    from pipedoctor.rules import Rule

FORMATS = ("text", "json", "sarif", "github", "html")

__all__ = ["FORMATS", "Span", "cell_place", "render", "sorted_findings", "span", "title"]


def render(
    report: Report,
    fmt: str,
    *,
    rules: Mapping[str, Rule] | None = None,
    color: bool = False,
) -> str:
    """Render ``report`` as ``fmt`` (one of :data:`FORMATS`); the one entry point the CLI uses.

    ``rules`` matters only to SARIF, which describes each rule; it defaults to the catalog there.
    ``color`` matters only to text. Unknown formats raise :class:`ValueError`.
    """
    # Imported here, not at the top: the format modules import the helpers below from this
    # package, and a lazy import keeps that cycle harmless (and ``render --format json`` cheap).
    if fmt == "text":
        from pipedoctor.render.text import render_text

        return render_text(report, color=color)
    if fmt == "json":
        from pipedoctor.render.json import render_json

        return render_json(report)
    if fmt == "sarif":
        from pipedoctor.render.sarif import render_sarif

        return render_sarif(report, rules)
    if fmt == "github":
        from pipedoctor.render.github import render_github

        return render_github(report)
    if fmt == "html":
        from pipedoctor.render.html import render_page

        return render_page(report)
    raise ValueError(f"unknown format {fmt!r} (expected one of: {', '.join(FORMATS)})")


def sorted_findings(report: Report) -> list[Finding]:
    """Findings in reading order (path, line, column, rule), so output is stable across runs."""
    return sorted(report.findings, key=Finding.sort_key)


def measured(report: Report) -> bool:
    """A check, a profile or a monitored run, rather than a lint: its findings are ranked."""
    return report.verdict is not None or bool(report.measurements)


def shown_findings(report: Report) -> list[Finding]:
    """In the order a person should read them: ranked for a measured report (the verdict, then
    the fixes by measured gain), in reading order for a lint."""
    return list(report.findings) if measured(report) else sorted_findings(report)


def title(finding: Finding) -> str:
    """``PD102 sequential-map``: how a finding's rule is named to a person."""
    return f"{finding.rule} {finding.name}" if finding.name else finding.rule


@dataclass(frozen=True)
class Span:
    """A finding's place, cut down to what is valid: 1-based, and each part only if it makes sense.

    Front ends may leave parts unknown (``None``) or, defensively, out of range; SARIF rejects a
    ``startLine`` of 0 and GitHub mislays annotations with an end before the start, so every
    renderer reads positions through this one filter.
    """

    path: str | None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    cell: int | None = None
    """In a notebook, the cell the lines are counted in (``path:cell 3:2:5`` in text)."""

    def label(self, column: bool = True) -> str:
        """``path:line:column`` with what is known (``path:cell 3:2:5`` in a notebook file);
        a cell of a live kernel as IPython's tracebacks name it, ``Cell In[3], line 14``."""
        if self.path is None:
            return ""
        if self.path.startswith(KERNEL_CELL) and self.line is not None:
            return f"{self.path}, line {self.line}"
        parts = [self.path] + ([f"cell {self.cell}"] if self.cell else [])
        parts.extend(str(n) for n in (self.line, self.column if column else None) if n is not None)
        return ":".join(parts)


def _positive(value: int | None) -> int | None:
    return value if isinstance(value, int) and value >= 1 else None


def span(finding: Finding) -> Span:
    """The valid part of ``finding``'s location (nothing but the path when no line is known)."""
    path = finding.path or None
    line = _positive(finding.line)
    cell = _positive(finding.cell)
    if path is None or line is None:
        return Span(path, cell=cell if path else None)
    column = _positive(finding.column)
    end_line = _positive(finding.end_line)
    if end_line is not None and end_line < line:
        end_line = None
    end_column = _positive(finding.end_column)
    # An end column means nothing without an end line, nor one before the start on that line.
    backwards = end_line == line and column is not None and (end_column or column) < column
    if end_line is None or backwards:
        end_column = None
    return Span(path, line, column, end_line, end_column, cell)


def cell_place(place: Span) -> str:
    """``cell 3, line 2, column 5``: where a notebook finding is, for formats whose own
    location fields can only name the notebook file (SARIF, GitHub), as ruff does."""
    if place.cell is None:
        return ""
    parts = [f"cell {place.cell}"]
    parts += [f"{label} {n}" for label, n in (("line", place.line), ("column", place.column)) if n]
    return ", ".join(parts)
