"""How often is a ``pipedoctor lint`` finding right, on code written by others?

Re-lints a corpus of public repositories and compares every finding in the labelled files with
the verdicts in ``tests/corpus/labels.csv`` (one row per judged finding: repository, commit,
path, notebook cell, line, rule, whether the finding is right, whether the lint still reports
it, and for a wrong one why). Prints precision overall and per rule, the labelled true findings
the lint no longer reports, and any finding in a labelled file that has no verdict yet.

    python benchmarks/lint_precision.py CORPUS_DIR [--labels tests/corpus/labels.csv]
                                        [--unjudged unjudged.csv]

CORPUS_DIR holds one folder per repository named ``owner+name`` (``tensorflow+docs``), each
holding the ``.py`` and ``.ipynb`` files of the commit named in the labels, at their paths in
the repository. ``tests/corpus/README.md`` says how to build it.

``--labels`` may also name a first-look corpus folder (``tests/corpus/firstlook-1``): its
``files.csv`` lists every file of the corpus (all are linted, not only those with a finding),
``labels.csv`` holds the verdicts given at the first look, ``later.csv`` those on findings
that appeared after a rule changed, and ``misses.csv`` the problems the first look saw the
lint miss; the benchmark then also prints how many of those it finds now.

Exit status: 0 when every finding in the labelled files is judged, precision is at least
``--min-precision`` overall and ``--min-rule-precision`` for each rule with at least
``--min-rule-findings`` findings; 1 otherwise.
"""

from __future__ import annotations

import argparse
import csv
import sys
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pipedoctor.config import Config
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


def read_labels(path: Path = LABELS) -> list[Label]:
    """The verdicts in a labels file, or in a first-look folder (first look, then later)."""
    if path.is_dir():
        return [lb for name in ("labels.csv", "later.csv") for lb in read_labels_file(path / name)]
    return read_labels_file(path)


def read_labels_file(path: Path) -> list[Label]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return [Label(**{**row, "line": int(row["line"])}) for row in csv.DictReader(handle)]


def read_rows(path: Path) -> list[dict[str, str]]:
    if not path.is_file():
        return []
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


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
    """Findings in the labelled files, each with its label when there is one."""

    judged: dict[Key, Label]
    unjudged: list[Key]
    lost: list[Label]
    files: int
    reported: set[Key]
    true_labels: int
    """Judged true findings, reported now or not: the recall's denominator."""

    def precision(self, rule: str | None = None) -> tuple[int, int]:
        """(true findings, judged findings), for one rule or all."""
        labels = [lb for lb in self.judged.values() if rule is None or lb.rule == rule]
        return sum(lb.verdict == "true" for lb in labels), len(labels)

    def rules(self) -> list[str]:
        return sorted({lb.rule for lb in self.judged.values()})


def evaluate(
    corpus: Path, labels: Iterable[Label], listed: Iterable[tuple[str, str]] = ()
) -> Evaluation:
    """Lint the labelled files of ``corpus`` (and those ``listed``, as (repository, path))
    and match each finding with its label."""
    by_key = {label.key: label for label in labels}
    files = sorted({(lb.repository, lb.path) for lb in by_key.values()} | set(listed))
    paths = [corpus / folder(repo) / path for repo, path in files]
    missing = [p for p in paths if not p.is_file()]
    if missing:
        raise FileNotFoundError(f"{len(missing)} labelled files are missing, e.g. {missing[0]}")
    report = lint_paths(paths, Config())
    reported: set[Key] = set()
    for finding in report.findings:
        key = finding_key(finding, corpus)
        if key is not None:
            reported.add(key)
    judged = {key: by_key[key] for key in reported if key in by_key}
    unjudged = sorted(key for key in reported if key not in by_key)
    lost = [lb for lb in by_key.values() if lb.verdict == "true" and lb.key not in reported]
    true_labels = sum(lb.verdict == "true" for lb in by_key.values())
    return Evaluation(
        judged, unjudged, sorted(lost, key=lambda lb: lb.key), len(files), reported, true_labels
    )


def table(evaluation: Evaluation) -> list[str]:
    """Precision per rule, as README publishes it."""
    lines = ["| rule | findings | right | precision |", "|---|---:|---:|---:|"]
    for rule in evaluation.rules():
        right, total = evaluation.precision(rule)
        lines.append(f"| {rule} | {total} | {right} | {right / total:.2f} |")
    right, total = evaluation.precision()
    lines.append(f"| **all** | **{total}** | **{right}** | **{right / total:.2f}** |")
    return lines


def mark_reported(path: Path, reported: set[Key]) -> None:
    """Set ``reported`` on every row of ``path`` to whether the lint reports it now."""
    if not path.is_file():
        return
    with path.open(newline="", encoding="utf-8") as handle:
        text = handle.read()
    ending = "\r\n" if "\r\n" in text else "\n"
    rows = list(csv.DictReader(text.splitlines()))
    for row in rows:
        key = (row["repository"], row["path"], row["cell"], int(row["line"]), row["rule"])
        row["reported"] = "yes" if key in reported else "no"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(COLUMNS), lineterminator=ending)
        writer.writeheader()
        writer.writerows(rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--labels", type=Path, default=LABELS)
    parser.add_argument("--unjudged", type=Path, help="write findings with no verdict here")
    parser.add_argument(
        "--mark-reported",
        action="store_true",
        help="rewrite each verdict's `reported` column to what the lint reports now",
    )
    parser.add_argument("--min-precision", type=float, default=0.9)
    parser.add_argument("--min-rule-precision", type=float, default=0.8)
    parser.add_argument("--min-rule-findings", type=int, default=10)
    args = parser.parse_args()
    if not args.corpus.is_dir():
        sys.exit(f"no such corpus folder: {args.corpus}")
    labels = read_labels(args.labels)
    folder_given = args.labels.is_dir()
    listed = read_rows(args.labels / "files.csv") if folder_given else []
    misses = read_rows(args.labels / "misses.csv") if folder_given else []
    commits = sorted(
        {(lb.repository, lb.commit) for lb in labels}
        | {(r["repository"], r["commit"]) for r in listed}
    )
    evaluation = evaluate(args.corpus, labels, [(r["repository"], r["path"]) for r in listed])
    print(f"corpus: {args.corpus} ({len(commits)} repositories, {evaluation.files} labelled files)")
    for repository, commit in commits:
        print(f"  {repository} @ {commit[:12]}")
    print()
    print("\n".join(table(evaluation)))
    ok = True
    right, total = evaluation.precision()
    if total and right / total < args.min_precision:
        ok = False
        print(f"\nprecision {right / total:.2f} is below {args.min_precision}")
    for rule in evaluation.rules():
        r, t = evaluation.precision(rule)
        if t >= args.min_rule_findings and r / t < args.min_rule_precision:
            ok = False
            limit = args.min_rule_precision
            print(f"{rule}: precision {r / t:.2f} on {t} findings is below {limit}")
    if args.mark_reported:
        for path in [args.labels] if args.labels.is_file() else [
            args.labels / "labels.csv", args.labels / "later.csv"
        ]:  # fmt: skip
            mark_reported(path, evaluation.reported)
    kept = evaluation.true_labels - len(evaluation.lost)
    share = kept / evaluation.true_labels if evaluation.true_labels else 1.0
    print(
        f"\njudged true findings still reported: {kept} of {evaluation.true_labels} ({share:.0%})"
    )
    if misses:
        keys = [(m["repository"], m["path"], m["cell"], int(m["line"]), m["rule"]) for m in misses]
        found = [key for key in keys if key in evaluation.reported]
        print(f"misses the first look recorded, found now: {len(found)} of {len(misses)}")
    print(f"labelled true findings no longer reported: {len(evaluation.lost)}")
    for label in evaluation.lost:
        where = f"cell {label.cell}, " if label.cell else ""
        print(f"  {label.rule} {label.repository}/{label.path} ({where}line {label.line})")
    counts = Counter(key[4] for key in evaluation.unjudged)
    print(f"findings without a verdict: {len(evaluation.unjudged)} {dict(sorted(counts.items()))}")
    if evaluation.unjudged:
        ok = False
        if args.unjudged:
            with args.unjudged.open("w", newline="", encoding="utf-8") as handle:
                writer = csv.writer(handle)
                writer.writerow(("repository", "path", "cell", "line", "rule"))
                writer.writerows(evaluation.unjudged)
            print(f"  written to {args.unjudged}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
