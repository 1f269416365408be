"""Does pipedoctor's projection match the hand-fixed pipeline?

For each defective script in sample_pipelines/ and its hand-fixed twin, all in this one
process: run each script until it starts training and take the dataset it hands to ``fit`` (as
``pipedoctor check`` does), let the graph doctor project the pipeline's rate with all its safe
fixes (the ``fixed_pipeline_samples_per_s`` a check reports), then time pipedoctor's rewrite
and the hand-fixed twin in turns against the as-is pipeline, each rebuilt from its graph as the
check times it. Gains are over the as-is pipeline in the
same turn (ABBA order); each is the median over the turns.
The projected gain should come within 10% of the hand-fixed twin's. A row also says when the
rewritten graph has exactly the hand-fixed twin's stages, op for op: then any gap between the
two is timing noise, which the quartiles of the twin's per-turn gains show.

    python benchmarks/whatif.py [--turns 8] [--seconds 1.0] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform
import runpy
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "sample_pipelines"
WHATIF_BUDGET_S = 60.0
"""The graph doctor's budget per script (a default ``check`` leaves it about this much)."""
FILL_S = 20.0
"""Longest the warm-up pass (which fills any cache) may take per pipeline."""


def with_dataset(capture: Any, script: Path, use: Callable[[Any], Any]) -> Any:
    """Run ``script`` up to its ``fit`` and return ``use(dataset)``, called right there: the
    script's own state (temporary files, open contexts) is still alive, as during a check."""
    from pipedoctor.capture.child import CaptureDone

    capture.done, capture.use, capture.result = False, use, None
    argv, path = sys.argv, list(sys.path)
    sys.argv, sys.path[:0] = [str(script)], [str(script.parent)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except CaptureDone:
        pass
    finally:
        sys.argv, sys.path[:] = argv, path
    if not capture.done:
        raise SystemExit(f"{script.name} never started training")
    return capture.result


def make_capture() -> Any:
    from pipedoctor.capture.child import Capture, Events

    class User(Capture):
        def measure(self, dataset: Any, model: Any, capture_info: dict[str, Any]) -> None:
            self.result = self.use(dataset)

    capture = User(Events(os.open(os.devnull, os.O_WRONLY)), time.time() + 3600, False)
    capture.install()
    return capture


def warm(dataset: Any, batched: bool) -> None:
    """One full pass (or ``FILL_S``), so that caches are filled before any turn is timed."""
    from pipedoctor.graph.whatif import time_dataset

    items = int(dataset.cardinality())
    time_dataset(dataset, batched, FILL_S, skip=max(items, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="sample names (default: every defective one)")
    parser.add_argument("--turns", type=int, default=8, help="turns per comparison")
    parser.add_argument("--seconds", type=float, default=1.0, help="per pipeline per turn")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:  # one sample pair, in a fresh process (some set up devices before TF runs)
        return compare(options.names[0], options.turns, options.seconds)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    names = options.names or sorted(
        p.stem
        for p in SAMPLES.glob("*.py")
        if not p.stem.endswith("_fixed") and (SAMPLES / f"{p.stem}_fixed.py").exists()
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {options.turns} turns of {options.seconds:g} s per "
        "pipeline; gains over the as-is pipeline"
    )
    print(
        f"{'script':<20} {'as-is/s':>9} {'projected':>9} {'rewritten':>9} {'hand-fixed':>10} "
        f"{'(quartiles)':>11} {'proj/hand':>9}  fixes applied"
    )
    for name in names:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, "--turns", str(options.turns),
             "--seconds", str(options.seconds)],
            capture_output=True, text=True,
        )  # fmt: skip
        rows = done.stdout.strip().splitlines()
        line = rows[-1] if rows else f"{name:<20} (failed: {done.stderr.strip().splitlines()[-1]})"
        print(line, flush=True)


def compare(name: str, turns: int, seconds: float) -> None:
    """One table row: the defective sample's projection against its hand-fixed twin, measured
    while both scripts are stopped inside their ``fit``."""
    capture = make_capture()
    os.chdir(SAMPLES)
    with_dataset(
        capture,
        SAMPLES / f"{name}.py",
        lambda defect: with_dataset(
            capture,
            SAMPLES / f"{name}_fixed.py",
            lambda twin: print(row(name, defect, twin, turns, seconds)),
        ),
    )


def row(name: str, defect: Any, twin: Any, turns: int, seconds: float) -> str:
    """The defective pipeline's projection, its rewrite and the hand-fixed twin, timed."""
    import psutil

    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.frontend import read_dataset
    from pipedoctor.graph.whatif import evaluate, paired_gain, rewritten

    gp, twin_gp = read_dataset(defect, None), read_dataset(twin, None)
    outcome = evaluate(
        gp,
        defect.element_spec,
        time.perf_counter() + WHATIF_BUDGET_S,
        int(psutil.virtual_memory().available),
    )
    projected = outcome.fixed / outcome.baseline if outcome.fixed else 1.0
    as_is = g.rebuild(gp.graph, defect.element_spec)
    fixed_graph = rewritten(gp, outcome.chosen)
    same = [n.op for n in g.chain(fixed_graph)] == [n.op for n in g.chain(twin_gp.graph)]
    pipelines = [
        g.rebuild(fixed_graph, defect.element_spec),
        g.rebuild(twin_gp.graph, twin.element_spec),
    ]
    batched = gp.stages[-1].batched
    for dataset in (as_is, *pipelines):
        warm(dataset, batched)
    rewrite, hand = (paired_gain(as_is, p, batched, turns, seconds=seconds) for p in pipelines)
    rate = statistics.median(rewrite.base_rates + hand.base_rates)
    fixes = "; ".join(outcome.applied) or "none" + "".join(f" ({n})" for n in outcome.notes[-1:])
    fixes += "".join(
        f"; bound: {f['title']} x{f['gain']:.1f}" for f in outcome.fixes if f.get("bound")
    )
    if same and outcome.chosen:
        fixes += " [the rewrite has the hand fix's stages, op for op]"
    low, high = hand.spread
    return (
        f"{name:<20} {rate:>9,.0f} {projected:>8.2f}x {rewrite.gain:>8.2f}x "
        f"{hand.gain:>9.2f}x {f'{low:.2f}-{high:.2f}':>11} {projected / hand.gain:>9.2f}  {fixes}"
    )


if __name__ == "__main__":
    main()
