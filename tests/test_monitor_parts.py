"""The monitor's parts without TensorFlow: rules on epoch records, worker names, record files,
time series, charts and the standalone HTML page."""

from __future__ import annotations

import json
import random
import re
import time
from array import array
from dataclasses import replace
from pathlib import Path

import pytest

from pipedoctor.checker import build_report
from pipedoctor.measure.samplers import SampleSeries
from pipedoctor.measure.timeline import PhaseTimeline, binned
from pipedoctor.monitor import lines
from pipedoctor.monitor.records import (
    FINISHED,
    RUNNING,
    make_record,
    read_job,
    record_path,
    write_record,
)
from pipedoctor.monitor.steps import Call, Sampler
from pipedoctor.monitor.tally import RunTally
from pipedoctor.monitor.worker import from_tf_config
from pipedoctor.render import render
from pipedoctor.render.charts import heatmap, line_chart, nice_step, phase_chart
from pipedoctor.report import Finding, Severity
from pipedoctor.rules import ALL_RULES


def epoch(n: int, rate: float, wait: float | None = 0.05, ci: float = 0.02, **extra) -> dict:
    return {"epoch": n, "steps": 50, "samples_per_s": rate, "input_wait_fraction": wait,
            "input_wait_ci": ci, **extra}  # fmt: skip


def rules_on(measurements: dict) -> dict[str, list[str]]:
    report = build_report(measurements, [], ALL_RULES)
    found: dict[str, list[str]] = {}
    for finding in report.findings:
        found.setdefault(finding.rule, []).append(finding.message)
    return found


# --- rules on a run's epochs ------------------------------------------------------------------


def test_pd315_drift_names_the_slow_epoch_and_whether_the_input_slowed() -> None:
    slowed = [epoch(1, 2000), epoch(2, 2050), epoch(3, 1980), epoch(4, 1100, wait=0.06)]
    (message,) = rules_on({"epochs": slowed})["PD315"]
    assert message.startswith("Epoch 4 trained at 1,100 samples/s against 2,000 in epochs 1-3")
    assert "the steps themselves slowed" in message
    starved = slowed[:3] + [epoch(4, 1100, wait=0.55)]
    assert "Its input wait rose from 5% to 55%" in rules_on({"epochs": starved})["PD315"][0]
    steady = [epoch(1, 2000), epoch(2, 1800), epoch(3, 2100)]
    assert "PD315" not in rules_on({"epochs": steady})
    short = [epoch(1, 2000), {**epoch(2, 500), "steps": 3}]
    assert "PD315" not in rules_on({"epochs": short})


def test_pd315_holds_a_drop_to_the_noise_of_each_epoch_and_between_epochs() -> None:
    """A run's rates jump between epochs on a shared host: a drop past the ``drop`` threshold
    is no drift while the epochs' own intervals, or how far the earlier epochs strayed, cover
    it; the message gives the intervals it beat."""
    wide = [
        {**epoch(1, 2000), "samples_per_s_ci": 0.2},
        {**epoch(2, 1400), "samples_per_s_ci": 0.2},
    ]
    assert "PD315" not in rules_on({"epochs": wide})  # 30% slower, within ±20% + ±20%
    jumpy = [epoch(1, 2000), epoch(2, 1400), epoch(3, 2100), epoch(4, 1450)]
    assert "PD315" not in rules_on({"epochs": jumpy})  # 28% slower; epoch 2 strayed 30%
    # (and epoch 2 against epoch 1 alone: without intervals no noise was measured)
    narrow = [{**e, "samples_per_s_ci": 0.03} for e in wide]
    (message,) = rules_on({"epochs": narrow})["PD315"]
    assert message.startswith("Epoch 2 trained at 1,400 ±3% samples/s against 2,000 ±3%")
    steady = [epoch(1, 2000), epoch(2, 2100), epoch(3, 1950), epoch(4, 1300)]
    assert (
        "they strayed 5% from it), 35% slower, beyond that noise"
        in (rules_on({"epochs": steady})["PD315"][0])
    )


def test_an_epochs_rate_interval_widens_with_the_spread_of_its_steps() -> None:
    def record(jitter: float) -> dict:
        rng, tally, t = random.Random(1), RunTally(0.0), 0.0
        tally.begin_epoch(1, 0.0)
        for i in range(200):
            end = t + 0.01 * (1 + rng.uniform(-jitter, jitter))
            tally.add(Call("train", i, t, end, 1, 32))
            t = end
        return tally.end_epoch(t)

    calm, rough = record(0.05), record(0.9)
    assert 0 < calm["samples_per_s_ci"] < 0.02 < rough["samples_per_s_ci"] < 0.5
    assert calm["samples_per_s"] == pytest.approx(3200, rel=0.05)


def test_pd317_never_counts_the_monitors_own_time_as_the_users_callbacks() -> None:
    """Time the monitor spends in its own hooks (rules, records, scalars at an epoch's end)
    is reported apart, never as time outside training steps."""
    tally = RunTally(0.0)
    for number in (1, 2):
        began = tally._boundary
        tally.begin_epoch(number, began)
        for i in range(100):
            tally.add(Call("train", i, began + 0.01 * i, began + 0.01 * (i + 1), 1, 32))
        tally.own_seconds += 3.0  # the monitor's hook at this epoch's end
        tally.end_epoch(began + 1.0 + 3.0 + 0.05)
    figures = tally.figures(tally._boundary)
    assert [e["stall_seconds"] for e in figures["epochs"]] == pytest.approx([0.05, 0.05], abs=0.01)
    assert figures["time_split"]["monitor_s"] == pytest.approx(6.0)
    assert "PD317" not in rules_on(figures)
    tally.begin_epoch(3, tally._boundary)  # the same seconds spent in the user's callbacks
    tally.end_epoch(tally._boundary + 6.0)
    assert "PD317" in rules_on(tally.figures(tally._boundary))


def test_pd318_turned_input_bound_needs_a_calm_epoch_first_and_clear_intervals() -> None:
    turned = [epoch(1, 2000, 0.04), epoch(2, 2000, 0.06), epoch(3, 900, 0.61, 0.05)]
    (message,) = rules_on({"epochs": turned})["PD318"]
    assert message.startswith("Epoch 3 waited for input 61% ±5% of its step time (95% interval")
    assert "epochs 1-2 waited at most 8% (the top of their intervals)" in message
    always = [epoch(1, 900, 0.6), epoch(2, 900, 0.62)]  # input-bound from the start: PD301's
    assert "PD318" not in rules_on({"epochs": always})
    vague = [epoch(1, 2000, 0.04), epoch(2, 900, 0.4, ci=0.3)]  # could still be below 20%
    assert "PD318" not in rules_on({"epochs": vague})


def test_pd316_and_pd317_split_the_time_outside_training() -> None:
    run = {
        "run_seconds": 100.0,
        "training_samples_per_s": 2000.0,
        "eval_input_wait_fraction": 0.55,
        "time_split": {"train_s": 60.0, "eval_s": 25.0, "stall_s": 12.0},
        "epochs": [epoch(1, 2000, eval={"samples_per_s": 900.0}, longest_stall_s=9.5)],
    }
    found = rules_on(run)
    assert "Evaluation takes 25% of the run's wall time" in found["PD316"][0]
    assert "waits for input 55% of" in found["PD316"][0] and "900 samples/s" in found["PD316"][0]
    noisy = {**run, "eval_input_wait_ci": 0.4, "epochs": [epoch(1, 2000, longest_stall_s=9.5)]}
    assert "PD316" not in rules_on(noisy)  # 55% ±40%: the wait may be under 20%, no rate reason
    sure = rules_on({**run, "eval_input_wait_ci": 0.06})["PD316"][0]
    assert "waits for input 55% ±6% of its step time" in sure
    assert found["PD317"][0].startswith("12.0 s of the run's 100.0 s (12%)")
    assert "The longest stretch, 9.5 s, came in epoch 1" in found["PD317"][0]
    quiet = {**run, "time_split": {"train_s": 95.0, "eval_s": 4.0, "stall_s": 0.5}}
    assert not {"PD316", "PD317"} & set(rules_on(quiet))


def test_pd319_a_gpu_that_fell_behind_after_keeping_up() -> None:
    def gpus(a: float, b: float) -> list[dict]:
        return [{"index": 0, "utilization_mean": a}, {"index": 1, "utilization_mean": b}]

    fell = [epoch(1, 2000, gpus=gpus(94, 93)), epoch(2, 2000, gpus=gpus(95, 41))]
    (message,) = rules_on({"epochs": fell})["PD319"]
    assert message.startswith("GPU 1 fell behind in epoch 2: 41% busy against 95%")
    always_behind = [epoch(1, 2000, gpus=gpus(94, 40)), epoch(2, 2000, gpus=gpus(95, 41))]
    assert "PD319" not in rules_on({"epochs": always_behind})


def test_pd307_names_the_worker_fed_more_slowly_when_step_times_are_even() -> None:
    workers = [
        {"worker": "worker-0", "step_ms": 36.0, "input_wait_fraction": 0.03},
        {"worker": "worker-1", "step_ms": 36.5, "input_wait_fraction": 0.62},
        {"worker": "worker-2", "step_ms": 35.8, "input_wait_fraction": 0.05},
    ]
    (message,) = rules_on({"per_worker": workers})["PD307"]
    assert message.startswith("Worker worker-1 waits for input 62% of its step time against 4%")
    even = [dict(w, input_wait_fraction=0.05) for w in workers]
    assert "PD307" not in rules_on({"per_worker": even})


# --- workers and their records ----------------------------------------------------------------


def config(kind: str, index: int, cluster: dict) -> dict[str, str]:
    return {"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": kind, "index": index}})}


def test_worker_names_from_tf_config() -> None:
    workers = {"worker": ["a:1", "b:2", "c:3"]}
    second = from_tf_config(config("worker", 1, workers))
    assert (second.name, second.peers, second.is_chief) == (
        "worker-1", ("worker-0", "worker-1", "worker-2"), False,
    )  # fmt: skip
    assert from_tf_config(config("worker", 0, workers)).is_chief
    with_chief = {"chief": ["z:0"], **workers}
    assert from_tf_config(config("chief", 0, with_chief)).is_chief
    assert not from_tf_config(config("worker", 0, with_chief)).is_chief
    evaluator = from_tf_config(config("evaluator", 0, {**workers, "evaluator": ["e:9"]}))
    assert evaluator.peers == ("evaluator-0",)  # trains alone: compared with no one
    assert from_tf_config({}) is None
    broken = from_tf_config({"TF_CONFIG": "{not json"})
    assert broken.name == "worker-0" and "could not be read" in broken.note


def test_records_round_trip_and_what_a_job_is_missing(tmp_path: Path) -> None:
    peers = ["worker-0", "worker-1", "worker-2"]
    now = time.time()
    chief = make_record("worker-0", peers, FINISHED, {"epochs": [epoch(1, 2000)]}, ["a note"])
    stale = make_record("worker-1", peers, RUNNING, {"epochs": [epoch(1, 1000)]}, [])
    stale["updated"] = now - 40
    for record in (chief, stale):
        write_record(record_path(tmp_path, record["worker"]), record)
    assert not list((tmp_path / "pipedoctor").glob(".*"))  # no temporary file left behind
    job = read_job([tmp_path])
    assert job.lead()["worker"] == "worker-0"
    notes = job.all_notes()
    assert any(n.startswith("no record from worker-2") for n in notes)
    assert any(n.startswith("worker-1 stopped reporting after epoch 1") for n in notes)
    assert "worker-0: a note" in notes
    assert [w["worker"] for w in job.measurements()["per_worker"]] == ["worker-0", "worker-1"]
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="no pipedoctor records"):
        read_job([tmp_path / "empty"])


# --- time series --------------------------------------------------------------------------------


def test_series_stay_bounded_and_evenly_spaced() -> None:
    series = SampleSeries(limit=8)
    for i in range(1000):
        series.add(i)
    kept = series.items()
    assert len(kept) < 8 and len({b - a for a, b in zip(kept, kept[1:], strict=False)}) == 1
    timeline = PhaseTimeline(origin=0.0, resolution=0.01, max_segments=20)
    for i in range(2000):
        timeline.add("train" if i % 200 < 150 else "eval", i * 0.01, i * 0.01 + 0.009, 32)
    segments = timeline.to_list()
    assert len(segments) <= 20 and {s["phase"] for s in segments} == {"train", "eval"}
    assert all(s["samples_per_s"] > 0 for s in segments)


def test_binned_series_leave_gaps_where_readings_stop() -> None:
    points = [(float(t), (50.0,)) for t in range(10)] + [(float(t), (70.0,)) for t in range(30, 40)]
    times, (values,) = binned(points, origin=0.0, max_points=20)
    assert None in values and values[0] == 50.0 and values[-1] == 70.0
    assert times[0] < times[-1] <= 40


# --- charts and the page ------------------------------------------------------------------------


def test_nice_ticks() -> None:
    assert [nice_step(s) for s in (6, 60, 130, 0.9, 5000)] == [1, 10, 50, 0.2, 1000]


def test_charts_escape_names_and_break_lines_at_gaps() -> None:
    chart = line_chart([("<GPU&0>", [0, 1, 2, 3], [10, None, 30, 40])], 4, 100, "100%", "u")
    assert "&lt;GPU&amp;0&gt;" in chart and "<GPU" not in chart
    assert chart.count("<polyline") == 1 and chart.count("<circle") == 1
    phases = phase_chart(
        [{"phase": "train", "t0": 0, "t1": 5, "samples_per_s": 900},
         {"phase": "stall", "t0": 5, "t1": 6, "samples_per_s": None}], 6,
    )  # fmt: skip
    assert "train 0-5 s: 900 samples/s" in phases and "stall 5-6 s" in phases
    assert heatmap([0.5, 1.5], [[10, 90], [None, 50]], 2).count("<rect") == 3


MONITORED = {
    "input_wait_fraction": 0.64,
    "input_wait_ci": 0.03,
    "input_wait_steps": 412,
    "training_samples_per_s": 1234.0,
    "batch_size": 64,
    "time_split": {"train_s": 50.0, "eval_s": 6.0, "stall_s": 2.5, "startup_s": 3.1},
    "per_worker": [{"worker": "worker-0", "step_ms": 51.9, "input_wait_fraction": 0.6}],
    "epochs": [epoch(1, 1200, 0.63, eval={"seconds": 3.0}), epoch(2, 1250, 0.65)],
    "stages": [
        {"op": "map", "samples_per_s": 1500.0, "limiting": True},
        {"op": "batch", "samples_per_s": 90000.0},
    ],  # fmt: skip
    "timeline": {
        "seconds": 60.0,
        "phases": [
            {"phase": "train", "t0": 1.0, "t1": 30.0, "samples_per_s": 1200.0},
            {"phase": "eval", "t0": 30.0, "t1": 33.0, "samples_per_s": 4000.0},
        ],
        "host": {"t": [5.0, 15.0, 25.0], "per_core": [[90, 95, None], [80, 85, 88]]},
        "gpus": [
            {
                "index": 0,
                "name": "Synthetic <GPU>",
                "t": [5.0, 15.0],
                "utilization": [40.0, 42.0],
                "memory_used_mb": [8192.0, 8300.0],
            }
        ],
    },  # fmt: skip
}


def test_the_html_page_is_standalone_with_timelines_and_stage_bars() -> None:
    finding = Finding("PD301", "input-bound", Severity.ERROR, "Training waits for input 64%")
    report = build_report(MONITORED, ["a note"], ALL_RULES)
    report.findings.insert(0, finding)
    page = render(report, "html")
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    for banned in ("<script", "http:", "https:", "src=", "url(", "@import"):
        assert banned not in page.lower()
    for heading in ("Throughput by phase", "Host CPU per core", "GPU utilisation",
                    "GPU memory used", "Epochs", "Per-stage rates"):  # fmt: skip
        assert heading in page
    assert 'class="pd-split"' in page  # the stage bars beside the ranked findings
    assert "Synthetic &lt;GPU&gt;" in page
    assert len(re.findall(r"<svg ", page)) == 5


def test_text_shows_the_input_wait_the_time_split_and_the_workers() -> None:
    text = render(build_report(MONITORED, [], ALL_RULES), "text")
    assert "Input wait: 64% ±3% of the step time (from 412 timed steps)" in text
    assert "Time: training 50 s, evaluation 6.0 s, outside steps 2.5 s, start-up 3.1 s" in text
    assert "Workers: worker-0 51.9 ms/step, input wait 60%" in text
    tentative = {**MONITORED, "input_wait_fraction": None, "input_wait_estimate": 0.3,
                 "input_wait_ci": 0.4}  # fmt: skip
    assert "too uncertain for a verdict" in render(build_report(tentative, [], ALL_RULES), "text")


def test_epoch_lines_name_the_worker_and_what_was_measured() -> None:
    record = {**epoch(3, 1234.4, 0.64, 0.04), "samples_per_s_ci": 0.021, "step_ms": 51.9,
              "host_cpu_percent": 97.0,
              "host": {"cpu_count": 2}, "gpus": [{"index": 0, "utilization_mean": 41.0,
              "memory_used_mb": 8192.0}], "eval": {"seconds": 2.0, "samples_per_s": 3000.0},
              "stall_seconds": 1.5}  # fmt: skip
    line = lines.epoch_line(record, 10, "worker-1")
    assert line == (
        "pipedoctor[worker-1] epoch 3/10: 1,234 samples/s ±2%, step 51.9 ms, input wait 64% ±4%, "
        "host CPU 97% of 2 cores, GPU0 41% 8.0 GiB, eval 2.0 s at 3,000 samples/s, "
        "outside steps 1.5 s"
    )
    assert lines.epoch_line({"epoch": 1}, None, None) == (
        "pipedoctor epoch 1: no training steps timed"
    )


@pytest.mark.parametrize(
    ("fraction", "ci", "shown"),
    [(0.64, 0.04, "input wait 64% ±4%"), (0.0, 0.44, "input wait 0%-44%"),
     (0.95, 0.2, "input wait 75%-100%"), (0.3, None, "input wait 30%")],
)  # fmt: skip
def test_a_wait_share_is_never_shown_past_0_or_100_percent(fraction, ci, shown) -> None:
    assert lines.wait_text(fraction, ci) == shown


def test_live_findings_say_they_cover_the_run_so_far() -> None:
    finding = Finding("PD301", "input-bound", Severity.ERROR, "Training reaches 23%")
    assert lines.finding_line(finding, None, 3) == (
        "pipedoctor after epoch 3, run so far: PD301 input-bound: Training reaches 23%"
    )
    assert lines.finding_line(finding, "w1", None).startswith("pipedoctor[w1] run: PD301")


def test_a_checks_phases_become_timeline_segments() -> None:
    from pipedoctor.measure.rates import RateMeter
    from pipedoctor.measure.timeline import phases_from_rates

    meters = {"pipeline": RateMeter(warmup_items=1, warmup_s=0.0, block_s=0.1),
              "training": RateMeter(warmup_items=1, warmup_s=0.0, block_s=0.1)}  # fmt: skip
    for i in range(21):
        meters["pipeline"].add(100.0 + i * 0.05, 10)  # 200 samples/s
        meters["training"].add(110.0 + i * 0.1, 10)  # 100 samples/s
    segments = phases_from_rates({k: m.rate() for k, m in meters.items()}, origin=100.0)
    assert [s["phase"] for s in segments][0] == "pipeline" and segments[-1]["phase"] == "training"
    assert {round(s["samples_per_s"]) for s in segments} == {100, 200}
    assert segments[0]["t0"] >= 0 and segments[-1]["t1"] <= 12.0


# --- the split fraction -------------------------------------------------------------------------


def test_the_split_fraction_keeps_timing_and_splitting_within_the_budget() -> None:
    sampler = Sampler(budget=0.005)
    assert sampler.chance() == sampler.highest  # nothing timed yet: split often to learn
    for _ in range(20):
        sampler.observe(0.002, None)  # 2 ms steps
    for _ in range(8):
        sampler.observe(0.002, 0.0003)  # a split adds 0.3 ms
    assert sampler.chance() == pytest.approx(0.005 * 0.002 / 0.0003)
    # Timing every call takes half the budget already: 5 us on average, from 4 calls looked at
    # alone (10 us each) and 12 on the fast path (1 us each, timed on two of them), handed on
    # in bulk in 28 us.
    for _ in range(4):
        sampler.observe_own(0.00001)
    sampler.observe_fast(0.0000008)
    sampler.observe_fast(0.0000012)
    sampler.observe_bulk(0.000028, 12)
    assert sampler.call_cost == pytest.approx(0.000005)
    assert sampler.chance() == pytest.approx(0.0025 * 0.002 / 0.0003)
    for _ in range(16):  # more than the budget: split as rarely as allowed
        sampler.observe_own(0.0001)
    assert sampler.chance() == sampler.lowest == 0.005


def test_calls_handed_on_in_bulk_add_up_exactly_as_one_by_one() -> None:
    """The clock's fast path hands most calls on in bulk, as starts and ends; the tally and the
    sampler must come out as they would from each call alone, stalls and gaps included."""
    rng = random.Random(3)
    times, t = [], 0.0
    for i in range(400):
        start = t + rng.uniform(0.0001, 0.0003) + (0.8 if i in (150, 320) else 0.0)  # 2 stalls
        t = start + rng.uniform(0.001, 0.004)
        times += [start, t]
    first = Call("train", 0, 0.0, 0.002, 2, 64, 0.0005, 0.0015, 1.0)
    one, bulk = RunTally(0.0), RunTally(0.0)
    ones, bulks = Sampler(memory=16), Sampler(memory=16)
    for tally in (one, bulk):
        tally.begin_epoch(0, 0.0)
        tally.add(first)
        tally.add(replace(first, index=1, start=0.0021, end=0.004))
    previous = 0.004
    for i in range(0, len(times), 2):
        one.add(Call("train", 2 + i // 2, times[i], times[i + 1], 2, None))
        ones.observe(times[i + 1] - previous, None)
        previous = times[i + 1]
    bulk.add_plain("train", 2, array("d", times))
    bulks.observe_ends(0.004, times[1::2])

    assert bulk.current.train.stall_seconds == pytest.approx(1.6, abs=0.01)
    assert bulk.end_epoch(t + 0.01) == one.end_epoch(t + 0.01)
    assert bulk.figures(t + 0.01) == one.figures(t + 0.01)
    assert list(bulks._whole) == pytest.approx(list(ones._whole))


@pytest.mark.parametrize("fraction", [None, 0.25, 0.01])
def test_calls_decided_at_once_are_split_exactly_as_one_by_one(fraction: float | None) -> None:
    """The fast path asks the sampler how many next calls are not split, then skips it for
    them; the calls split must be the same ones, with the same probabilities, as when each
    call asks (multi-worker jobs rely on every worker splitting the same calls)."""
    one, many = Sampler(fraction, seed=5), Sampler(fraction, seed=5)
    for sampler in (one, many):  # the adaptive chance: 2 ms steps, a split adds 0.3 ms
        for _ in range(8):
            sampler.observe(0.002, None)
            sampler.observe(0.002, 0.0003)
    by_one = [(i, chance) for i in range(3000) if (chance := one.decide("train"))]
    by_many, i = [], 0
    while i < 3000:
        chance = many.decide("train")
        if chance:
            by_many.append((i, chance))
        i += 1 + many.not_split("train")
    assert by_many == by_one[: len(by_many)] and len(by_one) - len(by_many) <= 1
    assert len(by_one) >= 3000 * one.chance() * 0.5
