"""Decisions from measured figures: devices fed, the host's share, N devices, the whole run."""

from __future__ import annotations

from pipedoctor.checker import build_report
from pipedoctor.decide import decide, duration, next_step, shared_host
from pipedoctor.render.text import render_text, run_line
from pipedoctor.rules import ALL_RULES

INPUT_BOUND = {
    "pipeline_samples_per_s": 2023.0,
    "ceiling_samples_per_s": 15981.0,
    "training_samples_per_s": 1850.0,
    "fixed_pipeline_samples_per_s": 278771.0,
    "batch_size": 64,
    "replicas": 1,
    "cardinality": 16,
    "pipeline_cpu_s_per_sample": 0.0008,
    "host": {"cpu_count": 2},
    "fit": {"epochs": 3, "steps_per_epoch": None},
}


def test_devices_fed_is_the_pipeline_over_one_devices_step() -> None:
    d = decide(INPUT_BOUND)
    assert d["devices_fed_today"] == round(2023 / 15981, 2) == 0.13
    assert d["devices_fed_with_fixes"] == round(278771 / 15981, 2)
    host = d["host"]
    assert host["max_samples_per_s"] == 2500.0  # 2 cores / 0.8 ms of CPU per sample
    assert host["devices_fed"] == round(2500 / 15981, 2)
    assert host["cores_for_8_devices"] == round(8 * 15981 * 0.0008, 1)
    assert set(d["derivation"]) >= {"devices_fed_today", "host", "run"}


def test_a_multi_replica_job_is_judged_by_its_one_device_ceiling() -> None:
    m = {**INPUT_BOUND, "replicas": 2, "ceiling_samples_per_s": 30000.0}
    assert "devices_fed_today" not in decide(m)  # no one-device figure: nothing assumed
    m["ceiling_1_samples_per_s"] = 16000.0
    m["scaling_efficiency"] = 0.94
    d = decide(m, devices=8)
    assert d["devices_fed_today"] == round(2023 / 16000, 2)
    assert d["projection"]["scaling_efficiency_measured"] == {"replicas": 2, "value": 0.94}


def test_eight_devices_on_a_compute_bound_job_have_their_input() -> None:
    compute_bound = {
        **INPUT_BOUND,
        "pipeline_samples_per_s": 400000.0,
        "fixed_pipeline_samples_per_s": None,
        "training_samples_per_s": 15000.0,
    }
    projection = decide(compute_bound, devices=8)["projection"]
    assert projection["input_needed_samples_per_s"] == round(8 * 15981)
    assert projection["input_keeps_up_today"] is True
    assert projection["scaling_efficiency_measured"] is None  # one device seen: not measured
    text = render_text(build_report(compute_bound, [], ALL_RULES, devices=8))
    assert (
        "On N devices: 8 devices take 127,848 samples/s of input; today's pipeline keeps up" in text
    )
    assert "compute scaling not measured" in text


def test_the_whole_run_and_one_device_enough() -> None:
    d = decide(INPUT_BOUND)
    assert d["run"] == {"known": True, "epochs": 3, "steps_per_epoch": 16, "samples": 3072,
                        "seconds": round(3072 / 1850, 1)}  # fmt: skip
    report = build_report(INPUT_BOUND, [], ALL_RULES)
    (pd320,) = [f for f in report.findings if f.rule == "PD320"]
    assert "takes about 2 s at the measured 1,850 samples/s" in pd320.message
    assert "8 devices would save at most 1 s" in pd320.message
    long_run = {**INPUT_BOUND, "fit": {"epochs": 100, "steps_per_epoch": 20000}}
    assert not [f for f in build_report(long_run, [], ALL_RULES).findings if f.rule == "PD320"]


def test_a_run_without_an_end_says_so_instead_of_guessing() -> None:
    endless = {**INPUT_BOUND, "cardinality": None}
    run = decide(endless)["run"]
    assert run["known"] is False and "steps_per_epoch" in run["why"]
    report = build_report(endless, [], ALL_RULES)
    assert "PD320" not in {f.rule for f in report.findings}
    assert "Whole run: length unknown: the dataset's length is not known" in render_text(report)


def test_durations_read_at_a_glance() -> None:
    assert [duration(s) for s in (42, 720, 12240)] == ["42 s", "12 min", "3.4 h"]
    assert [duration(s) for s in (0.0, 0.4, 0.99)] == ["under a second"] * 3  # never "0 s"
    assert duration(42, about=True) == "about 42 s"
    assert duration(0.3, about=True) == "under a second"  # not "about under a second"


def test_a_run_shorter_than_a_second_reads_as_such() -> None:
    measurements = {
        "training_samples_per_s": 3_000.0,
        "decision": {"run": {"known": True, "epochs": 1, "steps_per_epoch": 4, "samples": 256,
                             "seconds": 0.08}},
    }  # fmt: skip
    line = run_line(measurements)
    assert line == "1 epoch x 4 steps (256 samples): under a second at the measured 3,000 samples/s"


def test_the_next_step_follows_input_then_precision_then_devices() -> None:

    assert next_step(INPUT_BOUND, "input-bound").startswith("step 1 of 3, fix the input")
    on_gpu = {**INPUT_BOUND, "gpus": [{"index": 0}], "mixed_precision": "float32"}
    assert next_step(on_gpu, "compute-bound").startswith("step 2 of 3, mixed precision")
    mixed = {**on_gpu, "mixed_precision": "mixed_float16"}
    assert next_step(mixed, "compute-bound").startswith("step 3 of 3, more devices")
    assert "no GPU was seen" in next_step(INPUT_BOUND, "compute-bound")
    text = render_text(build_report(INPUT_BOUND, [], ALL_RULES))
    assert "Next step: step 1 of 3, fix the input pipeline" in text


def test_a_shared_host_is_its_own_step_with_the_cores_it_needs() -> None:
    """Pipeline and model each fast enough alone, training at 64% of the ceiling on 2 busy
    cores: the step is the host, not the pipeline, unless a fix measured a gain for training."""
    shared = {
        "pipeline_samples_per_s": 267_281.0,
        "ceiling_samples_per_s": 8_235.0,
        "training_samples_per_s": 5_236.0,
        "host_cpu_percent": 93.0,
        "host": {"cpu_count": 2},
    }
    found = shared_host(shared)
    assert found is not None and found["busy_cores"] == 1.9 and found["cores_needed"] == 2.9
    step = next_step(shared, "balanced", 1.0)
    assert step.startswith("step 1 of 3, free the host") and "needs about 2.9" in step
    assert "fix the input pipeline" not in step
    paying = next_step(shared, "balanced", 1.6)
    assert paying.startswith("step 1 of 3, fix the input pipeline") and "x1.60" in paying
    slow_pipeline = {**shared, "pipeline_samples_per_s": 5_500.0}
    assert shared_host(slow_pipeline) is None
    assert next_step(slow_pipeline, "balanced", 1.0).startswith("step 1 of 3, fix the input")
