"""Fuzz the static gate: the properties of ``tests/fuzz`` on a much larger, random budget.

Generated Python (hypothesmith, from the grammar and from syntax trees), real code cut about,
notebooks with odd types, corrupt monitor records and configurations of any type, then the
shapes that used to blow up at sizes far beyond the tests'. Prints, per property, how many
examples ran, how many failed, and the slowest; per shape, its time and memory at N and 4N,
and (``--doubling``) its time at each doubling of its size up to 20,000 lines, with the
growth per doubling: linear is x2, and the goal is at most x2.5 and 10 s a file.

    python benchmarks/fuzz_lint.py [--examples 500] [--seed S] [--only NAME ...] [--doubling]

Needs ``hypothesis`` and ``hypothesmith`` (``pip install -e '.[dev]'``). Exit status 1 when a
property failed (the failing input is printed, shrunk), else 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
import traceback
import warnings
from collections.abc import Callable
from contextlib import redirect_stderr, redirect_stdout
from io import StringIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from fuzz.properties import (  # noqa: E402
    CHAIN_SHAPES,
    SHAPES,
    check_fix_bytes,
    check_notebook,
    check_source,
    doubling,
    growth,
)
from fuzz.strategies import (  # noqa: E402
    byte_shapes,
    corrupt_records,
    dataset_programs,
    generated_code,
    mutated_sources,
    odd_configs,
    odd_notebooks,
)
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from pipedoctor.cli import main  # noqa: E402
from pipedoctor.config import ConfigError, load_config  # noqa: E402


def report_on(record: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "worker-0.json").write_text(json.dumps(record))
        out, err = StringIO(), StringIO()
        with redirect_stdout(out), redirect_stderr(err):
            code = main(["report", folder, "--format", "json"])
        lines = err.getvalue().strip().splitlines()
        assert code in (0, 2), err.getvalue()
        assert code == 0 or (len(lines) == 1 and lines[0].startswith("pipedoctor: error:"))
        assert "internal error" not in err.getvalue()


def configured(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "pyproject.toml").write_text(text)
        try:
            load_config(Path(folder), explicit=Path(folder) / "pyproject.toml")
        except ConfigError as exc:
            assert "\n" not in str(exc)


PROPERTIES: dict[str, tuple[Any, Callable[[Any], Any], float]] = {
    "grammar": (generated_code(grammar=True), check_source, 1.0),
    "syntax-trees": (generated_code(grammar=False), check_source, 0.2),
    "dataset-programs": (dataset_programs(), check_source, 1.0),
    "mutated-sources": (mutated_sources(), check_source, 1.0),
    "notebooks": (odd_notebooks(), check_notebook, 1.0),
    "records": (corrupt_records(), report_on, 0.5),
    "configs": (odd_configs(), configured, 0.5),
    "fix-bytes": (byte_shapes(), check_fix_bytes, 0.2),
}
"""Name → (inputs, the property, the share of ``--examples`` it gets)."""


def fuzz(name: str, examples: int, chosen_seed: int) -> tuple[int, list[tuple[float, str]], str]:
    """Run one property; returns (examples run, the slowest with a glimpse of each, failure)."""
    strategy, check, share = PROPERTIES[name]
    times: list[tuple[float, str]] = []

    @seed(chosen_seed)
    @settings(
        max_examples=max(1, int(examples * share)),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
        print_blob=True,
    )
    @given(st.data())
    def run(data: st.DataObject) -> None:
        value = data.draw(strategy)
        start = time.perf_counter()
        check(value)
        glimpse = value if isinstance(value, str) else json.dumps(value, default=repr)
        times.append((time.perf_counter() - start, glimpse[:60].replace("\n", "\\n")))

    failure = ""
    try:
        run()
    except Exception:  # noqa: BLE001 - reported, then the next property runs
        failure = traceback.format_exc(limit=4)
    return len(times), sorted(times, reverse=True)[:3], failure


def main_(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=500, help="per property (default 500)")
    parser.add_argument("--seed", type=int, default=int(time.time()))
    parser.add_argument("--only", nargs="*", choices=[*PROPERTIES, "shapes"], default=None)
    parser.add_argument("--shape-factor", type=int, default=4, help="N for shapes: x the test's")
    parser.add_argument(
        "--doubling", action="store_true", help="each shape doubled up to 20,000 lines"
    )
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore", SyntaxWarning)  # generated code: "'int' is not callable"
    wanted = args.only or [*PROPERTIES, "shapes"]
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(f"seed {args.seed}, load average {load:.1f}")
    failed = False
    for name in [w for w in wanted if w in PROPERTIES]:
        started = time.perf_counter()
        count, slowest, failure = fuzz(name, args.examples, args.seed)
        spent = time.perf_counter() - started
        worst = ", ".join(f"{s:.3f} s ({g!r})" for s, g in slowest) or "-"
        status = "FAILED" if failure else "ok"
        print(f"{name:16} {status:6} {count:5} examples in {spent:6.1f} s; slowest: {worst}")
        if failure:
            failed = True
            print(failure)
    if "shapes" in wanted:
        for shape, (_, n) in sorted(SHAPES.items()):
            # one expression of 4 x 400 calls is past what CPython's parser takes (PD000)
            size = (
                min(n * args.shape_factor, 100) if shape in CHAIN_SHAPES else n * args.shape_factor
            )
            small, large, ratio, memory = growth(shape, size)
            bad = ratio >= 8 or memory >= 8
            failed |= bad
            print(
                f"shape {shape:16} {size:6} lines {small:7.3f} s, {4 * size:6} lines "
                f"{large:7.3f} s: time x{ratio:4.1f}, memory x{memory:4.1f}"
                + ("  TOO FAST A GROWTH" if bad else "")
            )
    if args.doubling:
        failed |= report_doubling()
    return 1 if failed else 0


def report_doubling() -> bool:
    """Each shape's time at each doubling of its size (the one-expression shapes only as far
    as CPython's parser goes); True when a doubling grew it more than x2.5 or a file took more
    than 10 s."""
    failed = False
    for shape, (_, n) in sorted(SHAPES.items()):
        limit = 400 if shape in CHAIN_SHAPES else 20_000
        start = n if shape in CHAIN_SHAPES else 1250  # below it, a timer's grain is the figure
        times = doubling(shape, start, limit)
        steps = [b / max(a, 1e-3) for (_, a), (_, b) in zip(times, times[1:], strict=False)]
        worst = max(steps, default=1.0)
        slowest = max(seconds for _, seconds in times)
        bad = worst > 2.5 or slowest > 10
        failed |= bad
        figures = ", ".join(f"{lines}: {seconds:.2f} s" for lines, seconds in times)
        print(
            f"doubling {shape:16} {figures}; worst x{worst:.1f} a doubling"
            + ("  TOO FAST A GROWTH" if bad else "")
        )
    return failed


if __name__ == "__main__":
    sys.exit(main_())
