"""Suppression comments on a finding's line: ``# pipedoctor: ignore[PD102]`` or a bare
``# pipedoctor: ignore``."""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from pipedoctor.report import Finding

_COMMENT = re.compile(r"#\s*pipedoctor:\s*ignore\b(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)


def suppressed_codes(line: str) -> tuple[str, ...] | None:
    """Codes a line suppresses: ``()`` for all of them, ``None`` when it suppresses nothing."""
    if "pipedoctor" not in line:
        return None
    match = _COMMENT.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if codes is None:
        return ()
    return tuple(c.strip().upper() for c in codes.split(",") if c.strip())


def unsuppressed(findings: Iterable[Finding], lines: list[str]) -> Iterator[Finding]:
    for finding in findings:
        if finding.rule != "PD000" and finding.line and 0 < finding.line <= len(lines):
            codes = suppressed_codes(lines[finding.line - 1])
            if codes is not None and (not codes or any(finding.rule.startswith(c) for c in codes)):
                continue
        yield finding
