"""How fast is ``pipedoctor lint`` next to merely parsing the same files?

Lints the installed TensorFlow and Keras sources (a large, real, varied code base) with the
``pipedoctor lint`` command, and in the same run times a bare single-process loop of
read + ``ast.parse`` over the same files. Prints both times and their ratio (lint / parse);
the goal is a ratio of at most 1.0. Each side runs ``--repeat`` times, alternating, and the
best time of each is compared, so a noisy shared machine hurts both alike. CPU time (of this
process for the parse; of the lint command and its workers for the lint) is printed beside the
wall time. On a machine busy with other jobs both swing with the load, so a third figure is
taken file by file in this one process: the CPU time of parsing a file, then of linting it
(``lint_file``: read, decode, syntax check or parse and analyse), summed over the files. Load
that comes and goes falls on both alike; it is the work per file, without the process start
and the spread over cores.

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
import resource
import subprocess
import sys
import time
from pathlib import Path

from pipedoctor.config import Config
from pipedoctor.lint import discover, lint_file


def installed_sources() -> list[Path]:
    """The TensorFlow and Keras package folders, found without importing either."""
    roots = []
    for name in ("tensorflow", "keras"):
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            sys.exit(f"{name} is not installed here: install pipedoctor[tf] to run this benchmark")
        roots.extend(Path(p) for p in spec.submodule_search_locations)
    return roots


def children_cpu() -> float:
    """CPU seconds of the finished child processes (and the workers they waited for)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def bare_parse(files: list[Path]) -> tuple[float, float]:
    """Wall and CPU seconds of reading and parsing every file in this process."""
    start, cpu = time.perf_counter(), time.process_time()
    for path in files:
        try:
            ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            pass
    return time.perf_counter() - start, time.process_time() - cpu


def pipedoctor_lint(roots: list[Path]) -> tuple[float, float, dict]:
    """Wall and CPU seconds of one ``pipedoctor lint`` command, and its JSON report."""
    command = [sys.executable, "-m", "pipedoctor", "lint", "--format", "json", "--exit-zero"]
    start, cpu = time.perf_counter(), children_cpu()
    done = subprocess.run(command + [str(r) for r in roots], capture_output=True, text=True)
    elapsed, used = time.perf_counter() - start, children_cpu() - cpu
    if done.returncode != 0:
        sys.exit(f"pipedoctor lint failed (exit {done.returncode}): {done.stderr.strip()[-2000:]}")
    return elapsed, used, json.loads(done.stdout)


def interleaved(files: list[Path]) -> tuple[float, float]:
    """CPU seconds of ``ast.parse`` and of ``lint_file``, each file parsed then linted."""
    selection = Config().selection
    parse = lint = 0.0
    for path in files:
        start = time.process_time()
        try:
            ast.parse(path.read_bytes(), filename=str(path))
        except (SyntaxError, ValueError):
            pass
        middle = time.process_time()
        lint_file(path, selection)
        parse, lint = parse + middle - start, lint + time.process_time() - middle
    return parse, lint


def show(label: str, runs: list[float]) -> float:
    """Print the best of the runs, and the runs; return the best."""
    best = min(runs)
    print(f"{label:<34}: {best:6.2f} s  (runs: {', '.join(f'{t:.2f}' for t in runs)})")
    return best


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

    parse_wall, parse_cpu, lint_wall, lint_cpu = [], [], [], []
    report: dict = {}
    for _ in range(args.repeat):
        wall, cpu = bare_parse(files)
        parse_wall.append(wall)
        parse_cpu.append(cpu)
        wall, cpu, report = pipedoctor_lint(roots)
        lint_wall.append(wall)
        lint_cpu.append(cpu)

    wall_ratio = show("pipedoctor lint (CLI), wall", lint_wall) / show(
        "bare ast.parse, one process, wall", parse_wall
    )
    cpu_ratio = show("pipedoctor lint, CPU (all workers)", lint_cpu) / show(
        "bare ast.parse, CPU", parse_cpu
    )
    print(f"{'ratio lint / parse, wall':<34}: {wall_ratio:6.2f}  (goal: <= 1.00)")
    print(f"{'ratio lint / parse, CPU':<34}: {cpu_ratio:6.2f}")
    parse, lint = interleaved(files)
    print(
        f"{'ratio, file by file, one process':<34}: {lint / parse:6.2f}  "
        f"(CPU: parse {parse:.2f} s, lint {lint:.2f} s)"
    )
    print(f"load average during the runs      : {os.getloadavg()[0]:.1f}")
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
