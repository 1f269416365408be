"""Hypothesis strategies for the fuzz properties: generated Python (hypothesmith), real code
cut about, notebooks with odd types, corrupt records and configurations."""

from __future__ import annotations

import json
import random
from typing import Any

import hypothesmith
from hypothesis import strategies as st

from .properties import (
    ODD,
    RECORD,
    ByteShape,
    mutate,
    odd_notebook,
    paths_in,
    program,
    replaced,
    sources,
    wrap,
)

SOURCES = sources()
TEXTS = {path: path.read_text(encoding="utf-8") for path in SOURCES}

odd_values = st.sampled_from(ODD) | st.text(max_size=8) | st.integers() | st.floats()


GRAMMAR = hypothesmith.from_grammar()
NODES = hypothesmith.from_node()
"""Built once: building one reads the whole grammar."""


@st.composite
def generated_code(draw: st.DrawFn, grammar: bool = True) -> str:
    """Python from the grammar (may not compile) or from libcst nodes (compiles), where the
    analysis reads it: at module level or in a function that builds a dataset."""
    code = draw(GRAMMAR if grammar else NODES)
    return wrap(code, inside_function=draw(st.booleans()))


@st.composite
def dataset_programs(draw: st.DrawFn) -> str:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    return program(rnd, statements=draw(st.integers(1, 40)))


@st.composite
def mutated_sources(draw: st.DrawFn) -> str:
    path = draw(st.sampled_from(SOURCES))
    rnd = random.Random(draw(st.integers(0, 2**32)))
    return mutate(TEXTS[path], rnd, edits=draw(st.integers(1, 12)))


@st.composite
def odd_notebooks(draw: st.DrawFn) -> str:
    rnd = random.Random(draw(st.integers(0, 2**32)))
    picked = draw(st.lists(st.sampled_from(SOURCES), min_size=1, max_size=4))
    cells = [chunk for path in picked for chunk in TEXTS[path].split("\n\n")[:4]]
    notebook = odd_notebook(rnd, cells)
    if draw(st.integers(0, 9)) == 0:  # and now and then, cut it short: invalid JSON
        text = json.dumps(notebook)
        return text[: draw(st.integers(0, len(text)))]
    return json.dumps(notebook)


@st.composite
def corrupt_records(draw: st.DrawFn) -> dict[str, Any]:
    """The reference record with one value, anywhere in it, of an odd type."""
    places = [p for p in paths_in(RECORD) if p and p[0] != "pipedoctor_record"]
    place = draw(st.sampled_from(places))
    value = draw(odd_values | st.lists(odd_values, max_size=3))
    return replaced(RECORD, place, value)


CONFIG_KEYS = ["select", "ignore", "per-file-ignores", "exclude", "fail-on", "params", "tool"]


@st.composite
def odd_configs(draw: st.DrawFn) -> str:
    """A ``pyproject.toml`` whose ``[tool.pipedoctor]`` keys hold values of any type."""
    table: dict[str, Any] = {}
    for key in draw(st.lists(st.sampled_from(CONFIG_KEYS), max_size=4, unique=True)):
        table[key] = draw(
            st.sampled_from(
                [3, 2.5, True, "warning", "PD1", "nope", [], ["PD102"], [1], {}, {"x": 1},
                 {"*.py": ["PD1"]}, {"*.py": 5}, {"PD204": {"min_per_replica_batch": "x"}},
                 {"PD204": 5}, {"PD999": {}}]
            )
        )  # fmt: skip
    if "tool" in table:
        tool = toml_line("tool", table.pop("tool"))
        return tool + "".join(toml_line(k, v) for k, v in table.items())
    return "[tool.pipedoctor]\n" + "".join(toml_line(k, v) for k, v in table.items())


def toml_line(key: str, value: Any) -> str:
    return f"{json.dumps(key)} = {toml_value(value)}\n"


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return json.dumps(value)


@st.composite
def byte_shapes(draw: st.DrawFn) -> ByteShape:
    """A fixable file in any of the byte layouts real files have: LF, CRLF or mixed line
    endings, a BOM, a PEP 263 cookie, non-ASCII comments, no final newline; or a notebook
    in nbformat 3 or 4, any JSON indent, escaped or plain non-ASCII, CRLF, a BOM."""
    notebook = draw(st.booleans())
    bom = draw(st.booleans())
    cookie = None if notebook else draw(st.sampled_from([None, "utf-8", "latin-1"]))
    if bom and cookie == "latin-1":  # Python refuses a BOM with another declared encoding
        cookie = "utf-8"
    return ByteShape(
        notebook=notebook,
        crlf=tuple(draw(st.lists(st.booleans(), min_size=1, max_size=4))),
        bom=bom,
        cookie=cookie,
        comments=tuple(draw(st.lists(st.integers(0, 5), max_size=3))),
        final_newline=draw(st.booleans()),
        version=draw(st.sampled_from([3, 4])),
        indent=draw(st.sampled_from([None, 1, 2, 4])),
        ascii_json=draw(st.booleans()),
        cells=draw(st.integers(1, 3)),
    )
