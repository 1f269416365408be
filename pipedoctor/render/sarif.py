"""SARIF 2.1.0, the format GitHub code scanning (and most IDE SARIF viewers) ingest.

Every catalog rule is described, not just those that fired: code scanning then knows each rule
and can close an alert when its finding goes away.
"""

from __future__ import annotations

import importlib
import json
import posixpath
import re
from collections.abc import Mapping
from pathlib import PureWindowsPath
from typing import Any
from urllib.parse import quote

from pipedoctor.render import cell_place, sorted_findings, span
from pipedoctor.report import Finding, Report, Severity
from pipedoctor.rules import Rule, load_catalog

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
SARIF_VERSION = "2.1.0"
INFORMATION_URI = "https://github.com/pipedoctor/pipedoctor"
SRCROOT = "%SRCROOT%"

_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
RANK = {"high": 90.0, "medium": 60.0, "low": 30.0}
"""SARIF's ``rank`` (0 to 100, how much a result deserves attention) for each confidence."""


def render_sarif(report: Report, rules: Mapping[str, Rule] | None = None) -> str:
    """The report as one SARIF run; ``rules`` (default: the catalog) become ``driver.rules``."""
    catalog = sorted((load_catalog() if rules is None else rules).values(), key=lambda r: r.id)
    index = {rule.id: i for i, rule in enumerate(catalog)}
    job_place = job_location(report)
    log = {
        "$schema": SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "pipedoctor",
                        "informationUri": INFORMATION_URI,
                        "version": _tool_version(),
                        "rules": [_descriptor(rule) for rule in catalog],
                    }
                },
                "invocations": [
                    {
                        "executionSuccessful": True,
                        "toolExecutionNotifications": [
                            {"level": "warning", "message": {"text": note}}
                            for note in [*report.notes, *_left_out(report, job_place)]
                        ],
                    }
                ],
                "results": [
                    _result(f, index, job_place)
                    for f in sorted_findings(report)
                    if f.path is not None or job_place is not None
                ],
            }
        ],
    }
    return json.dumps(log, indent=2) + "\n"


def _tool_version() -> str:
    """``pipedoctor.__version__`` when the package declares one (it may not yet), else "0"."""
    package = importlib.import_module("pipedoctor")
    return str(getattr(package, "__version__", None) or "0")


def _descriptor(rule: Rule) -> dict[str, Any]:
    descriptor: dict[str, Any] = {
        "id": rule.id,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": _help(rule, markdown=False), "markdown": _help(rule, markdown=True)},
        "defaultConfiguration": {"level": _LEVEL[rule.severity]},
        "properties": {"tags": ["tf.data", *rule.scope]},
    }
    links = [ref for ref in rule.references if ref.startswith(("https://", "http://"))]
    if links:
        descriptor["helpUri"] = links[0]
    return descriptor


def _help(rule: Rule, *, markdown: bool) -> str:
    """Why, how to fix, and the bad/good examples: what a reviewer needs beside the alert."""
    sections = [rule.why, f"**Fix:** {rule.fix}" if markdown else f"Fix: {rule.fix}"]
    for label, code in (("Bad", rule.example_bad), ("Good", rule.example_good)):
        if code.strip():
            heading = f"**{label}:**" if markdown else f"{label}:"
            sections.append(f"{heading}\n\n{_fenced(code)}")
    if rule.references:
        items = "\n".join(f"- {ref}" for ref in rule.references)
        sections.append(f"{'**References:**' if markdown else 'References:'}\n\n{items}")
    return "\n\n".join(sections)


def _fenced(code: str) -> str:
    """A ```python block whose fence is longer than any backtick run inside ``code``."""
    longest = max((len(run) for run in re.findall(r"`+", code)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}python\n{code.rstrip()}\n{fence}"


def _left_out(report: Report, job_place: dict[str, Any] | None) -> list[str]:
    """A note for each job-level finding SARIF cannot hold (no line to point at)."""
    if job_place is not None:
        return []
    return [
        f"{f.rule} ({f.name}) is about the whole job, with no line to point at: left out of "
        "these results; the text and JSON reports have it"
        for f in sorted_findings(report)
        if f.path is None
    ]


def job_location(report: Report) -> dict[str, Any] | None:
    """Where a job-level finding (the verdict, the host, the model's step) is shown in SARIF,
    which needs a location for every result: the line that started training, where the check
    knows it. Without one, such findings are left out of SARIF (the other formats keep them)."""
    call = report.measurements.get("training_call")
    if not isinstance(call, Mapping) or not isinstance(call.get("path"), str):
        return None
    region = {
        key: value
        for key, value in (("startLine", call.get("line")), ("startColumn", call.get("column")))
        if isinstance(value, int) and value > 0
    }
    physical: dict[str, Any] = {"artifactLocation": _artifact(call["path"])}
    if region:
        physical["region"] = region
    return {"physicalLocation": physical}


def _result(
    finding: Finding, index: Mapping[str, int], job_place: dict[str, Any] | None = None
) -> dict[str, Any]:
    result: dict[str, Any] = {"ruleId": finding.rule}
    if finding.rule in index:
        result["ruleIndex"] = index[finding.rule]
    result["level"] = _LEVEL[finding.severity]
    result["rank"] = RANK[finding.confidence]
    place = span(finding)
    cell = cell_place(place)
    result["message"] = {"text": f"{cell}: {finding.message}" if cell else finding.message}
    location = _location(finding) or job_place
    if location is not None:
        result["locations"] = [location]
    properties = {
        key: value
        for key, value in (
            ("gain", finding.gain),
            ("end_to_end_gain", finding.end_to_end_gain),
            ("headroom", finding.headroom),
        )
        if value is not None
    }
    if place.cell is not None:
        properties.update(cell=place.cell, cellLine=place.line, cellColumn=place.column)
    properties["confidence"] = finding.confidence
    if finding.evidence:
        properties["evidence"] = [e.to_dict() for e in finding.evidence]
    result["properties"] = properties
    return result


def _location(finding: Finding) -> dict[str, Any] | None:
    place = span(finding)
    if place.path is None:
        return None
    physical: dict[str, Any] = {"artifactLocation": _artifact(place.path)}
    if place.cell is not None:
        # A line of a notebook's JSON is no line of its code: like ruff, name the notebook and
        # give a region that is plainly a fallback; the cell and its line are in the message.
        physical["region"] = {"startLine": 1, "startColumn": 1}
        return {"physicalLocation": physical}
    region = {
        key: value
        for key, value in (
            ("startLine", place.line),
            ("startColumn", place.column),
            ("endLine", place.end_line),
            ("endColumn", place.end_column),
        )
        if value is not None
    }
    if region:
        physical["region"] = region
    return {"physicalLocation": physical}


def _artifact(path: str) -> dict[str, str]:
    """A path as a URI: relative ones stay relative to ``%SRCROOT%``, absolute ones ``file:``.

    Backslashes are read as separators, so a path written on Windows still names the same file.
    Everything outside the unreserved set is percent-encoded; that also keeps a ``:`` in a
    relative path from being read as a URI scheme.
    """
    windows = PureWindowsPath(path)
    if windows.drive and windows.is_absolute():
        return {"uri": windows.as_uri()}
    posix = path.replace("\\", "/")
    # a file name that is not UTF-8 (its bytes kept as surrogates): percent-encode the bytes
    if posix.startswith("/"):
        return {"uri": "file://" + quote(posixpath.normpath(posix), errors="surrogateescape")}
    return {"uri": quote(posixpath.normpath(posix), errors="surrogateescape"), "uriBaseId": SRCROOT}
