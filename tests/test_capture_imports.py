"""The after-import watcher: hooks go in when a module is imported, whatever looked it up first.

Each case runs in a fresh interpreter with a real package on ``sys.path``, because the import
system's state (``sys.modules``, ``sys.meta_path``) is what is under test.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PACKAGE = "VALUE = 42\n"
PROLOGUE = """\
import importlib, importlib.util, sys
sys.path.insert(0, {root!r})
from pipedoctor.capture.imports import after_import
seen = []
after_import("watched", lambda module: seen.append(module.VALUE))
"""


def run(tmp_path: Path, body: str) -> str:
    (tmp_path / "watched").mkdir(exist_ok=True)
    (tmp_path / "watched" / "__init__.py").write_text(PACKAGE)
    (tmp_path / "watched" / "part.py").write_text("PART = 1\n")
    code = PROLOGUE.format(root=str(tmp_path)) + textwrap.dedent(body)
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@pytest.mark.parametrize(
    "body",
    [
        # TensorFlow's own __init__ probes Keras this way before any script imports it.
        'importlib.util.find_spec("watched")\nimport watched\n',
        'for _ in range(3):\n    importlib.util.find_spec("watched")\nimport watched\n',
        "import watched.part\n",
        "def main():\n    import watched\nmain()\n",
        'importlib.import_module("watched")\n',
    ],
    ids=[
        "probe-then-import",
        "many-probes",
        "submodule-first",
        "inside-a-function",
        "import_module",
    ],
)
def test_the_callback_runs_once_when_the_module_is_imported(tmp_path: Path, body: str) -> None:
    out = run(tmp_path, body + "import watched\nprint(seen)\n")
    assert out == "[42]"


def test_a_probe_alone_runs_nothing(tmp_path: Path) -> None:
    out = run(
        tmp_path, 'importlib.util.find_spec("watched")\nprint(seen, "watched" in sys.modules)\n'
    )
    assert out == "[] False"


def test_a_module_loaded_by_another_finder_is_caught_at_its_next_import(tmp_path: Path) -> None:
    body = f"""\
    import importlib.machinery
    spec = importlib.machinery.PathFinder.find_spec("watched", [{str(tmp_path)!r}])
    module = importlib.util.module_from_spec(spec)
    sys.modules["watched"] = module
    spec.loader.exec_module(module)  # loaded without the watcher's loader
    print(seen)
    import watched.part
    print(seen)
    """
    assert run(tmp_path, body).splitlines() == ["[]", "[42]"]
