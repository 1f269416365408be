"""Findings and the Report: plain data that every front end produces and every renderer reads.

The JSON form is a contract other tools read (``version`` 1): keys are only ever added, never
renamed or removed.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from enum import IntEnum
from typing import Any

from pipedoctor.diagnosis import NO_GAIN
from pipedoctor.evidence import Evidence

JSON_VERSION = 1


class Severity(IntEnum):
    """Ordered so that ``severity >= threshold`` reads naturally."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            names = ", ".join(s.label for s in cls)
            raise ValueError(f"unknown severity {text!r} (expected one of: {names})") from None

    @property
    def label(self) -> str:
        return self.name.lower()


@dataclass(frozen=True)
class Finding:
    """One thing worth fixing, at one place in the user's code (when a place is known)."""

    rule: str
    name: str
    severity: Severity
    message: str
    fix: str = ""
    path: str | None = None
    line: int | None = None
    column: int | None = None
    end_line: int | None = None
    end_column: int | None = None
    gain: float | None = None
    """Pipeline throughput with the fix over without it, measured."""
    end_to_end_gain: float | None = None
    """What training could gain: min(fixed, ceiling) / min(current, ceiling)."""
    headroom: float | None = None
    """An upper bound, not a gain: how much faster training could be if the limit this finding
    names were gone (the verdict's ceiling over training). Never measured as a fix."""
    cell: int | None = None
    """In a notebook: the cell (1-based, over every cell); ``line`` and ``column`` are then
    counted inside that cell, as ruff reports notebooks."""
    confidence: str = "high"
    """``high``, ``medium`` or ``low``: how much of what the finding rests on the code shows
    (see :mod:`pipedoctor.evidence`). The static gate reports ``high`` by default."""
    evidence: tuple[Evidence, ...] = ()
    """The facts the finding rests on, each shown or assumed."""

    @property
    def assumed(self) -> list[Evidence]:
        """The facts the analysis assumed: why the finding is not ``high``."""
        return [e for e in self.evidence if not e.shown]

    def sort_key(self) -> tuple:
        return (self.path or "", self.cell or 0, self.line or 0, self.column or 0, self.rule)

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["severity"] = self.severity.label
        data["evidence"] = [e.to_dict() for e in self.evidence]
        for key in ("gain", "end_to_end_gain", "headroom", "cell"):
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Finding:
        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in data.items() if k in known}
        values["severity"] = Severity.parse(values["severity"])
        values["evidence"] = tuple(
            Evidence.from_dict(e) for e in values.get("evidence") or () if isinstance(e, dict)
        )
        return cls(**values)


VERDICT_RULES = frozenset({"PD301"})
"""The finding that states the verdict leads a report, whatever the others measured."""


def ranked(findings: list[Finding], later: frozenset[str] = frozenset()) -> list[Finding]:
    """The verdict's finding first; then the fixes measured to pay off, the largest end-to-end
    gain first; then the rest (a fix measured to buy nothing among them): those that speed up
    the pipeline alone first, the largest gain first (what more devices would need), then by
    severity; ties by place in the code. Within each of these, findings of the rules in
    ``later`` come after the others (a saturated host ranks the fixes that only add
    parallelism after those that remove work), but a fix measured to pay always comes before
    what buys nothing."""

    def key(finding: Finding) -> tuple:
        gain = finding.end_to_end_gain or finding.gain or 1.0
        pays = gain >= NO_GAIN
        tier = 0 if finding.rule in VERDICT_RULES else (1 if pays else 2)
        pipeline = finding.gain or 1.0
        return (
            tier,
            finding.rule in later,
            -gain if pays else 0.0,
            -pipeline if pipeline >= NO_GAIN else 0.0,
            -finding.severity,
            finding.sort_key(),
        )

    return sorted(findings, key=key)


@dataclass
class Report:
    """What a lint or a check found: findings, and (for a check) a verdict and measurements."""

    findings: list[Finding] = field(default_factory=list)
    files_checked: int = 0
    verdict: str | None = None
    measurements: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    below_confidence: dict[str, int] = field(default_factory=dict)
    """A lint's findings left out for being less confident than the gate asks, by tier."""

    @property
    def incomplete(self) -> str | None:
        """Why a check of a training script is no diagnosis: the script trained, and the
        check could not measure all of it (``None`` when it could, and for a lint)."""
        reason = self.measurements.get("incomplete")
        return reason if isinstance(reason, str) else None

    def counts(self) -> dict[str, int]:
        counts = {s.label: 0 for s in sorted(Severity, reverse=True)}
        for finding in self.findings:
            counts[finding.severity.label] += 1
        return counts

    def worst(self) -> Severity | None:
        return max((f.severity for f in self.findings), default=None)

    def failed(self, threshold: Severity) -> bool:
        worst = self.worst()
        return worst is not None and worst >= threshold

    def summary(self) -> dict[str, Any]:
        by_rule: dict[str, int] = {}
        for finding in self.findings:
            by_rule[finding.rule] = by_rule.get(finding.rule, 0) + 1
        summary: dict[str, Any] = {
            "files": self.files_checked,
            "findings": len(self.findings),
            "by_severity": self.counts(),
            "by_rule": dict(sorted(by_rule.items())),
        }
        if self.below_confidence:
            summary["below_confidence"] = dict(self.below_confidence)
        return summary

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "version": JSON_VERSION,
            "findings": [f.to_dict() for f in self.findings],
            "summary": self.summary(),
        }
        if self.verdict is not None:
            data["verdict"] = self.verdict
        if self.measurements:
            data["measurements"] = self.measurements
        if self.notes:
            data["notes"] = list(self.notes)
        return data

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Report:
        return cls(
            findings=[Finding.from_dict(f) for f in data.get("findings", [])],
            files_checked=data.get("summary", {}).get("files", 0),
            verdict=data.get("verdict"),
            measurements=dict(data.get("measurements", {})),
            notes=list(data.get("notes", [])),
            below_confidence=dict(data.get("summary", {}).get("below_confidence", {})),
        )

    def __repr__(self) -> str:
        counts = ", ".join(f"{n} {label}" for label, n in self.counts().items() if n)
        verdict = f" verdict={self.verdict!r}" if self.verdict else ""
        return (
            f"<Report{verdict} files={self.files_checked} "
            f"findings={len(self.findings)}{' (' + counts + ')' if counts else ''}>"
        )

    def _repr_html_(self) -> str:
        from pipedoctor.render.html import render_html

        return render_html(self)
