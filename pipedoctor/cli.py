"""Command line: parse arguments, call the API, pick a renderer, choose the exit code.

Exit codes (ruff's): 0 nothing at or above the failing severity, 1 findings that fail the gate,
2 the tool could not do what was asked (bad path, option or configuration, a report it could not
write, an internal error): one line on stderr, the traceback only with ``--verbose``.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import textwrap
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from pipedoctor import __version__
from pipedoctor.config import Config, ConfigError, load_config
from pipedoctor.diagnosis import VERDICTS
from pipedoctor.fix.edits import FixError
from pipedoctor.lint import UsageError, lint_paths
from pipedoctor.progress import Progress
from pipedoctor.render import FORMATS, render
from pipedoctor.report import Report, Severity
from pipedoctor.rule_docs import rule_page, write_pages
from pipedoctor.rules import RuleFileError, load_catalog

LONGER_WORTH_IT = 10.0
"""An inconclusive check suggests a longer ``--timeout`` only up to this many times the one
it had; beyond, it says the figures sit on the threshold instead of asking for hours."""
LONGER_AT_LEAST = 1.5
"""The least it suggests: where the intervals' estimate says the budget it had was about
enough (the measurement that straddled was cut short by start-up or load), the same
``--timeout`` again is no advice."""


def longer_check(timeout: float, undecided: dict | None) -> str:
    """What an inconclusive check advises: a ``--timeout`` long enough for the intervals to
    decide, as their estimate (``undecided["longer"]``) says, never the same one again."""
    longer = float((undecided or {}).get("longer") or 2)
    if longer > LONGER_WORTH_IT:
        return f"the figures sit on it: only a check about x{longer:g} longer would decide"
    return f"check again with --timeout {math.ceil(timeout * max(longer, LONGER_AT_LEAST))} or more"


if TYPE_CHECKING:
    from pipedoctor.capture.runner import Continuation

EXIT_OK, EXIT_FAILED, EXIT_ERROR = 0, 1, 2


class OneLineParser(argparse.ArgumentParser):
    """argparse, but a usage error is one line on stderr and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see --help)\n")


class OutputError(OSError):
    """The report could not be written (an unwritable ``-o`` file, a full disk): exit 2."""


def add_verbose(parser: argparse.ArgumentParser, default: object = argparse.SUPPRESS) -> None:
    parser.add_argument(
        "--verbose",
        action="store_true",
        default=default,
        help="on an internal error, print its traceback",
    )


def demo_script() -> Path:
    return Path(__file__).resolve().parent / "demo" / "train_demo.py"


def split_codes(values: list[str] | None) -> list[str] | None:
    if not values:
        return None
    return [code for value in values for code in value.split(",") if code.strip()]


def add_report_options(parser: argparse.ArgumentParser, demo_help: str | None) -> None:
    """The options ``lint``, ``check``, ``profile`` and ``report`` share: what to run, which
    rules, how to print (``--demo`` only where there is a demo to run)."""
    if demo_help is not None:
        parser.add_argument("--demo", action="store_true", help=demo_help)
    parser.add_argument(
        "--format", choices=FORMATS, default="text", help="output format (default: text)"
    )
    parser.add_argument(
        "--select",
        action="append",
        metavar="CODES",
        help="only these rules (prefixes, comma-separated)",
    )
    parser.add_argument(
        "--ignore",
        action="append",
        metavar="CODES",
        help="skip these rules (replaces the config's list)",
    )
    parser.add_argument(
        "--config",
        type=Path,
        metavar="FILE",
        help="pyproject.toml to read instead of the nearest one",
    )
    parser.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto", help="colored text output"
    )
    parser.add_argument(
        "--output-file",
        "-o",
        type=Path,
        metavar="FILE",
        help="write the report here, not to stdout",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="pipedoctor",
        description="Find why a TensorFlow/Keras training job is input-bound, and what to fix "
        "first.",
    )
    parser.add_argument("--version", action="version", version=f"pipedoctor {__version__}")
    add_verbose(parser, default=False)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=OneLineParser)

    lint = commands.add_parser(
        "lint",
        help="check pipeline code without running it (for CI and pre-commit)",
        description="Read Python files and report tf.data and distribution mistakes. "
        "Never imports or runs the code it reads.",
    )
    lint.add_argument(
        "paths", nargs="*", type=Path, metavar="PATH", help="files or folders (default: .)"
    )
    add_report_options(lint, "lint the demo training script bundled with pipedoctor")
    lint.add_argument(
        "--extend-ignore", action="append", metavar="CODES", help="skip these rules too"
    )
    lint.add_argument(
        "--fail-on",
        choices=("error", "warning", "info"),
        help="lowest severity that makes the exit code 1 (default: warning)",
    )
    lint.add_argument(
        "--confidence",
        choices=("high", "medium", "low"),
        help="least confident findings to report (default: high, findings every fact of "
        "which the code shows)",
    )
    lint.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even when findings fail the gate"
    )
    add_fix_options(lint, "apply the safe fixes to the files")
    add_verbose(lint)

    check = commands.add_parser(
        "check",
        help="measure a training script: pipeline, compute ceiling, training, verdict",
        description="Run SCRIPT until it starts training, measure the input pipeline alone, the "
        "compute ceiling and real training on a copy of the model, then stop it. Arguments "
        "after `--` go to the script.",
    )
    check.add_argument("script", nargs="?", type=Path, metavar="SCRIPT", help="training script")
    add_report_options(check, "check the demo training script bundled with pipedoctor")
    check.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SECONDS",
        help="budget for the whole check, start-up included (default: 120)",
    )
    add_fail_on(check)
    check.add_argument(
        "--min-ratio",
        type=float,
        metavar="R",
        help="exit 1 when training throughput is below R x the compute ceiling",
    )
    check.add_argument(
        "--run-after", action="store_true", help="let the script carry on training after the check"
    )
    check.add_argument(
        "--workers",
        type=int,
        metavar="N",
        help="explain which files each of N workers would read (default: the workers in TF_CONFIG)",
    )
    check.add_argument(
        "--devices",
        type=int,
        metavar="N",
        help="project the job onto N devices (more than are visible): the input they need, and "
        "what is measured of their compute",
    )
    check.add_argument("--show-output", action="store_true", help="show the script's own output")
    check.add_argument(
        "--profile",
        type=Path,
        metavar="DIR",
        help="also write a profile of a few training steps to DIR, for TensorBoard's Profile tab",
    )
    check.add_argument("--quiet", "-q", action="store_true", help="no progress display")
    add_fix_options(
        check,
        "apply the safe measured fixes to the files the findings point to in the working "
        "directory, then check the patched script again (the patch is taken back unless the "
        "second check measures a speed-up)",
    )

    profile = commands.add_parser(
        "profile",
        help="diagnose a TensorFlow profile captured elsewhere (offline, no GPU needed)",
        description="Read the profiles under each LOGDIR (the Keras TensorBoard callback's "
        "profile_batch, tf.profiler.experimental.start/stop, or `check --profile`), one LOGDIR "
        "per host, and give the same verdict and findings as a check.",
    )
    profile.add_argument("logdirs", nargs="+", type=Path, metavar="LOGDIR", help="log folders")
    add_report_options(profile, None)
    add_fail_on(profile)
    report = commands.add_parser(
        "report",
        help="the report of a monitored run, from its per-worker records",
        description="Read the records `pipedoctor.keras.Monitor(log_dir=...)` wrote (one per "
        "worker, in LOG_DIR/pipedoctor/), compare the workers and print the run's report.",
    )
    report.add_argument(
        "paths", nargs="+", type=Path, metavar="PATH", help="a log_dir, or record files"
    )
    add_report_options(report, None)
    add_verbose(report)

    compare = commands.add_parser(
        "compare",
        help="time to a target accuracy (or loss), compared across monitored runs",
        description="Read the runs `pipedoctor.keras.Monitor(log_dir=...)` recorded and say, per "
        "run, when it reached the target (interpolated between epochs), and how the runs "
        "compare: throughput per sample against epochs needed.",
    )
    compare.add_argument("paths", nargs="+", type=Path, metavar="LOG_DIR", help="one per run")
    compare.add_argument(
        "--target",
        required=True,
        metavar="METRIC=VALUE",
        help="a logged metric and its target: val_accuracy=0.9, loss<=0.3, auc>=0.8",
    )
    compare.add_argument("--format", choices=("text", "json", "html"), default="text")
    compare.add_argument("-o", "--output-file", type=Path, metavar="FILE", help="write here")

    rules = commands.add_parser("rules", help="list the rule catalog")
    rules.add_argument("--format", choices=("text", "json"), default="text")

    explain = commands.add_parser("explain", help="show one rule's documentation")
    explain.add_argument(
        "rule", nargs="?", metavar="RULE", help="a rule id, e.g. PD102, or its name"
    )
    explain.add_argument("--all", action="store_true", help="every rule's page, in id order")
    explain.add_argument(
        "--pages",
        type=Path,
        metavar="DIR",
        help="write the documentation site's rule pages (one per rule and the catalogue) to DIR",
    )
    return parser


def add_fail_on(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fail-on",
        action="append",
        metavar="WHAT",
        help="exit 1 when the verdict is this (input-bound, balanced, compute-bound) or a finding "
        "is at or above this severity (error, warning, info); comma-separated",
    )


def parse_fail_on(values: list[str] | None) -> list[str]:
    fail_on = [item.lower() for item in split_codes(values) or []]
    unknown = [i for i in fail_on if i not in VERDICTS and i not in ("error", "warning", "info")]
    if unknown:
        raise UsageError(f"--fail-on: unknown value {unknown[0]!r}")
    return fail_on


def use_color(choice: str, stream: object) -> bool:
    if choice != "auto":
        return choice == "always"
    if os.environ.get("NO_COLOR"):
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


def run_lint(args: argparse.Namespace) -> int:
    paths = list(args.paths)
    if args.demo:
        paths.append(demo_script())
    if not paths:
        paths = [Path(".")]
    start = paths[0] if exists(paths[0]) else Path.cwd()
    config = load_config(
        start if start.is_dir() else start.parent,
        explicit=args.config,
        select=split_codes(args.select),
        ignore=split_codes(args.ignore),
        extend_ignore=split_codes(args.extend_ignore),
        fail_on=args.fail_on,
        confidence=args.confidence,
    )
    report = lint_paths(paths, config)
    if args.fix or args.diff:
        return fix_and_report(report, paths, config, args)
    write_report(report, args)
    if report.failed(config.fail_on) and not args.exit_zero:
        return EXIT_FAILED
    return EXIT_OK


def add_fix_options(parser: argparse.ArgumentParser, fix_help: str) -> None:
    parser.add_argument("--fix", action="store_true", help=fix_help)
    parser.add_argument(
        "--unsafe-fixes", action="store_true", help="with --fix or --diff: the unsafe fixes too"
    )
    parser.add_argument(
        "--diff", action="store_true", help="print the fixes as a unified diff; write nothing"
    )


def relinter(config: Config):  # noqa: ANN201 - a callable, as fix_report takes it
    """How a fix checks itself before it is written: the static findings on the fixed text."""
    from pipedoctor.lint import lint_fixed

    def relint(text: str, shown: str) -> list:
        return lint_fixed(text, shown, config.selection)

    return relint


def fix_and_report(
    report: Report, paths: list[Path], config: Config, args: argparse.Namespace
) -> int:
    """``--diff``: the fixes as a unified diff on stdout, nothing written (exit 1 when there is
    one, as ruff). ``--fix``: the fixes written, then the findings that remain reported. A file
    that cannot be fixed is one line naming it, exit 2, and the file left as it was. A file
    the lint could not analyse (PD000) has nothing to fix, so it is reported as ``lint``
    reports it, exit 1: ``--diff`` says so on stderr, keeping stdout a patch."""
    from pipedoctor.fix.run import fix_report, summary
    from pipedoctor.render.text import render_findings

    relint = relinter(config)
    try:
        run = fix_report(report, relint, unsafe=args.unsafe_fixes, write=not args.diff)
    except FixError as exc:  # libcst missing
        raise UsageError(str(exc)) from None
    for shown, why in run.failed:
        sys.stderr.write(f"pipedoctor: error: {shown}: {why}\n")
    if args.diff:
        write_stdout(run.diff)
        unread = [finding for finding in report.findings if finding.rule == "PD000"]
        sys.stderr.write(render_findings(unread, color=use_color(args.color, sys.stderr)))
        sys.stderr.write(summary(run, wrote=False) + "\n")
        if run.failed:
            return EXIT_ERROR
        return EXIT_FAILED if run.edits or (unread and not args.exit_zero) else EXIT_OK
    remaining = lint_paths(paths, config) if run.edits else report
    write_report(remaining, args)
    sys.stderr.write(summary(run, wrote=True) + "\n")
    if run.failed:
        return EXIT_ERROR
    if remaining.failed(config.fail_on) and not args.exit_zero:
        return EXIT_FAILED
    return EXIT_OK


def exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long, a NUL byte: lint_paths says so
        return False


def write_report(report: Report, args: argparse.Namespace) -> None:
    color = args.format == "text" and use_color(args.color, sys.stdout)
    output = render(report, args.format, color=color)
    if args.output_file:
        write_file(args.output_file, output)
    else:
        write_stdout(output)


def write_file(path: Path, output: str) -> None:
    """The report to ``-o FILE``; a file name that is not UTF-8 is written as its own bytes."""
    try:
        path.write_text(output, encoding="utf-8", errors="surrogateescape")
    except (OSError, ValueError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise OutputError(f"cannot write the report to {path}: {why}") from None


def write_stdout(output: str) -> None:
    """The report to stdout, flushed here so a full disk (``> /dev/full``) is an error now,
    not a traceback at exit. Text the stream cannot encode (a file name that is not UTF-8, a
    bar on an ASCII terminal) is written as bytes, escaped where it has none."""
    stream = sys.stdout
    try:
        try:
            stream.write(output)
        except UnicodeEncodeError:
            encoding = getattr(stream, "encoding", None) or "utf-8"
            try:
                data = output.encode(encoding, "surrogateescape")
            except UnicodeEncodeError:
                data = output.encode(encoding, "backslashreplace")
            stream.flush()
            stream.buffer.write(data)
        stream.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        silence_stdout()
        why = exc.strerror or str(exc)
        raise OutputError(f"cannot write the report to stdout: {why}") from None


def silence_stdout() -> None:
    """Point stdout at the null device, so what is still buffered cannot fail again at exit."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):  # not a real file (a test's capture)
        pass


def gate_failed(report: Report, fail_on: list[str], min_ratio: float | None) -> str | None:
    """Why the CI gate failed, or ``None`` when it passed."""
    for item in fail_on:
        if item in VERDICTS and report.verdict == item:
            return f"the verdict is {item}"
        if item in ("error", "warning", "info") and report.failed(Severity.parse(item)):
            return f"a finding is at or above {item}"
    if min_ratio is not None:
        training = report.measurements.get("training_samples_per_s")
        ceiling = report.measurements.get("ceiling_samples_per_s")
        if not training or not ceiling:
            return "--min-ratio needs training and ceiling throughputs, and they were not measured"
        if training / ceiling < min_ratio:
            return (
                f"training reaches {training / ceiling:.2f} of the compute ceiling (< {min_ratio})"
            )
    return None


def run_check(args: argparse.Namespace) -> int:
    from pipedoctor.checker import CheckError, check_script

    fail_on = parse_fail_on(args.fail_on)
    if not math.isfinite(args.timeout) or args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    if args.workers is not None and args.workers < 2:
        raise UsageError("--workers must be 2 or more")
    if args.devices is not None and args.devices < 1:
        raise UsageError("--devices must be 1 or more")
    if args.demo and args.script is not None:
        raise UsageError(f"--demo checks the bundled demo: drop it to check {args.script}")
    if (args.fix or args.diff) and args.run_after:
        raise UsageError("--fix and --diff change the script's files: not with --run-after")
    if (args.fix or args.diff) and args.demo:
        raise UsageError("--fix and --diff write to your files: copy the demo to fix it")
    if args.fix or args.diff:
        from pipedoctor.fix.edits import require_libcst

        try:  # before a minute of measuring, not after it
            require_libcst()
        except FixError as exc:
            raise UsageError(str(exc)) from None
    script = demo_script() if args.demo else args.script
    if script is None:
        raise UsageError("check needs a SCRIPT (or --demo)")
    if not script.is_file():
        raise UsageError(f"no such script: {script}")
    config = load_config(
        script.resolve().parent,
        explicit=args.config,
        select=split_codes(args.select),
        ignore=split_codes(args.ignore),
    )
    progress = Progress(enabled=not args.quiet)
    try:
        checked = check_script(
            script, args.script_args, config, timeout=args.timeout, run_after=args.run_after,
            workers=args.workers, progress=progress, show_output=args.show_output,
            profile=args.profile, devices=args.devices,
        )  # fmt: skip
    except CheckError as exc:
        progress.done()
        if exc.details:
            sys.stderr.write(exc.details.rstrip() + "\n")
        sys.stderr.write(f"pipedoctor: error: {exc}\n")
        if exc.continuation is not None:
            return train_on(exc.continuation, EXIT_OK)
        return EXIT_ERROR
    progress.done()
    if (args.fix or args.diff) and checked.report.incomplete is None:
        return fix_measured(checked.report, script, config, args, fail_on)
    code = report_and_gate(checked.report, args, fail_on, args.min_ratio)
    if checked.report.verdict == "inconclusive" and checked.report.incomplete is None:
        advice = longer_check(args.timeout, checked.report.measurements.get("undecided"))
        sys.stderr.write(
            "pipedoctor: error: inconclusive: the throughputs' intervals straddle the verdict's "
            f"threshold; {advice}\n"
        )
        return EXIT_ERROR
    if checked.report.incomplete is not None:
        sys.stderr.write(
            f"pipedoctor: error: the check is incomplete: {checked.report.incomplete}\n"
        )
        code = EXIT_ERROR
    if checked.continuation is not None:
        return train_on(checked.continuation, code)
    return code


def fix_measured(
    report: Report, script: Path, config: Config, args: argparse.Namespace, fail_on: list[str]
) -> int:
    """``check --diff``: the measured fixes as a diff (hunks headed by their gains), nothing
    written. ``check --fix``: written, the script checked again, the patch kept only when that
    check measures a speed-up; its report is the one shown."""
    from pipedoctor.checker import CheckError, check_script
    from pipedoctor.fix.measured import confirm, plan_fixes, summary

    relint = relinter(config)
    try:
        result = plan_fixes(report, relint, Path.cwd(), unsafe=args.unsafe_fixes, write=args.fix)
    except FixError as exc:  # libcst missing
        raise UsageError(str(exc)) from None
    for shown, why in result.run.failed:
        sys.stderr.write(f"pipedoctor: error: {shown}: {why}\n")
    if args.diff:
        write_stdout(result.run.diff)
        sys.stderr.write(summary(result, wrote=False) + "\n")
        return EXIT_ERROR if result.run.failed else (EXIT_FAILED if result.run.edits else EXIT_OK)
    after = report
    if result.run.edits:
        progress = Progress(enabled=not args.quiet)
        progress("checking the patched script again")
        try:
            checked = check_script(
                script, args.script_args, config, timeout=args.timeout, workers=args.workers,
                progress=progress, show_output=args.show_output, devices=args.devices,
            )  # fmt: skip
            after = checked.report
            confirm(result, after, Path.cwd())
        except CheckError as exc:
            confirm(result, Report(), Path.cwd())  # nothing to compare: written back
            result.reason = f"the second check failed ({exc}); the files were written back"
        progress.done()
        if not result.kept:
            after = report
    code = report_and_gate(after, args, fail_on, args.min_ratio)
    sys.stderr.write(summary(result, wrote=True) + "\n")
    if result.run.failed or not result.kept:
        return EXIT_ERROR
    return code


def report_and_gate(
    report: Report, args: argparse.Namespace, fail_on: list[str], min_ratio: float | None
) -> int:
    write_report(report, args)
    reason = gate_failed(report, fail_on, min_ratio)
    if reason:
        sys.stderr.write(f"pipedoctor: gate failed: {reason}\n")
    return EXIT_FAILED if reason else EXIT_OK


def train_on(continuation: Continuation, gate: int) -> int:
    """``--run-after``: the report is out; the script trains to its end, its output on stderr.
    The exit code is the script's own, or the gate's when the script succeeded."""
    sys.stderr.write("pipedoctor: the script trains on (--run-after); its output follows\n")
    sys.stderr.flush()
    code = continuation.wait()
    if code != 0:
        sys.stderr.write(f"pipedoctor: the script ended with exit code {code}\n")
    return code or gate


def run_profile(args: argparse.Namespace) -> int:
    """The doctor for profiles taken elsewhere: every unreadable input is one line, exit 2."""
    from pipedoctor.profile import ProfileError
    from pipedoctor.profile.doctor import read_profile

    fail_on = parse_fail_on(args.fail_on)
    config = load_config(
        Path.cwd(),
        explicit=args.config,
        select=split_codes(args.select),
        ignore=split_codes(args.ignore),
    )
    try:
        report = read_profile(args.logdirs, config.selection)
    except ProfileError as exc:
        sys.stderr.write(f"pipedoctor: error: {exc}\n")
        return EXIT_ERROR
    return report_and_gate(report, args, fail_on, None)


def run_report(args: argparse.Namespace) -> int:
    """A monitored run's report from its per-worker records (the chief's, with every worker
    compared), judged by the same rules as ``check``."""
    from pipedoctor.checker import build_report
    from pipedoctor.monitor.records import read_job

    missing = [p for p in args.paths if not exists(p)]
    if missing:
        raise UsageError(f"no such file or folder: {missing[0]}")
    try:
        job = read_job(args.paths)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    config = load_config(
        Path.cwd(),
        explicit=args.config,
        select=split_codes(args.select),
        ignore=split_codes(args.ignore),
    )
    report = build_report(job.measurements(), job.all_notes(), config.selection)
    write_report(report, args)
    return EXIT_OK


def run_compare(args: argparse.Namespace) -> int:
    """Time to a target across runs: one line and exit 2 when nothing can be compared."""
    import json

    from pipedoctor.compare import CompareError, Target, compare, render_text
    from pipedoctor.render.compare_html import render_compare_page

    missing = [p for p in args.paths if not p.exists()]
    if missing:
        raise UsageError(f"no such file or folder: {missing[0]}")
    try:
        result = compare(args.paths, Target.parse(args.target))
    except CompareError as exc:
        raise UsageError(str(exc)) from None
    renderers = {"text": render_text, "html": render_compare_page,
                 "json": lambda r: json.dumps(r, indent=2) + "\n"}  # fmt: skip
    output = renderers[args.format](result)
    if args.output_file:
        args.output_file.write_text(output, encoding="utf-8")
    else:
        sys.stdout.write(output)
    return EXIT_OK


def run_rules_list(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    if args.format == "json":
        import json

        rows = [
            {
                "id": r.id,
                "name": r.name,
                "severity": r.severity.label,
                "scope": list(r.scope),
                "summary": r.summary,
                "fix_safety": r.fix_safety,
            }
            for r in catalog.values()
        ]
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return EXIT_OK
    width = max(len(r.name) for r in catalog.values())
    for rule in catalog.values():
        scope = ",".join(rule.scope)
        sys.stdout.write(
            f"{rule.id}  {rule.name:<{width}}  {rule.severity.label:<7}  {scope:<22}  "
            f"{rule.summary}\n"
        )
    return EXIT_OK


def run_explain(args: argparse.Namespace) -> int:
    catalog = load_catalog()
    if args.pages:
        changed = write_pages(args.pages, catalog)
        for path in changed:
            sys.stdout.write(f"{path}\n")
        pages = len(catalog) + 1
        sys.stderr.write(f"{pages} rule pages in {args.pages}: {len(changed)} changed.\n")
        return EXIT_OK
    if args.all:
        sys.stdout.write("\n".join(rule_page(rule) for rule in catalog.values()))
        return EXIT_OK
    if not args.rule:
        raise UsageError("explain needs a RULE (or --all)")
    wanted = args.rule.strip()
    rule = catalog.get(wanted.upper()) or next(
        (r for r in catalog.values() if r.name == wanted.lower()), None
    )
    if rule is None:
        close = [r.id for r in catalog.values() if r.id.startswith(wanted.upper()[:4])][:5]
        hint = f" (did you mean {', '.join(close)}?)" if close else " (see `pipedoctor rules`)"
        sys.stderr.write(f"pipedoctor: error: unknown rule {wanted!r}{hint}\n")
        return EXIT_ERROR
    sys.stdout.write(textwrap.dedent(rule_page(rule)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    script_args: list[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, script_args = argv[:cut], argv[cut + 1 :]
    parser = build_parser()
    args = parser.parse_args(argv)
    args.script_args = script_args
    handlers = {
        "lint": run_lint,
        "check": run_check,
        "profile": run_profile,
        "report": run_report,
        "compare": run_compare,
        "rules": run_rules_list,
        "explain": run_explain,
    }
    if args.command is None:
        parser.print_help()
        return EXIT_ERROR
    try:
        return handlers[args.command](args)
    except (UsageError, ConfigError, RuleFileError, OutputError) as exc:
        sys.stderr.write(f"pipedoctor: error: {exc}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write("pipedoctor: interrupted\n")
        return EXIT_ERROR
    except BrokenPipeError:
        silence_stdout()
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the last resort: one line, exit 2
        if getattr(args, "verbose", False):
            traceback.print_exc()
        message = " ".join(str(exc).split())
        sys.stderr.write(
            f"pipedoctor: error: internal error: {type(exc).__name__}: {message} "
            "(run with --verbose for the traceback)\n"
        )
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
