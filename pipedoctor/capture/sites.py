"""Where in the user's code each dataset was made: call sites recorded while the script runs.

``install()`` wraps ``tf.data.Dataset``'s transformations, its static constructors and the
record readers so that every dataset they return carries the file and line of the first frame
outside TensorFlow, Keras and pipedoctor. The graph front end then gives each stage it reads
from a live dataset a line the user can edit, even when the pipeline was built in another
module, a helper library or a config-driven builder.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pipedoctor.pipeline import KERNEL_CELL, Location

SITE_ATTR = "_pipedoctor_site"
IN_LIBRARY_ATTR = "_pipedoctor_in_library"
"""Set on a dataset a library's code made (a Keras factory's own ``shuffle`` and ``batch``):
its site is the user's call of that library, where several stages share one line."""
STATIC_SOURCES = (
    "from_tensor_slices", "from_tensors", "range", "from_generator", "list_files", "zip",
    "sample_from_datasets", "choose_from_datasets", "counter", "load",
)  # fmt: skip
READERS = ("TFRecordDatasetV2", "TextLineDatasetV2", "FixedLengthRecordDatasetV2")


def _library_roots() -> tuple[str, ...]:
    roots = [str(Path(__file__).resolve().parent.parent) + os.sep]
    for name in ("tensorflow", "keras", "tf_keras", "tensorflow_datasets", "absl", "jax", "jaxlib"):
        module = sys.modules.get(name)
        for path in getattr(module, "__path__", []) or []:
            roots.append(str(Path(path).resolve()) + os.sep)
    return tuple(roots)


AUTOGRAPH = "__autograph_generated_file"
"""The temporary module autograph writes a ``tf.function``'s converted code to."""
DEMO_DIR = str(Path(__file__).resolve().parent.parent / "demo") + os.sep
"""The bundled demo lives inside the package but is user code for this purpose."""


def caller_site(roots: tuple[str, ...]) -> Location | None:
    """The innermost frame that belongs to the user, not to a library."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        library = filename.startswith(roots) and not filename.startswith(DEMO_DIR)
        generated = filename.startswith("<frozen") or AUTOGRAPH in filename
        if not library and not generated:
            return Location(display(filename), frame.f_lineno, _column(frame))
        frame = frame.f_back
    return None


def called_from_library(roots: tuple[str, ...]) -> bool:
    """The code calling the recorded function (two frames up) is a library's, not the user's."""
    filename = sys._getframe(2).f_code.co_filename
    return filename.startswith(roots) and not filename.startswith(DEMO_DIR)


def _column(frame: Any) -> int:
    """1-based column of the call being made in ``frame`` (Python 3.11+), else 1."""
    positions = getattr(frame.f_code, "co_positions", None)
    if positions is None:
        return 1
    try:
        _, _, column, _ = list(positions())[frame.f_lasti // 2]
    except (IndexError, ValueError):
        return 1
    return (column or 0) + 1


def display(filename: str) -> str:
    """The path as the user reads it: relative to the working directory when inside it, and
    a notebook cell as IPython names it (``Cell In[3]``) rather than the temporary file the
    kernel compiled the cell from (``/tmp/ipykernel_7201/3604287085.py``)."""
    cell = kernel_cell(filename)
    if cell is not None:
        return cell
    try:
        return Path(filename).resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return filename


def kernel_cell(filename: str) -> str | None:
    """``Cell In[3]`` when ``filename`` is the code of a cell the running IPython shell
    executed (its compiler maps each cell's file name to the cell's execution count)."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    names = getattr(getattr(shell, "compile", None), "_filename_map", None)
    number = names.get(filename) if isinstance(names, dict) else None
    return None if number is None else f"{KERNEL_CELL}{number}]"


def site_of(dataset: Any) -> Location | None:
    return getattr(dataset, SITE_ATTR, None)


def made_in_library(dataset: Any) -> bool:
    return bool(getattr(dataset, IN_LIBRARY_ATTR, False))


def _recording(function: Callable[..., Any], roots: tuple[str, ...]) -> Callable[..., Any]:
    @functools.wraps(function)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        result = function(*args, **kwargs)
        if getattr(result, SITE_ATTR, None) is None and hasattr(result, "_variant_tensor"):
            try:
                setattr(result, SITE_ATTR, caller_site(roots))
                setattr(result, IN_LIBRARY_ATTR, called_from_library(roots))
            except AttributeError:
                pass
        return result

    wrapper.__pipedoctor_original__ = function  # type: ignore[attr-defined]
    return wrapper


def _recording_init(cls: type, roots: tuple[str, ...]) -> None:
    original = cls.__init__

    @functools.wraps(original)
    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        if getattr(self, SITE_ATTR, None) is None:
            setattr(self, SITE_ATTR, caller_site(roots))

    cls.__init__ = init  # type: ignore[misc]


def install() -> None:
    """Record call sites from now on (idempotent)."""
    import tensorflow as tf
    from tensorflow.python.data.ops import readers

    from pipedoctor.static.api import TRANSFORMATIONS

    dataset_cls = tf.data.Dataset
    if getattr(dataset_cls, "_pipedoctor_sites", False):
        return
    roots = _library_roots()
    for name in TRANSFORMATIONS:
        method = dataset_cls.__dict__.get(name)
        if callable(method):
            setattr(dataset_cls, name, _recording(method, roots))
    for name in STATIC_SOURCES:
        raw = dataset_cls.__dict__.get(name)
        if isinstance(raw, staticmethod):
            setattr(dataset_cls, name, staticmethod(_recording(raw.__func__, roots)))
    for name in READERS:
        reader = getattr(readers, name, None)
        if reader is not None:
            _recording_init(reader, roots)
    dataset_cls._pipedoctor_sites = True  # type: ignore[attr-defined]


class AfterImport(importlib.abc.MetaPathFinder):
    """Runs ``then`` once the module ``name`` has been imported, whoever imports it: a
    finder ahead of the others that wraps the real loader's ``exec_module``."""

    def __init__(self, name: str, then: Callable[[], None]) -> None:
        self.name = name
        self.then = then

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        if fullname != self.name:
            return None
        if self in sys.meta_path:
            sys.meta_path.remove(self)
        spec = importlib.util.find_spec(fullname)
        loader = getattr(spec, "loader", None)
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run_module = loader.exec_module
        then = self.then

        def exec_module(module: Any) -> None:
            run_module(module)
            try:
                then()
            except Exception:  # noqa: BLE001 - never break the user's import
                pass

        loader.exec_module = exec_module
        return spec


def install_in_notebooks() -> None:
    """In an IPython shell (a notebook), record call sites without being asked: now when
    TensorFlow is loaded, else as soon as it is, so that a later ``pipedoctor.check(dataset,
    model)`` points its findings at the cells that built the pipeline."""
    shell = getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()
    if shell is None:
        return
    if "tensorflow" in sys.modules:
        install()
    elif not any(isinstance(f, AfterImport) for f in sys.meta_path):
        sys.meta_path.insert(0, AfterImport("tensorflow", install))


def user_site() -> Location | None:
    """The user's line that called into the code calling this (e.g. ``model.fit(...)``)."""
    return caller_site(_library_roots())
