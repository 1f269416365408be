"""The measured rules on measurement dicts as the check, a profile or a monitored run fill them."""

from __future__ import annotations

import pytest

from pipedoctor import diagnosis
from pipedoctor.checker import build_report
from pipedoctor.pipeline import Analysis
from pipedoctor.render.html import render_html
from pipedoctor.render.text import gain_label, render_text
from pipedoctor.report import Finding, Severity
from pipedoctor.rules import ALL_RULES, Selection, only, run_rules


def findings(measurements: dict, rule: str, params: dict | None = None) -> list:
    selection = Selection(params={rule: params} if params else {})
    return list(run_rules(Analysis("<job>"), "runtime", only(selection, rule), measurements))


@pytest.mark.parametrize(
    ("wait", "expected"),
    [(0.05, diagnosis.COMPUTE_BOUND), (0.19, diagnosis.COMPUTE_BOUND),
     (0.2, diagnosis.INPUT_BOUND), (0.84, diagnosis.INPUT_BOUND)],
)  # fmt: skip
def test_the_input_wait_share_gives_the_verdict_without_throughputs(
    wait: float, expected: str
) -> None:
    assert diagnosis.verdict({"input_wait_fraction": wait}) == expected


def test_the_wait_limit_follows_pd301s_training_to_ceiling() -> None:
    measurements = {"input_wait_fraction": 0.3}
    assert diagnosis.verdict(measurements) == diagnosis.INPUT_BOUND
    assert diagnosis.verdict(measurements, {"training_to_ceiling": 0.6}) == diagnosis.COMPUTE_BOUND


def test_throughputs_outrank_the_wait_share() -> None:
    measurements = {
        "pipeline_samples_per_s": 5000.0, "ceiling_samples_per_s": 1000.0,
        "training_samples_per_s": 950.0, "input_wait_fraction": 0.5,
    }  # fmt: skip
    assert diagnosis.verdict(measurements) == diagnosis.COMPUTE_BOUND


def test_pd301_and_the_scaling_sentence_from_the_wait_share_alone() -> None:
    report = build_report({"input_wait_fraction": 0.84}, [], ALL_RULES)
    assert report.verdict == diagnosis.INPUT_BOUND
    (finding,) = [f for f in report.findings if f.rule == "PD301"]
    assert "84% of its step time" in finding.message
    assert finding.headroom == 6.25 and finding.gain is None
    assert "waits for input 84%" in report.measurements["scaling"]
    sure = build_report({"input_wait_fraction": 0.84, "input_wait_ci": 0.03}, [], ALL_RULES)
    (finding,) = [f for f in sure.findings if f.rule == "PD301"]
    assert "waits for input 84% ±3% of its step time over the steps measured" in finding.message
    quiet = build_report({"input_wait_fraction": 0.03}, [], ALL_RULES)
    assert quiet.verdict == diagnosis.COMPUTE_BOUND
    assert not [f for f in quiet.findings if f.rule == "PD301"]


def worker(name: str, step_ms: float, wait: float | None = None) -> dict:
    return {"worker": name, "step_ms": step_ms, "input_wait_fraction": wait}


def test_pd307_names_the_straggler_and_blames_its_input_when_it_waits_longer() -> None:
    per_worker = [worker("w0", 212, 0.04), worker("w1", 215, 0.05), worker("w2", 301, 0.31)]
    (hit,) = findings({"per_worker": per_worker}, "PD307")
    assert "Worker w2 takes 301.0 ms" in hit.message and "+40%" in hit.message
    assert "its input is slower" in hit.message


def test_pd307_blames_compute_when_the_straggler_does_not_wait_for_input() -> None:
    per_worker = [worker("w0", 100, 0.05), worker("w1", 140, 0.06), worker("w2", 101, 0.05)]
    (hit,) = findings({"per_worker": per_worker}, "PD307")
    assert "Worker w1" in hit.message and "its compute is slower" in hit.message


@pytest.mark.parametrize(
    "per_worker",
    [
        [worker("w0", 100), worker("w1", 110)],  # within the 15% gap
        [worker("w0", 100)],  # one worker: nobody to compare with
        [worker("w0", 100), {"worker": "w1", "step_ms": None}],  # a worker with no steps
        [],
    ],
)
def test_pd307_stays_quiet_on_even_or_incomplete_workers(per_worker: list) -> None:
    assert findings({"per_worker": per_worker}, "PD307") == []


def fed(name: str, alone: float | None, taken: float = 218.0) -> dict:
    """A worker of a synchronous job: even step time and wait, its own pipeline's rate."""
    return dict(worker(name, 73.0, 0.6), pipeline_samples_per_s=alone, samples_per_s=taken)


def test_pd307_names_the_worker_whose_own_pipeline_cannot_keep_up() -> None:
    per_worker = [fed("worker-0", 46_469.0), fed("worker-1", 196.0), fed("worker-2", 41_000.0)]
    (hit,) = findings({"per_worker": per_worker}, "PD307")
    assert hit.message.startswith(
        "Worker worker-1's own input pipeline, read alone, gives 196 samples/s against 43,734"
    )
    assert "training takes 218 samples/s from each worker" in hit.message


def test_pd307_a_worker_that_waits_longer_also_shows_its_pipeline_read_alone() -> None:
    per_worker = [dict(fed("w0", 5_000.0), input_wait_fraction=0.5), fed("w1", 200.0)]
    per_worker[1]["input_wait_fraction"] = 0.8
    (hit,) = findings({"per_worker": per_worker}, "PD307")
    assert hit.message.startswith("Worker w1 waits for input 80% of its step time against 50%")
    assert hit.message.endswith(
        "its own pipeline gives 200 samples/s against 5,000 on the other workers."
    )
    del per_worker[0]["pipeline_samples_per_s"]  # a worker not probed: no comparison
    (unprobed,) = findings({"per_worker": per_worker}, "PD307")
    assert "Read alone" not in unprobed.message


@pytest.mark.parametrize(
    "per_worker",
    [
        [fed("w0", 9_000.0), fed("w1", 3_000.0)],  # slower, but 14x what training takes
        [fed("w0", 300.0), fed("w1", 260.0)],  # within the 30% gap
        [fed("w0", 300.0), fed("w1", None)],  # one worker was not probed
        [fed("w0", 300.0), fed("w1", 100.0, taken=0.0)],  # nothing known to be taken from it
    ],
)
def test_pd307_leaves_a_slower_pipeline_alone_when_it_keeps_up_or_is_unknown(
    per_worker: list,
) -> None:
    assert findings({"per_worker": per_worker}, "PD307") == []


def test_pd307_gap_is_a_parameter() -> None:
    per_worker = [worker("w0", 100), worker("w1", 110)]
    assert len(findings({"per_worker": per_worker}, "PD307", {"straggler_gap": 0.04})) == 1


INPUT_BOUND_JOB = {
    "pipeline_samples_per_s": 1332.0, "ceiling_samples_per_s": 8286.0,
    "training_samples_per_s": 1203.0, "host_cpu_percent": 95.0,
}  # fmt: skip


def test_pd301_reports_headroom_an_upper_bound_never_a_gain() -> None:
    report = build_report(INPUT_BOUND_JOB, [], ALL_RULES)
    (finding,) = [f for f in report.findings if f.rule == "PD301"]
    assert finding.gain is None and finding.end_to_end_gain is None
    assert finding.headroom == round(8286 / 1203, 2)
    data = finding.to_dict()
    assert data["headroom"] == finding.headroom and "gain" not in data
    assert gain_label(finding) == "headroom up to x6.9"
    assert "measured" not in render_text(report).split("PD301", 1)[1].split("\n")[0]
    html = render_html(report)
    assert "headroom up to x6.9" in html and 'class="pd-gain"' not in html


def test_the_verdict_leads_then_paying_fixes_by_end_to_end_gain_then_severity() -> None:
    def at(rule: str, line: int, severity: Severity, gain=None, end_to_end=None) -> Finding:
        return Finding(rule, rule.lower(), severity, "m", path="train.py", line=line,
                       gain=gain, end_to_end_gain=end_to_end)  # fmt: skip

    code = [
        at("PD101", 73, Severity.INFO),
        at("PD102", 72, Severity.WARNING, gain=1.8, end_to_end=1.8),
        at("PD106", 72, Severity.WARNING, gain=46.6, end_to_end=2.0),
        at("PD104", 70, Severity.INFO, gain=0.9, end_to_end=0.9),
        at("PD105", 60, Severity.WARNING),
    ]
    calm_host = INPUT_BOUND_JOB | {"host_cpu_percent": 40.0}
    report = build_report(calm_host, [], ALL_RULES, file_findings=code)
    order = [f.rule for f in report.findings]
    assert order[0] == "PD301"
    paying = [f for f in report.findings if (f.end_to_end_gain or f.gain or 1.0) >= 1.05]
    assert [f.rule for f in paying] == ["PD106", "PD102"]  # by measured end-to-end gain
    assert order[1:3] == ["PD106", "PD102"]
    assert order[3:] == ["PD105", "PD104", "PD101"]  # the rest by severity: x0.9 buys nothing


def test_pd302_judges_with_the_users_pd301_thresholds() -> None:
    saturated = {
        "pipeline_samples_per_s": 1000.0, "ceiling_samples_per_s": 1500.0,
        "training_samples_per_s": 950.0, "host_cpu_percent": 97.0,
    }  # fmt: skip
    assert findings(saturated, "PD302")  # 63% of the ceiling: input-bound by default
    selection = Selection(params={"PD301": {"training_to_ceiling": 0.6}})
    report = build_report(saturated, [], selection)
    assert report.verdict == diagnosis.COMPUTE_BOUND
    assert not [f for f in report.findings if f.rule in ("PD301", "PD302")]


def test_pd302_counts_a_host_busy_half_of_the_time_as_saturated() -> None:
    job = {**INPUT_BOUND_JOB, "host_cpu_percent": 89.6}
    assert not findings({**job, "host": {"cpu_count": 2, "cpu_percent_p50": 85.0}}, "PD302")
    saturated = {**job, "host": {"cpu_count": 2, "cpu_percent_p50": 100.0}}
    (hit,) = findings(saturated, "PD302")
    assert "90% busy on average, 100% or more half of the time" in hit.message


def test_on_a_saturated_host_fixes_that_remove_work_rank_before_added_parallelism() -> None:
    def at(rule: str, line: int, gain: float) -> Finding:
        return Finding(rule, rule.lower(), Severity.WARNING, "m", path="train.py", line=line,
                       gain=gain, end_to_end_gain=gain)  # fmt: skip

    code = [at("PD102", 70, 1.9), at("PD106", 72, 1.4), at("PD101", 74, 1.3)]
    calm = build_report(INPUT_BOUND_JOB | {"host_cpu_percent": 40.0}, [], ALL_RULES,
                        file_findings=code)  # fmt: skip
    assert [f.rule for f in calm.findings] == ["PD301", "PD102", "PD106", "PD101"]
    busy = build_report(INPUT_BOUND_JOB, [], ALL_RULES, file_findings=code)
    order = [f.rule for f in busy.findings]
    assert order.index("PD106") < order.index("PD102") and order.index("PD106") < order.index(
        "PD101"
    )
    pd102 = next(f for f in busy.findings if f.rule == "PD102")
    assert "no idle core to use there" in pd102.message
    assert "no idle core" not in next(f for f in busy.findings if f.rule == "PD106").message


def test_on_a_saturated_host_a_parallelism_fix_that_pays_outranks_what_buys_nothing() -> None:
    # Added parallelism ranks after removed work, but never after findings that buy nothing:
    # the one fix measured to pay x1.6 for training is not fifth, below two info findings.
    def at(rule: str, severity: Severity, gain: float | None) -> Finding:
        return Finding(rule, rule.lower(), severity, "m", path="train.py", line=10,
                       gain=gain, end_to_end_gain=gain)  # fmt: skip

    code = [at("PD106", Severity.INFO, 1.0), at("PD304", Severity.INFO, None),
            at("PD102", Severity.WARNING, 1.6)]  # fmt: skip
    busy = build_report(INPUT_BOUND_JOB, [], ALL_RULES, file_findings=code)
    order = [f.rule for f in busy.findings]
    assert order.index("PD102") < order.index("PD106")
    assert order.index("PD102") < order.index("PD304")


def test_a_fix_measured_to_buy_nothing_ranks_by_severity_not_by_its_gain() -> None:
    def at(rule: str, severity: Severity, gain: float | None) -> Finding:
        return Finding(rule, rule.lower(), severity, "m", path="train.py", line=10,
                       gain=gain, end_to_end_gain=gain)  # fmt: skip

    code = [at("PD106", Severity.INFO, 1.0), at("PD202", Severity.WARNING, None),
            at("PD102", Severity.WARNING, 1.6)]  # fmt: skip
    report = build_report(INPUT_BOUND_JOB | {"host_cpu_percent": 40.0}, [], ALL_RULES,
                          file_findings=code)  # fmt: skip
    assert [f.rule for f in report.findings] == ["PD301", "PD102", "PD202", "PD106"]


def test_where_no_fix_pays_for_training_the_largest_pipeline_gain_ranks_first() -> None:
    # A compute-bound job: no fix speeds training up, but the one that makes the pipeline
    # x7.6 faster is what more devices would need, and ranks before a warning measured x1.0.
    def at(rule: str, severity: Severity, line: int, gain: float) -> Finding:
        return Finding(rule, rule.lower(), severity, "m", path="train.py", line=line,
                       gain=gain, end_to_end_gain=1.0)  # fmt: skip

    job = {"pipeline_samples_per_s": 9000.0, "ceiling_samples_per_s": 350.0,
           "training_samples_per_s": 340.0}  # fmt: skip
    code = [at("PD102", Severity.WARNING, 10, 1.0), at("PD106", Severity.INFO, 20, 7.6),
            at("PD101", Severity.INFO, 30, 1.3)]  # fmt: skip
    report = build_report(job, [], ALL_RULES, file_findings=code)
    assert [f.rule for f in report.findings if f.path] == ["PD106", "PD101", "PD102"]


@pytest.mark.parametrize(("gain", "raised"), [(0.8, False), (1.02, False), (3.0, True)])
def test_a_cache_measured_to_gain_nothing_is_no_finding(gain: float, raised: bool) -> None:
    cache = {"stage": 1, "kind": "memory", "elements": 400, "bytes": 409600,
             "fill_seconds": 0.4, "moves": [], "moved": []}  # fmt: skip
    entry = {"rule": "PD106", "path": "train.py", "line": 12, "column": 5, "cache": cache,
             "gain": gain, "end_to_end_gain": gain}  # fmt: skip
    selection = only(Selection(), "PD106")
    hits = list(run_rules(Analysis("<graph>"), "graph", selection, {"whatif": [entry]}))
    assert bool(hits) is raised
