"""The static gate on hostile input: it never hangs, never passes what it did not read, and
exits as ruff does (0 clean, 1 findings, 2 an error in one line on stderr).

Each test is built from the input that once hung the lint, blew up its memory, skipped a file
with exit 0, or crashed it with a traceback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest
from pins import on_old_tensorflow

import pipedoctor
from pipedoctor.cli import main
from pipedoctor.config import ConfigError, load_config
from pipedoctor.lint import FileResult, lint_notebook, lint_text
from pipedoctor.pipeline import Pipeline, Stage
from pipedoctor.rules import Selection
from pipedoctor.static import interpreter

ROOT = Path(__file__).resolve().parent.parent
HEADER = (
    "import tensorflow as tf\nimport functools\n"
    "ds = tf.data.TFRecordDataset(tf.io.gfile.glob('data/train-*.tfrecord'), "
    "num_parallel_reads=tf.data.AUTOTUNE)\n"
)
SLOW_MAP = "lambda x: tf.io.parse_tensor(x, tf.int64)"
"""A map function whose ``map`` draws PD102 (decoding, one element at a time): proof the
analysis reached it."""


def lint(text: str, path: str = "repro.py") -> FileResult:
    return lint_text(text, path, Selection())


def rules(result: FileResult) -> set[str]:
    return {f.rule for f in result.findings}


def pd000(result: FileResult) -> list[str]:
    return [f.message for f in result.findings if f.rule == "PD000"]


def timed(text: str) -> tuple[FileResult, float]:
    start = time.perf_counter()
    result = lint(text)
    return result, time.perf_counter() - start


def run(*args: str, cwd: Path | None = None, **kwargs: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        **kwargs,  # type: ignore[arg-type]
    )


def one_line(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("pipedoctor: error: "), stderr
    assert "Traceback" not in stderr
    return lines[0]


# --- hangs and blow-ups ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "line", ["ds = ds.concatenate(ds)\n", "ds = tf.data.Dataset.zip((ds, ds))\n"]
)
def test_shared_inputs_are_walked_once_not_as_a_tree(line: str) -> None:
    """Each line doubled the walk (12 lines took 38 s): 60 lines now take well under a second,
    and a map after them is still found."""
    text = HEADER + line * 60 + f"ds = ds.map({SLOW_MAP})\nmodel.fit(ds)\n"
    result, seconds = timed(text)
    assert seconds < 10
    assert "PD102" in rules(result)


def test_a_pipeline_walk_lists_each_shared_stage_once() -> None:
    source = Stage("range")
    ds = Pipeline((source,))
    for _ in range(200):  # 2**200 paths through the graph
        ds = ds.then(Stage("concatenate", inputs=(ds,)))
    zipped = Pipeline((Stage("zip", inputs=(ds, ds)),)).then(Stage("map"))
    walked = zipped.walk()
    assert len(walked) == len({id(s) for s in walked}) == 203
    assert walked[0] is source and walked[-1] is zipped.last
    assert zipped.upstream_of(zipped.last)[-1] is zipped.stages[0]
    assert zipped.downstream_of(source)[-1] is zipped.last
    assert zipped.upstream_of(ds.stages[5]) == list(ds.stages[:5])


@pytest.mark.parametrize("line", ["    s = s + s\n", "    n = n * n\n", "    b = b * 10\n"])
def test_constant_folding_stops_at_a_small_size(line: str) -> None:
    """``s = s + s`` forty times in dead code took 24 GB, ``n = n * n`` ran until killed:
    values past a small size are unknown, not computed."""
    text = HEADER + "s, n, b = 'ab', 3, b'ab'\nif False:\n" + line * 40 + "model.fit(ds)\n"
    tracemalloc.start()
    try:
        result, seconds = timed(text)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert seconds < 10 and peak < 50_000_000
    assert not pd000(result)


def test_folded_constants_still_reach_the_rules() -> None:
    text = HEADER + (
        "size = 8 * 4\nds = ds.map(tf.io.parse_tensor, num_parallel_calls=size + 2)\n"
        "model.fit(ds.batch(size))\n"
    )
    found = lint(text).findings
    assert "num_parallel_calls=34" in next(f.message for f in found if f.rule == "PD103")


def test_a_long_file_of_map_lines_is_linear() -> None:
    """1,600 lines of ``ds = ds.map(...)`` took 24-35 s (cubic in the data flow; CPython's
    compiler, which now checks the file too, is quadratic over a module of alike lambdas,
    so it compiles a few statements at a time). CPU time, the best of three: 4x the lines
    must cost well under 16x (quadratic) on a busy machine."""

    def best(lines: int) -> float:
        text = HEADER + "ds = ds.map(lambda x: x + 1)\n" * lines + "model.fit(ds)\n"
        times = []
        for _ in range(3):
            start = time.process_time()
            lint(text)
            times.append(time.process_time() - start)
        return min(times)

    small, large = best(200), best(800)
    if large / small >= 8:  # a busy machine: measure once more
        small, large = min(small, best(200)), min(large, best(800))
    assert large / small < 8, (small, large)
    assert best(1600) < 10


def test_a_fifo_in_a_folder_does_not_block_the_lint(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    (tmp_path / "train.py").write_text(HEADER + f"model.fit(ds.map({SLOW_MAP}))\n")
    os.mkfifo(tmp_path / "pipe.py")
    done = run("lint", str(tmp_path), "--format", "json")  # it used to block forever
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    unread = [f for f in findings if f["path"].endswith("pipe.py")]
    assert unread and unread[0]["rule"] == "PD000" and "pipe" in unread[0]["message"]
    assert any(f["rule"] == "PD102" for f in findings)
    explicit = run("lint", str(tmp_path / "pipe.py"))
    assert explicit.returncode == 2
    assert "not a regular file" in one_line(explicit.stderr)


# --- nothing passes unread ------------------------------------------------------------------------


def test_a_default_that_calls_its_own_partial_is_analysed() -> None:
    """A self-referencing ``functools.partial`` (a default that calls it) recursed until a
    RecursionError, and the file was skipped with exit 0."""
    text = HEADER + (
        "def build(x=None, y=p()):\n"
        f"    return ds.map({SLOW_MAP})\n"
        "p = functools.partial(build)\n"
        "model.fit(p())\n"
    )
    result = lint(text)
    assert "PD102" in rules(result) and not pd000(result)


def test_a_sum_of_a_thousand_terms_is_analysed() -> None:
    text = HEADER + "s = " + " + ".join(["'a'"] * 1000) + f"\nmodel.fit(ds.map({SLOW_MAP}))\n"
    result = lint(text)
    assert "PD102" in rules(result) and not pd000(result)


def test_a_chain_of_340_stages_is_analysed() -> None:
    text = HEADER + "ds = ds" + f".map({SLOW_MAP})" * 340 + "\nmodel.fit(ds)\n"
    result = lint(text)
    assert not pd000(result)
    assert len([f for f in result.findings if f.rule == "PD102"]) == 340


def test_partials_of_partials_stay_small() -> None:
    text = HEADER + "def f(x, *rest):\n    return x\n" + "f = functools.partial(f, f)\n" * 60
    result, seconds = timed(text + "def make():\n    return f\nmodel.fit(ds.map(make()))\n")
    assert seconds < 10 and not pd000(result)


def test_a_file_the_analysis_cannot_finish_is_a_finding(monkeypatch: pytest.MonkeyPatch) -> None:
    """What the analysis still cannot follow (here, forced) is PD000 with the reason, exit 1,
    never a note and exit 0."""

    def deep(*args: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(interpreter.ModuleInterpreter, "run", deep)
    result = lint(HEADER + "model.fit(ds)\n")
    assert result.note is None
    assert pd000(result) == [
        "not analysed: nested too deeply for the analysis to follow; no other rule was checked "
        "on this file"
    ]


def test_a_module_beyond_the_analysis_budget_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(interpreter, "MAX_STEPS", 50)
    text = HEADER + "x = [1, 1, 1, 1, 1, 1, 1, 1]\n" * 300 + f"model.fit(ds.map({SLOW_MAP}))\n"
    (message,) = pd000(lint(text))
    assert message.startswith("not fully analysed: the analysis stopped after 2,")


def test_blocks_nested_beyond_the_limit_are_reported() -> None:
    """Python allows 100 indents per file, but helpers called from deep inside helpers nest
    further: past the limit the rest is skipped, and the file is reported as such."""
    text = HEADER
    for level in range(1, 6):
        ifs = "".join("    " * i + "if x:\n" for i in range(1, 31))
        text += f"def f{level}():\n{ifs}" + "    " * 31 + f"f{level + 1}()\n"
    (message,) = pd000(lint(text + "f1()\nmodel.fit(ds)\n"))
    assert message.startswith("not fully analysed: statements nested more than 100 blocks deep")


@pytest.mark.parametrize(
    ("code", "error"),
    [
        ("return ds\n", "'return' outside function"),
        ("def f(a, a):\n    return a\n", "duplicate argument 'a' in function definition"),
        ("def f():\n    nonlocal ds\n", "no binding for nonlocal 'ds' found"),
        ("for x in ds:\n    pass\nelse:\n    continue\n", "'continue' not properly in loop"),
    ],
)
def test_compile_time_errors_in_dataset_code_are_pd000(code: str, error: str) -> None:
    """``ast.parse`` accepts these, the compiler does not: they went unreported in files that
    mention datasets (those were only parsed)."""
    assert pd000(lint(HEADER + code)) == [f"SyntaxError: {error}"]


@pytest.mark.parametrize(
    ("tail", "error"),
    [
        ("return ds\n", "'return' outside function"),
        ("from __future__ import annotations\n", "from __future__ imports must occur at the"),
        ("if ds:\n    global x\n", "name 'x' is assigned to before global declaration"),
        ("def f(x: (yield)):\n    pass\n", "'yield expression' can not be used within an"),
    ],
)
def test_compile_time_errors_far_into_a_long_module_are_pd000(tail: str, error: str) -> None:
    """A long module is compiled a few statements at a time; what spans statements (a late
    ``__future__`` import, a module-level ``global``) and the futures in force still count."""
    text = '"""doc"""\nfrom __future__ import annotations\n' + HEADER + "x = 1\n" * 300 + tail
    (message,) = pd000(lint(text))
    assert message.startswith(f"SyntaxError: {error}")
    assert not pd000(lint(text.replace(tail, "y = 2\n")))


def test_compile_time_errors_in_notebook_cells_are_pd000() -> None:
    cells = [
        {"cell_type": "code", "source": "import tensorflow as tf\nds = tf.data.Dataset.range(3)"},
        {"cell_type": "code", "source": "return ds"},
        {"cell_type": "code", "source": "await something()"},  # top-level await: fine
    ]
    result = lint_notebook(json.dumps({"cells": cells}), "nb.ipynb", Selection())
    (finding,) = result.findings
    assert (finding.cell, finding.message) == (2, "SyntaxError: 'return' outside function")


@pytest.mark.parametrize("separator", ["\f", "\v", "\x1c", "\x1e", "\x85", "\u2028"])
def test_suppressions_match_the_line_the_parser_counts(separator: str) -> None:
    """``str.splitlines`` also breaks at these; the parser does not, so the suppression on
    line 4 was looked for on line 5."""
    text = (
        f"import tensorflow as tf\n# a{separator}b\n"
        "ds = tf.data.TFRecordDataset(tf.io.gfile.glob('data/train-*.tfrecord'), "
        "num_parallel_reads=tf.data.AUTOTUNE)\n"
        f"ds = ds.map({SLOW_MAP})  # pipedoctor: ignore[PD102]\n"
        "model.fit(ds)\n"
    )
    assert rules(lint(text.replace("  # pipedoctor: ignore[PD102]", ""))) == {"PD102"}
    assert rules(lint(text)) == set()


def test_unreadable_and_odd_entries_in_a_folder_are_findings(tmp_path: Path) -> None:
    (tmp_path / "good.py").write_text(HEADER + "model.fit(ds)\n")
    (tmp_path / "broken.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    locked = tmp_path / "locked.py"
    locked.write_text(HEADER)
    locked.chmod(0)
    done = run("lint", ".", "--format", "json", cwd=tmp_path)
    assert done.returncode == 1 and not done.stderr, done.stderr
    found = {f["path"]: f["message"] for f in json.loads(done.stdout)["findings"]}
    assert found["broken.py"] == "broken symbolic link"
    assert found["loop.py"] == "cannot read file: Too many levels of symbolic links"
    if os.geteuid() != 0:  # root reads it anyway
        assert found["locked.py"] == "cannot read file: Permission denied"


def test_an_unreadable_subfolder_is_a_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder that cannot be listed was skipped without a word (and ``pyvenv.cfg`` checks
    on it crashed); permissions do not stop root, so listing it is made to fail."""
    (tmp_path / "ok.py").write_text(HEADER + "model.fit(ds)\n")
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "train.py").write_text(HEADER)
    real = os.scandir

    def scandir(path: object = ".") -> object:
        if str(path).endswith("secret"):
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "scandir", scandir)
    monkeypatch.chdir(tmp_path)
    assert main(["lint", ".", "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["path"], f["message"]) for f in findings] == [
        ("secret", "cannot read folder: Permission denied")
    ]


def test_paths_that_are_not_regular_files_are_usage_errors(tmp_path: Path) -> None:
    code = HEADER + f"model.fit(ds.map({SLOW_MAP}))\n"
    piped = run("lint", "/dev/stdin", input=code)
    assert piped.returncode == 2
    assert "not a regular file" in one_line(piped.stderr)
    if Path("/dev/fd").is_dir():  # a process substitution: <(cat train.py)
        script = f"{sys.executable} -m pipedoctor lint <(printf %s {json.dumps(code)})"
        sub = subprocess.run(
            ["bash", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert sub.returncode == 2
        assert "not a regular file" in one_line(sub.stderr)


def test_malformed_notebook_cells_are_findings_not_drops() -> None:
    good = {"cell_type": "code", "source": ["import tensorflow as tf\n", "ds = tf.data"]}
    cells = [
        good,
        {"cell_type": "code", "source": 5},
        7,
        {"source": "x = 1"},
        {"cell_type": ["code"], "source": "x"},
        {"cell_type": "code", "source": ["a", 1]},
        {"cell_type": "markdown", "source": 5},  # markdown is not read: no finding
    ]
    result = lint_notebook(json.dumps({"cells": cells}), "nb.ipynb", Selection())
    assert [(f.cell, f.message) for f in result.findings] == [
        (2, "cell not read: its source is neither a string nor a list of strings"),
        (3, "cell not read: a cell must be an object, not a number"),
        (4, "cell not read: it has no cell_type"),
        (5, "cell not read: its cell_type is not a string"),
        (6, "cell not read: its source is neither a string nor a list of strings"),
    ]


@pytest.mark.parametrize(
    ("notebook", "message"),
    [
        ({"worksheets": [{"cells": 5}]}, "not a valid notebook: worksheet 1 has no cells"),
        ({"worksheets": [3]}, "not a valid notebook: worksheet 1 has no cells"),
        ({"cells": {"a": 1}}, "not a valid notebook: its cells are not a list"),
        ([1, 2], "not a valid notebook: no cells"),
    ],
)
def test_notebooks_of_odd_types_are_one_pd000(notebook: object, message: str) -> None:
    result = lint_notebook(json.dumps(notebook), "nb.ipynb", Selection())
    assert pd000(result) == [message]


# --- exit codes as ruff: 2 and one line ----------------------------------------------------------


def test_a_symlink_loop_or_an_overlong_name_given_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "loop.py").symlink_to(tmp_path / "loop.py")
    done = run("lint", "loop.py", cwd=tmp_path)
    assert done.returncode == 2
    assert "Too many levels of symbolic links" in one_line(done.stderr)
    long = run("lint", "a" * 300 + ".py", cwd=tmp_path)
    assert long.returncode == 2
    assert "File name too long" in one_line(long.stderr)


def test_an_unwritable_output_file_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(HEADER)
    done = run("lint", "t.py", "-o", str(tmp_path / "no" / "such" / "out.txt"), cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot write the report to" in one_line(done.stderr)


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_on_a_full_device_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(HEADER + f"model.fit(ds.map({SLOW_MAP}))\n")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pipedoctor", "lint", "t.py"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=tmp_path,
            timeout=120,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode == 2
    assert "No space left on device" in one_line(done.stderr)


@pytest.mark.parametrize("fmt", ["text", "sarif", "json", "github"])
def test_file_names_that_are_not_utf8_are_reported(tmp_path: Path, fmt: str) -> None:
    name = os.fsdecode(b"tr\xffain.py")
    on_old_tensorflow(tmp_path)
    (tmp_path / name).write_text(HEADER + f"model.fit(ds.map({SLOW_MAP}))\n")
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "lint", ".", "--format", fmt],
        capture_output=True,
        cwd=tmp_path,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 1, done.stderr
    assert not done.stderr
    if fmt == "sarif":
        uris = {
            r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in json.loads(done.stdout)["runs"][0]["results"]
        }
        assert uris == {"tr%FFain.py"}
    elif fmt == "json":
        assert {f["path"] for f in json.loads(done.stdout)["findings"]} == {name}
    else:
        assert b"tr\xffain.py" in done.stdout  # the name's own bytes


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("[tool.pipedoctor]\nfail-on = 3\n", "fail-on must be a string"),
        ("tool = 5\n", "[tool] must be a table"),
        ("[tool]\npipedoctor = 5\n", "[tool.pipedoctor] must be a table"),
        ("[tool.pipedoctor]\nselect = 5\n", "select must be a list of rule codes"),
        ("[tool.pipedoctor]\nexclude = [1]\n", "exclude must be a list of glob patterns"),
        ("[tool.pipedoctor]\nper-file-ignores = {'x' = 5}\n", "must be a list of rule codes"),
        ("[tool.pipedoctor.params]\nPD204 = 5\n", "PD204 must be a table"),
        (
            "[tool.pipedoctor.params.PD204]\nmin_per_replica_batch = true\n",
            "min_per_replica_batch must be a number",
        ),
    ],
)
def test_configuration_values_of_the_wrong_type_are_one_line(
    tmp_path: Path, table: str, message: str
) -> None:
    (tmp_path / "pyproject.toml").write_text(table)
    (tmp_path / "t.py").write_text(HEADER)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[").replace("]", r"\]")):
        load_config(tmp_path, explicit=tmp_path / "pyproject.toml")
    done = run("lint", "t.py", "--config", "pyproject.toml", cwd=tmp_path)
    assert done.returncode == 2
    assert message in one_line(done.stderr)


def test_a_pyproject_whose_tool_is_not_a_table_is_not_ours(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("tool = 5\n")
    (tmp_path / "t.py").write_text(HEADER + "model.fit(ds)\n")
    assert run("lint", "t.py", cwd=tmp_path).returncode == 0


RECORD = {
    "pipedoctor_record": 1,
    "worker": "worker-0",
    "peers": ["worker-0"],
    "state": "finished",
    "updated": 1796162981.5,
    "notes": [],
    "measurements": {
        "training_samples_per_s": 4000.0,
        "input_wait_fraction": 0.4,
        "input_wait_ci": 0.02,
        "batch_size": 32,
        "epochs": [{"epoch": 1, "steps": 8, "samples": 256, "samples_per_s": 4000.0}],
    },
}


@pytest.mark.parametrize(
    ("place", "value", "message"),
    [
        (("peers",), 5, "peers must be a list"),
        (("updated",), "soon", "updated must be a number"),
        (("notes",), [1], "notes[0] must be a string"),
        (("measurements", "epochs"), {"a": 1}, "measurements.epochs must be a list"),
        (("measurements", "epochs", 0, "steps"), "8", "measurements.epochs[0].steps must be"),
        (("measurements", "epochs", 0), 7, "measurements.epochs[0] must be an object"),
        (("measurements", "batch_size"), True, "measurements.batch_size must be an integer"),
        (("measurements", "step_ms"), [1], "measurements.step_ms must be an object"),
    ],
)
def test_report_on_a_record_with_a_field_of_the_wrong_type_is_one_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    place: tuple,
    value: object,
    message: str,
) -> None:
    record = json.loads(json.dumps(RECORD))
    here = record
    for key in place[:-1]:
        here = here[key]
    here[place[-1]] = value
    (tmp_path / "worker-0.json").write_text(json.dumps(record))
    assert main(["report", str(tmp_path)]) == 2
    assert message in one_line(capsys.readouterr().err)


def test_report_reads_the_good_records_beside_a_bad_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "worker-0.json").write_text(json.dumps(RECORD))
    (tmp_path / "worker-1.json").write_text(json.dumps({**RECORD, "worker": 1}))
    assert main(["report", str(tmp_path), "--format", "json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert any("worker-1.json" in n and "without a worker" in n for n in notes)


def test_an_internal_error_is_one_line_and_the_traceback_is_on_request(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.py").write_text(HEADER)

    def broken(*args: object) -> None:
        raise KeyError("boom")

    monkeypatch.setattr("pipedoctor.cli.lint_paths", broken)
    assert main(["lint", str(tmp_path / "t.py")]) == 2
    assert one_line(capsys.readouterr().err) == (
        "pipedoctor: error: internal error: KeyError: 'boom' (run with --verbose for the traceback)"
    )
    assert main(["lint", "--verbose", str(tmp_path / "t.py")]) == 2
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and err.endswith("traceback)\n")
    assert main(["--verbose", "lint", str(tmp_path / "t.py")]) == 2
    assert "Traceback" in capsys.readouterr().err


# --- the API: a path is a path, source is source --------------------------------------------------


def test_a_mistyped_path_is_an_error_not_source() -> None:
    """``lint("sample_pipeline/sequential_map.py")`` linted the string as code: no findings."""
    with pytest.raises(FileNotFoundError, match="no such file or folder"):
        pipedoctor.lint("sample_pipeline/sequential_map.py")
    with pytest.raises(FileNotFoundError):
        pipedoctor.lint(Path("nowhere.ipynb"))
    with pytest.raises(FileNotFoundError):
        pipedoctor.lint(["sample_pipelines/sequential_map.py", "nowhere.py"])


def test_paths_and_source_are_said_apart() -> None:
    sample = ROOT / "sample_pipelines" / "sequential_map.py"
    by_path = pipedoctor.lint(str(sample), confidence="medium")  # generated data: assumed real
    assert "PD102" in {f.rule for f in by_path.findings}
    text = sample.read_text()
    by_source = pipedoctor.lint(source=text, confidence="medium")
    assert {f.rule for f in by_source.findings} == {f.rule for f in by_path.findings}
    assert pipedoctor.lint_source(text, confidence="medium").findings == by_source.findings
    at_x = pipedoctor.lint_source(text, path="x.py", confidence="medium").findings
    assert {f.path for f in at_x} == {"x.py"}
    assert pipedoctor.lint(text, confidence="medium").findings == by_source.findings
    both = pipedoctor.lint([sample, ROOT / "sample_pipelines" / "sequential_map_fixed.py"])
    assert both.files_checked == 2
    with pytest.raises(TypeError):
        pipedoctor.lint(sample, source=text)
    with pytest.raises(TypeError):
        pipedoctor.lint()


def test_a_notebook_number_past_the_digit_limit_is_a_finding_and_the_rest_is_checked(
    tmp_path: Path,
) -> None:
    """JSON holding an integer of more than 4,300 digits made Python's parser raise ValueError,
    an internal error that left the other files unchecked."""
    on_old_tensorflow(tmp_path)
    (tmp_path / "big.ipynb").write_text('{"cells": [], "nbformat_minor": ' + "9" * 5000 + "}")
    (tmp_path / "train.py").write_text(HEADER + f"model.fit(ds.map({SLOW_MAP}), epochs=3)\n")
    done = run("lint", str(tmp_path), "--format", "json")
    assert done.returncode == 1, done.stderr
    findings = json.loads(done.stdout)["findings"]
    big = [f for f in findings if f["path"].endswith("big.ipynb")]
    assert [f["rule"] for f in big] == ["PD000"] and "4300 digits" in big[0]["message"]
    assert any(f["rule"] == "PD102" and f["path"].endswith("train.py") for f in findings)
