"""The corpus labels: judged findings of ``pipedoctor lint`` on public code written by others.

``tests/corpus/labels.csv`` records, for every finding in a sample of files from public
repositories, whether it is right and whether the lint still reports it. The first test checks
the file itself and the precision it records; the second re-lints the corpus, when one is at
hand (``PIPEDOCTOR_CORPUS``, see ``tests/corpus/README.md``), and checks that the lint reports
exactly the findings labelled as reported: any change to what the lint says on that code must
come with its verdicts.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from pipedoctor.rules import load_catalog

ROOT = Path(__file__).resolve().parent.parent
LABELS = ROOT / "tests" / "corpus" / "labels.csv"
FIRST_LOOKS = sorted((ROOT / "tests" / "corpus").glob("firstlook-*"))
"""Corpora judged on their first look (see ``tests/corpus/firstlook-1/README.md``)."""
COLUMNS = ["repository", "commit", "path", "cell", "line", "rule", "verdict", "reported", "reason"]


def load_benchmark():
    spec = importlib.util.spec_from_file_location(
        "lint_precision", ROOT / "benchmarks" / "lint_precision.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def rows(path: Path = LABELS, columns: list[str] = COLUMNS) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == columns
        return list(reader)


def test_label_file_is_valid() -> None:
    catalog = load_catalog()
    labels = rows()
    commits: dict[str, str] = {}
    keys = set()
    for row in labels:
        assert re.fullmatch(r"[\w.-]+/[\w.-]+", row["repository"]), row
        assert re.fullmatch(r"[0-9a-f]{40}", row["commit"]), row
        assert commits.setdefault(row["repository"], row["commit"]) == row["commit"], row
        assert row["path"] and not row["path"].startswith("/"), row
        assert row["path"].endswith((".py", ".ipynb")), row
        if row["cell"]:
            assert row["path"].endswith(".ipynb") and int(row["cell"]) >= 1, row
        assert int(row["line"]) >= 1, row
        assert row["rule"] in catalog, row
        assert row["verdict"] in ("true", "false"), row
        assert row["reported"] in ("yes", "no"), row
        assert row["reason"].strip(), row  # a one-line reason, for a false one above all
        key = (row["repository"], row["path"], row["cell"], row["line"], row["rule"])
        assert key not in keys, f"two labels for {key}"
        keys.add(key)
    assert len(commits) >= 5, "the corpus spans at least five repositories"


def test_recorded_precision_meets_the_targets() -> None:
    """What README publishes: at least 300 judged findings, and of those reported today at
    least 0.9 right overall and 0.8 for each rule with 10 or more findings."""
    assert len(rows()) >= 300
    reported = [r for r in rows() if r["reported"] == "yes"]
    right = sum(r["verdict"] == "true" for r in reported)
    assert right / len(reported) >= 0.9
    totals = Counter(r["rule"] for r in reported)
    rights = Counter(r["rule"] for r in reported if r["verdict"] == "true")
    for rule, total in totals.items():
        if total >= 10:
            assert rights[rule] / total >= 0.8, rule


def test_labels_hold_on_the_corpus() -> None:
    corpus = os.environ.get("PIPEDOCTOR_CORPUS")
    if not corpus or not Path(corpus).is_dir():
        pytest.skip(
            "set PIPEDOCTOR_CORPUS to the corpus folder (tests/corpus/README.md) to re-lint it"
        )
    benchmark = load_benchmark()
    labels = benchmark.read_labels(LABELS)
    evaluation = benchmark.evaluate(Path(corpus), labels)
    assert evaluation.unjudged == [], "findings without a verdict: label them"
    expected = {lb.key for lb in labels if lb.reported == "yes"}
    assert set(evaluation.judged) == expected
    strict, _ = benchmark.precision(evaluation.counts("high"))
    assert strict is not None and strict >= 0.9


@pytest.mark.parametrize("folder", FIRST_LOOKS, ids=lambda p: p.name)
def test_first_look_corpus_is_consistent(folder: Path) -> None:
    """Every verdict and recorded miss is about a file of the corpus, at its commit; the
    first look spans at least three repositories and 300 files, notebooks among them."""
    files = rows(folder / "files.csv", ["repository", "commit", "path"])
    listed = {(f["repository"], f["commit"], f["path"]) for f in files}
    assert len(listed) == len(files) >= 300
    assert len({f["repository"] for f in files}) >= 3
    assert any(f["path"].endswith(".ipynb") for f in files)
    catalog = load_catalog()
    for name in ("labels.csv", "later.csv"):
        if (folder / name).is_file():
            for row in rows(folder / name):
                assert (row["repository"], row["commit"], row["path"]) in listed, row
                assert row["rule"] in catalog, row
                assert row["verdict"] in ("true", "false", "debatable"), row
                assert row["reported"] in ("yes", "no") and row["reason"].strip(), row
    miss_columns = ["repository", "commit", "path", "cell", "line", "rule", "reason"]
    if not (folder / "labels.csv").is_file():
        return  # collected, not yet judged
    for row in rows(folder / "misses.csv", miss_columns):
        assert (row["repository"], row["commit"], row["path"]) in listed, row
        assert row["rule"] in catalog and int(row["line"]) >= 1, row
