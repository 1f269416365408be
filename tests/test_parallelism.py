"""The Keras distribution rules on the facts both front ends fill, the data- or model-parallel
decision from memory figures (host RAM and NVML's readings), and the post-import hook.

The live checks that fill these facts from real JAX meshes are in test_keras_distribution.py.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from pipedoctor import diagnosis
from pipedoctor.capture.imports import after_import
from pipedoctor.measure.memory import device_memory
from pipedoctor.measure.samplers import (
    GpuReport,
    GpuSample,
    HostReport,
    summarize_gpus,
    to_measurements,
)
from pipedoctor.pipeline import Analysis, Location, TrainingSetup
from pipedoctor.rules import Selection, run_rules

NVML_SAMPLES = Path(__file__).parent / "data" / "nvml_samples.json"
GIB = 2**30
WHERE = Location("train.py", 7)
FIT = Location("train.py", 30)


def findings(setup: TrainingSetup, rule: str, params: dict | None = None) -> list:
    selection = Selection(select=(rule,), params={rule: params} if params else {})
    return list(run_rules(Analysis("train.py", training=setup), "runtime", selection))


def keras_setup(name: str = "DataParallel", replicas: int = 2, **mesh) -> TrainingSetup:
    setup = TrainingSetup()
    setup.add(
        "distribution", WHERE, api="keras", name=name, replicas=replicas, batch_axis="batch",
        devices=mesh.get("devices", replicas),
    )  # fmt: skip
    return setup


# --- one device's memory -------------------------------------------------------------------------


def test_cpu_device_memory_is_the_hosts_ram() -> None:
    psutil = pytest.importorskip("psutil")
    assert device_memory("cpu", {}) == (psutil.virtual_memory().total, "host RAM")


def nvml_measurements() -> dict:
    """The sampler's report from synthetic NVML readings shaped like two A100-SXM4-40GB."""
    doc = json.loads(NVML_SAMPLES.read_text())
    samples = [GpuSample(**s) for s in doc["samples"]]
    names = {int(k): v for k, v in doc["names"].items()}
    gpus = GpuReport(available=True, devices=summarize_gpus(samples, names))
    return to_measurements(gpus, HostReport(available=True))


def test_gpu_device_memory_is_nvmls_total_of_the_smallest_gpu() -> None:
    measurements = nvml_measurements()
    totals = [g["memory_total_mb"] for g in measurements["gpus"]]
    assert device_memory("gpu", measurements) == (int(min(totals) * 2**20), "GPU memory (NVML)")
    assert device_memory("gpu", {"gpus": []}) is None  # no NVML reading: no figure, no guess


# --- the decision, both ways ---------------------------------------------------------------------


def memory(parameters: float, device: int, **extra) -> dict:
    return {
        "parameter_bytes": int(parameters),
        "gradient_bytes": int(parameters),
        "optimizer_bytes": int(2 * parameters),
        "largest": [
            {"path": "decoder/embedding/embeddings", "bytes": int(parameters * 0.6)},
            {"path": "decoder/dense/kernel", "bytes": int(parameters * 0.3)},
        ],
        "per_replica_batch": 16,
        "device_bytes": device,
        "device_source": "GPU memory (NVML)",
        **extra,
    }


def test_a_model_that_fits_on_one_nvml_gpu() -> None:
    device, _ = device_memory("gpu", nvml_measurements())
    figures = memory(1 * GIB, device, step_temp_bytes=3 * GIB, step_total_bytes=7 * GIB)
    decision = diagnosis.parallelism(figures)
    assert decision["fits"] and decision["need_bytes"] == 7 * GIB  # the compiler's total
    sentence = diagnosis.parallelism_sentence(figures)
    assert sentence.startswith("Fits on one device: data parallel is the right choice.")
    assert "per-replica batch of 16 needs 7.0 GB as XLA compiles it" in sentence
    assert "parameters 1.0 GB, gradients 1.0 GB, optimizer state 2.0 GB" in sentence
    assert "activations and workspace 3.0 GB" in sentence
    assert f"{7 * GIB / device:.1%} of one device's 40.0 GB of GPU memory (NVML)" in sentence


def test_a_model_that_does_not_fit_names_its_largest_weights() -> None:
    device, _ = device_memory("gpu", nvml_measurements())
    figures = memory(12 * GIB, device)  # no compiler figures: parameters+gradients+optimizer
    decision = diagnosis.parallelism(figures)
    assert decision["fits"] is False and decision["need_bytes"] == 48 * GIB
    sentence = diagnosis.parallelism_sentence(figures)
    assert sentence.startswith(
        "Does not fit on one device: shard it with ModelParallel; these weights are the "
        "largest: `decoder/embedding/embeddings` (7.2 GB, 60%), `decoder/dense/kernel` (3.6 GB, "
        "30%)."
    )
    assert "needs at least 48.0 GB" in sentence and "activations unknown" in sentence
    assert "over 90% of one device's 40.0 GB" in sentence


def test_the_threshold_is_pd213s_parameter() -> None:
    figures = memory(1 * GIB, 10 * GIB, step_total_bytes=8 * GIB)
    assert diagnosis.parallelism(figures)["fits"] is True  # 80% of the device
    assert diagnosis.parallelism(figures, {"memory_fraction": 0.75})["fits"] is False
    assert diagnosis.parallelism({**figures, "device_bytes": None})["fits"] is None
    assert diagnosis.parallelism_sentence({**figures, "device_bytes": None}) == ""


# --- PD213 model-does-not-fit --------------------------------------------------------------------


def test_pd213_fires_when_data_parallelism_cannot_hold_the_model() -> None:
    setup = keras_setup()
    setup.add("memory", FIT, **memory(12 * GIB, 40 * GIB))
    (finding,) = findings(setup, "PD213")
    assert finding.line == WHERE.line  # the set_distribution call
    assert finding.message.startswith("Does not fit on one device")
    setup = keras_setup()
    setup.add("memory", FIT, **memory(1 * GIB, 40 * GIB))
    assert findings(setup, "PD213") == []


def test_pd213_leaves_a_model_parallel_job_to_pd212() -> None:
    setup = keras_setup("ModelParallel")
    setup.add("memory", FIT, **memory(12 * GIB, 40 * GIB))
    assert findings(setup, "PD213") == []


# --- PD211 set-distribution-after-build ----------------------------------------------------------


def test_pd211_from_live_variables_points_at_set_distribution() -> None:
    setup = keras_setup(replicas=4)
    setup.add(
        "built_before_distribution", FIT, what="model", count=2, total=2,
        held_on=["cpu:0"], mesh_devices=4,
    )  # fmt: skip
    (finding,) = findings(setup, "PD211")
    assert (finding.line, finding.severity.label) == (WHERE.line, "error")
    assert "after the model was built: all 2 of its variables live on cpu:0" in finding.message


def test_pd211_from_the_order_in_the_source() -> None:
    setup = keras_setup()
    setup.add("built_before_distribution", Location("train.py", 3), what="optimizer")
    (finding,) = findings(setup, "PD211")
    assert finding.line == WHERE.line
    assert "after the optimizer was built: it is built on line 3" in finding.message
    assert findings(keras_setup(), "PD211") == []


# --- PD212 layout-map-misses ---------------------------------------------------------------------


def model_parallel(weights: list[tuple[str, int, bool]]) -> TrainingSetup:
    setup = keras_setup("ModelParallel")
    setup.add("mesh", WHERE, name="ModelParallel", model_axes=["model"])
    for path, size, sharded in weights:
        setup.add("weight", None, path=path, bytes=size, sharded=sharded)
    return setup


def test_pd212_a_key_that_matches_no_weight() -> None:
    setup = model_parallel([("sequential/d1/kernel", 800, True), ("sequential/d1/bias", 8, False)])
    setup.add(
        "layout_key", Location("train.py", 12), key="d2/kernel", placed=[],
        meant=["sequential/d2/kernel"],
    )  # fmt: skip
    setup.add("layout_key", Location("train.py", 13), key="d9/bias", placed=[], meant=[])
    setup.add("layout_key", Location("train.py", 14), key=".*d1/kernel", placed=["x"])
    dead, leftover = findings(setup, "PD212")
    assert (dead.line, dead.severity.label) == (12, "warning")
    assert "`.*d2/kernel` would match `sequential/d2/kernel`" in dead.message
    assert (leftover.line, leftover.severity.label) == (13, "info")


def test_pd212_the_largest_weights_replicated() -> None:
    weights = [("emb", 600, False), ("dense", 300, True), ("head", 100, False)]
    (finding,) = findings(model_parallel(weights), "PD212")
    assert finding.line == WHERE.line and "`emb` (600 B, 60%)" in finding.message
    assert "`head`" not in finding.message  # not among the weights holding half the bytes
    assert findings(model_parallel(weights), "PD212", {"largest_share": 0.0}) == []
    sharded = [("emb", 600, True), ("dense", 300, True), ("head", 100, False)]
    assert findings(model_parallel(sharded), "PD212") == []


def test_pd212_needs_a_model_axis() -> None:
    setup = keras_setup("ModelParallel")
    setup.add("mesh", WHERE, name="ModelParallel", model_axes=[])
    setup.add("weight", None, path="emb", bytes=600, sharded=False)
    assert findings(setup, "PD212") == []


# --- PD201, PD204, PD208 under the Keras distribution --------------------------------------------


def test_pd201_last_batches_that_cannot_split() -> None:
    setup = keras_setup()
    setup.add("global_batch", FIT, value=64, replicas=2)
    setup.add("last_batch", FIT, examples=1003, global_batch=64, size=43)
    setup.add("evaluation", FIT, examples=1000, global_batch=64)  # last 40: splits over 2
    (finding,) = findings(setup, "PD201")
    assert "The training data has 1,003 examples: in batches of 64 the last holds 43" in (
        finding.message
    )
    assert "fails at the end of the first epoch" in finding.message
    assert "drop_remainder=True" in finding.fix


def test_pd204_and_pd208_do_not_apply_under_spmd() -> None:
    setup = keras_setup()
    setup.add("strategy", FIT, name="DataParallel", multi=True, api="keras")
    setup.add("replicas", FIT, count=2)
    setup.add("batch", FIT, value=8, per_replica=4, live=True)
    setup.add("batchnorm", FIT, frozen=False, synchronized=True)  # global-batch statistics
    setup.add("evaluation", FIT, examples=1001, global_batch=8)
    assert findings(setup, "PD204") == [] and findings(setup, "PD208") == []


# --- hooks put in place after the script's own import --------------------------------------------


def test_after_import_runs_once_the_module_is_imported(tmp_path, monkeypatch) -> None:
    (tmp_path / "late_module.py").write_text("VALUE = 41\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []
    after_import("late_module", lambda module: seen.append(module.VALUE + 1))
    assert seen == [] and "late_module" not in sys.modules
    import late_module  # noqa: F401

    assert seen == [42]
    after_import("late_module", lambda module: seen.append(module.VALUE))  # already imported
    assert seen == [42, 41]
    del sys.modules["late_module"]


# --- how the mesh reads in the report ------------------------------------------------------------


def test_distribution_and_scaling_lines_name_the_mesh() -> None:
    from pipedoctor.render.text import distribution_line, scaling_line

    mesh = {
        "name": "ModelParallel", "devices": 8, "shape": [2, 4], "axis_names": ["data", "model"],
        "batch_axis": "data", "replicas": 2, "platform": "gpu", "weights": 4,
        "sharded_weights": 0, "parameter_bytes": 4096,
    }  # fmt: skip
    measurements = {"distribution": mesh, "per_replica_batch": 64.0, "replicas": 2}
    assert distribution_line(measurements) == (
        "ModelParallel over 8 gpu devices (mesh 2 x 4: data 2, model 4); batch axis `data`: "
        "2 replicas of 64 examples; all 4 weights replicated"
    )
    mesh.update(sharded_weights=1, sharded_bytes=3072, per_device_bytes=1792)
    assert distribution_line(measurements).endswith(
        "; 1 of 4 weights sharded (75% of 4.0 KB; 1.8 KB per device)"
    )
    measurements.update(
        scaling_efficiency=0.5, ceiling_1_samples_per_s=100.0, ceiling_n_samples_per_s=400.0
    )
    assert scaling_line(measurements) == "50% on 8 devices (ceiling: 100 on 1 device, 400 on 8)"
    assert distribution_line({"replicas": 2}) is None  # tf.distribute: no mesh line
