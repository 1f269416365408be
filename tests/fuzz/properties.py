"""The properties the static gate must keep on any input, shared by the fuzz tests (a small,
deterministic budget) and ``benchmarks/fuzz_lint.py`` (a large, random one).

- **Nothing escapes.** Linting a file, a notebook or a string never raises: every failure is a
  finding (PD000 with the reason) or, for a bad path or configuration, a usage error.
- **No silent pass.** A file with no findings was read, compiled and analysed to its end.
- **No internal failure.** PD000 says why the code could not be checked (a syntax error, a
  limit of the analysis), never that the analysis itself broke.
- **Bounded.** Each input is linted within a deadline, and the shapes that used to blow up
  (shared inputs, constant folding, long chains) take time and memory linear in their length.
"""

from __future__ import annotations

import ast
import json
import os
import random
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipedoctor.lint import FileResult, lint_notebook, lint_text, parse
from pipedoctor.rules import Selection
from pipedoctor.static import analyze, worth_analysing

ROOT = Path(__file__).resolve().parents[2]
HEADER = "import tensorflow as tf\nimport functools\nds = tf.data.Dataset.range(8)\n"
"""Put before generated code, so that the analysis (not only the syntax check) reads it."""
FOOTER = "\nmodel.fit(ds.map(lambda x: x * 2).batch(4))\n"
DEADLINE_S = 20.0
"""Per input, generous for a busy 2-core machine: a hang or a blow-up takes far longer."""
INTERNAL = "not analysed: the analysis failed"
"""How a PD000 for a bug in the analysis begins (see ``lint.lint_text``)."""
SELECTION = Selection()


@dataclass
class Outcome:
    result: FileResult
    seconds: float


def sources() -> list[Path]:
    """Real code to mutate: the sample pipelines and every rule's fixture."""
    found = sorted((ROOT / "sample_pipelines").rglob("*.py"))
    found += sorted((ROOT / "tests" / "rules").rglob("*.py"))
    return found


def wrap(code: str, inside_function: bool) -> str:
    """Generated code where the analysis reads it: at module level, or as the body of a
    function that takes and returns a dataset (analysed on its own)."""
    if not inside_function:
        return HEADER + code + FOOTER
    body = "".join(f"    {line}\n" for line in code.splitlines()) or "    pass\n"
    return HEADER + "def build(ds):\n" + body + "    return ds\n" + FOOTER


def fully_analysed(text: str, path: str) -> bool:
    """Whether the gate could read ``text`` to its end, found independently of ``lint_text``:
    it compiles, and the analysis neither fails nor stops early."""
    try:
        if not worth_analysing(text):
            compile(text, path, "exec", ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
            return True
        tree = parse(text, path)
        _, incomplete = analyze(tree, path, text)
    except BaseException:  # noqa: BLE001 - any failure means: not analysed
        return False
    return incomplete is None


def check_source(text: str, path: str = "fuzz.py", deadline: float = DEADLINE_S) -> Outcome:
    """Lint ``text`` and assert the properties; returns the result and the time it took."""
    start = time.perf_counter()
    result = lint_text(text, path, SELECTION)  # raising here fails the property
    seconds = time.perf_counter() - start
    assert seconds < deadline, f"took {seconds:.1f} s"
    check_result(result)
    if not result.findings:
        assert fully_analysed(text, path), "no findings on a file that was not fully analysed"
    return Outcome(result, seconds)


def check_result(result: FileResult) -> None:
    assert result.note is None, f"a note instead of a finding: {result.note}"
    for finding in result.findings:
        if finding.rule == "PD000":
            assert not finding.message.startswith(INTERNAL), finding.message


def check_notebook(text: str, path: str = "fuzz.ipynb", deadline: float = DEADLINE_S) -> Outcome:
    """Lint a notebook's JSON text: never raises, and every cell it could not read is a PD000
    at that cell."""
    start = time.perf_counter()
    result = lint_notebook(text, path, SELECTION)
    seconds = time.perf_counter() - start
    assert seconds < deadline, f"took {seconds:.1f} s"
    check_result(result)
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        assert any(f.rule == "PD000" for f in result.findings), "invalid JSON passed"
        return Outcome(result, seconds)
    cells = data.get("cells") if isinstance(data, dict) else None
    if isinstance(cells, list):
        flagged = {f.cell for f in result.findings if f.rule == "PD000"}
        for number, cell in enumerate(cells, start=1):
            readable = isinstance(cell, dict) and isinstance(cell.get("cell_type"), str)
            if readable and cell["cell_type"] == "code":
                source = cell.get("source", cell.get("input"))
                readable = isinstance(source, str) or (
                    isinstance(source, list) and all(isinstance(s, str) for s in source)
                )
            if not readable and _python_kernel(data):
                assert number in flagged, f"cell {number} dropped silently: {cell!r}"[:300]
    return Outcome(result, seconds)


def _python_kernel(data: Any) -> bool:
    metadata = data.get("metadata") if isinstance(data, dict) else None
    if isinstance(metadata, dict):
        for key, field in (("language_info", "name"), ("kernelspec", "language")):
            section = metadata.get(key)
            if isinstance(section, dict) and isinstance(section.get(field), str):
                if section[field]:
                    return section[field].lower().startswith("python")
    return True


# --- mutations of real code --------------------------------------------------------------------


def mutate(text: str, rnd: random.Random, edits: int) -> str:
    """Delete, duplicate, swap or cut random lines, or drop a character: code as it looks
    half edited, with broken and repeated statements."""
    lines = text.split("\n")
    for _ in range(edits):
        if not lines:
            break
        i = rnd.randrange(len(lines))
        kind = rnd.randrange(6)
        if kind == 0:
            del lines[i]
        elif kind == 1:
            lines.insert(i, lines[i])
        elif kind == 2:
            j = rnd.randrange(len(lines))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == 3:
            lines[i:i] = lines[i : i + rnd.randint(1, 8)] * rnd.randint(2, 6)  # a block, again
        elif kind == 4 and lines[i]:
            k = rnd.randrange(len(lines[i]))
            lines[i] = lines[i][:k] + lines[i][k + 1 :]
        else:
            lines[i] = lines[i] + rnd.choice(["\f", "\x0b", "\x1c", "\u2028", "\r", " \\"])
    return "\n".join(lines)


# --- programs made of dataset code ---------------------------------------------------------------

NAMES = ("ds", "a", "b", "train", "f", "g", "p", "x", "s", "n", "self.ds", "c")
FUNCTIONS = ("f", "g", "p", "make", "build", "step", "C", "C().make", "functools.partial(f, ds)")


def program(rnd: random.Random, statements: int) -> str:
    """A random module made of the code the analysis follows (sources, transformations,
    ``zip``/``concatenate``, helpers, partials, classes, strategies, loops, branches) mixed
    into each other at random: what real code does, in combinations nobody writes."""
    lines = [HEADER.rstrip("\n"), "strategy = tf.distribute.MirroredStrategy()"]
    for _ in range(statements):
        lines.extend(_statement(rnd, 0, False))
    lines.append("model.fit(ds)")
    return "\n".join(lines) + "\n"


def _statement(rnd: random.Random, depth: int, in_function: bool) -> list[str]:
    name, other, third = (rnd.choice(NAMES) for _ in range(3))
    func = rnd.choice(FUNCTIONS)
    number = rnd.choice(
        ["1", "32", "0", "-1", "tf.data.AUTOTUNE", "n", "strategy.num_replicas_in_sync * 8"]
    )
    simple = [
        f"{name} = tf.data.Dataset.range({number})",
        f"{name} = tf.data.TFRecordDataset([{other!r}, 'b'], num_parallel_reads={number})",
        f"{name} = {other}.map({func}, num_parallel_calls={number})",
        f"{name} = {other}.map(lambda *e: tf.py_function({func}, [e], tf.int64))",
        f"{name} = {other}.map(lambda x: tf.io.decode_jpeg(x)).cache().shuffle({number})",
        f"{name} = {other}.batch({number}).prefetch({number})",
        f"{name} = {other}.interleave(lambda x: tf.data.TFRecordDataset(x), cycle_length=2)",
        f"{name} = tf.data.Dataset.zip(({other}, {third}))",
        f"{name} = {other}.concatenate({third})",
        f"{name} = {other}.apply({func})",
        f"{name} = {other}.with_options(tf.data.Options()).shard(2, 0)",
        f"{name} = ({other}, {third})",
        f"{name}, {other} = {third}",
        f"{name} = {other}[0]",
        f"{name} = {func}({other})",
        f"{name} = {func}({other}, {third}, key={name})",
        f"f = functools.partial({func}, {other})",
        f"{name} = lambda *args: {other}",
        f"{name} = [{other} for _ in range(3)]",
        f"{name} = {other} if {third} else {name}",
        f"{name} = {other} + {third}",
        f"{name} = {other} * {third}",
        "s = s + s",
        "n = n * n",
        "x = (x, x)",
        f"print({name})",
        f"next(iter({name}))",
        f"model.fit({name}, validation_data={other}, batch_size={number})",
        f"dist = strategy.experimental_distribute_dataset({name})",
        "for batch in dist:\n    strategy.run(step, args=(batch,))",
        f"{name} = {other}" + ".map(lambda x: x)" * rnd.choice([1, 5, 80]),
        f"{name} = " + " + ".join(["'a'"] * rnd.choice([2, 50, 400])),
        "model = keras.Sequential([keras.layers.BatchNormalization()])",
        f"model.compile(optimizer=keras.optimizers.SGD({number}))",
        "return ds" if in_function else "pass",
        "yield ds" if in_function else "pass",
    ]
    if depth >= 3 or rnd.random() < 0.6:
        return rnd.choice(simple).split("\n")
    head = rnd.choice(
        [
            f"def {rnd.choice(['f', 'g', 'make', 'build', 'step'])}(ds=None, *rest, key={name}):",
            "if use_fake_data:",
            f"if {name}:",
            f"for x in {name}:",
            "while True:",
            "with strategy.scope():",
            "try:",
            "class C:",
        ]
    )
    inner = head.startswith("def") or (in_function and head != "class C:")
    inner = inner or head == "class C:"  # its statements go in methods
    body = [
        f"    {line}"
        for _ in range(rnd.randint(1, 3))
        for line in _statement(rnd, depth + 1, inner)
    ]
    other_body = [f"    {line}" for line in _statement(rnd, depth + 1, in_function)]
    block = [head, *body]
    if head.startswith("if"):
        block += ["else:", *other_body]
    elif head == "try:":
        block += ["except Exception:", *other_body]
    elif head == "class C:":
        block = [head, "    def __init__(self, ds=None):", *(f"    {b}" for b in body)]
        block += ["    def make(self, *args):", "        return self.ds"]
    return block


# --- notebooks with odd types --------------------------------------------------------------------

ODD = [None, True, 0, 1.5, -7, "", "x", [], {}, [1, 2], {"a": 1}, ["a", 1], [["a"]]]


def odd_notebook(rnd: random.Random, code_cells: list[str]) -> dict[str, Any]:
    """A notebook whose cells and metadata are a mix of good ones and odd types."""
    cells: list[Any] = []
    for code in code_cells:
        roll = rnd.random()
        if roll < 0.5:
            source: Any = code if rnd.random() < 0.5 else code.splitlines(keepends=True)
            cells.append({"cell_type": "code", "source": source, "metadata": rnd.choice(ODD)})
        elif roll < 0.6:
            cells.append({"cell_type": "markdown", "source": rnd.choice(ODD)})
        elif roll < 0.75:
            cells.append({"cell_type": rnd.choice(["code", *ODD]), "source": rnd.choice(ODD)})
        elif roll < 0.85:
            cells.append(rnd.choice(ODD))
        else:
            cell = {"cell_type": "code", "source": code, rnd.choice(["outputs", "input"]): 5}
            cells.append(cell)
    notebook: dict[str, Any] = {"cells": cells, "nbformat": rnd.choice([4, "4", None])}
    if rnd.random() < 0.5:
        notebook["metadata"] = rnd.choice(
            [*ODD, {"kernelspec": rnd.choice(ODD)}, {"language_info": {"name": rnd.choice(ODD)}}]
        )
    if rnd.random() < 0.1:
        notebook = {"worksheets": [{"cells": cells}] if rnd.random() < 0.5 else rnd.choice(ODD)}
    return notebook


# --- the shapes that blew up, each N lines long ---------------------------------------------------


def _concat(n: int) -> str:
    return HEADER + "ds = ds.concatenate(ds)\n" * n + "model.fit(ds)\n"


def _zip(n: int) -> str:
    return HEADER + "ds = tf.data.Dataset.zip((ds, ds))\n" * n + "model.fit(ds)\n"


def _doubling_text(n: int) -> str:
    return HEADER + "s = 'ab'\nif False:\n" + "    s = s + s\n" * n + "model.fit(ds)\n"


def _squaring(n: int) -> str:
    return HEADER + "n = 3\nif False:\n" + "    n = n * n\n" * n + "model.fit(ds)\n"


def _maps(n: int) -> str:
    return HEADER + "ds = ds.map(lambda x: x + 1)\n" * n + "model.fit(ds)\n"


def _chain(n: int) -> str:
    return HEADER + "ds = ds" + ".map(lambda x: x + 1)" * n + "\nmodel.fit(ds)\n"


def _partials(n: int) -> str:
    head = HEADER + "def f(x, *rest):\n    return x\n"
    return head + "f = functools.partial(f, f)\n" * n + "model.fit(ds.map(f))\n"


DECODE_HEAD = (
    "import tensorflow as tf\nmodel = tf.keras.Sequential()\n"
    "def train(pngs):\n    ds = tf.data.Dataset.from_tensor_slices(pngs)\n"
)
"""Encoded images in memory, trained on: every rule walks these pipelines (a toy source would
stop them at their first question)."""


def _decoding_maps(n: int) -> str:
    return DECODE_HEAD + "    ds = ds.map(tf.io.decode_png)\n" * n + "    model.fit(ds, epochs=3)\n"


def _decoding_chain(n: int) -> str:
    chain = "    ds = ds" + ".map(tf.io.decode_png)" * n + "\n"
    return DECODE_HEAD + chain + "    model.fit(ds, epochs=3)\n"


SHAPES: dict[str, tuple[Callable[[int], str], int]] = {
    "concatenate": (_concat, 150),
    "zip": (_zip, 150),
    "doubling-string": (_doubling_text, 150),
    "squaring-int": (_squaring, 150),
    "map-lines": (_maps, 200),
    "map-chain": (_chain, 100),
    "self-partial": (_partials, 150),
    "decoding-maps": (_decoding_maps, 200),
    "decoding-chain": (_decoding_chain, 50),
}
CHAIN_SHAPES = frozenset({"map-chain", "decoding-chain"})
"""Shapes that are one expression: CPython's parser takes a few hundred calls in a row at most
(past that the file is a PD000 finding), so they grow only that far."""
"""Each shape and the N its linear-time test starts from."""


def cost(text: str, repeat: int = 3) -> tuple[float, int]:
    """Best CPU seconds of linting ``text``, and the peak of memory it allocated, in bytes."""
    best = float("inf")
    for _ in range(repeat):
        start = time.process_time()
        check_source(text, deadline=120.0)
        best = min(best, time.process_time() - start)
    tracemalloc.start()
    try:
        lint_text(text, "shape.py", SELECTION)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return best, peak


def doubling(shape: str, start: int, limit: int = 20_000) -> list[tuple[int, float]]:
    """(lines, best CPU seconds) of ``shape`` at ``start`` lines, doubled up to ``limit``."""
    make, _ = SHAPES[shape]
    sizes, n = [], start
    while n <= limit:
        sizes.append(n)
        n *= 2
    return [(n, cost(make(n), repeat=3)[0]) for n in sizes]


def growth(shape: str, n: int, factor: int = 4) -> tuple[float, float, float, float]:
    """(time at n, time at factor x n, their ratio, the ratio of peak memory)."""
    make, _ = SHAPES[shape]
    small, small_peak = cost(make(n))
    large, large_peak = cost(make(factor * n))
    return small, large, large / max(small, 1e-4), large_peak / max(small_peak, 1)


# --- whole processes -----------------------------------------------------------------------------


def lint_process(*args: str, timeout: float = 60.0, cwd: Path | None = None) -> Any:
    """``pipedoctor lint ...`` as a user runs it, killed if it outlives ``timeout``."""
    return subprocess.run(
        [sys.executable, "-m", "pipedoctor", "lint", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )


def one_line_error(stderr: str) -> bool:
    lines = stderr.strip().splitlines()
    return len(lines) == 1 and lines[0].startswith("pipedoctor: error: ")


# --- records of a monitored run -----------------------------------------------------------------

RECORD: dict[str, Any] = {
    "pipedoctor_record": 1,
    "worker": "worker-0",
    "peers": ["worker-0"],
    "state": "finished",
    "updated": 1796162981.5,
    "notes": ["a note"],
    "measurements": {
        "input_wait_fraction": 0.42,
        "input_wait_ci": 0.03,
        "input_wait_steps": 40,
        "dequeue_ms": 1.5,
        "training_samples_per_s": 4719.0,
        "batch_size": 32,
        "replicas": 1,
        "backend": "tensorflow",
        "strategy": "default",
        "worker": "worker-0",
        "run_seconds": 4.2,
        "host_cpu_percent": 80.0,
        "host": {"cpu_count": 2, "per_core_percent": [80.0, 70.0], "cpu_percent_p95": 95.0},
        "gpus": [],
        "gpu_note": "no NVIDIA GPU visible",
        "step_ms": {"training": 8.1},
        "time_split": {"train_s": 3.0, "eval_s": 0.0, "stall_s": 0.5, "startup_s": 0.7},
        "epochs": [
            {"epoch": n, "seconds": 2.0, "steps": 8, "samples": 256, "samples_per_s": 4000.0,
             "step_ms": 5.0, "input_wait_fraction": 0.4, "input_wait_ci": 0.03,
             "logs": {"loss": 0.7}, "host": {"cpu_count": 2}}
            for n in (1, 2)
        ],
        "timeline": {"seconds": 4.2, "host": {"t": [0.0, 1.0], "per_core": [[1.0, 2.0]]},
                     "phases": [{"phase": "train", "t0": 0.0, "t1": 4.0, "samples_per_s": None}],
                     "gpus": []},
        "monitor": {"method": "split dequeue", "split_fraction": 0.1, "final": True},
    },
}  # fmt: skip
"""A record as the Monitor writes one (fewer epochs), to corrupt."""


def paths_in(value: Any, path: tuple = ()) -> Iterator[tuple]:
    """The place of every value in a JSON document, the document itself first."""
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths_in(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from paths_in(item, (*path, i))


def replaced(document: Any, path: tuple, value: Any) -> Any:
    copy = json.loads(json.dumps(document))
    if not path:
        return value
    here = copy
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    return copy


__all__ = [
    "FOOTER", "HEADER", "ODD", "RECORD", "SHAPES", "check_notebook", "check_source", "cost",
    "fully_analysed", "growth", "lint_process", "mutate", "odd_notebook", "one_line_error",
    "paths_in", "program", "replaced", "sources", "wrap",
]  # fmt: skip


FIXABLE = (
    "import tensorflow as tf\n",
    "files = tf.io.gfile.glob('data/train-*.tfrecord')\n",
    "ds = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)\n",
    "ds = ds.map(tf.io.parse_tensor)\n",
    "tf.keras.Sequential().fit(ds.batch(32).prefetch(tf.data.AUTOTUNE), epochs=3)\n",
)
"""A training pipeline with one safe fix (PD102: the parallel map), as lines."""
FIXED_CALL = (
    "map(tf.io.parse_tensor)",
    "map(tf.io.parse_tensor, num_parallel_calls=tf.data.AUTOTUNE)",
)
COMMENTS = {
    "latin-1": "# caf\u00e9, Gr\u00fc\u00dfe\n",
    "utf-8": "# caf\u00e9 \u2192 \u2713 \U0001f680\n",
}
"""A comment line in characters the encoding holds beyond ASCII."""


@dataclass(frozen=True)
class ByteShape:
    """How a file holds its text in bytes: what ``--fix`` must keep, byte for byte."""

    notebook: bool
    crlf: tuple[bool, ...]
    """Per line (cycled), whether it ends in CRLF; in a notebook, the JSON file's newlines."""
    bom: bool
    cookie: str | None
    """The encoding a PEP 263 cookie declares (a ``.py`` file only)."""
    comments: tuple[int, ...]
    """Where comment lines with non-ASCII characters go, as line indexes."""
    final_newline: bool
    version: int = 4
    indent: int | None = 1
    ascii_json: bool = False
    cells: int = 1

    def text(self, fixed: bool) -> str:
        """The code's text, fixed or not, without the file's newlines yet."""
        lines = list(FIXABLE)
        if fixed:
            lines = [line.replace(*FIXED_CALL) for line in lines]
        comment = COMMENTS[self.cookie or "utf-8"]
        for at in sorted(self.comments, reverse=True):
            lines.insert(min(at, len(lines)), comment)
        if self.cookie and not self.notebook:
            lines.insert(0, f"# -*- coding: {self.cookie} -*-\n")
        text = "".join(lines)
        return text if self.final_newline else text[:-1]

    def data(self, fixed: bool) -> bytes:
        text = self.text(fixed)
        if self.notebook:
            text = self._notebook(text)
            text = text.replace("\n", "\r\n") if self.crlf[0] else text
        else:
            lines = text.splitlines(keepends=True)
            ends = [self.crlf[i % len(self.crlf)] for i in range(len(lines))]
            text = "".join(
                line[:-1] + "\r\n" if line.endswith("\n") and crlf else line
                for line, crlf in zip(lines, ends, strict=True)
            )
        return (b"\xef\xbb\xbf" if self.bom else b"") + text.encode(self.cookie or "utf-8")

    def _notebook(self, code: str) -> str:
        lines = code.splitlines(keepends=True)
        size = -(-len(lines) // self.cells)
        chunks = ["".join(lines[i : i + size]) for i in range(0, len(lines), size)]
        cells = [
            {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
             "source": chunk.splitlines(keepends=True)}
            for chunk in chunks
        ]  # fmt: skip
        if self.version == 3:
            for cell in cells:
                cell["input"] = cell.pop("source")
                cell["language"] = "python"
            data: dict[str, Any] = {"metadata": {"name": "lesson"}, "nbformat": 3,
                                    "nbformat_minor": 0,
                                    "worksheets": [{"cells": cells, "metadata": {}}]}  # fmt: skip
        else:
            data = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        text = json.dumps(data, indent=self.indent, ensure_ascii=self.ascii_json)
        return text + "\n" if self.final_newline else text


def check_fix_bytes(shape: ByteShape) -> None:
    """``lint --fix`` on a file of this layout writes back exactly the bytes of the same
    layout holding the fixed code, and says it fixed the one finding."""
    import contextlib
    import io
    import tempfile

    from pipedoctor.cli import main

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / ("lesson.ipynb" if shape.notebook else "train.py")
        (Path(folder) / "requirements.txt").write_text("tensorflow==2.9.*\n")  # a sequential
        path.write_bytes(shape.data(fixed=False))  # map is the finding there, at `high`
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(["lint", str(path), "--fix"])
        assert code == 0, err.getvalue()
        assert "Fixed 1 finding in 1 file." in err.getvalue(), err.getvalue()
        assert path.read_bytes() == shape.data(fixed=True), shape
