"""Which TensorFlow a project's code runs on, as far as the project says.

TensorFlow rewrites a pipeline before it runs it: from 2.10 a stateless ``map`` becomes a
parallel map (``map_parallelization``), from 2.12 a pipeline whose last stage is synchronous
gets a ``prefetch`` appended (``inject_prefetch``). A static finding that the code lacks either
is only true on older TensorFlow, or where the pipeline's options turn the rewrites off. The
lint cannot import the user's TensorFlow, so it reads what pins it: requirement files,
``setup.py``/``setup.cfg``/``pyproject.toml``, conda environments and Dockerfiles from the file's
folder up to the project's root, and in the file itself a notebook's ``!pip install
tensorflow==…`` or Colab's ``%tensorflow_version 1.x``, and TensorFlow 1 calls
(``tf.Session``, ``tf.contrib``) that TensorFlow 2 does not have.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

Version = tuple[int, ...]

MAP_PARALLELIZATION = (2, 10)
"""The first TensorFlow whose default options parallelise a stateless ``map``."""
INJECT_PREFETCH = (2, 12)
"""The first TensorFlow whose default options append a ``prefetch`` to a synchronous end."""

PIN_FILES = re.compile(
    r"(?:.*requirements.*\.(?:txt|in)|setup\.py|setup\.cfg|pyproject\.toml|Pipfile"
    r"|environment.*\.ya?ml|conda.*\.ya?ml|Dockerfile.*)$",
    re.IGNORECASE,
)
"""Files that may pin the project's TensorFlow."""
ROOT_MARKERS = (".git", "setup.py", "setup.cfg", "pyproject.toml")
"""A folder holding one of these is the project's root: the search for pins stops there."""
MAX_LEVELS = 8
MAX_PIN_FILE_BYTES = 1_000_000

_NAME = r"(?<![\w./-])tensorflow(?:-(?:gpu|cpu|macos|intel|aarch64))?(?:\[[\w,\s-]*\])?"
_CLAUSE = r"(?:===?|~=|>=|<=|!=|<|>|=)\s*v?\d+(?:\.(?:\d+|\*))*(?:[a-z]+\d*)?"
PIN = re.compile(rf"{_NAME}\s*({_CLAUSE}(?:\s*,\s*{_CLAUSE})*)(?![\w.])", re.IGNORECASE)
"""``tensorflow==2.4.1``, ``tensorflow-gpu>=1.15,<2``, conda's ``tensorflow=2.4``."""
MENTION = re.compile(
    rf"^\s*-?\s*['\"]?{_NAME}\s*['\"]?\s*(?:[,;#\]]|$)", re.IGNORECASE | re.MULTILINE
)
"""TensorFlow required with no version (``tensorflow`` on a requirements line, ``"tensorflow",``
in ``install_requires``): whatever is newest when it is installed."""
NIGHTLY = re.compile(r"(?<![\w./-])tf-nightly(?:-gpu|-cpu)?(?![\w.-])", re.IGNORECASE)
IMAGE = re.compile(r"\btensorflow/tensorflow:(\d+(?:\.\d+)*)", re.IGNORECASE)
"""A Dockerfile's ``FROM tensorflow/tensorflow:2.4.1-gpu``."""
INSTALL = re.compile(r"\b(?:pip3?|conda|mamba)\s+install\b")
COLAB_MAGIC = re.compile(r"%tensorflow_version\s+(\d)\.x")
TF1_CALLS = re.compile(
    r"\btf\.(?:Session|contrib|placeholder|InteractiveSession)\b"
    r"|\btf\.train\.(?:Saver|MonitoredTrainingSession)\b"
)
"""TensorFlow 1 calls that TensorFlow 2 only has under ``tf.compat.v1``."""
COMPAT_V1 = re.compile(r"\bcompat\.v1\b|\bcompat\s+import\s+v1\b")
OPTIONS_OFF = re.compile(
    r"\b(?:inject_prefetch|map_parallelization|apply_default_optimizations|autotune\.enabled"
    r"|autotune)\s*=\s*False\b"
)
"""Pipeline options that turn TensorFlow's own rewrites off."""


@dataclass(frozen=True)
class Pin:
    """What one place says of the TensorFlow version: the lowest and highest it allows (None:
    unbounded), and where, for a finding's evidence."""

    lowest: Version | None
    highest: Version | None
    """Exclusive: every allowed version is below it."""
    where: str


@dataclass(frozen=True)
class Runtime:
    """The TensorFlow a file runs on, as far as its project and its own text say."""

    pins: tuple[Pin, ...] = ()
    rewrites_off: bool = False
    """The file sets pipeline options that turn default rewrites off."""

    def below(self, version: Version) -> Pin | None:
        """A pin that allows only TensorFlow older than ``version``, when every pin agrees."""
        if not self.pins or any(p.highest is None or p.highest > version for p in self.pins):
            return None
        return self.pins[0]

    def from_(self, version: Version) -> Pin | None:
        """A pin that allows only ``version`` or later, when every pin agrees."""
        if not self.pins or any(p.lowest is None or p.lowest < version for p in self.pins):
            return None
        return self.pins[0]


UNKNOWN = Runtime()


def version(text: str) -> Version:
    """``"2.4.1"`` → ``(2, 4, 1)``; a ``*`` or a pre-release tail ends it (``"2.*"`` → ``(2,)``)."""
    parts: list[int] = []
    for part in text.lstrip("vV").split("."):
        digits = re.match(r"\d+", part)
        if digits is None:
            break
        parts.append(int(digits.group()))
        if digits.group() != part:
            break
    return tuple(parts)


def bump(v: Version) -> Version:
    """The first version past every release that starts with ``v``: ``(2, 4)`` → ``(2, 5)``."""
    return (*v[:-1], v[-1] + 1) if v else (10**6,)


def pin_of(clauses: str, where: str) -> Pin | None:
    """The range a specifier list allows (``>=2.3,<2.11``); None when it bounds nothing."""
    lowest: Version | None = None
    highest: Version | None = None
    for clause in clauses.split(","):
        match = re.match(r"\s*(===?|~=|>=|<=|!=|<|>|=)\s*(\S+)", clause)
        if match is None:
            continue
        op, text = match.groups()
        v = version(text)
        if not v or op == "!=":
            continue
        low, high = {
            "==": (v, bump(v)), "===": (v, bump(v)), "=": (v, bump(v)),
            ">=": (v, None), ">": (v, None), "<": (None, v), "<=": (None, bump(v)),
            "~=": (v, bump(v[:-1]) if len(v) > 1 else None),
        }[op]  # fmt: skip
        if low is not None and (lowest is None or low > lowest):
            lowest = low
        if high is not None and (highest is None or high < highest):
            highest = high
    if lowest is None and highest is None:
        return None
    return Pin(lowest, highest, where)


def pins_in(text: str, where: str) -> list[Pin]:
    """Every TensorFlow pin a file's text states."""
    found: list[Pin] = []
    for match in PIN.finditer(text):
        pin = pin_of(match.group(1), f"{where}: `{match.group(0).strip()}`")
        if pin is not None:
            found.append(pin)
    for match in IMAGE.finditer(text):
        v = version(match.group(1))
        found.append(Pin(v, bump(v), f"{where}: `{match.group(0)}`"))
    if NIGHTLY.search(text):
        found.append(Pin((2, 16), None, f"{where}: `tf-nightly`"))
    return found


def pins_in_code(text: str, where: str) -> list[Pin]:
    """What a module or notebook says of its TensorFlow by itself: the pins of its ``pip
    install`` lines (prose such as "needs TensorFlow < 2.2" pins nothing), Colab's magic, or
    else TensorFlow 1 calls."""
    installs = "\n".join(line for line in text.splitlines() if INSTALL.search(line))
    found = pins_in(installs, where) if installs else []
    magic = COLAB_MAGIC.search(text)
    if magic is not None:
        major = int(magic.group(1))
        found.append(Pin((major,), (major + 1,), f"{where}: `%tensorflow_version {major}.x`"))
    elif not found and (call := TF1_CALLS.search(text)) and not COMPAT_V1.search(text):
        found.append(Pin(None, (2,), f"{where}: `{call.group(0)}`, TensorFlow 1 only"))
    return found


@cache
def project_pins(folder: Path) -> tuple[Pin, ...]:
    """The pins of the nearest of ``folder`` and its parents, up to the project's root, that
    requires TensorFlow, pinned or not: a sub-project's requirements say more than the
    repository's, and an unpinned ``tensorflow`` there means the newest (no pin). Read once
    per folder in a lint (``lint_paths`` clears the cache as it starts)."""
    current = folder
    for _ in range(MAX_LEVELS):
        found: list[Pin] = []
        mentioned = False
        try:
            entries = sorted(current.iterdir())
        except OSError:
            entries = []
        for entry in entries:
            if not PIN_FILES.match(entry.name) or not entry.is_file():
                continue
            try:
                if entry.stat().st_size > MAX_PIN_FILE_BYTES:
                    continue
                text = entry.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            found += pins_in(text, entry.name)
            mentioned = mentioned or bool(MENTION.search(text))
        if found or mentioned:
            return tuple(found)  # the nearest folder that requires TensorFlow says which
        if any(e.name in ROOT_MARKERS for e in entries) or current.parent == current:
            break
        current = current.parent
    return ()


def runtime_of(path: str, text: str) -> Runtime:
    """The TensorFlow the file at ``path`` (``text``: its whole text, a notebook's JSON) runs
    on, as far as it and its project say. The file's own pins come first: a notebook's
    ``!pip install tensorflow==2.8`` says more than a requirement file of the repository. A
    text that is no file on disk (standard input, a string) has no project to read."""
    own = pins_in_code(text, Path(path).name)
    on_disk = Path(path.partition("#")[0])  # a notebook's `%%writefile` module: the notebook
    pins = own or (list(project_pins(on_disk.resolve().parent)) if on_disk.is_file() else [])
    return Runtime(tuple(pins), bool(OPTIONS_OFF.search(text)))
