"""The static gate: find Python files and notebooks, read each without running it, and run the
static rules.

Files are independent, so they are spread over the machine's cores; each file is read, decoded,
parsed and analysed in one worker, and only its findings travel back.

Nothing passes unread: a file the gate could not read (not a regular file, a broken link, no
permission), could not compile, or could not analyse to its end is a ``PD000`` finding with
the reason, never a silent skip.
"""

from __future__ import annotations
import __future__

import ast
import errno
import io
import multiprocessing
import os
import re
import stat
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
from pipedoctor.evidence import assumed, at_least, confidence
from pipedoctor.pipeline import Location, ProjectUse
from pipedoctor.report import Finding, Report
from pipedoctor.rules import Hit, Selection, load_catalog, make_finding, run_rules
from pipedoctor.static import analyze, worth_analysing
from pipedoctor.static.notebook import (
    NotebookError,
    NotebookSource,
    displayed_lines,
    read_notebook,
    source_lines,
)
from pipedoctor.static.project import link_project
from pipedoctor.static.python2 import python2_sign
from pipedoctor.static.runtime import project_pins, runtime_of
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
    path: str = ""
    uses: list[ProjectUse] = field(default_factory=list)
    """What the file does with what other modules' functions return (the project pass)."""


def discover(paths: Iterable[Path], config: Config) -> Iterator[Path | Unread]:
    """Python files and notebooks under ``paths``: files as given, folders walked without the
    usual clutter. What a walk finds but cannot read (a folder without permission) comes as
    :class:`Unread`; a path given that is neither a file nor a folder is a usage error."""
    for path in paths:
        kind = given_kind(path)
        if kind == "file":
            yield path
            continue
        problems: list[OSError] = []
        for directory, subdirs, names in os.walk(path, onerror=problems.append):
            for problem in problems:
                yield Unread(Path(problem.filename or directory), reason(problem, "folder"))
            problems.clear()
            here = Path(directory)
            subdirs[:] = sorted(
                d
                for d in subdirs
                if d not in SKIPPED_DIRS
                and not d.endswith(".egg-info")
                and not os.path.exists(os.path.join(directory, d, "pyvenv.cfg"))
                and not config.excluded(here / d)
            )
            for name in sorted(names):
                if name.endswith(SOURCE_SUFFIXES) and not config.excluded(here / name):
                    yield here / name
        for problem in problems:  # the folder itself
            yield Unread(Path(problem.filename or path), reason(problem, "folder"))


@dataclass(frozen=True)
class Unread:
    """A path the gate found and could not read, and why."""

    path: Path
    why: str


def given_kind(path: Path) -> str:
    """``file`` or ``folder`` for a path named on the command line (links followed); anything
    else is a :class:`UsageError` naming what it is."""
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            if os.path.lexists(path):
                raise UsageError(f"broken symbolic link: {path}") from None
            raise UsageError(f"no such file or directory: {path}") from None
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:  # a NUL byte in the name
        raise UsageError(f"not a valid path: {str(path)!r} ({exc})") from None
    if stat.S_ISDIR(info.st_mode):
        return "folder"
    if stat.S_ISREG(info.st_mode):
        return "file"
    raise UsageError(f"not a regular file or a folder ({file_type(info.st_mode)}): {path}")


def file_type(mode: int) -> str:
    for test, name in (
        (stat.S_ISFIFO, "a pipe"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def reason(exc: OSError, what: str = "file") -> str:
    """Why a file or folder could not be read, in a few words."""
    if exc.errno == errno.ENOENT and exc.filename and os.path.islink(exc.filename):
        return "broken symbolic link"
    text = exc.strerror or str(exc)
    return f"cannot read {what}: {text}"


def display_path(path: Path, follow: bool = True) -> str:
    """The path as findings show it: relative to the current folder when it is inside it
    (``follow=False``: a link by its own name, not its target's)."""
    try:
        resolved = path.resolve() if follow else path.parent.resolve() / path.name
        return resolved.relative_to(Path.cwd().resolve()).as_posix()
    except (ValueError, OSError, RuntimeError):  # elsewhere, a link loop, cwd gone
        return path.as_posix()


def syntax_finding(path: str, message: str, line: int | None, column: int | None) -> Finding:
    rule = load_catalog()["PD000"]
    where = Location(path, line or 1, column or 1) if line else Location(path, 1, 1)
    return make_finding(rule, Hit(where, message))


def for_python2(finding: Finding, line: str) -> Finding:
    """A parse error on Python 2 syntax (``print x``): kept, at ``low``, with why."""
    sign = python2_sign(finding.message, line)
    if sign is None:
        return finding
    return not_meant_to_run(finding, f"written for Python 2 ({sign}), which Python 3 cannot read")


def not_meant_to_run(finding: Finding, why: str) -> Finding:
    """A PD000 on code not meant to run as Python 3 as written (an exercise blank, Python 2):
    kept, never silent, at ``low``, reviewers having judged such findings wrong every time."""
    evidence = (assumed("runs", why),)
    return replace(finding, confidence=confidence(evidence, cap="low"), evidence=evidence)


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


def parse(text: str, path: str) -> ast.Module:
    """The module's tree; raises ``SyntaxError`` where it does not compile. ``ast.parse``
    alone misses what only the compiler rejects (``return`` outside a function, a repeated
    argument name, ``nonlocal`` at module level), so a module's tree is compiled too; a
    notebook's cells were compiled one by one as they were read."""
    tree = ast.parse(text, filename=path)
    if not path.endswith(".ipynb"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                compile_tree(tree, path)
            except RecursionError:  # converting a deep tree back recurses: compile the text
                check_syntax(text, path)
    return tree


def compile_tree(tree: ast.Module, path: str) -> None:
    """Compile a module's tree (for its errors only) a few statements at a time: a statement
    is checked in its own context (function, loop, class), which a piece keeps, and CPython's
    compiler takes quadratic time over one module with many alike functions (a thousand
    ``ds.map(lambda x: x + 1)`` lines). What one statement cannot show is checked on the
    whole: ``from __future__`` after the start, and a module-level ``global``."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    body = tree.body
    lead = _future_lead(body)
    if len(body) <= COMPILE_PIECE or _needs_whole(body, lead):
        compile(tree, path, "exec", flags, dont_inherit=True)
        return
    futures = 0
    for statement in body[:lead]:
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                feature = getattr(__future__, alias.name, None)
                futures |= getattr(feature, "compiler_flag", 0)
    for start in range(0, len(body), COMPILE_PIECE):
        piece = ast.Module(body=body[start : start + COMPILE_PIECE], type_ignores=[])
        compile(piece, path, "exec", flags | (futures if start else 0), dont_inherit=True)


COMPILE_PIECE = 64
"""Top-level statements compiled together by ``compile_tree``."""


def _future_lead(body: list[ast.stmt]) -> int:
    """How many statements open the module: a docstring, then ``from __future__`` imports."""
    lead = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        lead = 1
    while lead < len(body) and _is_future(body[lead]):
        lead += 1
    return lead


def _is_future(statement: ast.stmt) -> bool:
    return isinstance(statement, ast.ImportFrom) and statement.module == "__future__"


def _needs_whole(body: list[ast.stmt], lead: int) -> bool:
    """A ``from __future__`` past the start, or a ``global`` at module level (it may follow a
    use of its name, statements apart)."""
    pending = list(body[lead:])
    while pending:
        statement = pending.pop()
        if _is_future(statement) or isinstance(statement, ast.Global):
            return True
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for name in ("body", "orelse", "finalbody", "handlers", "cases"):
                children = getattr(statement, name, None)
                if isinstance(children, list):
                    pending.extend(children)
    return False


def lint_text(
    text: str,
    path: str,
    selection: Selection,
    scopes: str | tuple[str, ...] = "static",
    measurements: dict[str, Any] | None = None,
    whole: str | None = None,
) -> FileResult:
    """Findings for one module's source text (parse errors become PD000, and so does a
    module the analysis could not finish). A check passes its measurements and
    ``("runtime", "static")`` so rules that can use them do. ``whole`` is the file's text as
    written when ``text`` is only its code (a notebook's JSON, whose ``!pip install`` lines
    say which TensorFlow it runs on)."""
    try:
        if not worth_analysing(text):
            check_syntax(text, path)
            return FileResult()
        tree = parse(text, path)
    except SyntaxError as exc:
        column = exc.offset if exc.offset and exc.offset > 0 else None
        broken = syntax_finding(path, f"SyntaxError: {exc.msg}", exc.lineno, column)
        return FileResult(_select([for_python2(broken, exc.text or "")], selection))
    except RecursionError:
        message = "cannot parse: nested too deeply for Python's parser"
        return FileResult(_select([syntax_finding(path, message, None, None)], selection))
    except (ValueError, MemoryError) as exc:
        return FileResult(
            _select([syntax_finding(path, f"cannot parse: {exc}", None, None)], selection)
        )
    problem: tuple[str, int | None] | None = None
    findings: list[Finding] = []
    try:
        analysis, incomplete = analyze(tree, path, text)
        if analysis.pipelines:  # only PD101 and PD102 ask, of a pipeline
            analysis.runtime = runtime_of(path, whole if whole is not None else text)
        findings = list(run_rules(analysis, scopes, selection, measurements))
    except RecursionError:
        problem = ("nested too deeply for the analysis to follow", None)
    except MemoryError:
        problem = ("ran out of memory", None)
    except Exception as exc:  # noqa: BLE001 - one odd file must not stop a whole lint
        problem = (f"the analysis failed ({type(exc).__name__}: {exc})", None)
    else:
        if incomplete is not None:
            why, line = incomplete
            note = f"not fully analysed: {why}; the rest of the file was not checked"
            findings.append(syntax_finding(path, note, line, None))
    if problem is not None:
        why, line = problem
        note = f"not analysed: {why}; no other rule was checked on this file"
        return FileResult(_select([syntax_finding(path, note, line, None)], selection))
    if findings:  # the lines of the file only when there is a comment to look for
        findings = list(unsuppressed(findings, source_lines(text)))
    return FileResult(_select(findings, selection), path=path, uses=analysis.project_uses)


def _select(findings: list[Finding], selection: Selection) -> list[Finding]:
    return [f for f in findings if selection.enabled(f.rule)]


def lint_fixed(text: str, path: str, selection: Selection) -> list[Finding]:
    """The static findings on a fixed text of ``path`` (a notebook's JSON or Python), to
    check that each fix took before it is written."""
    if path.endswith(".ipynb"):
        return lint_notebook(text, path, selection).findings
    return lint_text(text, path, selection, ("static",)).findings


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
    result = lint_text(notebook.text, path, selection, whole=text)
    module = result.findings
    if any(f.rule == "PD112" for f in module):  # a cell's last expression is shown, not lost
        displayed = displayed_lines(notebook)
        module = [f for f in module if f.rule != "PD112" or f.line not in displayed]
    findings = [in_cell(f, notebook) for f in module]
    for written in notebook.written:  # each file a `%%writefile` cell writes, on its own
        as_module = lint_text(
            written.text, f"{path}#{written.name}", selection, whole=text
        )  # a .py file
        findings += [replace(in_cell(f, written), path=path) for f in as_module.findings]
    for place, message, column in notebook.broken:
        broken = syntax_finding(path, message, place.line, column)
        broken = for_python2(broken, notebook.broken_line(place))
        if place.cell in notebook.not_code:  # exercise blanks: 62 of 62 judged wrong
            broken = not_meant_to_run(broken, notebook.not_code[place.cell])
        findings.append(replace(broken, cell=place.cell))
    return FileResult(_select(findings, selection), result.note, path, result.uses)


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


def lint_file(path: Path | Unread, selection: Selection) -> FileResult:
    if isinstance(path, Unread):
        shown = display_path(path.path, follow=False)
        return FileResult(_select([syntax_finding(shown, path.why, None, None)], selection))
    data = read_regular(path)
    if isinstance(data, str):  # why it was not read: name the path found, not a link's target
        shown = display_path(path, follow=False)
        return FileResult(_select([syntax_finding(shown, data, None, None)], selection))
    shown = display_path(path)
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


def read_regular(path: Path) -> bytes | str:
    """The file's bytes, or why it was not read. Only a regular file is read: opening does
    not wait (a pipe named ``x.py`` would block a read forever), and what was opened is
    checked before reading."""
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except OSError as exc:
        return reason(exc)
    except ValueError as exc:
        return f"cannot read file: {exc}"
    try:
        mode = os.fstat(descriptor).st_mode
        if not stat.S_ISREG(mode):
            return f"not read: {file_type(mode)}, not a regular file"
        with os.fdopen(descriptor, "rb", closefd=False) as handle:
            return handle.read()
    except OSError as exc:
        return reason(exc)
    except MemoryError:
        return "cannot read file: too large to read into memory"
    finally:
        os.close(descriptor)


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
    """Lint files and folders; the report's findings are sorted by place. Raises
    :class:`UsageError` for a path that is neither a file nor a folder."""
    files = list(dict.fromkeys(discover(paths, config)))
    project_pins.cache_clear()  # each lint reads the project's pins as they are now
    work = partial(lint_file, selection=config.selection)
    workers = min(os.cpu_count() or 1, 8)
    if len(files) < PARALLEL_MIN_FILES or workers == 1 or not _can_fork():
        results = list(map(work, files))
    else:
        chunk = max(1, min(16, len(files) // (workers * 32)))
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = list(pool.map(work, files, chunksize=chunk))
    return collect(linked(results, files), len(files), config)


def linked(results: list[FileResult], files: list[Path | Unread]) -> list[FileResult]:
    """The files' results with the project pass applied: a finding on a dataset a function
    returns rests on ``trains`` shown where another file linted trains on it."""
    uses = {r.path: r.uses for r in results if r.uses}
    if not uses:
        return results
    findings = [f for r in results for f in r.findings]
    paths = [display_path(f) for f in files if isinstance(f, Path)]
    done = iter(link_project(findings, uses, paths))
    return [replace(r, findings=[next(done) for _ in r.findings]) for r in results]


def lint_source(text: str, config: Config, path: str = "<string>") -> Report:
    return collect([lint_text(text, path, config.selection)], 1, config)


def collect(results: list[FileResult], files: int, config: Config) -> Report:
    """One report from the files' results: per-file ignores applied, and only the findings at
    or above the gate's confidence kept (the others are counted, so none passes unsaid)."""
    findings: list[Finding] = []
    notes: list[str] = []
    below: dict[str, int] = {}
    for result in results:
        if result.note:
            notes.append(result.note)
        for finding in result.findings:
            ignored = config.ignored_for(finding.path or "")
            if any(finding.rule.startswith(code) for code in ignored):
                continue
            if at_least(finding.confidence, config.confidence):
                findings.append(finding)
            else:
                below[finding.confidence] = below.get(finding.confidence, 0) + 1
    findings.sort(key=Finding.sort_key)
    return Report(findings=findings, files_checked=files, notes=notes, below_confidence=below)
