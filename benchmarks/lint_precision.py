"""How often is a ``pipedoctor lint`` finding right, on code written by others, at each tier?

Re-lints corpora of public repositories at every confidence tier and matches each finding with
its verdict (one row per judged finding: repository, commit, path, notebook cell, line, rule,
``true``/``false``/``debatable``, whether the lint still reports it, and why). Prints, per rule
and per tier (``high``; ``medium`` and above; every tier), the precision with debatable findings
left out and with them counted wrong, and the share of the judged true findings each tier
keeps; then the true findings no longer reported and any finding without a verdict.

    python benchmarks/lint_precision.py CORPUS_DIR --labels tests/corpus/firstlook-4 \\
                                        [--labels tests/corpus/firstlook-5 ...]
                                        [--unjudged unjudged.csv] [--mark-reported]
                                        [--write rules/precision.json] [--by-evidence]

CORPUS_DIR holds one folder per repository named ``owner+name`` (``tensorflow+docs``), each
holding the ``.py`` and ``.ipynb`` files of the commit named in the labels, at their paths in
the repository. ``tests/corpus/README.md`` says how to build it.

``--labels`` names a labels file or a first-look corpus folder (``tests/corpus/firstlook-4``):
its ``files.csv`` lists every file of the corpus (all are linted, not only those with a
finding), ``labels.csv`` holds the verdicts given at the first look, ``later.csv`` those on
findings that appeared after a rule changed, and ``misses.csv`` the problems the first look saw
the lint miss (recall), ``duplicates.csv`` the files that are near-copies of another file of
the corpus (``--once``: their findings are left out, so each group is judged once).
``--by-evidence`` also counts the verdicts of the judged findings below ``high`` by the one
fact each assumes: what a front end that showed that fact would add to the ``high`` tier, and
at what precision. ``--write`` writes the per-rule, per-tier figures over every corpus
given as the table the rule pages (``pipedoctor explain``, ``docs/rules/``) quote; after it,
``pipedoctor explain --pages docs/rules`` writes the site's pages again.

Exit status: 0 when every finding is judged and the ``high`` tier's precision (debatable left
out) is at least ``--min-precision``; 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from pipedoctor.config import Config
from pipedoctor.evidence import CONFIDENCES, at_least
from pipedoctor.lint import lint_paths
from pipedoctor.report import Finding

LABELS = Path(__file__).resolve().parent.parent / "tests" / "corpus" / "labels.csv"
COLUMNS = (
    "repository",
    "commit",
    "path",
    "cell",
    "line",
    "rule",
    "verdict",
    "reported",
    "reason",
)
VERDICTS = ("true", "false", "debatable")
Key = tuple[str, str, str, int, str]


@dataclass(frozen=True)
class Label:
    repository: str
    commit: str
    path: str
    cell: str
    line: int
    rule: str
    verdict: str
    reported: str
    reason: str

    @property
    def key(self) -> Key:
        return (self.repository, self.path, self.cell, self.line, self.rule)


def read_rows(path: Path) -> list[dict[str, str]]:
    """A CSV file's rows as dicts; no rows when the file is absent."""
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def read_labels(path: Path = LABELS) -> list[Label]:
    """The verdicts in a labels file, or in a first-look folder (first look, then later)."""
    files = [path / "labels.csv", path / "later.csv"] if path.is_dir() else [path]
    labels = []
    for name in files:
        for row in read_rows(name):
            if row["verdict"] not in VERDICTS:
                raise ValueError(f"{name}: unknown verdict {row['verdict']!r}")
            labels.append(Label(**{**row, "line": int(row["line"])}))
    return labels


def folder(repository: str) -> str:
    return repository.replace("/", "+", 1)


def finding_key(finding: Finding, corpus: Path) -> Key | None:
    if not finding.path or not finding.line:
        return None
    try:
        relative = Path(finding.path).resolve().relative_to(corpus.resolve())
    except ValueError:
        return None
    repository = relative.parts[0].replace("+", "/", 1)
    path = Path(*relative.parts[1:]).as_posix()
    return (repository, path, str(finding.cell or ""), finding.line, finding.rule)


@dataclass
class Evaluation:
    """Findings in the labelled files at every tier, each with its verdict when it has one."""

    labels: dict[Key, Label]
    reported: dict[Key, str]
    """Every finding the lint reports now, with its confidence."""
    files: int
    unjudged: list[Key] = field(default_factory=list)
    assumed: dict[Key, tuple[str, ...]] = field(default_factory=dict)
    """Each finding reported now → the facts it assumes (``data: read from files (…)``)."""

    @property
    def judged(self) -> dict[Key, Label]:
        return {k: self.labels[k] for k in self.reported if k in self.labels}

    def counts(self, tier: str = "low", rule: str | None = None) -> Counter[str]:
        """Verdicts of the reported findings at ``tier`` or above, for one rule or all."""
        return Counter(
            label.verdict
            for key, label in self.judged.items()
            if at_least(self.reported[key], tier) and (rule is None or label.rule == rule)
        )

    def true_labels(self, rule: str | None = None) -> int:
        """Judged true findings, reported now or not: what a tier's share of them is out of."""
        return sum(
            lb.verdict == "true" and (rule is None or lb.rule == rule)
            for lb in self.labels.values()
        )

    def lost(self) -> list[Label]:
        return sorted(
            (
                lb
                for k, lb in self.labels.items()
                if lb.verdict == "true" and k not in self.reported
            ),
            key=lambda lb: lb.key,
        )

    def rules(self) -> list[str]:
        return sorted({lb.rule for lb in self.judged.values()})


def evaluate(
    corpus: Path, labels: Iterable[Label], listed: Iterable[tuple[str, str]] = ()
) -> Evaluation:
    """Lint the labelled files of ``corpus`` (and those ``listed``, as (repository, path)) at
    every tier and match each finding with its label."""
    by_key = {label.key: label for label in labels}
    files = sorted({(lb.repository, lb.path) for lb in by_key.values()} | set(listed))
    paths = [corpus / folder(repo) / path for repo, path in files]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} labelled files are missing, e.g. {missing[0]}")
    report = lint_paths(paths, Config(confidence="low"))
    reported: dict[Key, str] = {}
    assumed: dict[Key, tuple[str, ...]] = {}
    for finding in report.findings:
        key = finding_key(finding, corpus)
        if key is not None:
            reported[key] = finding.confidence
            assumed[key] = tuple(
                f"{e.fact}: {LINE.sub('', e.detail)}" for e in finding.evidence if not e.shown
            )
    unjudged = sorted(key for key in reported if key not in by_key)
    return Evaluation(by_key, reported, len(files), unjudged, assumed)


LINE = re.compile(r" \(line \d+\)|`[^`]*`|\d[\d,]*")
"""What varies from place to place in a fact's detail: lines, names, counts."""


def by_evidence(evaluation: Evaluation) -> list[str]:
    """Verdicts of the judged findings below ``high`` by the one fact each assumes: what
    showing that fact would add to the ``high`` tier (findings assuming more are counted by
    how many)."""
    groups: dict[str, Counter[str]] = {}
    for key, label in evaluation.judged.items():
        facts = evaluation.assumed.get(key, ())
        name = facts[0] if len(facts) == 1 else " + ".join(f.split(":")[0] for f in facts)
        if facts:
            groups.setdefault(f"{label.rule} {name}", Counter())[label.verdict] += 1
    lines = ["| rule and the fact assumed | true | false | debatable |", "|---|---:|---:|---:|"]
    for name, counts in sorted(groups.items(), key=lambda item: -sum(item[1].values())):
        lines.append(f"| {name} | {counts['true']} | {counts['false']} | {counts['debatable']} |")
    return lines


def without_copies(evaluation: Evaluation, copies: set[tuple[str, str]]) -> Evaluation:
    """The evaluation without the findings and verdicts in files that copy another file."""

    def kept(key: Key) -> bool:
        return (key[0], key[1]) not in copies

    return Evaluation(
        {k: v for k, v in evaluation.labels.items() if kept(k)},
        {k: v for k, v in evaluation.reported.items() if kept(k)},
        evaluation.files - len(copies),
        [k for k in evaluation.unjudged if kept(k)],
        {k: v for k, v in evaluation.assumed.items() if kept(k)},
    )


TIERS = (("high", "high"), ("medium", "≥ medium"), ("low", "all"))


def precision(counts: Counter[str]) -> tuple[float | None, float | None]:
    """(debatable left out, debatable counted wrong); None where nothing was judged."""
    right, wrong, debatable = counts["true"], counts["false"], counts["debatable"]
    strict = right / (right + wrong) if right + wrong else None
    counted = right / (right + wrong + debatable) if right + wrong + debatable else None
    return strict, counted


def _figure(counts: Counter[str], true_labels: int) -> str:
    strict, counted = precision(counts)
    if strict is None and counted is None:
        return "–"
    judged = sum(counts.values())
    kept = f", keeps {counts['true'] / true_labels:.0%}" if true_labels else ""
    deb = f" ({counted:.2f} with DEB wrong)" if counts["debatable"] else ""
    return f"{strict if strict is not None else 0:.2f}{deb} on {judged}{kept}"


def table(evaluation: Evaluation) -> list[str]:
    """Precision per rule and tier, as README and the rule pages publish it."""
    header = "| rule | " + " | ".join(title for _, title in TIERS) + " |"
    lines = [header, "|---|" + "---:|" * len(TIERS)]
    for rule in [*evaluation.rules(), None]:
        cells = [
            _figure(evaluation.counts(tier, rule), evaluation.true_labels(rule))
            for tier, _ in TIERS
        ]
        name = rule or "**all**"
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


def per_rule(evaluations: list[Evaluation]) -> dict[str, dict[str, dict[str, int]]]:
    """Rule → tier → verdict counts (and the judged true findings), over every corpus: the
    table each rule's page quotes."""
    rules = sorted({r for e in evaluations for r in e.rules()})
    data: dict[str, dict[str, dict[str, int]]] = {}
    for rule in rules:
        data[rule] = {}
        for tier in CONFIDENCES:
            counts: Counter[str] = Counter()
            for evaluation in evaluations:
                counts.update(evaluation.counts(tier, rule))
            data[rule][tier] = {v: counts[v] for v in VERDICTS}
        data[rule]["true_judged"] = {"true": sum(e.true_labels(rule) for e in evaluations)}
    return data


def mark_reported(path: Path, reported: Iterable[Key]) -> None:
    """Set ``reported`` on every row of ``path`` to whether the lint reports it now (at any
    tier)."""
    if not path.is_file():
        return
    ending = "\r\n" if b"\r\n" in path.read_bytes() else "\n"  # as the file has it
    rows = read_rows(path)
    now = set(reported)
    for row in rows:
        key = (row["repository"], row["path"], row["cell"], int(row["line"]), row["rule"])
        row["reported"] = "yes" if key in now else "no"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator=ending)
        writer.writeheader()
        writer.writerows(rows)


def report_one(args: argparse.Namespace, source: Path) -> tuple[Evaluation, bool]:
    labels = read_labels(source)
    listed = read_rows(source / "files.csv") if source.is_dir() else []
    misses = read_rows(source / "misses.csv") if source.is_dir() else []
    commits = sorted(
        {(lb.repository, lb.commit) for lb in labels}
        | {(r["repository"], r["commit"]) for r in listed}
    )
    evaluation = evaluate(args.corpus, labels, [(r["repository"], r["path"]) for r in listed])
    if args.once and source.is_dir():
        copies = {(r["repository"], r["path"]) for r in read_rows(source / "duplicates.csv")}
        evaluation = without_copies(evaluation, copies)
    print(f"## {source} ({len(commits)} repositories, {evaluation.files} files)\n")
    print("\n".join(table(evaluation)))
    ok = True
    strict, _ = precision(evaluation.counts("high"))
    if strict is not None and strict < args.min_precision:
        ok = False
        print(f"\nhigh precision {strict:.2f} is below {args.min_precision}")
    if args.mark_reported:
        for path in [source] if source.is_file() else [source / "labels.csv", source / "later.csv"]:
            mark_reported(path, evaluation.reported)
    if misses:
        found = {tier: 0 for tier, _ in TIERS}
        for m in misses:
            key = (m["repository"], m["path"], m["cell"], int(m["line"]), m["rule"])
            for tier, _ in TIERS:
                found[tier] += key in evaluation.reported and at_least(
                    evaluation.reported[key], tier
                )
        shares = ", ".join(f"{found[t]} at {title}" for t, title in TIERS)
        print(f"\nmisses the first look recorded, found now: {shares} (of {len(misses)})")
    lost = evaluation.lost()
    print(f"labelled true findings no longer reported at any tier: {len(lost)}")
    for label in lost:
        where = f"cell {label.cell}, " if label.cell else ""
        print(f"  {label.rule} {label.repository}/{label.path} ({where}line {label.line})")
    counts = Counter(key[4] for key in evaluation.unjudged)
    print(f"findings without a verdict: {len(evaluation.unjudged)} {dict(sorted(counts.items()))}")
    if evaluation.unjudged:
        ok = False
    print()
    return evaluation, ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--labels", type=Path, action="append")
    parser.add_argument("--unjudged", type=Path, help="write findings with no verdict here")
    parser.add_argument(
        "--mark-reported",
        action="store_true",
        help="rewrite each verdict's `reported` column to what the lint reports now",
    )
    parser.add_argument("--write", type=Path, help="write the per-rule, per-tier table here")
    parser.add_argument(
        "--once", action="store_true", help="judge each group of near-duplicate files once"
    )
    parser.add_argument("--min-precision", type=float, default=0.9)
    parser.add_argument(
        "--by-evidence",
        action="store_true",
        help="also count the verdicts below `high` by the fact each finding assumes",
    )
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no such corpus folder: {args.corpus}")
    sources = args.labels or [LABELS]
    results = [report_one(args, source) for source in sources]
    evaluations = [e for e, _ in results]
    if len(evaluations) > 1:
        merged = Evaluation(
            {k: v for e in evaluations for k, v in e.labels.items()},
            {k: v for e in evaluations for k, v in e.reported.items()},
            sum(e.files for e in evaluations),
        )
        print("## every corpus given\n")
        print("\n".join(table(merged)))
    if args.by_evidence:
        merged = Evaluation(
            {k: v for e in evaluations for k, v in e.labels.items()},
            {k: v for e in evaluations for k, v in e.reported.items()},
            sum(e.files for e in evaluations),
            assumed={k: v for e in evaluations for k, v in e.assumed.items()},
        )
        print("\n## judged findings below `high`, by what they assume\n")
        print("\n".join(by_evidence(merged)))
    unjudged = [key for e in evaluations for key in e.unjudged]
    if unjudged and args.unjudged:
        with args.unjudged.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(("repository", "path", "cell", "line", "rule", "confidence"))
            for e in evaluations:
                writer.writerows((*key, e.reported[key]) for key in e.unjudged)
        print(f"findings without a verdict written to {args.unjudged}")
    if args.write:
        corpora = [str(s) for s in sources]
        table_data = {"corpora": corpora, "rules": per_rule(evaluations)}
        args.write.write_text(json.dumps(table_data, indent=1, sort_keys=True) + "\n")
        print(f"per-rule table written to {args.write}")
    sys.exit(0 if all(ok for _, ok in results) else 1)


if __name__ == "__main__":
    main()
