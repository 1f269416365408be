"""pipedoctor: find why a TensorFlow/Keras training job is input-bound, and what to fix first.

The public API is small on purpose: :func:`lint` reads code without running it; ``check``
(measured diagnosis) and ``optimize`` build on the same :class:`Report`.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterable
from pathlib import Path

# The submodule first: a later first import of ``pipedoctor.lint`` (the CLI does one) would
# otherwise replace the ``lint`` function below with the module of the same name.
import pipedoctor.lint  # noqa: F401  # isort: skip
from pipedoctor.checker import CheckError, check
from pipedoctor.lint import SOURCE_SUFFIXES
from pipedoctor.report import Finding, Report, Severity

__version__ = "0.1.0"
__all__ = [
    "CheckError", "Finding", "Report", "Severity", "__version__", "check", "lint", "lint_source",
    "optimize", "read_profile", "watch",
]  # fmt: skip


def watch() -> None:
    """Record, from now on, the line of code that creates each ``tf.data`` dataset, so that a
    later ``check`` can point its findings at your modules. ``pipedoctor check SCRIPT`` does
    this by itself, and so does ``import pipedoctor`` in a notebook; call it before building
    the pipeline in a script that calls :func:`check`."""
    from pipedoctor.capture import sites

    sites.install()


if "IPython" in sys.modules:  # a notebook: findings point at cells without an extra call
    from pipedoctor.capture.sites import install_in_notebooks

    install_in_notebooks()


def optimize(dataset, *, timeout: float = 30.0):  # noqa: ANN001, ANN201 - tf types stay lazy
    """The dataset rebuilt with every measured fix that may be applied: the safe ones (parallel
    map/interleave/batch, AUTOTUNE, a final prefetch) and the unsafe ones verified on this
    pipeline (a cache that a first pass filled within the free-RAM share, with the moves that
    open its place; a map moved after ``batch`` whose values were compared). See
    ``pipedoctor_rewrites`` on the result for what changed and how each unsafe fix was
    verified. Needs TensorFlow (``pip install 'pipedoctor[tf]'``)."""
    from pipedoctor.graph.doctor import optimize as run

    return run(dataset, timeout=timeout)


def read_profile(
    logdir: str | Path | list[str | Path],
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> Report:
    """Diagnose a TensorFlow profile taken anywhere (the Keras TensorBoard callback's
    ``profile_batch``, ``tf.profiler.experimental.start/stop``, ``check(profile=...)``): the same
    :class:`Report` as a check, from the share of step time spent waiting for input, each
    device's busy time and each tf.data stage's time. A list reads one log directory per host
    and compares them. Needs no GPU and no TensorFlow import; raises
    ``pipedoctor.profile.ProfileError`` with a one-line reason for what it cannot read."""
    from pipedoctor.config import load_config
    from pipedoctor.profile.doctor import read_profile as read

    config = load_config(Path.cwd(), select=select, ignore=ignore)
    return read(logdir, config.selection)


def lint(
    path_or_paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]] | None = None,
    *,
    source: str | None = None,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    confidence: str | None = None,
) -> Report:
    """Lint files and folders, or source code, and return the :class:`Report`.

    ``confidence`` (``high``, ``medium`` or ``low``) is the least confident finding kept; by
    default the configuration's, else ``high``, as the CI gate reports.

    ``lint("train.py")``, ``lint(Path("src"))``, ``lint(["a.py", "nb.ipynb"])`` read from
    disk, with the nearest ``[tool.pipedoctor]`` configuration; ``lint(source=code)`` (or
    :func:`lint_source`) lints a string of code. A path that does not exist raises
    ``FileNotFoundError``; one that is neither a file nor a folder, ``ValueError``.

    For backward compatibility a string that is not a path is still linted as code (a
    string with a line break, or one naming no file or folder), but a one-line string that
    ends in ``.py`` or ``.ipynb`` is taken as a mistyped path and raises
    ``FileNotFoundError`` rather than being linted as the code ``train.py``.
    """
    if source is not None:
        if path_or_paths is not None:
            raise TypeError("lint() takes paths or source=, not both")
        return lint_source(source, select=select, ignore=ignore, confidence=confidence)
    if path_or_paths is None:
        raise TypeError("lint() needs a path, a list of paths, or source=...")
    if isinstance(path_or_paths, str) and not _names_a_path(path_or_paths):
        return lint_source(path_or_paths, select=select, ignore=ignore, confidence=confidence)
    if isinstance(path_or_paths, (str, os.PathLike)):
        paths = [Path(path_or_paths)]
    else:
        paths = [Path(p) for p in path_or_paths]
    return _lint_paths(paths, select=select, ignore=ignore, confidence=confidence)


def lint_source(
    text: str,
    *,
    path: str = "<string>",
    select: list[str] | None = None,
    ignore: list[str] | None = None,
    confidence: str | None = None,
) -> Report:
    """Lint a string of Python source (``path``: the name findings carry), with the
    configuration found from the current folder."""
    from pipedoctor.config import load_config
    from pipedoctor.lint import lint_source as run

    if not isinstance(text, str):
        raise TypeError(f"lint_source() needs a str of code, not {type(text).__name__}")
    config = load_config(Path.cwd(), select=select, ignore=ignore, confidence=confidence)
    return run(text, config, path)


def _names_a_path(text: str) -> bool:
    """Whether a string given to :func:`lint` is a path: it names a file or folder, or it is
    one line ending in ``.py`` or ``.ipynb`` (a mistyped path, then)."""
    if "\n" in text or "\r" in text or "\0" in text or len(text) >= 4096:
        return False
    if text.strip().endswith(SOURCE_SUFFIXES):
        return True
    try:
        return Path(text).exists()
    except (OSError, ValueError):
        return False


def _lint_paths(
    paths: list[Path],
    *,
    select: list[str] | None,
    ignore: list[str] | None,
    confidence: str | None = None,
) -> Report:
    from pipedoctor.config import load_config
    from pipedoctor.lint import lint_paths

    if not paths:
        raise ValueError("lint() needs at least one path")
    for path in paths:
        try:
            found = os.path.lexists(path)
        except (OSError, ValueError):
            found = False
        if not found:
            hint = " (to lint a string of code, use lint(source=...))" if len(paths) == 1 else ""
            raise FileNotFoundError(errno.ENOENT, f"no such file or folder{hint}", str(path))
    start = paths[0]
    try:
        folder = start if start.is_dir() else start.parent
    except OSError:
        folder = Path.cwd()
    config = load_config(folder, select=select, ignore=ignore, confidence=confidence)
    return lint_paths(paths, config)  # a ``UsageError`` (a ``ValueError``) for a pipe, ...
