"""Training timed on the pipeline with its best fix (a shared host), on real tf.data and Keras."""

from __future__ import annotations

import time

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from pipedoctor.graph.doctor import diagnose  # noqa: E402
from pipedoctor.measure.fixed_training import (  # noqa: E402
    best_fix,
    measure_training_with_fix,
)
from pipedoctor.report import Severity  # noqa: E402


def features(x):
    """Costly deterministic maths per element: what a cache saves every epoch after the first."""
    signal = tf.sin(tf.cast(tf.range(128), tf.float32) * tf.cast(x, tf.float32) / 128.0)
    for _ in range(6):
        signal = tf.abs(tf.signal.rfft(tf.concat([signal, signal], 0)))[:128]
    return signal, tf.cast(x % 2, tf.float32)


def model() -> keras.Model:
    net = keras.Sequential([keras.Input((128,)), keras.layers.Dense(1)])
    net.compile(optimizer="sgd", loss="mse")
    return net


def test_the_best_fix_is_timed_in_training_and_its_gain_is_the_measured_one() -> None:
    ds = tf.data.Dataset.range(512).map(features).batch(32)
    graph = diagnose(ds, time.perf_counter() + 25, free_ram_bytes=2 * 10**9)
    found = best_fix(graph)
    assert found is not None and found[0].rule == "PD106"  # the cache gains the most
    slow = 100.0  # the training rate measured before, as a shared host would have it
    measurements = {"training_samples_per_s": slow, "batch_size": 32}
    notes = measure_training_with_fix(ds, model(), graph, measurements, time.perf_counter() + 20)
    entry = found[1]
    assert entry["end_to_end_measured"] and entry["training_samples_per_s"] > slow
    # the gain is rounded from the rate before the rate itself is rounded to 0.1 samples/s
    gain = entry["training_samples_per_s"] / slow
    assert entry["end_to_end_gain"] == pytest.approx(gain, abs=0.006)
    (finding,) = [f for f in graph.findings if f.rule == "PD106"]
    assert finding.end_to_end_gain == entry["end_to_end_gain"]
    assert finding.severity is Severity.WARNING  # measured to pay for training
    assert len(notes) == 1 and "training with `cache()`" in notes[0]
    assert measurements["training_with_fix_samples_per_s"] == entry["training_samples_per_s"]


def test_nothing_is_timed_where_no_fix_was_applied() -> None:
    ds = tf.data.Dataset.from_tensor_slices(tf.zeros((256, 128))).batch(32).prefetch(2)
    graph = diagnose(ds, time.perf_counter() + 8, free_ram_bytes=2 * 10**9)
    assert best_fix(graph) is None
    measurements = {"training_samples_per_s": 100.0, "batch_size": 32}
    notes = measure_training_with_fix(ds, model(), graph, measurements, time.perf_counter() + 5)
    assert notes == [] and not any(
        e.get("end_to_end_measured") for e in graph.measurements.get("whatif") or []
    )
