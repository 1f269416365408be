"""The documentation site: its rule pages are the rules' own text, it builds without a
warning, and README stays a front page that points into it."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from pipedoctor.rule_docs import site_pages
from pipedoctor.rules import load_catalog

ROOT = Path(__file__).resolve().parent.parent
RULE_PAGES = ROOT / "docs" / "rules"
REGENERATE = "regenerate them with `pipedoctor explain --pages docs/rules`"


def test_every_rule_has_its_generated_page_and_nothing_else_is_there() -> None:
    """A rule without a page, a page edited by hand (or left stale by a rule's change) and a
    page for a rule that no longer exists each fail, naming the files."""
    expected = site_pages(load_catalog())
    present = {path.name: path for path in RULE_PAGES.glob("*.md")}
    missing = sorted(set(expected) - set(present))
    orphaned = sorted(set(present) - set(expected))
    differing = sorted(
        name
        for name, text in expected.items()
        if name in present and present[name].read_text(encoding="utf-8") != text
    )
    assert not missing, f"rules without a page in docs/rules: {missing}; {REGENERATE}"
    assert not orphaned, f"pages in docs/rules for no rule: {orphaned}; {REGENERATE}"
    assert not differing, (
        f"pages in docs/rules that differ from the rules: {differing}; {REGENERATE}"
    )


def test_a_rule_page_is_what_explain_prints(capsys: pytest.CaptureFixture[str]) -> None:
    from pipedoctor.cli import main

    assert main(["explain", "PD102"]) == 0
    assert capsys.readouterr().out == (RULE_PAGES / "PD102.md").read_text(encoding="utf-8")


def test_the_page_writer_adds_updates_and_removes(tmp_path: Path) -> None:
    from pipedoctor.rule_docs import write_pages

    catalog = load_catalog()
    (tmp_path / "PD999.md").write_text("a rule that is gone\n")
    (tmp_path / "PD102.md").write_text("edited by hand\n")
    changed = {path.name for path in write_pages(tmp_path, catalog)}
    assert {"PD999.md", "PD102.md", "index.md"} <= changed
    assert not (tmp_path / "PD999.md").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(site_pages(catalog))
    assert write_pages(tmp_path, catalog) == []  # a second run changes nothing


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="MkDocs is not installed")
def test_the_site_builds_with_warnings_as_errors(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # a banner, not a warning of the build
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "site" / "rules" / "PD102" / "index.html").is_file()


def test_readme_is_a_front_page_that_links_into_the_site() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert readme.count("\n") <= 250, "README is a front page: 250 lines at most"
    assert 'pip install ".[tf]" && pipedoctor check --demo' in readme
    assert 'pip install -e ".[dev]" && python -m pytest' in readme
    links = re.findall(r"\]\((docs/[^)#\s]+)(?:#[^)]*)?\)", readme)
    assert any(link.startswith("docs/rules/") for link in links)
    assert "mkdocs serve" in readme
    broken = [link for link in links if not (ROOT / link).is_file()]
    assert not broken, f"README links to files that do not exist: {broken}"
