"""Property tests of the static gate on generated and mangled input, on a small, deterministic
budget (the same properties with a large random one: ``benchmarks/fuzz_lint.py``).

See ``properties.py`` for what must hold: nothing escapes ``lint``, no file passes unread, no
input hangs, and the shapes that used to blow up grow linearly.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest.importorskip("hypothesmith")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from pipedoctor.cli import main  # noqa: E402
from pipedoctor.config import Config, ConfigError, load_config  # noqa: E402
from pipedoctor.evidence import confidence  # noqa: E402
from pipedoctor.lint import lint_source  # noqa: E402
from pipedoctor.rules import load_catalog  # noqa: E402

from .properties import (  # noqa: E402
    SHAPES,
    ByteShape,
    check_fix_bytes,
    check_notebook,
    check_source,
    growth,
    lint_process,
    one_line_error,
)
from .strategies import (  # noqa: E402
    byte_shapes,
    corrupt_records,
    dataset_programs,
    generated_code,
    mutated_sources,
    odd_configs,
    odd_notebooks,
)

CI = settings(
    deadline=None,  # each example has its own deadline (``check_source``), generous for CI
    derandomize=True,  # the same examples on every run: a failure here is no flake
    database=None,
    suppress_health_check=list(HealthCheck),
)
SCALE = float(os.environ.get("PIPEDOCTOR_FUZZ_SCALE", "1"))
"""Multiplies every example budget (``benchmarks/fuzz_lint.py`` runs far more)."""


def budget(examples: int) -> int:
    return max(1, int(examples * SCALE))


@settings(CI, max_examples=budget(25))
@given(generated_code(grammar=True))
def test_generated_code_never_escapes_and_never_passes_unread(code: str) -> None:
    check_source(code)


@settings(CI, max_examples=budget(4))
@given(generated_code(grammar=False))
def test_generated_syntax_trees_never_escape(code: str) -> None:
    check_source(code)


@settings(CI, max_examples=budget(40))
@given(dataset_programs())
def test_dataset_code_in_any_combination_never_escapes(code: str) -> None:
    check_source(code)


@settings(CI, max_examples=budget(40))
@given(mutated_sources())
def test_real_code_cut_about_never_escapes(code: str) -> None:
    check_source(code)


@settings(CI, max_examples=budget(40))
@given(dataset_programs())
def test_confidence_follows_the_evidence_and_the_tiers_nest(code: str) -> None:
    """Every finding's confidence is the function of its evidence (capped by its rule), each
    fact is one its rule file names, and what a tier reports is what every less confident
    tier reports, and more."""
    catalog = load_catalog()
    by_tier = {}
    for tier in ("high", "medium", "low"):
        report = lint_source(code, Config(confidence=tier), "fuzz.py")
        by_tier[tier] = {(f.rule, f.line, f.column, f.message) for f in report.findings}
        for finding in report.findings:
            rule = catalog[finding.rule]
            assert finding.confidence == confidence(finding.evidence, rule.max_confidence)
            assert {e.fact for e in finding.evidence} <= set(rule.facts), finding
    assert by_tier["high"] <= by_tier["medium"] <= by_tier["low"]


@settings(CI, max_examples=budget(60))
@given(odd_notebooks())
def test_notebooks_with_odd_types_drop_no_cell_silently(text: str) -> None:
    check_notebook(text)


@settings(CI, max_examples=budget(30))
@given(record=corrupt_records())
def test_report_on_corrupt_records_is_one_line_or_a_report(
    record: dict, tmp_path_factory: pytest.TempPathFactory, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path_factory.mktemp("records")
    (folder / "worker-0.json").write_text(json.dumps(record))
    code = main(["report", str(folder), "--format", "json"])
    captured = capsys.readouterr()
    assert code in (0, 2), captured.err
    if code == 2:
        assert one_line_error(captured.err), captured.err
    else:
        assert json.loads(captured.out)["version"] == 1
        assert "internal error" not in captured.err


@settings(CI, max_examples=budget(40))
@given(text=odd_configs())
def test_configuration_of_any_type_is_read_or_refused_in_one_line(
    text: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    folder = tmp_path_factory.mktemp("config")
    (folder / "pyproject.toml").write_text(text)
    try:
        load_config(folder, explicit=folder / "pyproject.toml")
    except ConfigError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_blowup_shapes_grow_linearly(shape: str) -> None:
    """Time and memory for 4N lines of each shape against N lines: linear growth gives about
    4, quadratic 16; the bound of 8 leaves room for a noisy machine (the best of a few runs
    is compared, and a bad draw is measured once more)."""
    _, n = SHAPES[shape]
    small, large, ratio, memory = growth(shape, n)
    if ratio >= 8:
        small, large, ratio, memory = growth(shape, n)
    assert ratio < 8, f"{shape}: {small:.3f} s for {n} lines, {large:.3f} s for {4 * n}"
    assert memory < 8, f"{shape}: peak memory grew x{memory:.1f}"


def test_the_worst_shapes_finish_in_a_process_of_their_own(tmp_path: Path) -> None:
    """At sizes that used to take minutes or all memory, a real ``pipedoctor lint`` ends,
    well within its timeout."""
    for shape, lines in (("concatenate", 2000), ("doubling-string", 2000), ("self-partial", 400)):
        make, _ = SHAPES[shape]
        path = tmp_path / f"{shape}.py"
        path.write_text(make(lines))
        done = lint_process(str(path), "--format", "json", timeout=120)
        assert done.returncode in (0, 1), done.stderr
        assert not done.stderr, done.stderr


@settings(CI, max_examples=budget(30))
@given(shape=byte_shapes())
def test_fixes_keep_every_byte_they_do_not_fix(shape: ByteShape) -> None:
    pytest.importorskip("libcst")
    check_fix_bytes(shape)
