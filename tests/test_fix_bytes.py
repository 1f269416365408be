"""`lint --fix` keeps every byte it does not fix: line endings, a BOM, the encoding a PEP 263
cookie declares, a notebook's JSON layout and line endings, nbformat 3's worksheets; a file
the fixer cannot parse is skipped with one line and the others are still fixed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from pins import on_old_tensorflow

pytest.importorskip("libcst")

PIPELINE = (
    "import tensorflow as tf\n"
    "files = tf.io.gfile.glob('data/train-*.tfrecord')\n"
    "ds = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)\n"
    "ds = ds.map(tf.io.parse_tensor)  # caf\u00e9\n"
    "tf.keras.Sequential().fit(ds.batch(32).prefetch(tf.data.AUTOTUNE), epochs=3)\n"
)


def fix(*paths: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", "lint", *map(str, paths), "--fix"],
        capture_output=True, text=True, cwd=cwd, timeout=120,
    )  # fmt: skip


def expected(text: str) -> str:
    fixed = "map(tf.io.parse_tensor, num_parallel_calls=tf.data.AUTOTUNE)"
    return text.replace("map(tf.io.parse_tensor)", fixed)


@pytest.mark.parametrize(
    "name, to_bytes",
    [
        ("crlf", lambda text: text.replace("\n", "\r\n").encode()),
        ("bom", lambda text: b"\xef\xbb\xbf" + text.encode()),
        ("latin1", lambda text: ("# -*- coding: latin-1 -*-\n" + text).encode("latin-1")),
        ("mixed", lambda text: text.replace("\n", "\r\n", 2).encode()),
    ],
)
def test_a_python_file_keeps_its_bytes(tmp_path: Path, name: str, to_bytes) -> None:
    on_old_tensorflow(tmp_path)
    path = tmp_path / f"{name}.py"
    original = to_bytes(PIPELINE)
    path.write_bytes(original)
    done = fix(path, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Fixed 1 finding in 1 file." in done.stderr
    wanted = to_bytes(expected(PIPELINE))
    assert path.read_bytes() == wanted  # only the fixed line changed, byte for byte


def notebook(cells: list[str], crlf: bool, bom: bool, version: int = 4) -> bytes:
    code = [{"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None,
             "source": source.splitlines(keepends=True)} for source in cells]  # fmt: skip
    if version == 3:
        for cell in code:
            cell["input"] = cell.pop("source")
            cell["language"] = "python"
        data = {"metadata": {"name": "lesson"}, "nbformat": 3, "nbformat_minor": 0,
                "worksheets": [{"cells": code, "metadata": {}}]}  # fmt: skip
    else:
        data = {"cells": code, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    text = json.dumps(data, indent=1) + "\n"
    if crlf:
        text = text.replace("\n", "\r\n")
    return (b"\xef\xbb\xbf" if bom else b"") + text.encode()


@pytest.mark.parametrize(
    "crlf, bom, version", [(True, False, 4), (False, True, 4), (True, True, 4), (False, False, 3)]
)
def test_a_notebook_keeps_its_bytes(tmp_path: Path, crlf: bool, bom: bool, version: int) -> None:
    on_old_tensorflow(tmp_path)
    path = tmp_path / "lesson.ipynb"
    first, second = PIPELINE.split("ds = ds.map")
    path.write_bytes(notebook([first, "ds = ds.map" + second], crlf, bom, version))
    done = fix(path, cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Fixed 1 finding in 1 file." in done.stderr
    fixed = notebook([first, expected("ds = ds.map" + second)], crlf, bom, version)
    assert path.read_bytes() == fixed


def test_a_file_the_fixer_cannot_parse_is_skipped_and_the_others_are_fixed(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    deep = tmp_path / "deep.py"
    # Python's parser reads 1,500 terms (so the lint analyses the file and finds the map),
    # the fixer's does not. A file Python's parser rejects is a PD000 finding, not fixed.
    deep.write_text(PIPELINE + "total = " + " + ".join(["1"] * 1500) + "\n")
    plain = tmp_path / "plain.py"
    plain.write_text(PIPELINE)
    before = deep.read_bytes()
    done = fix(deep, plain, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("pipedoctor: error:")]
    assert len(errors) == 1 and errors[0].startswith("pipedoctor: error: deep.py: ")
    assert "left untouched" in errors[0]
    assert deep.read_bytes() == before
    assert plain.read_text() == expected(PIPELINE)
