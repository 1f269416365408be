"""`pipedoctor lint` on Jupyter notebooks as they are: IPython syntax left out, findings placed
by cell and line, the notebook named in SARIF and GitHub output, bad notebooks reported."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pins import on_old_tensorflow

from pipedoctor import lint
from pipedoctor.render import render
from pipedoctor.static.notebook import python_of_cell, read_notebook


def notebook(*cells: str | tuple[str, str], language: str = "python") -> str:
    """A notebook's JSON with these cells (a string is a code cell, a pair names its type)."""
    body = []
    for cell in cells:
        kind, source = cell if isinstance(cell, tuple) else ("code", cell)
        body.append(
            {
                "cell_type": kind,
                "metadata": {},
                "source": source.splitlines(keepends=True),
                **({"outputs": [], "execution_count": None} if kind == "code" else {}),
            }
        )
    metadata = {"kernelspec": {"name": "k", "language": language}}
    return json.dumps({"cells": body, "metadata": metadata, "nbformat": 4, "nbformat_minor": 5})


TRAINING = notebook(
    ("markdown", "# Training a classifier\n"),
    "!pip install -q tensorflow\n%matplotlib inline\nimport tensorflow as tf\n",
    "files = !ls data/\ntf.data.Dataset?\n",
    "%%writefile train.py\nds = ds.map(lambda x: tf.strings.as_string(x))\n",
    "%%bash\nfor f in *.png; do echo $f; done\n",
    "ds = tf.data.TextLineDataset(tf.io.gfile.glob('data/part-*.csv'), num_parallel_reads=-1)\n"
    "ds = ds.map(lambda x: tf.strings.as_string(x))\n"
    "ds = ds.batch(10)\n",
    "  # indented as a whole, as pasted\n"
    "  model = tf.keras.Sequential()\n"
    "  model.fit(ds, epochs=1)\n",
)


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def test_notebook_findings_are_placed_by_cell_and_line(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    path = tmp_path / "train.ipynb"
    path.write_text(TRAINING)
    report = lint(path)
    found = {(f.rule, f.cell, f.line, f.column) for f in report.findings}
    # Cell 6 holds the pipeline: the map on its line 2, the batch it ends with on line 3.
    # The %%writefile cell is a file of its own, where `ds` comes from nowhere: no pipeline.
    assert found == {("PD102", 6, 2, 9), ("PD101", 6, 3, 9)}


def test_a_trainer_a_cell_writes_is_linted_as_the_file_it_writes(tmp_path: Path) -> None:
    # Course notebooks write their trainer with %%writefile and run it with !python.
    path = tmp_path / "course.ipynb"
    path.write_text(
        notebook(
            "import os\nos.makedirs('trainer', exist_ok=True)\n",
            "%%writefile trainer/task.py\n"
            "import tensorflow as tf\n"
            "\n"
            "def train():\n"
            "    ds = tf.data.TextLineDataset(['a.csv', 'b.csv'])\n"
            "    ds = ds.map(lambda line: tf.strings.split(line)).batch(32)\n"
            "    tf.keras.Sequential().fit(ds)\n",
            "%%writefile trainer/config.yaml\nds: tf.data.Dataset.range(3).map(f)\n",
            "!python -m trainer.task\n",
        )
    )
    found = {(f.rule, f.cell, f.line) for f in lint(path, confidence="medium").findings}
    assert {("PD104", 2, 5), ("PD102", 2, 6), ("PD101", 2, 6)} <= found  # PD104: medium at most
    assert {cell for _, cell, _ in found} == {2}


def test_a_notebook_function_no_cell_calls_builds_nothing_that_trains(tmp_path: Path) -> None:
    path = tmp_path / "lesson.ipynb"
    body = (
        "import tensorflow as tf\n"
        "def {name}(files):\n"
        "    return tf.data.TFRecordDataset(files).map(tf.io.parse_tensor).batch(8)\n"
    )
    path.write_text(notebook(body.format(name="load_dataset")))
    assert lint(path).findings == []  # nothing can import a notebook: it never runs
    path.write_text(
        notebook(
            body.format(name="load_dataset"),
            "train = load_dataset(['a.tfrecord', 'b.tfrecord'])\n",
            "tf.keras.Sequential().fit(train)\n",
        )
    )
    assert {"PD101", "PD104"} <= {f.rule for f in lint(path, confidence="medium").findings}


def test_ipython_lines_are_left_out_and_indented_cells_dedented() -> None:
    code, indents, error = python_of_cell("  x = 1\n  if x:\n      !echo hi\n")
    assert error is None
    assert code.splitlines() == ["x = 1", "if x:", "    pass"]
    assert indents[:3] == [2, 2, 2]
    code, _, error = python_of_cell("!gsutil cp \\\n   gs://a/b .\nls -l data/\nn = 3\n")
    assert error is None and code.splitlines()[3] == "n = 3"
    # A string that merely looks like IPython syntax is kept as it is.
    code, _, error = python_of_cell('text = """\n%d items?\n!"""\n')
    assert error is None and "%d items?" in code


def test_a_broken_cell_is_reported_and_the_rest_still_linted(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    path = tmp_path / "exercise.ipynb"
    path.write_text(
        notebook(
            "import tensorflow as tf\n",
            "batch_size = # YOUR CODE HERE\n",
            "ds = tf.data.TextLineDataset(tf.io.gfile.glob('part-*.csv'), num_parallel_reads=-1)"
            ".map(lambda x: tf.strings.split(x))\n"
            "tf.keras.Sequential().fit(ds.batch(4).prefetch(tf.data.AUTOTUNE))\n",
        )
    )
    report = lint(path, confidence="low")
    by_rule = {f.rule: f for f in report.findings}
    assert by_rule["PD000"].cell == 2 and by_rule["PD000"].line == 1
    assert "SyntaxError" in by_rule["PD000"].message
    # a blank left for a student is not meant to run as written: low, counted, never silent
    assert by_rule["PD000"].confidence == "low"
    assert [e.fact for e in by_rule["PD000"].assumed] == ["runs"]
    assert by_rule["PD102"].cell == 3
    default = lint(path)
    assert {f.rule for f in default.findings} == {"PD102"}
    assert default.below_confidence == {"low": 1}
    assert "PD000" not in {f.rule for f in lint(path, confidence="medium").findings}


@pytest.mark.parametrize(
    "blank",
    [
        "epochs = ?  # Replace ? with an integer.\n",
        "positives = frame[ ? ]  # a way to filter\n",
        "metrics = [\n    'accuracy',\n    ?  # write code here\n]\n",
        "model.fit(x, y, epochs=50,\n          batch_size=,  # set batch size here\n)\n",
        "limits = {'min': , 'max': 3}\n",
        "layer = Dense(8, activation=)\n",
    ],
)
def test_blanks_written_as_a_question_mark_or_left_empty_are_exercises(
    tmp_path: Path, blank: str
) -> None:
    path = tmp_path / "exercise.ipynb"
    path.write_text(notebook("import tensorflow as tf\n", blank))
    (broken,) = lint(path, confidence="low").findings
    assert broken.rule == "PD000" and broken.confidence == "low", broken
    assert [e.fact for e in broken.assumed] == ["runs"]


def test_a_bibtex_citation_in_a_code_cell_is_not_python(tmp_path: Path) -> None:
    citation = (
        "@manual{Intro1,\n title={An Introduction},\n organization={DeepChem},\n"
        " author={Someone},\n year={2021}\n}\n"
    )
    path = tmp_path / "tutorial.ipynb"
    path.write_text(notebook("import tensorflow as tf\n", citation))
    (broken,) = lint(path, confidence="low").findings
    assert broken.rule == "PD000" and broken.confidence == "low" and broken.cell == 2
    assert "BibTeX citation" in str(broken.assumed[0])
    decorated = "@tf.function\ndef step(x)\n    return x\n"  # Python with a syntax error
    path.write_text(notebook("import tensorflow as tf\n", decorated))
    (broken,) = lint(path, confidence="low").findings
    assert broken.confidence == "high"


def test_a_real_syntax_error_is_no_exercise(tmp_path: Path) -> None:
    path = tmp_path / "broken.ipynb"
    path.write_text(notebook("import tensorflow as tf\n", "x = frame[:, 0\nprint(x)\n"))
    (broken,) = lint(path, confidence="low").findings
    assert broken.rule == "PD000" and broken.confidence == "high"


def test_python_2_is_not_analysed_at_the_lowest_tier_and_a_future_import_may_follow_a_magic(
    tmp_path: Path,
) -> None:
    """A ``print`` statement or ``except E, e`` is Python 2, no defect of the file: its PD000
    stays (never silence) at ``low``. ``from __future__`` right after a magic line opens its
    cell as IPython runs it, and parses."""
    script = tmp_path / "legacy.py"
    script.write_text("import tensorflow as tf\ntry:\n    x = 1\nexcept ValueError, e:\n    pass\n")
    (finding,) = lint(script, confidence="low").findings
    assert finding.rule == "PD000" and finding.confidence == "low"
    assert "written for Python 2 (`except E, e`)" in str(finding.assumed[0])
    assert lint(script).findings == [] and lint(script).below_confidence == {"low": 1}
    path = tmp_path / "demo.ipynb"
    path.write_text(
        notebook(
            "%tensorflow_version 1.x\nfrom __future__ import print_function\nimport tensorflow\n",
            'print "steps", 3\n',
        )
    )
    found = lint(path, confidence="low").findings
    assert [(f.rule, f.cell, f.confidence) for f in found] == [("PD000", 2, "low")], found
    assert "a `print` statement" in str(found[0].assumed[0])


def test_a_transformation_a_cell_ends_with_is_displayed_not_thrown_away(tmp_path: Path) -> None:
    """``ds.take(1)`` as a cell's last expression shows the dataset (Jupyter displays it);
    the same statement anywhere else in the cell is thrown away (PD112)."""
    path = tmp_path / "look.ipynb"
    path.write_text(
        notebook(
            "import tensorflow as tf\n"
            "ds = tf.data.TFRecordDataset(tf.io.gfile.glob('train-*.tfrecord'))\n"
            "ds = ds.map(tf.io.parse_tensor, num_parallel_calls=tf.data.AUTOTUNE)\n",
            "ds.take(1)\n",
            "ds.shuffle(1000)\nn = 3\n",
            "tf.keras.Sequential().fit(ds.batch(8).prefetch(tf.data.AUTOTUNE), epochs=3)\n",
        )
    )
    found = [(f.rule, f.cell, f.line) for f in lint(path, confidence="low").findings]
    assert ("PD112", 3, 1) in found and not [f for f in found if f[:2] == ("PD112", 2)], found


def test_ipython_cells_of_other_languages_and_help_are_no_broken_python(tmp_path: Path) -> None:
    """Hosted kernels open a shell or query cell with one ``%`` (``%bq query``, ``%bash``);
    ``?? Dense`` asks for help; a ``%%writefile`` of a trainer with a student's blank is an
    exercise. None of them is a broken cell at the gate's tiers."""
    path = tmp_path / "lab.ipynb"
    path.write_text(
        notebook(
            "import tensorflow as tf\n",
            "%bq query -n trips\nSELECT day, COUNT(1) AS n FROM trips\nGROUP BY day\n",
            "%bash\nOUTDIR=trained\nrm -rf $OUTDIR\npython -m trainer.task --out=$OUTDIR\n",
            "%writefile hyper.yaml\ntrainingInput:\n  scaleTier: BASIC\n",
            "?? tf.data.Dataset\n",
            "%%writefile trainer/model.py\nimport tensorflow as tf\nCOLUMNS = # TODO: your code\n",
            "%bash\nx = 1\n",  # one `%` before Python: a shell cell all the same
            "%matplotlib inline\nx = (\n",  # a line magic, then broken Python: reported
        )
    )
    found = lint(path, confidence="medium").findings
    assert [(f.rule, f.cell) for f in found] == [("PD000", 8)], found
    assert [(f.rule, f.cell, f.confidence) for f in lint(path, confidence="low").findings] == [
        ("PD000", 6, "low"), ("PD000", 8, "high"),
    ]  # fmt: skip


@pytest.mark.parametrize(
    "content, message",
    [
        ('{"cells": [}', "not a valid notebook"),
        ('{"metadata": {}}', "no cells"),
        ("[1, 2]", "no cells"),
    ],
)
def test_bad_notebooks_get_one_line_not_a_traceback(
    tmp_path: Path, content: str, message: str
) -> None:
    (tmp_path / "bad.ipynb").write_text(content)
    done = run("lint", "bad.ipynb", cwd=tmp_path)
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr + done.stdout
    (line,) = [ln for ln in done.stdout.splitlines() if "PD000" in ln]
    assert line.startswith("bad.ipynb:") and message in line


def test_cells_compile_one_by_one(tmp_path: Path) -> None:
    """``from __future__`` may open any cell; the same line in the middle of a module is an
    error Python reports, and so does the lint."""
    later = "print('setup')\n", "from __future__ import print_function\nprint('a', 'b')\n"
    (tmp_path / "intro.ipynb").write_text(notebook(*later))
    (tmp_path / "intro.py").write_text("".join(later))
    report = lint(tmp_path)
    assert [(f.path.rpartition("/")[2], f.rule) for f in report.findings] == [("intro.py", "PD000")]


def test_notebook_in_another_language_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "r.ipynb").write_text(notebook("library(keras)\nx <- 1\n", language="R"))
    assert lint(tmp_path / "r.ipynb").findings == []


def test_text_json_sarif_and_github_name_the_cell(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    (tmp_path / "train.ipynb").write_text(TRAINING)
    text = run("lint", "train.ipynb", cwd=tmp_path).stdout
    assert "train.ipynb:cell 6:2:9: PD102 [warning] sequential-map" in text
    data = json.loads(run("lint", "train.ipynb", "--format", "json", cwd=tmp_path).stdout)
    assert {(f["rule"], f["cell"], f["line"]) for f in data["findings"]} == {
        ("PD102", 6, 2),
        ("PD101", 6, 3),
    }
    report = lint(tmp_path / "train.ipynb")
    sarif = json.loads(render(report, "sarif"))
    result = next(r for r in sarif["runs"][0]["results"] if r["ruleId"] == "PD102")
    physical = result["locations"][0]["physicalLocation"]
    assert physical["artifactLocation"]["uri"].endswith("train.ipynb")
    assert physical["region"] == {"startLine": 1, "startColumn": 1}  # a JSON line is no code line
    assert result["message"]["text"].startswith("cell 6, line 2, column 9: ")
    assert {k: result["properties"][k] for k in ("cell", "cellLine", "cellColumn")} == {
        "cell": 6,
        "cellLine": 2,
        "cellColumn": 9,
    }
    assert result["rank"] == 90.0 and result["properties"]["confidence"] == "high"
    github = render(report, "github").splitlines()
    pd102 = next(line for line in github if "PD102" in line)
    assert ",line=1,col=1," in pd102 and pd102.split("::")[2].startswith("cell 6, line 2")
    assert "train.ipynb" in pd102


def test_suppression_and_folders_work_for_notebooks(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    cells = json.loads(TRAINING)
    code = cells["cells"][5]["source"]
    code[1] = code[1].rstrip("\n") + "  # pipedoctor: ignore[PD102]\n"
    (tmp_path / "nb").mkdir()
    (tmp_path / "nb" / "train.ipynb").write_text(json.dumps(cells))
    (tmp_path / "nb" / ".ipynb_checkpoints").mkdir()
    (tmp_path / "nb" / ".ipynb_checkpoints" / "train-checkpoint.ipynb").write_text(TRAINING)
    report = lint(tmp_path / "nb")
    assert report.files_checked == 1
    assert {f.rule for f in report.findings} == {"PD101"}


def test_messages_point_at_cell_lines(tmp_path: Path) -> None:
    (tmp_path / "cache.ipynb").write_text(
        notebook(
            "import tensorflow as tf\nmodel = tf.keras.Sequential()\n",
            "ds = tf.data.TextLineDataset(tf.io.gfile.glob('data/part-*.csv'),"
            " num_parallel_reads=-1).shuffle(100)\n",
            "ds = ds.cache().batch(10).prefetch(tf.data.AUTOTUNE)\nmodel.fit(ds, epochs=5)\n",
        )
    )
    (finding,) = [f for f in lint(tmp_path / "cache.ipynb").findings if f.rule == "PD107"]
    assert (finding.cell, finding.line) == (3, 1)
    assert "(cell 2, line 1)" in finding.message


def test_read_notebook_maps_every_line(tmp_path: Path) -> None:
    source = read_notebook(TRAINING)
    assert source is not None and not source.broken
    lines = source.text.splitlines()
    pipeline = lines.index("ds = ds.batch(10)") + 1
    place = source.place(pipeline)
    assert place is not None and (place.cell, place.line) == (6, 3)


def test_pre_commit_hook_covers_notebooks() -> None:
    hooks = Path(__file__).resolve().parent.parent / ".pre-commit-hooks.yaml"
    text = hooks.read_text(encoding="utf-8")
    assert "types_or: [python, jupyter]" in text
