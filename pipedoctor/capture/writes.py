"""Stop the script before it writes, once the check feeds its loop batches of its own.

A custom loop is timed in place: it trains the script's own model on the check's batches (one
batch over and over for the ceiling). From then on nothing the loop does may reach the user's
files: a checkpoint or a saved model would hold weights trained on the check's batches, and a
script that resumes from its latest checkpoint would carry them into the next real run. A loop
with a fixed step count can end before the measurement does and go on to its ``model.save``.

So while a loop is timed, every way a training script writes is watched:

- **saves are skipped**: tf.train checkpoints (``Checkpoint.save``/``write``,
  ``CheckpointManager.save``), ``tf.saved_model.save``, Keras's ``save`` and ``save_weights``
  return without writing, so a loop that checkpoints every epoch goes on being timed;
- **any other write ends the check before it happens** (the loop's figures so far are the
  result, the script's process ends there): Python's own file writes, renames and removals
  (through an audit hook), programs started (the same hook), TensorFlow's file system
  (``tf.io.gfile``, ``tf.io.write_file``) and HDF5 files opened for writing (h5py);
- **summaries are not recorded** (``tf.summary`` writes nothing), since a compiled step writes
  them from inside its graph;
- **files already open for writing are pointed at the null device** when the guard is armed (a
  log the script opened before its loop and writes every step): no audit event sees a write
  through a handle, so the handle itself is made harmless; a file mapped into memory for writing
  (``numpy.memmap``) is remapped copy-on-write where it stands (``capture.mappings``). The
  script's process ends after the loop is timed, so nothing needs them back.

Writes under the system's temporary folder (TensorFlow's and Keras's own scratch files) and
byte-code caches pass, unless the working directory itself lies there.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Callable
from typing import Any

from pipedoctor.capture.mappings import privatize

_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
_WRITING_EVENTS = {
    "os.rename": "rename",
    "os.remove": "remove",
    "os.rmdir": "remove",
    "os.mkdir": "create the folder",
    "os.truncate": "truncate",
    "os.symlink": "link",
    "os.link": "link",
    "shutil.rmtree": "remove",
    "shutil.copyfile": "copy to",
    "shutil.move": "move",
}
_PROCESS_EVENTS = ("subprocess.Popen", "os.system", "os.posix_spawn", "os.exec", "os.spawn")
"""A program started while the loop is timed may write anything, anywhere (``touch`` per
step): it ends the check before it starts."""


class WriteGuard:
    """While ``armed``, the first write the script attempts calls ``on_write`` with a few
    words naming it; ``on_write`` ends the process, so the write never happens."""

    def __init__(self) -> None:
        self.on_write: Callable[[str], None] | None = None
        self._scratch = os.path.realpath(tempfile.gettempdir())
        self._firing = False
        self.skipped: list[str] = []
        """The saves skipped while armed, in the words ``attempt`` uses."""
        self.silenced: list[str] = []
        """The files the script held open for writing, pointed at the null device when armed."""

    @property
    def armed(self) -> bool:
        return self.on_write is not None

    def arm(self, on_write: Callable[[str], None]) -> None:
        self.on_write, self._firing = on_write, False
        self._silence_open_writers()
        self.silenced += privatize(self._exempt)  # a memmap writes through memory

    def _silence_open_writers(self) -> None:
        """Point each file the process holds open for writing in the user's folders (not its
        standard streams, which the check reads) at the null device, keeping its descriptor."""
        try:
            import psutil

            held = psutil.Process().open_files()
        except Exception:  # noqa: BLE001 - without psutil, or where it cannot list them
            return
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            for opened in held:
                if opened.fd <= 2 or getattr(opened, "mode", "w") == "r":
                    continue
                if self._exempt(opened.path):
                    continue
                try:
                    os.dup2(null, opened.fd)
                except OSError:
                    continue
                self.silenced.append(opened.path)
        finally:
            os.close(null)

    def disarm(self) -> None:
        self.on_write = None

    def attempt(self, what: str, path: Any = None) -> None:
        """The script is about to ``what`` ``path``: end the check first, unless it is
        scratch space."""
        if self.on_write is None or self._firing or self._exempt(path):
            return
        self._firing = True
        on_write, self.on_write = self.on_write, None
        named = f"{what} {_shown(path)}" if path is not None else what
        on_write(named)

    def skips(self, what: str, path: Any = None) -> bool:
        """Whether a save of ``path`` (``what``) is to be skipped: the guard is armed and the
        path is the user's."""
        if self.on_write is None or self._exempt(path):
            return False
        self.skipped.append(what)
        return True

    def _exempt(self, path: Any) -> bool:
        if path is None:
            return False
        if isinstance(path, int):  # a file descriptor the process already holds
            return True
        try:
            text = os.fsdecode(path)
        except TypeError:
            return False
        if text.endswith(".pyc") or "__pycache__" in text or text.startswith(("/dev/", "/proc/")):
            return True
        if "://" in text:  # a remote file system: still the user's
            return False
        real = os.path.realpath(text)
        own = os.path.realpath(os.getcwd())  # the user's folder, wherever it lies
        return _within(real, self._scratch) and not _within(real, own)

    def audit(self, event: str, args: tuple[Any, ...]) -> None:
        if self.on_write is None:
            return
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                isinstance(flags, int) and flags & _WRITE_FLAGS
            )
            if writing:
                self.attempt("write", path)
        elif event in _WRITING_EVENTS:
            self.attempt(_WRITING_EVENTS[event], args[0] if args else None)
        elif event in _PROCESS_EVENTS:
            self.attempt(f"start `{_program(args)}`")


def _program(args: tuple[Any, ...]) -> str:
    """The program an audited process start runs, by its name (``subprocess.Popen`` names
    either its executable or its argument list first)."""
    for first in args:
        if isinstance(first, (list, tuple)):
            first = first[0] if first else None
        if isinstance(first, (str, bytes, os.PathLike)):
            words = os.path.basename(os.fsdecode(first)).split()
            if words:
                return words[0]
    return "a program"


def _within(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _shown(path: Any) -> str:
    """A path as the user wrote it; a tensor by its value, or as the step's own file in a
    graph, where it has none yet."""
    if hasattr(path, "numpy"):
        try:
            path = path.numpy()
        except Exception:  # noqa: BLE001 - a symbolic tensor in a function being traced
            return "a file its compiled step names"
    try:
        return f"`{os.fsdecode(path)}`"
    except TypeError:
        return f"`{path!r}`"


GUARD = WriteGuard()
_INSTALLED: set[str] = set()


def arm(on_write: Callable[[str], None]) -> None:
    """From now on, the script's first write calls ``on_write`` (which ends the process)."""
    install()
    GUARD.arm(on_write)


def disarm() -> None:
    GUARD.disarm()


def install() -> None:
    """Watch Python's own file writes (an audit hook: it cannot be removed, so it stays idle
    while the guard is not armed), and TensorFlow's and Keras's once they are imported."""
    if "python" not in _INSTALLED:
        _INSTALLED.add("python")
        sys.addaudithook(GUARD.audit)
    if "tensorflow" in sys.modules:
        install_tensorflow()
    if "keras" in sys.modules:
        install_keras()
    if "h5py" in sys.modules:
        install_h5py()


def install_h5py() -> None:
    """Watch HDF5 files opened for writing: the HDF5 library opens them past Python's hook."""
    if "h5py" in _INSTALLED:
        return
    _INSTALLED.add("h5py")
    import h5py

    original = h5py.File.__init__

    def opened(self: Any, name: Any, mode: str = "r", *args: Any, **kw: Any) -> None:
        if mode != "r":
            GUARD.attempt("write", name)
        original(self, name, mode, *args, **kw)

    h5py.File.__init__ = opened


def install_tensorflow() -> None:
    """Watch TensorFlow's file system, checkpoints and summaries."""
    if "tensorflow" in _INSTALLED:
        return
    _INSTALLED.add("tensorflow")
    import tensorflow as tf
    from tensorflow.python.lib.io import _pywrap_file_io
    from tensorflow.python.ops import summary_ops_v2

    for name, what in (
        ("WritableFile", "write"),
        ("RecursivelyCreateDir", "create the folder"),
        ("CreateDir", "create the folder"),
        ("RenameFile", "rename"),
        ("CopyFile", "copy"),
        ("DeleteFile", "remove"),
        ("DeleteRecursively", "remove"),
    ):
        original = getattr(_pywrap_file_io, name, None)
        if original is not None:
            setattr(_pywrap_file_io, name, _guarded(original, what))
    for cls in (tf.train.Checkpoint, tf.train.CheckpointManager):
        for method in ("save", "write"):
            if method in vars(cls):
                setattr(cls, method, _skipped(vars(cls)[method], "checkpoint"))
    tf.saved_model.save = _skipped(tf.saved_model.save, "SavedModel")
    tf.io.write_file = _guarded(tf.io.write_file, "write")  # a C++ op: no audit event sees it
    original_write = summary_ops_v2.write

    def write(*args: Any, **kw: Any) -> Any:
        if GUARD.armed:  # a summary of steps trained on the check's batches: not recorded
            return tf.constant(False)
        return original_write(*args, **kw)

    summary_ops_v2.write = write


def install_keras() -> None:
    """Watch Keras's own saving (``save_weights`` writes through h5py, past Python's hook)."""
    if "keras" in _INSTALLED:
        return
    _INSTALLED.add("keras")
    import keras

    for method, what in (("save", "Keras model"), ("save_weights", "Keras weights")):
        setattr(keras.Model, method, _skipped(getattr(keras.Model, method), what))


def _guarded(original: Callable[..., Any], what: str) -> Callable[..., Any]:
    def guarded(*args: Any, **kw: Any) -> Any:
        GUARD.attempt(what, args[0] if args else None)
        return original(*args, **kw)

    return guarded


def _skipped(original: Callable[..., Any], what: str) -> Callable[..., Any]:
    """``original`` (a save whose second argument names where it writes: ``Model.save(self,
    filepath)``, ``Checkpoint.save(self, file_prefix)``, ``saved_model.save(obj, export_dir)``)
    returning without writing while the guard is armed."""

    def skipped(*args: Any, **kw: Any) -> Any:
        path = (
            args[1]
            if len(args) > 1
            else next((kw[k] for k in ("filepath", "file_prefix", "export_dir") if k in kw), None)
        )
        return None if GUARD.skips(what, _path(path)) else original(*args, **kw)

    skipped.__wrapped__ = original  # type: ignore[attr-defined]
    return skipped


def _path(value: Any) -> Any:
    """A file path among a save's arguments, or ``None`` (a checkpoint number, say)."""
    return value if isinstance(value, (str, bytes, os.PathLike)) else None
