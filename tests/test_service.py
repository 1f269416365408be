"""Offloading to tf.data service, measured with a real dispatcher and real worker processes."""

from __future__ import annotations

import time

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipedoctor.measure.service import measure_service, within  # noqa: E402
from pipedoctor.pipeline import Analysis  # noqa: E402
from pipedoctor.rules import ALL_RULES, only, run_rules  # noqa: E402


def test_a_pipeline_is_timed_through_local_service_workers() -> None:
    images = np.random.default_rng(0).integers(0, 255, (256, 16, 16, 3), dtype=np.uint8)
    dataset = (
        tf.data.Dataset.from_tensor_slices(images)
        .map(lambda x: tf.image.resize(x, (24, 24)), num_parallel_calls=2)
        .batch(16)
    )
    result = measure_service(dataset, True, time.perf_counter() + 60, workers=1)
    assert "note" not in result, result
    assert result["workers"] == 1
    assert result["samples_per_s"] > 0 and result["local_samples_per_s"] > 0


def test_a_pipeline_the_service_cannot_run_gets_a_note() -> None:
    def in_python(x):
        return x + 1

    dataset = (
        tf.data.Dataset.range(1000).map(lambda x: tf.py_function(in_python, [x], tf.int64)).batch(8)
    )
    result = measure_service(dataset, True, time.perf_counter() + 60, workers=1)
    assert result["note"].startswith("not measured: the pipeline calls Python")


def test_host_cpu_finding_quotes_the_service_measurement() -> None:
    measurements = {
        "pipeline_samples_per_s": 900.0, "ceiling_samples_per_s": 5000.0,
        "training_samples_per_s": 850.0, "host_cpu_percent": 97.0,
        "data_service": {"workers": 2, "samples_per_s": 720.0, "local_samples_per_s": 900.0},
    }  # fmt: skip
    (finding,) = run_rules(Analysis("<job>"), "runtime", only(ALL_RULES, "PD302"), measurements)
    assert "2 local tf.data service workers delivered 720 samples/s against 900" in finding.message
    assert "(x0.80)" in finding.message


def test_work_that_stops_answering_is_left_behind_not_waited_for() -> None:
    started = time.perf_counter()
    assert within(lambda: time.sleep(30), 0.3) == (False, None)
    assert time.perf_counter() - started < 5
    assert within(lambda: 42, 5) == (True, 42)
    with pytest.raises(ZeroDivisionError):
        within(lambda: 1 / 0, 5)
