"""What a new user meets in the first hour, each a real process or the real code path: a
script that does not compile, an impossible target, fixing without libcst, a cache filled in
less than a second."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pipedoctor.detectors.pipeline_rules import measured_cache


def run(*args: str, cwd: Path, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"import sys\n{prelude}\nfrom pipedoctor.cli import main\nsys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_a_script_that_does_not_compile_shows_its_own_lines_only(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("import tensorflow as tf\nx = (\n")
    done = run("check", "train.py", "--quiet", cwd=tmp_path)
    assert done.returncode == 2
    assert "SyntaxError: '(' was never closed" in done.stderr
    assert "runpy" not in done.stderr and "Traceback" not in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("pipedoctor: error: the script raised")


def test_an_impossible_target_is_one_line_and_exit_2(tmp_path: Path) -> None:
    done = run("compare", str(tmp_path), "--target", "val_accuracy=1.5", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "fraction between 0 and 1" in done.stderr and "val_accuracy=0.9" in done.stderr


def test_fixing_without_libcst_says_so_before_measuring(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text("raise SystemExit('the script must not run')\n")
    done = run("check", "train.py", "--diff", cwd=tmp_path, prelude="sys.modules['libcst'] = None")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "fixing needs libcst" in done.stderr and "pip install libcst" in done.stderr
    assert "must not run" not in done.stderr  # nothing was run or measured


def test_a_cache_filled_in_under_a_second_says_so() -> None:
    cache = {"kind": "memory", "bytes": 2e6, "elements": 1024, "fill_seconds": 0.2, "moves": []}
    (hit,) = measured_cache([{"rule": "PD106", "gain": 3.0, "cache": cache}])
    assert "filled in a first pass of under a second" in hit.message
    assert "0 s" not in hit.message


def test_intervals_that_straddle_a_threshold_give_no_verdict() -> None:
    """Training ±112% and the pipeline ±68% around the thresholds: no confident "balanced";
    narrow intervals over the same rates decide."""
    from pipedoctor import diagnosis
    from pipedoctor.checker import build_report
    from pipedoctor.rules import ALL_RULES

    wide = {
        "pipeline_samples_per_s": 9_000.0,
        "ceiling_samples_per_s": 10_000.0,
        "training_samples_per_s": 7_000.0,
        "pipeline_ci": 0.68,
        "ceiling_ci": 0.05,
        "training_ci": 1.12,
    }
    report = build_report(wide, [], ALL_RULES)
    assert report.verdict == diagnosis.INCONCLUSIVE
    undecided = report.measurements["undecided"]
    assert undecided["compared"] == "training / ceiling" and undecided["longer"] > 1
    assert report.measurements["scaling"].startswith("Inconclusive: training / ceiling is 0.70")
    assert "next_step" not in report.measurements.get("decision", {})
    assert not any(f.rule == "PD301" for f in report.findings)
    narrow = {**wide, "pipeline_ci": 0.02, "training_ci": 0.03, "ceiling_ci": 0.02}
    assert build_report(narrow, [], ALL_RULES).verdict == diagnosis.BALANCED


def test_noise_on_training_against_the_ceiling_is_no_verdict_when_input_clearly_keeps_up() -> None:
    """A batch-1 GAN: a few slow steps give training and the ceiling wide intervals, but the
    pipeline alone is hundreds of times faster. Input is not what limits it: compute-bound,
    with a note saying the ceiling comparison is within the noise, never "--timeout 2346"."""
    from pipedoctor import diagnosis
    from pipedoctor.checker import build_report
    from pipedoctor.rules import ALL_RULES

    gan = {
        "pipeline_samples_per_s": 258.0, "pipeline_ci": 0.05,
        "ceiling_samples_per_s": 0.8, "ceiling_ci": 0.3,
        "training_samples_per_s": 0.9, "training_ci": 0.4,
    }  # fmt: skip
    report = build_report(gan, [], ALL_RULES)
    assert report.verdict == diagnosis.COMPUTE_BOUND
    assert any("within the figures' noise" in n and "input is not what limits" in n
               for n in report.notes)  # fmt: skip
    # the same noise with a pipeline near the ceiling decides nothing
    close = {**gan, "pipeline_samples_per_s": 0.7}
    assert build_report(close, [], ALL_RULES).verdict == diagnosis.INCONCLUSIVE


def test_a_fix_measured_to_free_the_host_makes_the_noisy_comparison_balanced() -> None:
    """Training at 0.73 of the ceiling, within the noise of 0.8, a pipeline twice the ceiling:
    taken as compute-bound, unless training on the pipeline with its best fix was measured
    faster beyond the noise. Then the two compete for the host, and the verdict, "Next step"
    and the finding agree on it."""
    from pipedoctor import diagnosis
    from pipedoctor.checker import build_report
    from pipedoctor.report import Finding, Severity
    from pipedoctor.rules import ALL_RULES

    shared = {
        "pipeline_samples_per_s": 32_600.0, "pipeline_ci": 0.05,
        "ceiling_samples_per_s": 16_500.0, "ceiling_ci": 0.05,
        "training_samples_per_s": 12_100.0, "training_ci": 0.05,
    }  # fmt: skip
    assert build_report(shared, [], ALL_RULES).verdict == diagnosis.COMPUTE_BOUND
    within = {**shared, "training_with_fix_samples_per_s": 12_900.0}  # x1.07: noise
    assert build_report(within, [], ALL_RULES).verdict == diagnosis.COMPUTE_BOUND
    freed = {**shared, "training_with_fix_samples_per_s": 15_400.0}  # x1.27
    cache = Finding("PD106", "missing-cache", Severity.WARNING, "m", path="t.py", line=3,
                    gain=11.0, end_to_end_gain=1.27)  # fmt: skip
    report = build_report(freed, [], ALL_RULES, file_findings=[cache])
    assert report.verdict == diagnosis.BALANCED
    step = report.measurements["decision"]["next_step"]
    assert step.startswith("step 1 of 3, fix the input pipeline") and "x1.27" in step
    assert not any("within the figures' noise" in n for n in report.notes)


def test_a_throughput_timed_too_briefly_for_an_interval_is_not_taken_as_exact() -> None:
    """The check reports ``*_ci: None`` for a rate timed in too few blocks: a verdict that
    turns on it near the threshold is inconclusive, not a confident "balanced"."""
    from pipedoctor import diagnosis
    from pipedoctor.checker import build_report
    from pipedoctor.rules import ALL_RULES

    few_steps = {
        "pipeline_samples_per_s": 60.0, "pipeline_ci": 0.1,
        "ceiling_samples_per_s": 73.0, "ceiling_ci": None,
        "training_samples_per_s": 51.0, "training_ci": None,
    }  # fmt: skip
    assert build_report(few_steps, [], ALL_RULES).verdict == diagnosis.INCONCLUSIVE
    far = {**few_steps, "training_samples_per_s": 20.0, "pipeline_samples_per_s": 21.0}
    assert build_report(far, [], ALL_RULES).verdict == diagnosis.INPUT_BOUND
