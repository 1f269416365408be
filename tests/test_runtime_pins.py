"""The TensorFlow a project pins decides whether PD101 and PD102 are findings: from 2.10 a
stateless ``map`` runs in parallel on its own, from 2.12 a synchronous end gets a ``prefetch``.
Real files in real folders, read as ``pipedoctor lint`` reads them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipedoctor import lint
from pipedoctor.static.runtime import INJECT_PREFETCH, Runtime, pin_of, runtime_of

TRAINER = """\
import tensorflow as tf


def decode(path):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (224, 224))


def jitter(image):
    return tf.image.random_brightness(tf.io.decode_png(tf.io.read_file(image)), 0.2)


ds = tf.data.Dataset.list_files("photos/*/*.jpg")
ds = ds.map(decode)
ds = ds.batch(64)
model = tf.keras.applications.ResNet50(weights=None, classes=10)
model.fit(ds, epochs=10)
"""
"""Line 14: a stateless decoding map; line 15: a synchronous end (no prefetch)."""


def findings(folder: Path, source: str = TRAINER, name: str = "train.py") -> dict[str, dict]:
    (folder / name).write_text(source)
    report = lint(folder / name, confidence="low")
    found: dict[str, dict] = {}
    for finding in report.findings:
        runtime = [e for e in finding.evidence if e.fact == "runtime"]
        found[finding.rule] = {
            "confidence": finding.confidence,
            "runtime": runtime[0] if runtime else None,
        }
    return found


@pytest.mark.parametrize(
    ("file", "text"),
    [
        ("requirements.txt", "numpy\ntensorflow-gpu==2.4.1  # the cluster's image\n"),
        ("setup.py", "setup(install_requires=['tensorflow>=2.3,<2.9', 'numpy'])\n"),
        ("pyproject.toml", '[project]\ndependencies = ["tensorflow ~= 2.8.0"]\n'),
        ("environment.yml", "dependencies:\n  - python=3.8\n  - tensorflow=2.6\n"),
        ("Dockerfile", "FROM tensorflow/tensorflow:2.5.0-gpu\nCOPY . /app\n"),
    ],
)
def test_a_project_on_old_tensorflow_shows_the_rewrites_are_missing(
    tmp_path: Path, file: str, text: str
) -> None:
    (tmp_path / file).write_text(text)
    found = findings(tmp_path)
    for rule in ("PD101", "PD102"):
        assert found[rule]["confidence"] == "high", (rule, found)
        assert found[rule]["runtime"].shown and file in found[rule]["runtime"].detail


def test_a_project_on_new_tensorflow_gets_neither_finding(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("tensorflow[and-cuda]>=2.15\n")
    assert {"PD101", "PD102"}.isdisjoint(findings(tmp_path))


def test_a_stateful_map_stays_a_finding_on_new_tensorflow(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("tensorflow==2.16.1\n")
    found = findings(tmp_path, TRAINER.replace("ds.map(decode)", "ds.map(jitter)"))
    assert "PD101" not in found
    runtime = found["PD102"]["runtime"]
    assert runtime.shown and "random numbers" in runtime.detail
    assert found["PD102"]["confidence"] == "high"


def test_with_no_pin_the_runtime_is_assumed_and_the_finding_drops_a_tier(tmp_path: Path) -> None:
    found = findings(tmp_path)
    for rule in ("PD101", "PD102"):
        assert found[rule]["confidence"] == "medium"
        assert not found[rule]["runtime"].shown


def test_the_nearest_pin_wins_and_the_search_stops_at_the_projects_root(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("tensorflow==2.4\n")  # outside the project
    project = tmp_path / "repo"
    (project / "trainer" / "tf2").mkdir(parents=True)
    (project / "setup.py").write_text("setup(name='repo')\n")
    assert findings(project / "trainer" / "tf2")["PD101"]["confidence"] == "medium"
    (project / "trainer" / "requirements.txt").write_text("tensorflow>=2.13\n")
    (project / "requirements.txt").write_text("tensorflow==2.4\n")
    assert "PD101" not in findings(project / "trainer" / "tf2")  # the trainer's own pin
    (project / "trainer" / "tf2" / "requirements.txt").write_text("numpy\ntensorflow\n")
    unpinned = findings(project / "trainer" / "tf2")["PD101"]  # whatever is newest: not 2.4
    assert unpinned["confidence"] == "medium" and not unpinned["runtime"].shown


def test_a_notebooks_pip_install_and_colabs_magic_pin_it(tmp_path: Path) -> None:
    def notebook(first: str) -> str:
        cells = [first, TRAINER]
        return json.dumps(
            {
                "cells": [
                    {"cell_type": "code", "metadata": {}, "outputs": [], "source": c} for c in cells
                ],
                "metadata": {"language_info": {"name": "python"}},
                "nbformat": 4,
                "nbformat_minor": 5,
            }
        )

    pinned = findings(tmp_path, notebook("!pip install -q tensorflow==2.8.0\n"), "a.ipynb")
    assert pinned["PD101"]["confidence"] == "high"
    assert "`tensorflow==2.8.0`" in pinned["PD101"]["runtime"].detail
    colab = findings(tmp_path, notebook("%tensorflow_version 1.x\n"), "b.ipynb")
    assert "%tensorflow_version 1.x" in colab["PD101"]["runtime"].detail


def test_tensorflow_1_calls_pin_it_unless_they_come_through_compat_v1(tmp_path: Path) -> None:
    tf1 = TRAINER + "sess = tf.Session()\n"
    assert "tf.Session" in findings(tmp_path, tf1)["PD101"]["runtime"].detail
    compat = tf1.replace("import tensorflow as tf", "import tensorflow.compat.v1 as tf")
    assert not findings(tmp_path, compat)["PD101"]["runtime"].shown


def test_prose_about_versions_pins_nothing_and_options_that_turn_rewrites_off_count(
    tmp_path: Path,
) -> None:
    prose = '"""Needs TensorFlow >= 2.2; tested with tensorflow==2.4."""\n' + TRAINER
    assert not findings(tmp_path, prose)["PD101"]["runtime"].shown
    (tmp_path / "requirements.txt").write_text("tensorflow>=2.16\n")
    off = TRAINER.replace(
        "model = ",
        "options = tf.data.Options()\n"
        "options.experimental_optimization.inject_prefetch = False\n"
        "ds = ds.with_options(options)\nmodel = ",
    )
    runtime = findings(tmp_path, off)["PD101"]["runtime"]
    assert runtime.shown and "rewrites off" in runtime.detail


def test_a_text_that_is_no_file_reads_no_project() -> None:
    assert runtime_of("<stdin>", TRAINER) == Runtime()
    assert runtime_of("not/on/disk.py", TRAINER) == Runtime()


versions = st.tuples(st.integers(1, 3), st.integers(0, 20), st.integers(0, 9))


@given(pinned=versions, threshold=st.tuples(st.integers(1, 3), st.integers(0, 20)))
def test_an_exact_pin_is_below_or_from_a_threshold_never_both(pinned, threshold) -> None:
    text = ".".join(map(str, pinned))
    pin = pin_of(f"=={text}", "requirements.txt")
    assert pin is not None
    runtime = Runtime((pin,))
    assert (runtime.below(threshold) is not None) == (pinned < threshold)
    assert (runtime.from_(threshold) is not None) == (pinned >= threshold)
    ranged = Runtime((pin_of(f">={text},<{threshold[0] + 5}", "setup.py"),))
    assert ranged.below(INJECT_PREFETCH) is None or ranged.from_(INJECT_PREFETCH) is None
