"""The sample pipelines: each defect draws its rule, each fixed twin draws nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipedoctor import lint

SAMPLES = Path(__file__).resolve().parent.parent / "sample_pipelines"
EXPECTED = {
    "sequential_map": {"PD102"},
    # this repository pins TensorFlow 2.16 or later, which appends the prefetch itself
    "missing_prefetch": set(),
    "no_cache": {"PD106"},
    "python_in_pipeline": {"PD108"},
    "unvectorized_map": {"PD109"},
    "sequential_reads": {"PD104"},
    "cache_after_shuffle": {"PD107"},
    "distributed_batch": {"PD202"},  # whose fix scales the rate too: PD203 waits for that
    "image_folder": {"PD106"},
    # Only the measured check finds these PD106s (tests/test_cache.py, benchmarks/whatif.py):
    # the lint advises a cache only for data of a size the code shows, and these read an
    # unknown number of files, or build their costly map (no decode op) in a helper module.
    "tfrecord_images": set(),
    "large_dataset": set(),
    "spectral_features": set(),
    "text_folder": {"PD106"},  # the lint advises a cache; only a check measures where
}


def test_every_sample_has_a_fixed_twin_and_an_expectation() -> None:
    defects = {p.stem for p in SAMPLES.glob("*.py") if not p.stem.endswith("_fixed")}
    twins = {p.stem.removesuffix("_fixed") for p in SAMPLES.glob("*_fixed.py")}
    assert defects == twins == set(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_defect_draws_its_rule(name: str) -> None:
    # generated data: the lint cannot see it is more than a toy, so most are below `high`
    report = lint(SAMPLES / f"{name}.py", confidence="low")
    assert {f.rule for f in report.findings} == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixed_twin_is_clean(name: str) -> None:
    report = lint(SAMPLES / f"{name}_fixed.py", confidence="low")
    assert report.findings == [], [f"{f.rule}:{f.line} {f.message}" for f in report.findings]


def test_missing_prefetch_draws_pd101_where_tensorflow_leaves_the_end_as_written(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "missing_prefetch.py"  # a project that pins no TensorFlow
    copy.write_text((SAMPLES / "missing_prefetch.py").read_text())
    (finding,) = lint(copy, confidence="low").findings
    assert finding.rule == "PD101"
    assert any(e.fact == "runtime" and not e.shown for e in finding.evidence)
