"""Does pipedoctor's projection match the hand-fixed pipeline?

Checks every script in sample_pipelines/ (printing check_samples.py's table on the way), then,
for each defective script: the pipeline rate as it is, the rate pipedoctor projects with all
its safe fixes applied to the graph, and the rate of the hand-fixed twin, all measured in this
one run the same way (each pipeline rebuilt from its graph and timed alone). The projection
should come within 10% of the hand-fixed twin.

    python benchmarks/whatif.py [--timeout 120] [NAME ...]
"""

from __future__ import annotations

from check_samples import arguments, rate, run_all, sample_names


def main() -> None:
    options = arguments(__doc__)
    names = sample_names(options.names)
    results = run_all(names, options.timeout)
    print()
    print(
        f"{'script':<22} {'as-is':>9} {'projected':>9} {'hand-fixed':>10} {'proj/hand':>9}  "
        "fixes applied"
    )
    for name in names:
        (report, _, error), (twin, _, twin_error) = results[name], results[f"{name}_fixed"]
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
