"""Every rule file is valid, and every static rule passes its fixture (semgrep-style markers).

A fixture ``tests/rules/PDxxx.py`` marks the line below ``# ruleid: PDxxx`` as one the rule must
flag with ``high`` confidence, below ``# ruleid[medium]: PDxxx`` (or ``[low]``) one it must flag
at that confidence, and below ``# ok: PDxxx`` one it must leave alone at every confidence; the
rule must flag nothing else in the file.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from pipedoctor import lint
from pipedoctor.rules import SCOPES, detectors, load_catalog, rules_dir

FIXTURES = Path(__file__).parent / "rules"
CATALOG = load_catalog()
STATIC = [r for r in CATALOG.values() if "static" in r.scope]
MARKER = re.compile(r"#\s*(ruleid|ok)(?:\[(high|medium|low)\])?:\s*(PD\d{3}(?:\s*,\s*PD\d{3})*)")
SHARED = FIXTURES / "shared"
"""Fixtures of one whole script each, marked for every rule the script concerns."""

EXAMPLE_ASSUMES = {"PD106": {"memory", "data"}, "PD101": {"runtime"}, "PD102": {"runtime"}}
"""Rule pages whose example is the usual case of a fact the code cannot show: a folder's
images, whose number is on disk, may or may not fit in RAM; a snippet pins no TensorFlow, and
2.10 and later parallelise a stateless map, 2.12 and later append the prefetch."""

SHIPPED_IDS = {
    "PD000",
    *(f"PD1{n:02d}" for n in range(1, 13)),
    *(f"PD2{n:02d}" for n in range(1, 14)),
    *(f"PD30{n}" for n in range(1, 8)),
}
"""Rules that have shipped: an id is never removed or reused."""


def test_catalog_is_complete_and_ids_unique() -> None:
    assert SHIPPED_IDS <= set(CATALOG)
    assert all(re.fullmatch(r"PD[0-3]\d\d", rule_id) for rule_id in CATALOG)
    names = [r.name for r in CATALOG.values()]
    assert len(names) == len(set(names))


def test_every_rule_but_syntax_errors_has_one_detector() -> None:
    registered = set(detectors())
    assert set(CATALOG) - registered == {"PD000"}  # PD000 is raised by the parser itself
    assert registered <= set(CATALOG)


@pytest.mark.parametrize("rule", CATALOG.values(), ids=lambda r: r.id)
def test_rule_file_fields(rule) -> None:
    assert rule.path is not None and rule.path.name == f"{rule.id}-{rule.name}.toml"
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert set(rule.scope) <= set(SCOPES) and rule.scope
    assert rule.summary and rule.why and rule.fix
    assert rule.short_fix and len(rule.short_fix) < 200
    ast.parse(rule.example_bad)
    ast.parse(rule.example_good)


def test_rules_dir_is_the_checkout_or_the_bundle() -> None:
    assert (rules_dir() / "PD102-sequential-map.toml").is_file()


def expectations(path: Path) -> tuple[dict[int, dict[str, str]], dict[int, set[str]]]:
    """Lines that must be flagged, with each rule id and the confidence it must have there,
    and lines that must not be, with the rule ids of each."""
    must: dict[int, dict[str, str]] = {}
    must_not: dict[int, set[str]] = {}
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines, start=1):
        match = MARKER.search(line)
        if match:
            target = number + 1
            while lines[target - 1].lstrip().startswith("#"):
                target += 1
            ids = {rid.strip() for rid in match.group(3).split(",")}
            if match.group(1) == "ruleid":
                must.setdefault(target, {}).update(dict.fromkeys(ids, match.group(2) or "high"))
            else:
                must_not.setdefault(target, set()).update(ids)
    return must, must_not


def fixtures_of(rule_id: str) -> list[Path]:
    """The rule's own fixture, then every shared one that marks a line for it."""
    shared = [
        path
        for path in sorted(SHARED.glob("*.py"))
        if any(rule_id in ids for part in expectations(path) for ids in part.values())
    ]
    return [FIXTURES / f"{rule_id}.py", *shared]


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.id)
def test_static_rule_fixture(rule) -> None:
    for fixture in fixtures_of(rule.id):
        assert fixture.is_file(), f"static rule {rule.id} needs a fixture at {fixture}"
        must, must_not = expectations(fixture)
        wanted = {line for line, ids in must.items() if rule.id in ids}
        spared = {line for line, ids in must_not.items() if rule.id in ids}
        if fixture.parent == FIXTURES:
            assert wanted, f"{fixture.name} marks no line the rule must flag"
            assert spared or rule.id == "PD000", f"{fixture.name} marks no line to leave alone"
        report = lint(fixture, select=[rule.id], confidence="low")
        flagged = {f.line: f.confidence for f in report.findings if f.rule == rule.id}
        assert set(flagged) == wanted, fixture.name
        assert not set(flagged) & spared, fixture.name
        tiers = {line: must[line][rule.id] for line in wanted}
        assert flagged == tiers, f"{fixture.name}: confidence by line"


@pytest.mark.parametrize("rule", STATIC, ids=lambda r: r.id)
def test_static_rule_examples(rule) -> None:
    """The rule page's bad example draws the rule; its good example draws nothing at all."""
    if rule.id == "PD000":
        return
    bad = lint(rule.example_bad + "\n", select=[rule.id], confidence="low")
    tiers = {f.confidence for f in bad.findings if f.rule == rule.id}
    assert tiers, rule.example_bad
    # at the rule's most confident tier, unless the example is the common case of a fact the
    # code cannot show
    assumed = {a.fact for f in bad.findings for a in f.assumed}
    assert tiers == {rule.max_confidence} or assumed == EXAMPLE_ASSUMES.get(rule.id)
    good = lint(rule.example_good + "\n", confidence="low")
    assert good.findings == [], [f"{f.rule}: {f.message}" for f in good.findings]
