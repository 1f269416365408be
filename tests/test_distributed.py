"""Multi-replica checks on logical CPU devices standing in for GPUs (real MirroredStrategy)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

SCRIPT = """\
import keras
import numpy as np
import tensorflow as tf

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * {n})
strategy = tf.distribute.MirroredStrategy([f"/cpu:{{i}}" for i in range({n})])

x = np.random.default_rng(0).normal(size=(2048, 32)).astype("float32")
y = np.zeros((2048,), "int32")
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch({batch}).prefetch(tf.data.AUTOTUNE)
val = tf.data.Dataset.from_tensor_slices((x[:1003], y[:1003])).batch({batch})
with strategy.scope():
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(64), {norm}keras.layers.Dense(10)]
    )
    model.compile(keras.optimizers.SGD(0.01), keras.losses.SparseCategoricalCrossentropy(True))
model.fit(ds, epochs=1, validation_data=val)
"""


def check(tmp_path: Path, replicas: int, batch: int, norm: bool = True, code: int = 0) -> dict:
    """The check's report on the job. Its 32 s hold start-up and every throughput (both
    ceilings, the parity run, training: about 14 s on 2 or 4 replicas); nothing here is
    asserted of the input pipeline's rules, so only the setup and measured ones are selected
    and the graph doctor times nothing."""
    script = tmp_path / "train.py"
    layer = "keras.layers.BatchNormalization(), " if norm else ""
    script.write_text(SCRIPT.format(n=replicas, batch=batch, norm=layer))
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", "train.py", "--format", "json",
         "--timeout", "32", "-q", "--select", "PD2,PD3"],
        capture_output=True, text=True, cwd=tmp_path, timeout=150,
    )  # fmt: skip
    assert done.returncode == code, done.stderr[-3000:]
    return json.loads(done.stdout)


@pytest.mark.parametrize("replicas", [2, 4])
def test_replicas_scaling_and_setup_rules(tmp_path: Path, replicas: int) -> None:
    batch = 8 * replicas  # 8 examples per replica: too few for BatchNormalization statistics
    report = check(tmp_path, replicas, batch)
    m = report["measurements"]
    assert m["replicas"] == replicas and m["strategy"] == "MirroredStrategy"
    assert m["per_replica_batch"] == 8
    assert 0 < m["scaling_efficiency"] <= 1.5
    assert m["ceiling_1_samples_per_s"] > 0 and m["ceiling_n_samples_per_s"] > 0
    assert m["projected_samples_per_s"] > 0
    rules = {f["rule"] for f in report["findings"]}
    # the constant batch is PD202's, whose fix scales the learning rate too: no PD203
    assert {"PD202", "PD204", "PD208"} <= rules and not {"PD201", "PD203"} & rules, rules
    # The measured rules judge these real measurements: each fires exactly when its figure
    # crosses its parameter (rules/PD304..PD306).
    assert ("PD305" in rules) == (m["scaling_efficiency"] < 0.7), m["scaling_efficiency"]
    assert ("PD304" in rules) == (m["step_ms"]["ceiling"] < 5.0), m["step_ms"]
    # BatchNormalization over 8 examples per replica against 8 x replicas on one device: the
    # statistics differ, so the copies diverge beyond float reordering (PD306's positive case).
    assert max(m["parity_max_loss_delta"], m["parity_max_weight_delta"]) > 1e-3, m
    pd306 = next(f for f in report["findings"] if f["rule"] == "PD306")
    assert "On the same 4 batches from the same weights" in pd306["message"]
    pd208 = next(f for f in report["findings"] if f["rule"] == "PD208")
    assert (
        f"1,003 examples: in global batches of {batch} over {replicas} replicas"
        in (pd208["message"])
    )
    assert f"the last batch holds {1003 % batch}" in pd208["message"]


def test_uneven_batch_gets_a_finding_instead_of_a_crash(tmp_path: Path) -> None:
    # The copy's training step fails: the report says why, and the exit code says the check
    # is incomplete (2), so no CI job takes it for a diagnosis.
    report = check(tmp_path, 2, 17, code=2)
    pd201 = next(f for f in report["findings"] if f["rule"] == "PD201")
    assert "Global batch 17 does not divide across 2 replicas" in pd201["message"]
    lines = (tmp_path / "train.py").read_text().splitlines()
    fit_line = 1 + lines.index("model.fit(ds, epochs=1, validation_data=val)")
    assert pd201["path"] == "train.py" and pd201["line"] == fit_line
    assert report["measurements"]["pipeline_samples_per_s"] > 0
    failed = [n for n in report["notes"] if n.startswith("training could not be measured")]
    assert failed and "\n" not in failed[0]
    assert report["measurements"]["incomplete"].startswith("the ceiling and the training were")


def test_parity_on_a_tiny_slice(tmp_path: Path) -> None:
    report = check(tmp_path, 2, 32, norm=False)
    m = report["measurements"]
    assert m["parity_steps"] == 4
    assert m["parity_max_loss_delta"] < 1e-3  # float reordering only
    assert m["parity_max_weight_delta"] < 1e-3
    assert "PD306" not in {f["rule"] for f in report["findings"]}
