"""Checks of jobs under the Keras distribution API on JAX, on 2 and 4 host CPU devices.

Each script sets ``KERAS_BACKEND`` and ``XLA_FLAGS`` itself before its first import, as the
Keras distribution guide does, so it runs in its own process through ``pipedoctor check``
(the device count is fixed when JAX starts). The three checks run at the same time.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")
pytest.importorskip("jax")

PREAMBLE = """\
import os

os.environ["KERAS_BACKEND"] = "jax"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count={devices}"

import keras
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.normal(size=(2000, 32)).astype("float32")
y = rng.integers(0, 10, size=(2000,)).astype("int32")
"""

SOUND_DATA_PARALLEL = (
    PREAMBLE
    + """
keras.distribution.set_distribution(keras.distribution.DataParallel())
model = keras.Sequential(
    [keras.Input((32,)), keras.layers.Dense(64), keras.layers.BatchNormalization(),
     keras.layers.Dense(10)]
)
model.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(True))
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(16).prefetch(tf.data.AUTOTUNE)
val = tf.data.Dataset.from_tensor_slices((x[:1000], y[:1000])).batch(16)
model.fit(ds, epochs=1, validation_data=val)
"""
)

BUILT_BEFORE_AND_UNEVEN = (
    PREAMBLE
    + """
model = keras.Sequential([keras.Input((32,)), keras.layers.Dense(10)])
keras.distribution.set_distribution(keras.distribution.DataParallel())
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(True))
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(30)
model.fit(ds, epochs=1)
"""
)

MODEL_PARALLEL = (
    PREAMBLE
    + """
mesh = keras.distribution.DeviceMesh((2, 2), ["data", "model"])
layout_map = keras.distribution.LayoutMap(mesh)
layout_map[".*wide/bias"] = ("model",)
layout_map["head/kernel"] = (None, "model")
layout_map["head/output"] = ("data", None)
keras.distribution.set_distribution(
    keras.distribution.ModelParallel(layout_map=layout_map, batch_dim_name="data")
)
model = keras.Sequential(
    [keras.Input((32,)), keras.layers.Dense(512, name="wide"), keras.layers.Dense(10, name="head")]
)
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(True))
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32, drop_remainder=True)
model.fit(ds, epochs=1)
"""
)

JOBS = {
    "sound": (SOUND_DATA_PARALLEL, 2),
    "uneven": (BUILT_BEFORE_AND_UNEVEN, 4),
    "model_parallel": (MODEL_PARALLEL, 4),
}
INCOMPLETE = {"uneven"}
"""Jobs whose training step fails in the check: their report comes with exit code 2."""


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, tuple[dict, Path]]:
    """Each job's JSON report and its folder, from three checks run side by side."""
    running = {}
    for name, (source, devices) in JOBS.items():
        folder = tmp_path_factory.mktemp(name)
        (folder / "train.py").write_text(source.format(devices=devices))
        command = [sys.executable, "-m", "pipedoctor", "check", "train.py", "--format", "json"]
        process = subprocess.Popen(
            [*command, "--timeout", "75", "-q", "--select", "PD2,PD3"],  # no pipeline rules
            cwd=folder,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        running[name] = (process, folder)
    reports = {}
    for name, (process, folder) in running.items():
        out, err = process.communicate(timeout=180)
        assert process.returncode == (2 if name in INCOMPLETE else 0), f"{name}: {err[-3000:]}"
        reports[name] = (json.loads(out), folder)
    return reports


def line_of(folder: Path, text: str) -> int:
    return 1 + (folder / "train.py").read_text().splitlines().index(text)


def by_rule(report: dict) -> dict[str, list[dict]]:
    found: dict[str, list[dict]] = {}
    for finding in report["findings"]:
        found.setdefault(finding["rule"], []).append(finding)
    return found


def test_sound_data_parallel_job_is_seen_measured_and_judged(checked) -> None:
    report, folder = checked["sound"]
    m = report["measurements"]
    assert m["strategy"] == "DataParallel" and m["replicas"] == 2
    assert m["per_replica_batch"] == 8
    mesh = m["distribution"]
    assert (mesh["api"], mesh["devices"], mesh["batch_axis"]) == ("keras", 2, "batch")
    assert mesh["platform"] == "cpu" and mesh["sharded_weights"] == 0
    assert all(not w["sharded"] for w in m["layouts"]) and len(m["layouts"]) == 8
    # the ceiling on one device and on the mesh; real training on the copy under the mesh
    assert m["ceiling_1_samples_per_s"] > 0 and m["ceiling_n_samples_per_s"] > 0
    assert 0 < m["scaling_efficiency"] <= 1.5
    assert m["training_samples_per_s"] > 0
    # BatchNormalization under SPMD normalises over the global batch: one device and the
    # mesh agree, step for step
    assert m["parity_steps"] == 4
    assert m["parity_max_loss_delta"] < 1e-3 and m["parity_max_weight_delta"] < 1e-3
    # (32*64 + 64) + 4*64 + (64*10 + 10) float32 parameters, 4 bytes each
    memory = m["memory"]
    assert memory["parameter_bytes"] == 4 * (2112 + 256 + 650)
    assert memory["gradient_bytes"] == 4 * (2112 + 128 + 650)  # moving statistics: no gradient
    assert memory["per_replica_batch"] == 8 and memory["step_total_bytes"] > 0
    assert memory["device_source"] == "host RAM"
    assert m["parallelism"].startswith("Fits on one device: data parallel is the right choice.")
    rules = by_rule(report)
    # per-replica batch 8, yet statistics are the global batch's: no PD204; 1,000 validation
    # examples leave a last batch of 8, which splits over 2 devices: no PD201 or PD208
    assert not {"PD201", "PD204", "PD208", "PD211", "PD212", "PD213"} & set(rules), rules
    # the constant batch under the live DataParallel is PD202's, whose fix scales the
    # learning rate too: no PD203 beside it
    (pd202,) = rules["PD202"]
    assert "Global batch 16 is a constant under DataParallel" in pd202["message"]
    assert "len(keras.distribution.list_devices())" in pd202["fix"]
    assert "PD203" not in rules, rules["PD203"]


def test_batch_that_does_not_divide_and_a_model_built_before_the_mesh(checked) -> None:
    report, folder = checked["uneven"]
    m = report["measurements"]
    assert m["replicas"] == 4 and m["distribution"]["devices"] == 4
    assert m["pipeline_samples_per_s"] > 0
    rules = by_rule(report)
    (pd201,) = rules["PD201"]
    assert pd201["line"] == line_of(folder, "model.fit(ds, epochs=1)")
    assert "Global batch 30 does not divide over the 4 devices" in pd201["message"]
    (pd211,) = rules["PD211"]
    assert pd211["severity"] == "error"
    assert pd211["line"] == line_of(
        folder, "keras.distribution.set_distribution(keras.distribution.DataParallel())"
    )
    assert "all 2 of its variables live on cpu:0, not on the 4-device mesh" in pd211["message"]
    failed = [n for n in report["notes"] if n.startswith("training could not be measured")]
    assert failed and "IndivisibleError" in failed[0] and "\n" not in failed[0]
    assert report.get("verdict") is None  # no wrong all-clear
    assert "training were not measured" in m["incomplete"]


def test_model_parallel_layouts_and_layout_map_keys(checked) -> None:
    report, folder = checked["model_parallel"]
    m = report["measurements"]
    mesh = m["distribution"]
    assert mesh["name"] == "ModelParallel" and mesh["shape"] == [2, 2]
    assert mesh["devices"] == 4 and m["replicas"] == 2 and m["per_replica_batch"] == 16
    layouts = {w["path"]: w for w in m["layouts"]}
    assert layouts["sequential/wide/bias"]["axes"] == ["model"]
    assert layouts["sequential/wide/bias"]["sharded"]
    assert not layouts["sequential/wide/kernel"]["sharded"]
    assert not layouts["sequential/head/kernel"]["sharded"]  # its key matches nothing
    assert mesh["per_device_bytes"] == mesh["parameter_bytes"] - 4 * 512 // 2
    assert 0 < m["scaling_efficiency"] <= 1.5  # over the 4 devices
    pd212 = by_rule(report)["PD212"]
    dead = next(f for f in pd212 if "`head/kernel`" in f["message"])
    assert dead["line"] == line_of(folder, 'layout_map["head/kernel"] = (None, "model")')
    assert "`.*head/kernel` would match `sequential/head/kernel`" in dead["message"]
    largest = next(f for f in pd212 if "largest weights" in f["message"])
    assert "`sequential/wide/kernel`" in largest["message"] and "`model`" in largest["message"]
    assert not any("head/output" in f["message"] for f in pd212)  # an output key, not a weight
