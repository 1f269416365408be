"""Jupyter notebooks as the static gate reads them: the code cells as one Python module.

A notebook's state flows from cell to cell, so the code cells are joined into one module (as
ruff does) and analysed like a script. IPython syntax that is not Python is left out: line
magics (``%pip``), shell lines (``!ls``, ``files = !ls``), help (``obj?``, ``?? obj``) and cells
that hold another language (``%%bash``, ``%%writefile``, ``%%html``, or, in hosted kernels'
notebooks, the same opened with one ``%``: ``%bash``, ``%bq query``). A cell indented as a whole
is dedented. A cell that still does not compile is reported (PD000) and left out, so one
broken cell does not hide the rest; so is a cell the file does not hold as nbformat says (not
an object, no ``cell_type``, a source that is not text), never silently dropped. Every line of
the module maps back to its cell and its line there.

Cells are numbered from 1 over every cell, markdown included, as ruff and nbQA count them.
"""

from __future__ import annotations

import ast
import json
import re
import warnings
from dataclasses import dataclass, field

PYTHON_CELL_MAGICS = frozenset(
    {
        "time",
        "timeit",
        "capture",
        "debug",
        "prun",
        "python",
        "python3",
        "pypy",
        "tensorflow_version",
    }
)
"""Cell magics whose body is Python run in the kernel: the magic line goes, the body stays."""
OTHER_LANGUAGE_MAGICS = frozenset(
    {
        "bash", "sh", "script", "system", "writefile", "file", "bq", "bigquery", "sql",
        "html", "javascript", "js", "latex", "markdown", "svg", "perl", "ruby", "cmd",
        "powershell",
    }
)  # fmt: skip
"""Cell magics whose body is another language. Notebooks of some hosted kernels (Datalab's
``%bq query``, ``%bash``) open such a cell with one ``%``: a cell whose first line is one of
these, and that is no Python past it, holds that language."""
_ASSIGNED_SHELL = re.compile(r"^(\s*[\w.\[\], ]+=\s*)[!%]")
NEWLINE = re.compile(r"\r\n|\r|\n")
"""Line breaks as the Python tokenizer counts them (``str.splitlines`` counts more)."""


def source_lines(text: str) -> list[str]:
    """The lines of source as the tokenizer and the line numbers of ``ast`` count them: cut at
    ``\\n``, ``\\r\\n`` and ``\\r`` only. ``str.splitlines`` also cuts at a form feed, a
    vertical tab, ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028/U+2029, which Python takes as
    ordinary characters: line numbers counted so would drift after the first one."""
    return text.split("\n") if "\r" not in text else NEWLINE.split(text)


_AUTOMAGIC = re.compile(
    r"^\s*(ls|cd|pwd|pip|conda|cat|mkdir|rm|cp|mv|env|load_ext|matplotlib|tensorboard|time"
    r"|timeit|who|whos|history|alias|man|less|clear|reload_ext|run)"
    r"(\s+(?=\S)(?!=[^=]|[(,\[:]|\.[A-Za-z_])|\s*$)"
)
"""IPython commands usable without ``%`` (automagic), when the line is no Python statement."""
EXERCISE = re.compile(
    r"your code|start code here|write code here|fill in|fill me|replace (?:this|none|\?)"
    r"|<your|_{3,}|\btodo\b"
    r"|[=(,\[]\s*\?\?|\?\?\s*[,)\]]"  # ``Input(??)``: a blank, not IPython's ``obj??``
    r"|[=(,\[]\s*\?(?=\s*(?:[,)\]#]|$))|^\s*\?\s*(?:#|$)"  # ``epochs = ?``, ``df[ ? ]``
    r"|(?<![=!<>])=\s*[,)]|['\"]\s*:\s*,",  # ``batch_size=,``, ``activation=)``, ``'min': ,``
    re.IGNORECASE | re.MULTILINE,
)
"""What a lesson's exercise blank says (``x = # YOUR CODE HERE``, ``None  # TODO``,
``Dense(128, activation=??)``, ``epochs = ?  # Replace ? with an integer``, a value left
empty: ``fit(x, batch_size=, ...)``): a cell left for the student to complete is not meant to
run as written. Only a cell that does not parse is asked."""
CITATION = re.compile(r"\A\s*(?:#[^\n]*\n\s*)*@[A-Za-z]+\s*\{\s*[\w:.-]*\s*,")
"""A BibTeX entry (``@article{key,``, ``@manual{deepchem,``) pasted into a code cell, as
tutorials do to ask for a citation: a text, not Python."""


def not_python(source: str) -> str | None:
    """Why a cell that does not parse is not meant to run as Python, or None."""
    if CITATION.search(source):
        return "it holds a BibTeX citation, not Python"
    if EXERCISE.search(source):
        return "it holds an exercise blank"
    return None


_HELP = re.compile(r"^\s*\?\??\s*[\w.]+\s*$|^\s*[\w.()\[\]]+\?\??\s*$")


class NotebookError(ValueError):
    """A file that is not a notebook the gate can read (bad JSON, no cells), with the place in
    the file where reading failed when there is one."""

    def __init__(self, message: str, line: int | None = None, column: int | None = None):
        super().__init__(message)
        self.line = line
        self.column = column


@dataclass(frozen=True)
class CellPlace:
    """Where a line of the joined module comes from."""

    cell: int
    """1-based, over every cell of the notebook."""
    line: int
    """1-based line in the cell's source."""
    indent: int = 0
    """Columns removed from this line by dedenting the cell: add them back to a column."""


@dataclass
class NotebookSource:
    """The joined module, the place of each of its lines, and the cells that did not parse."""

    text: str
    places: list[CellPlace] = field(default_factory=list)
    broken: list[tuple[CellPlace, str, int | None]] = field(default_factory=list)
    """(place of the error, parser message, column) for each cell left out."""
    written: list[NotebookSource] = field(default_factory=list)
    """The Python files the notebook writes (``%%writefile trainer/task.py``), each a module
    of its own: course notebooks often hold their real trainer there."""
    name: str = ""
    """For a written file: the name the cell writes it to."""
    not_code: dict[int, str] = field(default_factory=dict)
    """Cells among the broken ones not meant to run as Python, each with why: an exercise
    blank left for the student, a BibTeX citation pasted into a code cell."""
    cell_sources: dict[int, str] = field(default_factory=dict)
    """The source of each broken cell, by number: the line a parse error points at."""

    def broken_line(self, place: CellPlace) -> str:
        """The line of a broken cell that ``place`` points at (empty when unknown)."""
        lines = source_lines(self.cell_sources.get(place.cell, ""))
        return lines[place.line - 1] if 0 < place.line <= len(lines) else ""

    def place(self, line: int) -> CellPlace | None:
        """The cell and cell line of the module's 1-based ``line``."""
        return self.places[line - 1] if 0 < line <= len(self.places) else None


def read_notebook(text: str) -> NotebookSource | None:
    """The notebook's code as one module; ``None`` for a notebook in another language.

    Raises :class:`NotebookError` when the text is not a notebook.
    """
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise NotebookError(f"not a valid notebook: {exc.msg}", exc.lineno, exc.colno) from None
    except RecursionError:
        raise NotebookError("not a valid notebook: nested too deeply") from None
    except ValueError as exc:  # a number past Python's 4,300 digits, and the like
        raise NotebookError(f"not a valid notebook: {exc}") from None
    cells = cells_of(data)
    if not _is_python(data):
        return None
    lines: list[str] = []
    places: list[CellPlace] = []
    broken: list[tuple[CellPlace, str, int | None]] = []
    modules: list[NotebookSource] = []
    not_code: dict[int, str] = {}
    sources: dict[int, str] = {}
    for number, cell in enumerate(cells, start=1):
        problem = _malformed(cell)
        if problem is not None:
            broken.append((CellPlace(number, 1), f"cell not read: {problem}", None))
            continue
        if cell["cell_type"] != "code":
            continue
        source = _source(cell)
        if source is None:
            message = "cell not read: its source is neither a string nor a list of strings"
            broken.append((CellPlace(number, 1), message, None))
            continue
        written = written_python(source, number)
        if written is not None:
            if isinstance(written, NotebookSource):
                modules.append(written)
            else:
                broken.append(written)
                if (why := not_python(source)) is not None:
                    not_code[number] = why
            continue
        code, indents, error = python_of_cell(source)
        if error is not None:
            message, line, column = error
            broken.append((CellPlace(number, line), message, column))
            sources[number] = source
            if (why := not_python(source)) is not None:
                not_code[number] = why
            continue
        cell_lines = code.split("\n") if code else []
        lines.extend(cell_lines)
        places.extend(
            CellPlace(number, i, indents[i - 1] if i <= len(indents) else 0)
            for i in range(1, len(cell_lines) + 1)
        )
    return NotebookSource(
        "\n".join(lines) + "\n",
        places,
        broken,
        modules,
        not_code=not_code,
        cell_sources=sources,
    )


def displayed_lines(notebook: NotebookSource) -> set[int]:
    """The module's lines that hold a cell's last statement when it is an expression: Jupyter
    shows its value (``ds.take(1)`` at a cell's end is looked at, not thrown away)."""
    try:
        body = ast.parse(notebook.text).body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return set()
    last: dict[int, ast.stmt] = {}
    for statement in body:
        place = notebook.place(statement.lineno)
        if place is not None:
            last[place.cell] = statement
    return {
        line
        for statement in last.values()
        if isinstance(statement, ast.Expr)
        for line in range(statement.lineno, (statement.end_lineno or statement.lineno) + 1)
    }


def written_python(
    source: str, cell: int
) -> NotebookSource | tuple[CellPlace, str, int | None] | None:
    """A ``%%writefile NAME.py`` cell as the module it writes (its lines are the cell's, the
    magic's line left blank), or the reason it does not parse; ``None`` for any other cell."""
    lines = NEWLINE.split(source)
    index = next((i for i, line in enumerate(lines) if line.strip()), None)
    if index is None or not lines[index].strip().startswith(("%%writefile", "%writefile")):
        return None
    target = lines[index].split()[-1] if len(lines[index].split()) > 1 else ""
    if not target.endswith(".py"):
        return None
    lines[index] = ""
    code = "\n".join(lines)
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        message, line, column = parse_error(exc, [])
        return (CellPlace(cell, line), message, column)
    places = [CellPlace(cell, i) for i in range(1, len(lines) + 1)]
    return NotebookSource(code + "\n", places, name=target)


def cells_of(data: object) -> list:
    """The cell list of nbformat 4 (``cells``) or 3 (the ``cells`` of each worksheet)."""
    if isinstance(data, dict):
        if isinstance(data.get("cells"), list):
            return data["cells"]
        sheets = data.get("worksheets")
        if isinstance(sheets, list):
            cells: list = []
            for number, sheet in enumerate(sheets, start=1):
                held = sheet.get("cells", []) if isinstance(sheet, dict) else None
                if not isinstance(held, list):
                    raise NotebookError(f"not a valid notebook: worksheet {number} has no cells")
                cells.extend(held)
            return cells
        if "cells" in data:
            raise NotebookError("not a valid notebook: its cells are not a list")
    raise NotebookError("not a valid notebook: no cells")


def _malformed(cell: object) -> str | None:
    """Why a cell is not one nbformat describes, or ``None`` when it is one."""
    if not isinstance(cell, dict):
        return f"a cell must be an object, not {_json_type(cell)}"
    kind = cell.get("cell_type")
    if not isinstance(kind, str):
        return "it has no cell_type" if kind is None else "its cell_type is not a string"
    return None


def _json_type(value: object) -> str:
    names = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number")


def _is_python(data: dict) -> bool:
    metadata = data.get("metadata") if isinstance(data.get("metadata"), dict) else {}
    for key in ("language_info", "kernelspec"):
        section = metadata.get(key)
        if isinstance(section, dict):
            language = section.get("name" if key == "language_info" else "language")
            if isinstance(language, str) and language:
                return language.lower().startswith("python")
    return True


def source_key(cell: dict) -> str:
    """Where a cell keeps its code: ``source`` (nbformat 4), ``input`` (a code cell of 3)."""
    return "source" if "source" in cell or "input" not in cell else "input"


def _source(cell: dict) -> str | None:
    source = cell.get(source_key(cell))
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    return source if isinstance(source, str) else None


def python_of_cell(source: str) -> tuple[str, list[int], tuple[str, int, int | None] | None]:
    """A cell's source as Python, the columns each line was dedented by, and the parse error.

    The line count never changes, so line ``n`` of the result is line ``n`` of the cell. A cell
    that parses as it is is taken as it is (its strings may hold ``%`` or ``?`` at a line end).
    """
    lines = NEWLINE.split(source)
    first = next((line.strip() for line in lines if line.strip()), "")
    if first.startswith("%%"):
        if _magic_name(first) not in PYTHON_CELL_MAGICS:
            return "", [], None  # another language: bash, writefile, html, ...
        index = next(i for i, line in enumerate(lines) if line.strip())
        lines[index] = ""
    code = "\n".join(lines)
    if _parses(code):
        return _compiled(code, [0] * len(lines))
    lines = _without_ipython(lines)
    first_code = next((line for line in lines if line.strip()), "")
    prefix = first_code[: len(first_code) - len(first_code.lstrip())]
    indents = [0] * len(lines)
    if prefix:  # as IPython does: the first line's indent comes off every line that has it
        for i, line in enumerate(lines):
            if line.startswith(prefix):
                lines[i], indents[i] = line[len(prefix) :], len(prefix)
    code = "\n".join(lines)
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        if not first.startswith("%%") and _magic_name(first) in OTHER_LANGUAGE_MAGICS:
            return "", [], None
        return "", indents, parse_error(exc, indents)
    return _compiled(code, indents)


def _magic_name(line: str) -> str:
    """``bq`` for ``%bq query -n name``, ``bash`` for ``%%bash``; empty for no magic."""
    words = line.lstrip("%").split(maxsplit=1) if line.startswith("%") else []
    return words[0] if words else ""


def _compiled(
    code: str, indents: list[int]
) -> tuple[str, list[int], tuple[str, int, int | None] | None]:
    """The cell as it is when it compiles as IPython compiles a cell (top-level ``await``
    allowed); else the error: ``ast.parse`` accepts ``return`` outside a function, a repeated
    argument name, ``nonlocal`` at the top, which the compiler rejects."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(code, "<cell>", "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return "", indents, parse_error(exc, indents)
    return code, indents, None


def parse_error(exc: Exception, indents: list[int]) -> tuple[str, int, int | None]:
    """(message, line, column) of a cell that does not parse, the column counted in the cell
    as written (``indents``: what dedenting took off each line)."""
    if not isinstance(exc, SyntaxError):
        return f"cannot parse: {exc}", 1, None
    line = exc.lineno or 1
    shift = indents[line - 1] if 0 < line <= len(indents) else 0
    column = exc.offset + shift if exc.offset and exc.offset > 0 else None
    return f"SyntaxError: {exc.msg}", line, column


def _parses(code: str) -> bool:
    try:
        ast.parse(code)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _without_ipython(lines: list[str]) -> list[str]:
    """The lines with IPython-only syntax replaced by a Python statement of the same indent
    (a shell or magic line continued with ``\\`` takes its continuation lines along)."""
    out: list[str] = []
    continued = False
    for line in lines:
        if continued:
            out.append("")
        else:
            out.append(_python_line(line))
            if out[-1] == line:
                continue
        continued = line.rstrip().endswith("\\")
    return out


def _python_line(line: str) -> str:
    stripped = line.lstrip()
    indent = line[: len(line) - len(stripped)]
    if stripped.startswith(("%", "!")) or _HELP.match(line) or _AUTOMAGIC.match(line):
        # at the top, a blank: a `from __future__` after `%tensorflow_version` stays first
        return indent + "pass" if indent else ""
    assigned = _ASSIGNED_SHELL.match(line)
    if assigned:
        return assigned.group(1) + "None"
    return line
