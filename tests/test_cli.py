"""`pipedoctor lint`, `rules` and `explain` as a user runs them: real processes, real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pins import on_old_tensorflow

from pipedoctor.rules import load_catalog

BAD = """\
import tensorflow as tf

ds = tf.data.TextLineDataset(tf.io.gfile.glob("data/part-*.csv"), num_parallel_reads=-1)
ds = ds.map(lambda x: tf.strings.split(x, ","))
ds = ds.batch(10)
tf.keras.Sequential().fit(ds, epochs=5)
"""

GOOD = """\
import tensorflow as tf

ds = tf.data.TextLineDataset(tf.io.gfile.glob("data/part-*.csv"), num_parallel_reads=-1).batch(10)
ds = ds.prefetch(tf.data.AUTOTUNE)
tf.keras.Sequential().fit(ds, epochs=5)
"""


def run(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    on_old_tensorflow(tmp_path)  # BAD's map and missing prefetch: findings at `high`
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "good.py").write_text(GOOD)
    return tmp_path


def test_exit_codes_follow_the_findings(project: Path) -> None:
    assert run("lint", "good.py", cwd=project).returncode == 0
    bad = run("lint", "bad.py", cwd=project)
    assert bad.returncode == 1
    assert "bad.py:4:9: PD102 [warning] sequential-map" in bad.stdout
    assert "bad.py:5:9: PD101 [warning] missing-prefetch" in bad.stdout
    assert run("lint", "bad.py", "--exit-zero", cwd=project).returncode == 0
    assert run("lint", "bad.py", "--fail-on", "error", cwd=project).returncode == 0


def test_json_output_is_the_contract(project: Path) -> None:
    done = run("lint", ".", "--format", "json", cwd=project)
    data = json.loads(done.stdout)
    assert data["version"] == 1
    assert data["summary"]["files"] == 2
    first = data["findings"][0]
    assert list(first) == [
        "rule",
        "name",
        "severity",
        "message",
        "fix",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "confidence",
        "evidence",
    ]
    assert first["confidence"] == "high"
    assert {e["fact"] for e in first["evidence"]} == {"trains", "work", "data", "runtime"}
    assert all(e["shown"] for e in first["evidence"])
    assert (first["rule"], first["path"], first["line"], first["column"]) == (
        "PD102",
        "bad.py",
        4,
        9,
    )
    assert first["end_line"] == 4 and first["end_column"] > first["column"]
    assert done.stderr == ""


def test_sarif_and_github_formats(project: Path) -> None:
    sarif = json.loads(run("lint", "bad.py", "--format", "sarif", cwd=project).stdout)
    run_ = sarif["runs"][0]
    assert sarif["version"] == "2.1.0"
    assert {r["ruleId"] for r in run_["results"]} == {"PD101", "PD102"}
    ids = [r["id"] for r in run_["tool"]["driver"]["rules"]]
    assert "PD102" in ids and len(ids) == len(set(ids))
    github = run("lint", "bad.py", "--format", "github", cwd=project).stdout.splitlines()
    assert github[0].startswith("::warning file=bad.py,line=4,col=9,")


def test_select_and_ignore(project: Path) -> None:
    only = json.loads(
        run("lint", "bad.py", "--format", "json", "--select", "PD101", cwd=project).stdout
    )
    assert {f["rule"] for f in only["findings"]} == {"PD101"}
    rest = json.loads(
        run("lint", "bad.py", "--format", "json", "--ignore", "PD101,PD109", cwd=project).stdout
    )
    assert {f["rule"] for f in rest["findings"]} == {"PD102"}


def test_suppression_comments(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    line = "ds = ds.map(lambda x: tf.strings.as_string(x))"
    source = BAD.replace(line, line + "  # pipedoctor: ignore[PD109]").replace(
        "ds = ds.batch(10)", "ds = ds.batch(10)  # pipedoctor: ignore"
    )
    (tmp_path / "t.py").write_text(source)
    data = json.loads(run("lint", "t.py", "--format", "json", cwd=tmp_path).stdout)
    assert {f["rule"] for f in data["findings"]} == {"PD102"}  # line 4 named only PD109


def test_pyproject_configuration(project: Path) -> None:
    (project / "pyproject.toml").write_text(
        """
[tool.pipedoctor]
ignore = ["PD109"]
per-file-ignores = {"bad.py" = ["PD101"]}
fail-on = "error"

[tool.pipedoctor.params.PD204]
min_per_replica_batch = 8
"""
    )
    done = run("lint", ".", "--format", "json", cwd=project)
    data = json.loads(done.stdout)
    assert {f["rule"] for f in data["findings"]} == {"PD102"}
    assert done.returncode == 0  # fail-on = error, and PD102 is a warning


@pytest.mark.parametrize(
    "config, message",
    [
        ("[tool.pipedoctor]\nselect = ['PD999']\n", "unknown rule code 'PD999'"),
        ("[tool.pipedoctor]\ncolour = true\n", "unknown key 'colour'"),
        ("[tool.pipedoctor.params.PD204]\nbatch = 3\n", "unknown parameter 'batch'"),
        ("[tool.pipedoctor\n", "pyproject.toml"),
    ],
)
def test_bad_configuration_is_a_one_line_usage_error(
    project: Path, config: str, message: str
) -> None:
    (project / "pyproject.toml").write_text(config)
    done = run("lint", ".", cwd=project)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    "args, message",
    [
        (("lint", "missing.py"), "no such file or directory: missing.py"),
        (("lint", "--format", "xml"), "invalid choice: 'xml'"),
        (("lint", "--select", "PDX"), "unknown rule code 'PDX'"),
        (("lint", "--bogus"), "unrecognized arguments: --bogus"),
        (("explain", "PD999"), "unknown rule 'PD999'"),
    ],
)
def test_usage_errors_exit_2_with_one_line(
    project: Path, args: tuple[str, ...], message: str
) -> None:
    done = run(*args, cwd=project)
    assert done.returncode == 2
    assert message in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_unparsable_files_are_pd000_and_the_rest_still_checked(project: Path) -> None:
    (project / "broken.py").write_text("import tensorflow as tf\nds = tf.data.Dataset.range(\n")
    (project / "latin.py").write_bytes(b"# coding: utf-8\nname = '\xff\xfe'\n")
    (project / "nul.py").write_bytes(b"x = 1\x00\n")
    (project / "plain.py").write_text("total = 0\nfor x in (1, 2:\n    total += x\n")
    done = run("lint", ".", "--format", "json", cwd=project)
    assert done.returncode == 1
    findings = json.loads(done.stdout)["findings"]
    pd000 = {f["path"]: f for f in findings if f["rule"] == "PD000"}
    assert set(pd000) == {"broken.py", "latin.py", "nul.py", "plain.py"}
    assert pd000["broken.py"]["line"] == 2 and "SyntaxError" in pd000["broken.py"]["message"]
    assert pd000["plain.py"]["line"] == 2 and "SyntaxError" in pd000["plain.py"]["message"]
    assert pd000["latin.py"]["line"] == 2 and "decode" in pd000["latin.py"]["message"]
    assert any(f["rule"] == "PD102" and f["path"] == "bad.py" for f in findings)


def test_folders_skip_virtualenvs_and_build_output(project: Path) -> None:
    for folder in (".venv/lib", "build", ".git", "env_custom"):
        (project / folder).mkdir(parents=True)
        (project / folder / "x.py").write_text(BAD)
    (project / "env_custom" / "pyvenv.cfg").write_text("home = /usr\n")
    (project / "pkg").mkdir()
    (project / "pkg" / "y.py").write_text(BAD)
    data = json.loads(run("lint", ".", "--format", "json", cwd=project).stdout)
    assert {f["path"] for f in data["findings"]} == {"bad.py", "pkg/y.py"}


def test_rules_lists_the_catalog_and_explain_prints_a_page() -> None:
    listing = run("rules")
    assert listing.returncode == 0
    lines = listing.stdout.strip().splitlines()
    assert [line.split()[0] for line in lines] == list(load_catalog())
    assert "PD102  sequential-map" in listing.stdout
    page = run("explain", "PD102")
    assert page.returncode == 0
    for heading in (
        "# sequential-map (PD102)",
        "## Why is this bad?",
        "## Example",
        "## Use instead",
        "## Fix safety",
    ):
        assert heading in page.stdout
    assert run("explain", "sequential-map").stdout == page.stdout


def test_demo_lints_the_bundled_script() -> None:
    # The demo makes up its images in memory: that they are real data is assumed, so the
    # default gate (high) reports nothing and says what it left out.
    default = run("lint", "--demo", "--format", "json")
    assert default.returncode == 0 and json.loads(default.stdout)["findings"] == []
    assert json.loads(default.stdout)["summary"]["below_confidence"] == {"medium": 1}
    done = run("lint", "--demo", "--format", "json", "--confidence", "medium")
    data = json.loads(done.stdout)
    rules = {f["rule"] for f in data["findings"]}
    # PD106 needs the decoded size, which only `check` measures: the demo reads a file list.
    # The demo runs on TensorFlow 2.16 or later (its requirements.txt), which appends the
    # missing prefetch itself: no PD101. Its map looks labels up in a hash table, a stateful
    # op TensorFlow does not parallelise: PD102 stands, the runtime fact shown.
    assert rules == {"PD102"}
    (runtime,) = [e for e in data["findings"][0]["evidence"] if e["fact"] == "runtime"]
    assert runtime["shown"] and "lookup table" in runtime["detail"]
    assert all(f["path"].endswith("train_demo.py") for f in data["findings"])
    assert {f["confidence"] for f in data["findings"]} == {"medium"}
    assert done.returncode == 1


@pytest.mark.parametrize(
    ("longer", "advice"),
    [
        (None, "check again with --timeout 44 or more"),  # no estimate: twice the budget
        (3.0, "check again with --timeout 66 or more"),
        (1.0, "check again with --timeout 33 or more"),  # never the same budget again
        (0.7, "check again with --timeout 33 or more"),
        (25.0, "the figures sit on it: only a check about x25 longer would decide"),
    ],
)
def test_an_inconclusive_check_asks_for_a_longer_budget(longer, advice) -> None:
    from pipedoctor.cli import longer_check

    assert longer_check(22, {"longer": longer} if longer else None) == advice
