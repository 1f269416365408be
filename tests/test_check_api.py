"""`pipedoctor.check(dataset, model)` in-process, on real TensorFlow (CPU) pipelines and models."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

import pipedoctor  # noqa: E402
from pipedoctor.checker import CheckError  # noqa: E402

BATCH = 32


def slow_pipeline(elements: int = 4096) -> tf.data.Dataset:
    """Sequential map whose per-element cost is a fixed sleep: input-bound on any machine."""

    def wait(x):
        time.sleep(0.002)
        return x

    def slow(x, y):
        x = tf.py_function(wait, [x], tf.float32)
        x.set_shape((16,))
        return x, y

    x = np.random.default_rng(0).normal(size=(elements, 16)).astype("float32")
    y = np.zeros((elements,), "int32")
    return tf.data.Dataset.from_tensor_slices((x, y)).map(slow).batch(BATCH)


def fast_pipeline(features: int = 256, batch: int = BATCH) -> tf.data.Dataset:
    x = np.random.default_rng(0).normal(size=(2048, features)).astype("float32")
    y = np.zeros((2048,), "int32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(batch)
    return ds.prefetch(tf.data.AUTOTUNE)


def tiny_model(features: int = 16) -> keras.Model:
    model = keras.Sequential([keras.Input((features,)), keras.layers.Dense(10)])
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def heavy_model(features: int = 256) -> keras.Model:
    layers = [keras.layers.Dense(1024, activation="relu") for _ in range(4)]
    model = keras.Sequential([keras.Input((features,)), *layers, keras.layers.Dense(10)])
    model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def test_slow_sequential_map_is_input_bound() -> None:
    # In process there is no start-up to pay for: the three throughputs take about 7 s, and
    # nothing here depends on what the graph doctor finds in the rest.
    report = pipedoctor.check(slow_pipeline(), tiny_model(), timeout=15)
    m = report.measurements
    assert report.verdict == "input-bound", m
    assert m["pipeline_samples_per_s"] < 0.5 * m["ceiling_samples_per_s"]
    assert report.findings[0].rule == "PD301"  # the verdict's finding leads
    assert report.findings[0].gain is None and report.findings[0].headroom > 2
    assert "will not help" in m["scaling"]


def test_cached_pipeline_with_heavy_model_is_compute_bound() -> None:
    # Large batches: each step is long next to what the cached pipeline costs per batch.
    report = pipedoctor.check(fast_pipeline(batch=256), heavy_model(), timeout=30, devices=8)
    m = report.measurements
    assert report.verdict == "compute-bound", m
    assert m["training_samples_per_s"] >= 0.8 * m["ceiling_samples_per_s"]
    assert all(f.rule != "PD301" for f in report.findings)
    # 8 such devices: the input keeps up; their compute scaling was not measured (one device)
    projection = m["decision"]["projection"]
    assert projection["devices"] == 8 and projection["input_keeps_up_today"] is True
    assert projection["scaling_efficiency_measured"] is None


@pytest.fixture(scope="module")
def trained_tiny_check() -> tuple[keras.Model, dict, pipedoctor.Report]:
    """One check of the fast pipeline on a tiny model that has trained a little (so that its
    optimizer state exists and is non-trivial), with the model's state from before the check:
    what the model-safety test and the report-keys test each assert on."""
    model = tiny_model()
    model.fit(fast_pipeline(16).take(2), verbose=0, shuffle=False)
    before = {
        "weights": [w.copy() for w in model.get_weights()],
        "optimizer": [v.numpy().copy() for v in model.optimizer.variables],
        "config": json.dumps(model.get_compile_config(), sort_keys=True, default=str),
    }
    report = pipedoctor.check(fast_pipeline(16), model, timeout=12)
    return model, before, report


def test_the_users_model_is_never_changed(trained_tiny_check) -> None:
    model, before, _ = trained_tiny_check
    assert all(
        np.array_equal(a, b) for a, b in zip(before["weights"], model.get_weights(), strict=True)
    )
    after = [v.numpy() for v in model.optimizer.variables]
    assert all(np.array_equal(a, b) for a, b in zip(before["optimizer"], after, strict=True))
    assert json.dumps(model.get_compile_config(), sort_keys=True, default=str) == before["config"]


class Scale(keras.layers.Layer):
    """A custom layer whose constructor takes an argument and that has no ``get_config``."""

    def __init__(self, factor: float) -> None:
        super().__init__()
        self.factor = factor

    def call(self, x):
        return x * self.factor


class OwnStep(keras.Model):
    """A model with its own ``train_step``, as the Keras guide writes one."""

    def train_step(self, data):
        x, y = data
        with tf.GradientTape() as tape:
            loss = self.compute_loss(y=y, y_pred=self(x, training=True))
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply(grads, self.trainable_variables)
        return {"loss": loss}


def test_a_model_that_cannot_be_copied_is_measured_in_place_and_put_back() -> None:
    inputs = keras.Input((16,))
    outputs = keras.layers.Dense(10)(Scale(2.0)(inputs))
    model = OwnStep(inputs, outputs)
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(fast_pipeline(16).take(2), verbose=0)  # optimizer slots exist
    weights = [w.copy() for w in model.get_weights()]
    optimizer_state = [v.numpy().copy() for v in model.optimizer.variables]
    report = pipedoctor.check(fast_pipeline(16), model, timeout=12)
    m = report.measurements
    assert m["measured_in_place"] is True
    assert m["ceiling_samples_per_s"] > 0 and m["training_samples_per_s"] > 0
    (note,) = [n for n in report.notes if n.startswith("cannot copy the model")]
    assert "measured in place" in note and "Full object config" not in note
    assert all(np.array_equal(a, b) for a, b in zip(weights, model.get_weights(), strict=True))
    after = [v.numpy() for v in model.optimizer.variables]
    assert all(np.array_equal(a, b) for a, b in zip(optimizer_state, after, strict=True))


@pytest.mark.parametrize("wrong", [[1, 2, 3], None, np.zeros((4, 2))])
def test_anything_but_a_dataset_is_a_type_error_in_one_line(wrong) -> None:
    with pytest.raises(TypeError, match=r"^check\(\) needs a tf.data.Dataset, got "):
        pipedoctor.check(wrong, timeout=5)


def test_pipeline_only_without_a_model() -> None:
    report = pipedoctor.check(fast_pipeline(16), timeout=8)
    m = report.measurements
    assert m["pipeline_samples_per_s"] > 0
    assert m["ceiling_samples_per_s"] is None and report.verdict is None
    assert any("only the input pipeline" in n for n in report.notes)
    assert m["gpus"] == [] and m["gpu_note"] == "no NVIDIA GPU visible: GPU sampling skipped"


def test_a_short_finite_dataset_is_repeated_and_said_so() -> None:
    x = np.zeros((64, 16), "float32")
    report = pipedoctor.check(tf.data.Dataset.from_tensor_slices(x).batch(8), timeout=5)
    assert report.measurements["pipeline_samples_per_s"] > 0
    assert any("finite (8 batches)" in n for n in report.notes)


def test_a_dataset_that_raises_gets_a_clear_error() -> None:
    def explode(x):
        tf.debugging.assert_less(x, tf.constant(10, tf.int64))
        return x

    ds = tf.data.Dataset.range(100).map(explode).batch(4)
    with pytest.raises(CheckError, match="the dataset raised while iterating") as raised:
        pipedoctor.check(ds, timeout=5)
    message = str(raised.value)  # one line: TensorFlow's own traceback is not in it
    assert "\n" not in message and "Traceback" not in message and len(message) < 400, message


def test_an_uncompiled_model_is_refused_with_a_reason() -> None:
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(1)])
    with pytest.raises(CheckError, match="not compiled"):
        pipedoctor.check(fast_pipeline(16), model, timeout=8)


def test_report_json_has_the_check_keys(trained_tiny_check) -> None:
    _, _, report = trained_tiny_check
    data = json.loads(report.to_json())
    assert data["version"] == 1 and data["verdict"] in ("input-bound", "compute-bound", "balanced")
    for key in (
        "pipeline_samples_per_s", "ceiling_samples_per_s", "training_samples_per_s",
        "replicas", "host_cpu_percent", "gpus",
    ):  # fmt: skip
        assert key in data["measurements"], key
    assert data["measurements"]["replicas"] == 1
    assert "<div" in report._repr_html_() and data["verdict"] in report._repr_html_()
