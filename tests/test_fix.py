"""Fixes as edits: each fixable rule's fixture against its fixed snapshot, and the safety of
writing them (``tests/rules/fixed/PDxxx.py`` holds the exact expected text, as ruff keeps its
fix snapshots)."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from pins import on_old_tensorflow

pytest.importorskip("libcst")

from pipedoctor.fix.edits import (  # noqa: E402
    FIXABLE,
    MEASURED_ONLY,
    FixError,
    apply,
    autotune_expression,
    plan,
)
from pipedoctor.lint import lint_text  # noqa: E402
from pipedoctor.report import Finding, Severity  # noqa: E402
from pipedoctor.rules import ALL_RULES, load_catalog  # noqa: E402

RULES = Path(__file__).parent / "rules"
SAFETY = {rule.id: rule.fix_safety for rule in load_catalog().values()}


def findings(text: str, rule: str | None = None) -> list:
    found = lint_text(text, "x.py", ALL_RULES, ("static",)).findings
    return [f for f in found if rule is None or f.rule == rule]


@pytest.mark.parametrize("rule", [r for r in FIXABLE if r not in MEASURED_ONLY])
def test_the_fixture_becomes_its_snapshot_and_the_rule_goes_quiet(rule: str) -> None:
    source = (RULES / f"{rule}.py").read_text()
    before = findings(source, rule)
    fixed, edits, skipped = plan(source, before, SAFETY, unsafe=True)
    assert fixed == (RULES / "fixed" / f"{rule}.py").read_text()
    assert len(edits) == len(before) and not skipped
    compile(fixed, "fixed.py", "exec")
    assert findings(fixed, rule) == []
    # only the flagged lines changed, and a second pass changes nothing
    changed = {i + 1 for i, (a, b) in enumerate(zip(source.splitlines(), fixed.splitlines(),
                                                    strict=True)) if a != b}  # fmt: skip
    assert changed == {f.line for f in before}
    assert plan(fixed, findings(fixed, rule), SAFETY, unsafe=True)[0] == fixed


def test_unsafe_fixes_wait_for_unsafe_fixes() -> None:
    source = (RULES / "PD104.py").read_text()
    fixed, edits, skipped = plan(source, findings(source, "PD104"), SAFETY)
    assert SAFETY["PD104"] == "unsafe" and fixed == source and not edits
    assert all(why.startswith("unsafe fix: pass --unsafe-fixes") for _, why in skipped)


def test_autotune_is_named_as_the_file_names_it() -> None:
    import libcst

    def name(code: str) -> str | None:
        return autotune_expression(libcst.parse_module(code))

    assert name("import tensorflow as tf\n") == "tf.data.AUTOTUNE"
    assert name("import tensorflow\n") == "tensorflow.data.AUTOTUNE"
    assert name("import tensorflow as tf\nAUTO = tf.data.experimental.AUTOTUNE\n") == "AUTO"
    assert name("from tensorflow.data import AUTOTUNE as TUNE\n") == "TUNE"
    assert name("import numpy as np\n") is None


def test_formatting_and_comments_stay(tmp_path: Path) -> None:
    source = (
        "import tensorflow as tf  # the framework\n\n"
        'ds = tf.data.Dataset.list_files("/data/*.png")\n'
        "ds = ds.map(  # decode each image\n"
        "    lambda p: tf.io.decode_png(tf.io.read_file(p)),\n"
        ")\n"
        "ds = ds.batch(4).prefetch(tf.data.AUTOTUNE)\n"
        "model.fit(ds)\n"
    )
    path = tmp_path / "train.py"
    path.write_text(source)
    fixed, edits, _ = apply(path, source, findings(source), SAFETY, verify=findings)
    assert [e.rule for e in edits] == ["PD102"]
    assert (
        path.read_text()
        == fixed
        == source.replace(
            "(p)),\n)",
            "(p)),\n    num_parallel_calls=tf.data.AUTOTUNE,\n)",
        )
    )


def test_a_file_with_a_syntax_error_a_read_only_file_and_a_changed_file_are_left_alone(
    tmp_path: Path,
) -> None:
    broken = "import tensorflow as tf\nds = tf.data.TextLineDataset('a.csv').map(f)\nreturn ds\n"
    path = tmp_path / "broken.py"
    path.write_text(broken)
    with pytest.raises(FixError, match="syntax error"):
        apply(path, broken, findings(broken.replace("return ds", "")), SAFETY)
    assert path.read_text() == broken
    source = (
        "import tensorflow as tf\nds = tf.data.TextLineDataset('a.csv').map(tf.strings.split)\n"
    )
    locked = tmp_path / "locked.py"
    locked.write_text(source)
    locked.chmod(0o444)
    with pytest.raises(FixError, match="read-only"):
        apply(locked, source, findings(source), SAFETY)
    assert locked.read_text() == source
    moved = tmp_path / "moved.py"
    moved.write_text(source + "# edited meanwhile\n")
    with pytest.raises(FixError, match="changed since it was read"):
        apply(moved, source, findings(source), SAFETY)
    assert moved.read_text().endswith("# edited meanwhile\n")


def run_lint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pipedoctor", "lint", *args],
                          capture_output=True, text=True, cwd=cwd, timeout=120)  # fmt: skip


def test_diff_writes_nothing_fix_writes_and_a_second_fix_changes_nothing(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    source = (RULES / "PD102.py").read_text()
    (tmp_path / "train.py").write_text(source)
    shown = run_lint("train.py", "--diff", cwd=tmp_path)
    assert shown.returncode == 1 and shown.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert (tmp_path / "train.py").read_text() == source
    done = run_lint("train.py", "--fix", "--select", "PD102", "--confidence", "low", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "train.py").read_text() == (RULES / "fixed" / "PD102.py").read_text()
    assert "Fixed 7 findings in 1 file." in done.stderr
    again = run_lint("train.py", "--fix", "--select", "PD102", cwd=tmp_path)
    assert again.returncode == 0 and "Fixed 0 findings" in again.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["requirements.txt", "train.py"]


def test_a_file_that_cannot_be_fixed_is_one_line_exit_2_and_left_alone(tmp_path: Path) -> None:
    source = "import tensorflow as tf\nds = tf.data.TFRecordDataset(tf.io.gfile.glob('*'))\n"
    locked = tmp_path / "locked.py"
    locked.write_text(source)
    locked.chmod(0o444)
    done = run_lint("locked.py", "--fix", "--unsafe-fixes", "--confidence", "low", cwd=tmp_path)
    assert done.returncode == 2
    assert "pipedoctor: error: locked.py: it is read-only: left as it is" in done.stderr
    assert locked.read_text() == source


def test_a_file_the_lint_cannot_parse_is_reported_as_lint_reports_it(tmp_path: Path) -> None:
    """``--diff`` and ``--fix`` agree with ``lint``: a file with a syntax error is its PD000
    finding (exit 1), and the other files' fixes are still shown or written."""
    source = "import tensorflow as tf\nds = tf.data.TextLineDataset('a.csv').map(f)\n"
    (tmp_path / "train.py").write_text(source)
    (tmp_path / "broken.py").write_text("x = (\n")
    flags = ("--select", "PD000,PD102", "--confidence", "low")
    linted = run_lint(".", *flags, cwd=tmp_path)
    assert linted.returncode == 1
    pd000 = "broken.py:1:5: PD000 [error] not-analysed: SyntaxError: '(' was never closed"
    assert pd000 in linted.stdout
    shown = run_lint(".", "--diff", *flags, cwd=tmp_path)
    assert shown.returncode == 1, shown.stderr
    assert shown.stdout.startswith("--- a/train.py\n+++ b/train.py\n")  # a patch, nothing else
    assert pd000 in shown.stderr and "pipedoctor: error" not in shown.stderr
    assert (tmp_path / "train.py").read_text() == source
    done = run_lint(".", "--fix", *flags, cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert pd000 in done.stdout and "pipedoctor: error" not in done.stderr
    assert "num_parallel_calls" in (tmp_path / "train.py").read_text()
    assert (tmp_path / "broken.py").read_text() == "x = (\n"


def notebook_json(*sources: str) -> str:
    cells = [
        {
            "cell_type": "code",
            "execution_count": n,
            "metadata": {"tags": [f"t{n}"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"out {n}\n"]}],
            "source": source.splitlines(keepends=True),
        }
        for n, source in enumerate(sources, start=1)
    ]
    data = {"cells": cells, "metadata": {"kernelspec": {"language": "python", "name": "py"}},
            "nbformat": 4, "nbformat_minor": 5}  # fmt: skip
    return json.dumps(data, indent=1, ensure_ascii=False) + "\n"


def test_notebooks_are_fixed_cell_by_cell_and_nothing_else_changes(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    path = tmp_path / "lesson.ipynb"
    original = notebook_json(
        "import tensorflow as tf\n",
        "!pip install -q tensorflow-datasets\nds = tf.data.Dataset.range(9).batch(3)\n",
        "train = tf.data.TextLineDataset(tf.io.gfile.glob('data/part-*.csv'),"
        " num_parallel_reads=-1).map(lambda x: tf.strings.split(x)).batch(8)\n"
        "tf.keras.Sequential().fit(train)\n",
    )
    path.write_text(original)
    diff = run_lint(str(path), "--diff", cwd=tmp_path)
    assert diff.returncode == 1 and path.read_text() == original
    assert "--- a/" in diff.stdout and "lesson.ipynb:cell 3" in diff.stdout
    done = run_lint(str(path), "--fix", cwd=tmp_path)
    fixed = json.loads(path.read_text())
    before = json.loads(original)
    for old, new in zip(before["cells"], fixed["cells"], strict=True):
        assert {k: v for k, v in old.items() if k != "source"} == {
            k: v for k, v in new.items() if k != "source"
        }  # outputs and metadata untouched
    assert fixed["cells"][:2] == before["cells"][:2]  # the IPython cell is left to the user
    cell = "".join(fixed["cells"][2]["source"])
    assert "num_parallel_calls=tf.data.AUTOTUNE" in cell and ".prefetch(tf.data.AUTOTUNE)" in cell
    assert path.read_text().startswith('{\n "cells": [\n')  # the file's own JSON layout
    assert "Fixed 2 findings in 1 file." in done.stderr
    again = path.read_text()
    run_lint(str(path), "--fix", cwd=tmp_path)
    assert path.read_text() == again  # a second --fix changes nothing


def test_a_notebook_with_invalid_json_is_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text('{"cells": [')
    done = run_lint(str(path), "--fix", cwd=tmp_path)
    assert path.read_text() == '{"cells": ['
    # As `lint` reports it: a PD000 finding, exit 1 (nothing in it could be read, so nothing
    # in it is fixed).
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "broken.ipynb:1:12: PD000 [error] not-analysed: not a valid notebook" in done.stdout


def test_a_cache_is_written_only_where_a_check_measured_it() -> None:
    source = (RULES / "PD106.py").read_text()
    static = findings(source, "PD106")
    assert static and all(f.gain is None for f in static)
    fixed, edits, skipped = plan(source, static, SAFETY, unsafe=True)
    assert fixed == source and not edits
    assert all("only by `check --fix`" in why for _, why in skipped)
    measured = [replace(f, gain=12.0) for f in static[:1]]
    fixed, edits, _ = plan(source, measured, SAFETY, unsafe=True)
    assert [e.rule for e in edits] == ["PD106"] and edits[0].after.endswith(".cache()")
    compile(fixed, "PD106.py", "exec")


def test_a_live_finding_placed_where_its_call_begins_is_fixed_unless_a_chain_shares_it() -> None:
    # The live graph records where a stage's call expression begins (`ds` of `ds.map(...)`),
    # the lint where its method's name does: both place a fix, but a chain of calls beginning
    # at the same place is ambiguous and left alone.
    source = (
        "import tensorflow as tf\nds = tf.data.Dataset.range(9)\n"
        "ds = ds.map(lambda x: x)\nchain = ds.map(lambda x: x).batch(3)\n"
    )
    live = [
        Finding("PD106", "missing-cache", Severity.INFO, "m", path="t.py", line=line,
                column=column, gain=3.0)
        for line, column in ((3, 6), (4, 9))
    ]  # fmt: skip
    fixed, edits, skipped = plan(source, live, SAFETY, unsafe=True)
    assert [(e.line, e.after) for e in edits] == [(3, "ds.map(lambda x: x).cache()")]
    assert "chain = ds.map(lambda x: x).batch(3)\n" in fixed
    assert [why for _, why in skipped] == ["the code at its place is not a call this fix knows"]
