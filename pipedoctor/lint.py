"""The static gate: find Python files and notebooks, read each without running it, and run the
static rules.

Files are independent, so they are spread over the machine's cores; each file is read, decoded,
parsed and analysed in one worker, and only its findings travel back.
"""

from __future__ import annotations

import ast
import io
import multiprocessing
import os
import re
import sys
import threading
import tokenize
import warnings
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from pipedoctor.config import Config
from pipedoctor.pipeline import Location
from pipedoctor.report import Finding, Report
from pipedoctor.rules import Hit, Selection, load_catalog, make_finding, run_rules
from pipedoctor.static import analyze_module, worth_analysing
from pipedoctor.static.notebook import NotebookError, NotebookSource, read_notebook
from pipedoctor.suppression import unsuppressed

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        ".eggs",
        "build",
        "dist",
        "node_modules",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".ipynb_checkpoints",
        "site-packages",
    }
)
SOURCE_SUFFIXES = (".py", ".ipynb")
LINE_IN_MESSAGE = re.compile(r"\(line (\d+)\)")
"""How a message points at another line of the file: ``(line 12)``."""
PARALLEL_MIN_FILES = 64
"""Below this many files a process pool costs more than it saves."""


class UsageError(ValueError):
    """Bad paths or options: printed on one line, exit code 2."""


@dataclass
class FileResult:
    findings: list[Finding] = field(default_factory=list)
    note: str | None = None


def discover(paths: Iterable[Path], config: Config) -> Iterator[Path]:
    """Python files and notebooks under ``paths``: files as given, folders walked without the
    usual clutter."""
    for path in paths:
        if not path.exists():
            raise UsageError(f"no such file or directory: {path}")
        if path.is_file():
            yield path
            continue
        for directory, subdirs, names in os.walk(path):
            here = Path(directory)
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d not in SKIPPED_DIRS
                and not d.endswith(".egg-info")
                and not (here / d / "pyvenv.cfg").exists()
                and not config.excluded(here / d)
            )
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES) and not config.excluded(here / name):
                    yield here / name


def display_path(path: Path) -> str:
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def syntax_finding(path: str, message: str, line: int | None, column: int | None) -> Finding:
    rule = load_catalog()["PD000"]
    where = Location(path, line or 1, column or 1) if line else Location(path, 1, 1)
    return make_finding(rule, Hit(where, message))


def decode(data: bytes, path: str) -> str | Finding:
    """Source bytes → text by PEP 263 rules, or a PD000 finding saying where decoding failed."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except SyntaxError as exc:
        return syntax_finding(path, f"cannot decode: {exc.msg}", exc.lineno, None)
    except (UnicodeDecodeError, LookupError) as exc:
        start = getattr(exc, "start", 0)
        line = data.count(b"\n", 0, start) + 1
        column = start - (data.rfind(b"\n", 0, start) + 1) + 1
        return syntax_finding(path, f"cannot decode: {exc}", line, column)


def check_syntax(text: str, path: str) -> None:
    """Raise ``SyntaxError`` where the module does not compile. For a module the rules have
    nothing to look at this is all the lint does, and compiling to bytecode costs about half
    of ``ast.parse``, which builds every node as a Python object. Top-level ``await`` is
    allowed: ``ast.parse`` accepts it and notebooks run it. A notebook's cells are compiled
    one by one, so its joined text is only parsed (``from __future__`` may open any cell)."""
    if path.endswith(".ipynb"):
        ast.parse(text, filename=path)
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # invalid escapes etc.: not this gate's business
        compile(text, path, "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)


def lint_text(
    text: str,
    path: str,
    selection: Selection,
    scopes: str | tuple[str, ...] = "static",
    measurements: dict[str, Any] | None = None,
) -> FileResult:
    """Findings for one module's source text (parse errors become PD000). A check passes its
    measurements and ``("runtime", "static")`` so rules that can use them do."""
    try:
        if not worth_analysing(text):
            check_syntax(text, path)
            return FileResult()
        tree = ast.parse(text, filename=path)
    except SyntaxError as exc:
        column = exc.offset if exc.offset and exc.offset > 0 else None
        return FileResult(
            _select(
                [syntax_finding(path, f"SyntaxError: {exc.msg}", exc.lineno, column)], selection
            )
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return FileResult(
            _select([syntax_finding(path, f"cannot parse: {exc}", None, None)], selection)
        )
    try:
        analysis = analyze_module(tree, path, text)
        findings = list(run_rules(analysis, scopes, selection, measurements))
    except RecursionError:
        return FileResult(note=f"{path}: too deeply nested to analyse; skipped")
    except Exception as exc:  # noqa: BLE001 - one odd file must not stop a whole lint
        return FileResult(note=f"{path}: not analysed ({type(exc).__name__}: {exc})")
    return FileResult(list(unsuppressed(findings, text.splitlines())))


def _select(findings: list[Finding], selection: Selection) -> list[Finding]:
    return [f for f in findings if selection.enabled(f.rule)]


def lint_notebook(text: str, path: str, selection: Selection) -> FileResult:
    """Findings for a notebook's code cells, each placed by cell and line in the cell."""
    try:
        notebook = read_notebook(text)
    except NotebookError as exc:
        return FileResult(
            _select([syntax_finding(path, str(exc), exc.line, exc.column)], selection)
        )
    if notebook is None:
        return FileResult()  # a notebook in another language
    result = lint_text(notebook.text, path, selection)
    findings = [in_cell(f, notebook) for f in result.findings]
    for place, message, column in notebook.broken:
        broken = syntax_finding(path, message, place.line, column)
        findings.append(replace(broken, cell=place.cell))
    return FileResult(_select(findings, selection), result.note)


def in_cell(finding: Finding, notebook: NotebookSource) -> Finding:
    """A finding on the joined module, moved to its cell and the line and column there (a
    line its message names, too)."""
    start = notebook.place(finding.line or 0)
    if start is None:
        return finding

    def cell_line(match: re.Match[str]) -> str:
        place = notebook.place(int(match.group(1)))
        return f"(cell {place.cell}, line {place.line})" if place else match.group(0)

    end = notebook.place(finding.end_line or 0)
    same_cell = end is not None and end.cell == start.cell
    return replace(
        finding,
        message=LINE_IN_MESSAGE.sub(cell_line, finding.message),
        cell=start.cell,
        line=start.line,
        column=finding.column + start.indent if finding.column else None,
        end_line=end.line if same_cell and end else None,
        end_column=finding.end_column + end.indent
        if same_cell and end and finding.end_column
        else None,
    )


def lint_file(path: Path, selection: Selection) -> FileResult:
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        return FileResult(note=f"{shown}: cannot read ({exc.strerror or exc})")
    if path.suffix == ".ipynb":
        try:
            return lint_notebook(data.decode("utf-8-sig"), shown, selection)
        except UnicodeDecodeError as exc:
            return FileResult(
                _select([syntax_finding(shown, f"cannot decode: {exc}", None, None)], selection)
            )
    text = decode(data, shown)
    if isinstance(text, Finding):
        return FileResult(_select([text], selection))
    return lint_text(text, shown, selection)


def _can_fork() -> bool:
    """Fork a worker pool only from a plain process. A process that runs threads (a notebook or
    a test with TensorFlow loaded) would hand its children locks that other threads held, and a
    child could wait on one forever; there the files are read in this process instead (spawned
    workers would re-run the caller's ``__main__``)."""
    return (
        "fork" in multiprocessing.get_all_start_methods()
        and threading.active_count() == 1
        and "tensorflow" not in sys.modules
    )


def lint_paths(paths: Iterable[Path], config: Config) -> Report:
    """Lint files and folders; the report's findings are sorted by place."""
    files = list(dict.fromkeys(discover(paths, config)))
    work = partial(lint_file, selection=config.selection)
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_MIN_FILES or workers == 1 or not _can_fork():
        results = list(map(work, files))
    else:
        chunk = max(1, min(16, len(files) // (workers * 32)))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(work, files, chunksize=chunk))
    return collect(results, len(files), config)


def lint_source(text: str, config: Config, path: str = "<string>") -> Report:
    return collect([lint_text(text, path, config.selection)], 1, config)


def collect(results: list[FileResult], files: int, config: Config) -> Report:
    findings: list[Finding] = []
    notes: list[str] = []
    for result in results:
        if result.note:
            notes.append(result.note)
        for finding in result.findings:
            ignored = config.ignored_for(finding.path or "")
            if not any(finding.rule.startswith(code) for code in ignored):
                findings.append(finding)
    findings.sort(key=Finding.sort_key)
    return Report(findings=findings, files_checked=files, notes=notes)
