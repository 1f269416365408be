"""What a finding rests on, and the confidence that follows from it.

A rule needs some facts to be true before its finding is worth acting on: the dataset reaches
training, the mapped function does real work, several files are read, the data is more than a
toy, a value is the constant the message says. Each fact is either *shown* by the code (or
measured, in a check) or *assumed* because the code does not show it (a dataset returned to
callers elsewhere, a function imported from another module, a file list from a flag). A fact
the code shows to be false is no evidence at all: the detector stays silent.

Confidence is a pure function of that evidence, as CodeQL keeps a precision with each query:
``high`` when every fact is shown, ``medium`` when one is assumed, ``low`` otherwise. A rule
whose findings measure below the bar at a tier moves them down a tier in its rule file
(``max_confidence``), until its evidence is better.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

CONFIDENCES = ("high", "medium", "low")
"""Tiers, most confident first."""
DEFAULT_GATE = "high"
"""The tier the static gate reports by default: like CodeQL's default suite, only findings
every fact of which the code shows."""


@dataclass(frozen=True)
class Evidence:
    """One fact a finding rests on: its name, whether the code shows it, and where or why."""

    fact: str
    shown: bool
    detail: str = ""
    link: str = field(default="", compare=False)
    """For an assumed fact another file may show: what to look for there (the project pass's
    key of a function that returns the dataset). Not part of the JSON contract."""

    def to_dict(self) -> dict[str, Any]:
        return {"fact": self.fact, "shown": self.shown, "detail": self.detail}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Evidence:
        return cls(str(data.get("fact", "")), bool(data.get("shown")), str(data.get("detail", "")))

    def __str__(self) -> str:
        state = "shown" if self.shown else "assumed"
        detail = f": {self.detail}" if self.detail else ""
        return f"{FACTS.get(self.fact, self.fact)} ({state}{detail})"


FACTS = {
    "trains": "the dataset reaches training",
    "work": "the stage does real work",
    "overlap": "the pipeline does work a prefetch can overlap with the step",
    "files": "several files are read",
    "data": "the data is more than a toy",
    "epochs": "the data is read for more than one epoch",
    "value": "the value is the constant the message names",
    "library": "nothing else (a factory, a library, the caller) already does it",
    "python": "the Python code has a TensorFlow equivalent",
    "setup": "the distributed setup reaches this code",
    "runs": "the code is meant to run as written",
    "memory": "the decoded data fits in RAM",
    "shared": "every worker reads the same data",
    "runtime": "TensorFlow does not already do it at run time",
}
"""Each fact's name in the JSON contract, and how a person reads it."""


def shown(fact: str, detail: str = "") -> Evidence:
    return Evidence(fact, True, detail)


def assumed(fact: str, detail: str = "") -> Evidence:
    return Evidence(fact, False, detail)


def confidence(evidence: Iterable[Evidence], cap: str = "high") -> str:
    """``high`` when every fact is shown, ``medium`` when one is assumed, ``low`` otherwise;
    for a rule capped lower (``max_confidence``), each tier moves down as far as the cap is
    below ``high``: a finding all of whose facts are shown reaches the cap, and one that
    assumes a fact stays below it (a cap alone would leave the two alike)."""
    missing = sum(not e.shown for e in evidence)
    return CONFIDENCES[min(missing + CONFIDENCES.index(cap), len(CONFIDENCES) - 1)]


def parse_confidence(text: str) -> str:
    """A tier name from the command line or configuration; :class:`ValueError` otherwise."""
    value = text.strip().lower() if isinstance(text, str) else text
    if value not in CONFIDENCES:
        raise ValueError(f"unknown confidence {text!r} (expected one of: {', '.join(CONFIDENCES)})")
    return value


def at_least(tier: str, threshold: str) -> bool:
    """Whether ``tier`` is ``threshold`` or more confident."""
    return CONFIDENCES.index(tier) <= CONFIDENCES.index(threshold)
