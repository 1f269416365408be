"""Each rule's documentation, rendered from its file: the page ``pipedoctor explain`` prints
and the documentation site's catalogue (``docs/rules/``), so a rule's page cannot drift from
its TOML file. ``pipedoctor explain --pages docs/rules`` writes the site's pages; a test fails
when they differ from what is written here."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pipedoctor.rules import Rule, measured_precision


def rule_page(rule: Rule) -> str:
    """One rule's documentation, laid out like ruff's rule pages."""

    def section(title: str, body: str) -> str:
        return f"## {title}\n\n{body.strip()}\n"

    header = f"Severity: {rule.severity.label}. Runs in: {', '.join(rule.scope)}."
    if rule.ends:
        header += f" Judges datasets that end in: {', '.join(rule.ends)}."
    if rule.strategies:
        header += f" Applies to: {', '.join(rule.strategies)}."
    parts = [
        f"# {rule.name} ({rule.id})\n",
        header + "\n",
        section("What it does", rule.summary),
        section("Why is this bad?", rule.why),
    ]
    if rule.example_bad:
        parts.append(section("Example", f"```python\n{rule.example_bad}\n```"))
    if rule.example_good:
        parts.append(section("Use instead", f"```python\n{rule.example_good}\n```"))
    parts.append(section("Fix", rule.fix))
    safety = {
        "safe": "The fix keeps what the pipeline yields.",
        "unsafe": "The fix can change what the pipeline yields or how the model trains; review it.",
        "none": "There is no mechanical fix; the change needs judgement.",
    }[rule.fix_safety]
    if rule.verified_when:
        safety += (
            " pipedoctor makes this fix itself (in a check's projection and in `optimize()`) "
            f"only once it has verified it on your pipeline: {rule.verified_when}"
        )
    parts.append(section("Fix safety", safety))
    if "static" in rule.scope:
        parts.append(section("Confidence", confidence_text(rule)))
    if rule.params:
        params = "\n".join(f"- `{k}` = {v!r}" for k, v in rule.params.items())
        parts.append(
            section("Options", f"Set in `[tool.pipedoctor.params.{rule.id}]`:\n\n{params}")
        )
    if rule.references:
        parts.append(section("References", "\n".join(f"- {r}" for r in rule.references)))
    return "\n".join(parts)


def confidence_text(rule: Rule) -> str:
    """What a static finding of ``rule`` rests on, the tiers that follow, and the precision
    each tier measured on code the rules were not tuned on."""
    from pipedoctor.evidence import FACTS

    if rule.facts:
        needed = "; ".join(FACTS[f] for f in rule.facts)
        text = (
            f"A finding is `high` when the code shows every fact it rests on ({needed}), "
            "`medium` when the analysis assumes one of them, `low` otherwise; a fact the code "
            "shows false means no finding."
        )
    else:
        text = "A finding rests on what the code shows: it is `high`."
    if rule.max_confidence != "high":
        text += (
            f" This rule's findings sit lower: at most `{rule.max_confidence}`, with every fact"
            " shown, and a tier lower for each fact assumed"
        )
        text += f" ({rule.confidence_note.rstrip('.')})." if rule.confidence_note else "."
    text += (
        " `pipedoctor lint` reports `high` findings unless `--confidence` (or `confidence` in "
        "`[tool.pipedoctor]`) asks for more; `pipedoctor check` measures, and keeps them all."
    )
    table = measured_precision()
    figures = table.get("rules", {}).get(rule.id)
    if not figures:
        return text + "\n\nNo finding of this rule was judged on the first-look corpora yet."
    rows = [
        "| tier | judged | right | wrong | debatable | precision |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for tier, title in (("high", "high"), ("medium", "medium and above"), ("low", "all")):
        counts = figures.get(tier, {})
        right, wrong, deb = (counts.get(k, 0) for k in ("true", "false", "debatable"))
        judged = right + wrong + deb
        share = f"{right / (right + wrong):.2f}" if right + wrong else "–"
        rows.append(f"| {title} | {judged} | {right} | {wrong} | {deb} | {share} |")
    corpora = ", ".join(Path(c).name for c in table.get("corpora", []))
    return (
        text + f"\n\nMeasured with the rules as they stand on public code judged by a reviewer who "
        f"did not write them (`tests/corpus/`: {corpora}, each group of near-duplicate files "
        "once; each corpus's README gives its first look, before the rules changed for it; "
        "debatable findings are left out of the precision):\n\n" + "\n".join(rows)
    )


INDEX = "index.md"
"""The catalogue's table of every rule, beside one ``PDxxx.md`` page per rule."""


def index_page(catalog: Mapping[str, Rule]) -> str:
    """The catalogue: one row per rule, linking its page, and how the rules are used."""
    rows = [
        "| code | name | severity | runs in | what it finds |",
        "|---|---|---|---|---|",
    ]
    for rule in catalog.values():
        summary = " ".join(rule.summary.split()).replace("|", "\\|")
        rows.append(
            f"| [{rule.id}]({rule.id}.md) | {rule.name} | {rule.severity.label} | "
            f"{', '.join(rule.scope)} | {summary} |"
        )
    return (
        "<!-- Written by `pipedoctor explain --pages docs/rules` from rules/*.toml: "
        "do not edit. -->\n\n"
        "# Rules\n\n"
        "`pipedoctor rules` lists the catalog; `pipedoctor explain PD102` prints one rule's page "
        "(what it does, why it is bad, example, use instead, fix, fix safety, confidence and its "
        "measured precision, options, references), the same text as its page here. One TOML "
        "file per rule lives in `rules/`, each static rule with a fixture in `tests/rules/` "
        "whose `# ruleid:` / `# ok:` markers the tests check. A rule runs in the static gate "
        "(`static`: `pipedoctor lint`, from source), on the pipeline's graph (`graph`: "
        "`pipedoctor check` and `pipedoctor.check()`), or on what a check or the Monitor "
        "measures and reads from the live job (`runtime`).\n\n"
        + "\n".join(rows)
        + "\n\nIn a check, the runtime rules judge the live job: PD208 from `fit`'s validation "
        "data and the replicas, PD210 from the files counted in the pipeline's graph against "
        "the workers, PD306 from the parity run. PD206 and PD207 judge the script's source "
        "during the check (a metric's Python state and a fixed write path are facts of the "
        "code, not of one run).\n"
    )


def site_pages(catalog: Mapping[str, Rule]) -> dict[str, str]:
    """Every page of ``docs/rules/`` by file name: the catalogue and one page per rule."""
    pages = {INDEX: index_page(catalog)}
    pages.update({f"{rule.id}.md": rule_page(rule) for rule in catalog.values()})
    return pages


def write_pages(directory: Path, catalog: Mapping[str, Rule]) -> list[Path]:
    """Write the catalogue's pages into ``directory`` and remove the page of a rule that no
    longer exists; return the files changed, so a run that changes nothing says so."""
    directory.mkdir(parents=True, exist_ok=True)
    pages = site_pages(catalog)
    changed = []
    for stale in sorted(directory.glob("PD*.md")):
        if stale.name not in pages:
            stale.unlink()
            changed.append(stale)
    for name, text in pages.items():
        path = directory / name
        if not path.is_file() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
            changed.append(path)
    return changed
