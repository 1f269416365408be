"""The rule catalog (``rules/*.toml``, data only) and the engine that runs detectors against it.

A rule file says what a rule is and how to fix what it finds; a detector (one Python function
per rule, registered with :func:`detector`) says where it fires. The engine joins the two, so a
finding's name, severity and fix text always come from the rule file.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pipedoctor.evidence import CONFIDENCES, FACTS, Evidence, confidence
from pipedoctor.pipeline import ENDS, STRATEGY_KINDS, Analysis, Location
from pipedoctor.report import Finding, Severity

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on Python 3.10 only
    import tomli as tomllib

SCOPES = ("static", "graph", "runtime")
FIX_SAFETY = ("safe", "unsafe", "none")
FIX_KINDS = ("parallelism", "less-work", "")
"""What a fix does for a busy host: ``parallelism`` spreads the same work over more cores
(nothing left to spread onto when they are saturated), ``less-work`` removes work."""
REQUIRED_FIELDS = ("id", "name", "severity", "scope", "summary", "why", "fix")


class RuleFileError(ValueError):
    """A rule file that does not load or lacks what every rule must say."""


@dataclass(frozen=True)
class Rule:
    """One entry of the catalog, as read from its TOML file."""

    id: str
    name: str
    severity: Severity
    scope: tuple[str, ...]
    summary: str
    why: str
    fix: str
    example_bad: str = ""
    example_good: str = ""
    fix_safety: str = "none"
    fix_kind: str = ""
    verified_when: str = ""
    """For an ``unsafe`` fix: what pipedoctor checks on a pipeline before it applies the fix
    itself (in the projection and ``optimize()``)."""
    references: tuple[str, ...] = ()
    params: dict[str, Any] = field(default_factory=dict)
    path: Path | None = None
    ends: tuple[str, ...] = ()
    """Where a dataset must end for the rule to judge it (see ``pipeline.ENDS``)."""
    strategies: tuple[str, ...] = ()
    """The distributed setups the rule applies to (see ``pipeline.STRATEGY_KINDS``)."""
    max_confidence: str = "high"
    """The most confident tier the static gate gives this rule's findings: a rule whose
    findings measured under the bar at a tier on code it was not tuned on reports one tier
    lower, until its evidence is better (see ``benchmarks/lint_precision.py``)."""
    confidence_note: str = ""
    """Why ``max_confidence`` is below ``high``, for the rule's page."""
    facts: tuple[str, ...] = ()
    """The facts a static finding of this rule rests on (see :data:`pipedoctor.evidence.FACTS`):
    high confidence when the code shows every one of them."""

    @property
    def short_fix(self) -> str:
        """The fix's first paragraph, joined onto one line: what a finding carries."""
        return " ".join(self.fix.split("\n\n")[0].split())

    @property
    def code(self) -> str:
        """``PD102 sequential-map``: how the rule is named to a person."""
        return f"{self.id} {self.name}"


def rules_dir() -> Path:
    """Where the rule files are: inside the installed package, or ``rules/`` of a checkout."""
    package = Path(__file__).resolve().parent
    bundled = package / "_rules"
    return bundled if bundled.is_dir() else package.parent / "rules"


def parse_rule(text: str, path: Path | None = None) -> Rule:
    where = path.name if path else "rule"
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise RuleFileError(f"{where}: {exc}") from None
    missing = [key for key in REQUIRED_FIELDS if key not in data]
    if missing:
        raise RuleFileError(f"{where}: missing {', '.join(missing)}")
    scope = data["scope"]
    if isinstance(scope, str):
        scope = [scope]
    unknown_scope = [s for s in scope if s not in SCOPES]
    if unknown_scope or not scope:
        raise RuleFileError(f"{where}: scope must be a non-empty subset of {SCOPES}")
    safety = data.get("fix_safety", "none")
    if safety not in FIX_SAFETY:
        raise RuleFileError(f"{where}: fix_safety must be one of {FIX_SAFETY}")
    fix_kind = data.get("fix_kind", "")
    if fix_kind not in FIX_KINDS:
        raise RuleFileError(f"{where}: fix_kind must be one of {FIX_KINDS[:-1]}")
    verified_when = data.get("verified_when", "").strip()
    if verified_when and safety != "unsafe":
        raise RuleFileError(f"{where}: verified_when is for unsafe fixes only")
    try:
        severity = Severity.parse(data["severity"])
    except ValueError as exc:
        raise RuleFileError(f"{where}: {exc}") from None
    for key, known in (("ends", ENDS), ("strategies", STRATEGY_KINDS)):
        unknown = [v for v in data.get(key, ()) if v not in known]
        if unknown:
            raise RuleFileError(f"{where}: unknown {key} {unknown} (known: {', '.join(known)})")
    cap = data.get("max_confidence", "high")
    if cap not in CONFIDENCES:
        raise RuleFileError(f"{where}: max_confidence must be one of {CONFIDENCES}")
    unknown_facts = [f for f in data.get("facts", ()) if f not in FACTS]
    if unknown_facts:
        raise RuleFileError(f"{where}: unknown facts {unknown_facts} (known: {', '.join(FACTS)})")
    return Rule(
        id=data["id"],
        name=data["name"],
        severity=severity,
        scope=tuple(scope),
        summary=data["summary"].strip(),
        why=data["why"].strip(),
        fix=data["fix"].strip(),
        example_bad=data.get("example_bad", "").strip("\n"),
        example_good=data.get("example_good", "").strip("\n"),
        fix_safety=safety,
        fix_kind=fix_kind,
        verified_when=verified_when,
        references=tuple(data.get("references", ())),
        params=dict(data.get("params", {})),
        path=path,
        ends=tuple(data.get("ends", ())),
        strategies=tuple(data.get("strategies", ())),
        max_confidence=cap,
        confidence_note=data.get("confidence_note", "").strip(),
        facts=tuple(data.get("facts", ())),
    )


def measured_precision(directory: Path | None = None) -> dict[str, Any]:
    """Each rule's measured precision per confidence tier on the first-look corpora (the
    table ``benchmarks/lint_precision.py --write`` keeps beside the rule files); {} when
    there is none."""
    path = (directory or rules_dir()) / "precision.json"
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}


@cache
def load_catalog(directory: Path | None = None) -> dict[str, Rule]:
    """All rules by id, in id order. Raises :class:`RuleFileError` on a bad file or a dup id."""
    directory = directory or rules_dir()
    catalog: dict[str, Rule] = {}
    for path in sorted(directory.glob("*.toml")):
        rule = parse_rule(path.read_text(encoding="utf-8"), path)
        if rule.id in catalog:
            raise RuleFileError(f"{path.name}: duplicate id {rule.id}")
        catalog[rule.id] = rule
    return dict(sorted(catalog.items()))


# ---------------------------------------------------------------------------------------------
# Detectors


@dataclass(frozen=True)
class Hit:
    """Where a detector fired and what it says there; the engine adds the rule's metadata."""

    location: Location | None
    message: str
    severity: Severity | None = None
    gain: float | None = None
    fix: str | None = None
    """A fix specific to this place; the rule's general fix otherwise."""
    headroom: float | None = None
    """An upper bound on what removing this limit could buy (see ``Finding.headroom``)."""
    evidence: tuple[Evidence, ...] = ()
    """The facts the finding rests on, each shown by the code or assumed (static scope); a
    measured finding rests on its measurement and carries none."""


@dataclass
class Context:
    """What a detector sees: the analysis, the front end it came from, and the rule's params."""

    analysis: Analysis
    scope: str
    params: dict[str, Any]
    measurements: dict[str, Any] = field(default_factory=dict)
    selection: Selection | None = None
    ends: tuple[str, ...] = ()
    """The rule's ``ends``: the pipelines it judges (all of them when empty)."""
    strategies: tuple[str, ...] = ()
    """The rule's ``strategies``: the distributed setups it applies to."""

    def param(self, name: str) -> Any:
        return self.params[name]

    def evidence(self, *found: Evidence | None) -> tuple[Evidence, ...] | None:
        """What a static finding rests on, or None when the code shows one of its facts false
        (the finding would be wrong: no finding). A finding on a live job rests on what the
        check measured, and asks for nothing."""
        if self.scope != "static":
            return ()
        if any(f is None for f in found):
            return None
        return tuple(f for f in found if f is not None)

    def params_of(self, rule_id: str) -> dict[str, Any]:
        """Another rule's parameters as the user set them (PD302 judges with PD301's)."""
        return rule_params(load_catalog()[rule_id], self.selection or ALL_RULES)


Detector = Callable[[Context], Iterable[Hit]]
_DETECTORS: dict[str, Detector] = {}


def detector(rule_id: str) -> Callable[[Detector], Detector]:
    """Register the function that finds ``rule_id`` (one detector per rule)."""

    def register(function: Detector) -> Detector:
        if rule_id in _DETECTORS:
            raise RuntimeError(f"two detectors for {rule_id}")
        _DETECTORS[rule_id] = function
        return function

    return register


def detectors() -> dict[str, Detector]:
    import pipedoctor.detectors  # noqa: F401  (registers every detector)

    return _DETECTORS


@dataclass(frozen=True)
class Selection:
    """Which rules run, and with which parameter overrides (from the CLI and pyproject)."""

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    params: dict[str, dict[str, Any]] = field(default_factory=dict)

    def enabled(self, rule_id: str) -> bool:
        if self.select and not any(rule_id.startswith(p) for p in self.select):
            return False
        return not any(rule_id.startswith(p) for p in self.ignore)


ALL_RULES = Selection()


def only(selection: Selection, prefix: str) -> Selection:
    """``selection`` narrowed to the rules under ``prefix`` (none, if it excludes them all)."""
    from dataclasses import replace

    if not selection.select:
        return replace(selection, select=(prefix,))
    chosen = tuple(c for c in selection.select if c.startswith(prefix) or prefix.startswith(c))
    return replace(selection, select=chosen or ("-",))  # "-" matches no rule


"""The default selection: every rule, default parameters."""


def run_rules(
    analysis: Analysis,
    scopes: str | tuple[str, ...],
    selection: Selection = ALL_RULES,
    measurements: dict[str, Any] | None = None,
) -> Iterator[Finding]:
    """Run every enabled rule that supports one of ``scopes`` and yield its findings, deduped.

    With several scopes, each rule runs once, in the first of them it supports: a check passes
    ``("runtime", "static")`` so a rule that can use measurements does, and the others still
    judge the source.
    """
    order = (scopes,) if isinstance(scopes, str) else scopes
    seen: set[tuple] = set()
    registry = detectors()
    for rule in load_catalog().values():
        scope = next((s for s in order if s in rule.scope), None)
        if scope is None or not selection.enabled(rule.id) or rule.id not in registry:
            continue
        context = Context(
            analysis, scope, rule_params(rule, selection), measurements or {}, selection,
            rule.ends, rule.strategies,
        )  # fmt: skip
        for hit in registry[rule.id](context):
            finding = make_finding(rule, hit, scope)
            key = (finding.rule, finding.path, finding.line, finding.column, finding.message)
            if key not in seen:
                seen.add(key)
                yield finding


def rule_params(rule: Rule, selection: Selection) -> dict[str, Any]:
    """The rule file's parameters with the user's overrides."""
    return {**rule.params, **selection.params.get(rule.id, {})}


def make_finding(rule: Rule, hit: Hit, scope: str = "static") -> Finding:
    """The finding of ``rule`` at ``hit``. Its confidence follows from the hit's evidence; in
    the static scope it is capped at the rule's ``max_confidence``, which was measured there."""
    where = hit.location
    cap = rule.max_confidence if scope == "static" else "high"
    return Finding(
        rule=rule.id,
        name=rule.name,
        severity=hit.severity or rule.severity,
        message=hit.message,
        fix=hit.fix or rule.short_fix,
        path=where.path if where else None,
        line=where.line if where else None,
        column=where.column if where else None,
        end_line=where.end_line if where else None,
        end_column=where.end_column if where else None,
        gain=hit.gain,
        headroom=hit.headroom,
        confidence=confidence(hit.evidence, cap),
        evidence=hit.evidence,
    )
