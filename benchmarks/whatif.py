"""Does pipedoctor's projection match the hand-fixed pipeline?

For each defective script in sample_pipelines/: the pipeline rate as it is, the rate
pipedoctor projects with all its safe fixes applied to the graph, and the rate of the
hand-fixed twin, all measured in this one run the same way (each pipeline rebuilt from its graph
and timed alone). The projection should come within 10% of the hand-fixed twin.

    python benchmarks/whatif.py [--timeout 90] [NAME ...]
"""

from __future__ import annotations

import argparse
import os
import platform

from check_samples import SAMPLES, check, rate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="sample names (default: all)")
    parser.add_argument("--timeout", type=float, default=90.0)
    args = parser.parse_args()
    names = args.names or sorted(
        p.stem for p in SAMPLES.glob("*.py") if not p.stem.endswith("_fixed")
    )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; pipeline samples/s"
    )
    print(
        f"{'script':<22} {'as-is':>9} {'projected':>9} {'hand-fixed':>10} {'proj/hand':>9}  fixes"
    )
    for name in names:
        report, _, error = check(SAMPLES / f"{name}.py", args.timeout)
        twin, _, twin_error = check(SAMPLES / f"{name}_fixed.py", args.timeout)
        if error or twin_error:
            print(f"{name:<22} (no result: {error or twin_error})")
            continue
        m, t = report.get("measurements", {}), twin.get("measurements", {})
        as_is = m.get("graph_pipeline_samples_per_s")
        projected = m.get("fixed_pipeline_samples_per_s") or as_is
        hand = t.get("graph_pipeline_samples_per_s")
        ratio = f"{projected / hand:9.2f}" if projected and hand else f"{'-':>9}"
        fixes = "; ".join(m.get("fixes_applied") or []) or "-"
        print(f"{name:<22} {rate(as_is)} {rate(projected)} {rate(hand):>10} {ratio}  {fixes}")


if __name__ == "__main__":
    main()
