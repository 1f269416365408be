"""Run ``pipedoctor check`` on every script in sample_pipelines/ and print what it measured.

For each script: the three throughputs (samples/s), the verdict, the findings, and the check's
own wall time; each defective script sits next to its fixed twin, so the table shows whether
the fix paid off on this machine.

    python benchmarks/check_samples.py [--timeout 90] [NAME ...]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

SAMPLES = Path(__file__).resolve().parent.parent / "sample_pipelines"


def check(script: Path, timeout: float) -> tuple[dict, float, str]:
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", str(script), "--format", "json",
         "--quiet", "--timeout", str(timeout)],
        capture_output=True, text=True, timeout=timeout + 60,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode == 2 or not done.stdout.strip():
        return {}, elapsed, done.stderr.strip().splitlines()[-1] if done.stderr else "failed"
    return json.loads(done.stdout), elapsed, ""


def rate(value: float | None) -> str:
    return f"{value:>9,.0f}" if value else f"{'-':>9}"


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
        f"{platform.python_version()}; samples/s; check --timeout {args.timeout:g}"
    )
    print(
        f"{'script':<28} {'pipeline':>9} {'ceiling':>9} {'training':>9}  "
        f"{'verdict':<14} {'wall s':>6}  findings"
    )
    for name in names:
        for script in (SAMPLES / f"{name}.py", SAMPLES / f"{name}_fixed.py"):
            report, elapsed, error = check(script, args.timeout)
            if error:
                print(f"{script.stem:<28} {'':>29}  {'(no result)':<14} {elapsed:6.1f}  {error}")
                continue
            m = report.get("measurements", {})
            rules = ",".join(sorted({f["rule"] for f in report.get("findings", [])})) or "-"
            print(
                f"{script.stem:<28} {rate(m.get('pipeline_samples_per_s'))} "
                f"{rate(m.get('ceiling_samples_per_s'))} {rate(m.get('training_samples_per_s'))}"
                f"  {report.get('verdict') or '-':<14} {elapsed:6.1f}  {rules}"
            )
            sys.stdout.flush()


if __name__ == "__main__":
    main()
