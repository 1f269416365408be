"""How fast is ``pipedoctor lint`` next to merely parsing the same files?

Lints the installed TensorFlow and Keras sources (a large, real, varied code base) with the
``pipedoctor lint`` command, and in the same run times a bare single-process loop of
read + ``ast.parse`` over the same files. Prints both times and their ratio (lint / parse);
the goal is a ratio of at most 1.0. Each side runs ``--repeat`` times, alternating, and the
best time of each is compared, so a noisy shared machine hurts both alike.

    python benchmarks/lint_speed.py [--repeat 3] [PATH ...]

It also checks that the lint finished cleanly: exit code 0 or 1, a JSON report on stdout, and
no file it could not analyse.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from pipedoctor.config import Config
from pipedoctor.lint import discover


def installed_sources() -> list[Path]:
    """The TensorFlow and Keras package folders, found without importing either."""
    roots = []
    for name in ("tensorflow", "keras"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            sys.exit(f"{name} is not installed here: install pipedoctor[tf] to run this benchmark")
        roots.extend(Path(p) for p in spec.submodule_search_locations)
    return roots


def bare_parse(files: list[Path]) -> float:
    start = time.perf_counter()
    for path in files:
        try:
            ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            pass
    return time.perf_counter() - start


def pipedoctor_lint(roots: list[Path]) -> tuple[float, dict]:
    command = [sys.executable, "-m", "pipedoctor", "lint", "--format", "json", "--exit-zero"]
    start = time.perf_counter()
    done = subprocess.run(command + [str(r) for r in roots], capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"pipedoctor lint failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return elapsed, json.loads(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path, help="default: installed TensorFlow + Keras")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    roots = args.paths or installed_sources()
    files = list(discover(roots, Config()))
    size = sum(f.stat().st_size for f in files)
    print(
        f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"Python {platform.python_version()}"
    )
    print(f"files: {len(files)} ({size / 1e6:.1f} MB) under {', '.join(map(str, roots))}")

    parse_times, lint_times = [], []
    report: dict = {}
    for _ in range(args.repeat):
        parse_times.append(bare_parse(files))
        elapsed, report = pipedoctor_lint(roots)
        lint_times.append(elapsed)

    parse_best, lint_best = min(parse_times), min(lint_times)
    print(
        f"bare ast.parse, one process : {parse_best:6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in parse_times)})"
    )
    print(
        f"pipedoctor lint (CLI)       : {lint_best:6.2f} s  (runs: "
        f"{', '.join(f'{t:.2f}' for t in lint_times)})"
    )
    print(f"ratio lint / parse          : {lint_best / parse_best:6.2f}  (goal: <= 1.00)")
    summary = report.get("summary", {})
    notes = report.get("notes", [])
    print(
        f"lint checked {summary.get('files')} files: {summary.get('findings')} findings "
        f"{summary.get('by_rule')}, {len(notes)} files not analysed"
    )
    for note in notes[:10]:
        print(f"  not analysed: {note}")
    if notes:
        sys.exit(1)


if __name__ == "__main__":
    main()
