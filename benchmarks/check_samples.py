"""Run ``pipedoctor check`` on every script in sample_pipelines/ and print what it measured.

With ``--outside``, on the scripts written by others in ``tests/outside/`` instead, each from
an empty working directory, as ``tests/test_outside.py`` runs them.

For each script: the three throughputs (samples/s), the verdict, the findings, and the check's
own wall time; each defective script sits next to its fixed twin, so the table shows whether
the fix paid off on this machine. A sample with a ``<name>.toml`` beside it is checked with
that configuration (``--config``).

    python benchmarks/check_samples.py [--timeout 120] [NAME ...]
    python benchmarks/check_samples.py --outside [--timeout 60]
    python benchmarks/check_samples.py --fix [--timeout 120] [NAME ...]

With ``--fix``, each defective sample is checked with ``check --fix --unsafe-fixes`` in a
copy of sample_pipelines/: what it fixed, the gain the first check projected, the rate the
second check measured on the patched script, and whether the patch was kept.
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


def config_of(name: str) -> Path | None:
    """The configuration a sample is checked with, ``sample_pipelines/<name>.toml``, if any."""
    path = SAMPLES / f"{name.removesuffix('_fixed')}.toml"
    return path if path.is_file() else None


OUTSIDE = SAMPLES.parent / "tests" / "outside"


def check(script: Path, timeout: float, cwd: Path | None = None) -> tuple[dict, float, str]:
    """The JSON report of one check, its wall time, and the error line when it failed."""
    config = config_of(script.stem)
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", str(script), "--format", "json",
         "--quiet", "--timeout", str(timeout), *(["--config", str(config)] if config else [])],
        capture_output=True, text=True, timeout=timeout + 60, cwd=cwd,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if done.returncode == 2 or not done.stdout.strip():
        return {}, elapsed, done.stderr.strip().splitlines()[-1] if done.stderr else "failed"
    return json.loads(done.stdout), elapsed, ""


def rate(value: float | None) -> str:
    return f"{value:>9,.0f}" if value else f"{'-':>9}"


def sample_names(chosen: list[str]) -> list[str]:
    return chosen or sorted(p.stem for p in SAMPLES.glob("*.py") if not p.stem.endswith("_fixed"))


def run_all(names: list[str], timeout: float) -> dict[str, tuple[dict, float, str]]:
    """Check every defect and its twin, printing the table as the results come in."""
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; samples/s; check --timeout {timeout:g}"
    )
    print(
        f"{'script':<28} {'pipeline':>9} {'ceiling':>9} {'training':>9}  "
        f"{'verdict':<14} {'wall s':>6}  findings"
    )
    results = {}
    for name in names:
        for script in (SAMPLES / f"{name}.py", SAMPLES / f"{name}_fixed.py"):
            report, elapsed, error = results[script.stem] = check(script, timeout)
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
    return results


def run_outside(timeout: float) -> None:
    """Check every script of ``tests/outside/`` from an empty folder: verdict, the three
    throughputs, the check's wall time and the first finding located in the script."""
    import tempfile

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; check --timeout {timeout:g}")
    for script in sorted(OUTSIDE.glob("*.py")):
        with tempfile.TemporaryDirectory() as empty:
            report, elapsed, error = check(script, timeout, cwd=Path(empty))
        m = report.get("measurements", {})
        located = [f["rule"] for f in report.get("findings", []) if f.get("path")]
        rates = " / ".join(
            f"{m[k]:,.0f}" if m.get(k) else "-"
            for k in ("pipeline_samples_per_s", "ceiling_samples_per_s", "training_samples_per_s")
        )
        verdict = report.get("verdict") or ("incomplete" if m.get("incomplete") else error)
        top = located[0] if located else "-"
        print(f"| `{script.name}` | {verdict} | {rates} | {elapsed:.0f} s | {top} |")
        sys.stdout.flush()


def run_fixes(names: list[str], timeout: float) -> None:
    """``check --fix --unsafe-fixes`` on a copy of each defective sample, as a user runs it."""
    import re
    import shutil
    import tempfile

    print(f"machine: {platform.machine()}, {os.cpu_count()} cores; check --timeout {timeout:g}")
    print("| sample | fixed | projected | before -> after (samples/s) | measured | kept |")
    print("|---|---|---:|---:|---:|---|")
    for name in names:
        with tempfile.TemporaryDirectory() as folder:
            copy = Path(folder) / "samples"
            shutil.copytree(SAMPLES, copy)
            config = config_of(name)
            done = subprocess.run(
                [sys.executable, "-m", "pipedoctor", "check", f"{name}.py", "--fix",
                 "--unsafe-fixes", "--timeout", str(timeout),
                 *(["--config", str(config)] if config else [])],
                capture_output=True, text=True, timeout=3 * timeout + 120, cwd=copy,
            )  # fmt: skip
            changed = sorted(
                str(p.relative_to(copy))
                for p in copy.rglob("*.py")
                if p.read_bytes() != (SAMPLES / p.relative_to(copy)).read_bytes()
            )
        out = done.stdout + done.stderr
        projected = re.search(r"Projected by the check: (x[\d.]+)", out)
        after = re.search(r"Measured after the fix: ([\d,]+) -> ([\d,]+) samples/s, (x[\d.]+)", out)
        fixed = re.search(r"Fixed (\d+) finding", out)
        what = f"{fixed.group(1) if fixed else 0} in {', '.join(changed) or 'no file'}"
        kept = (
            "no: " + out.split("Not kept: ", 1)[1].split("\n", 1)[0]
            if "Not kept" in out
            else ("yes" if changed else "-")
        )
        print(
            f"| {name} | {what} | "
            f"{projected.group(1) if projected else '-'} | "
            f"{after.group(1) + ' -> ' + after.group(2) if after else '-'} | "
            f"{after.group(3) if after else '-'} | {kept} |"
        )
        for line in out.splitlines():
            if line.startswith("Not fixed: "):
                print(f"|   | {line} | | | | |")
        sys.stdout.flush()


def arguments(doc: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("names", nargs="*", help="sample names (default: all)")
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--outside", action="store_true", help="the scripts of tests/outside/")
    parser.add_argument("--fix", action="store_true", help="check --fix --unsafe-fixes each defect")
    return parser.parse_args()


if __name__ == "__main__":
    options = arguments(__doc__)
    if options.outside:
        run_outside(options.timeout)
    elif options.fix:
        run_fixes(sample_names(options.names), options.timeout)
    else:
        run_all(sample_names(options.names), options.timeout)
