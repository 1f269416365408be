"""pipedoctor: find why a TensorFlow/Keras training job is input-bound, and what to fix first.

The public API is small on purpose: :func:`lint` reads code without running it; ``check``
(measured diagnosis) and ``optimize`` build on the same :class:`Report`.
"""

from __future__ import annotations

from pathlib import Path

# The submodule first: a later first import of ``pipedoctor.lint`` (the CLI does one) would
# otherwise replace the ``lint`` function below with the module of the same name.
import pipedoctor.lint  # noqa: F401  # isort: skip
from pipedoctor.checker import CheckError, check
from pipedoctor.report import Finding, Report, Severity

__version__ = "0.1.0"
__all__ = [
    "CheckError", "Finding", "Report", "Severity", "__version__", "check", "lint", "optimize",
    "read_profile", "watch",
]  # fmt: skip


def watch() -> None:
    """Record, from now on, the line of code that creates each ``tf.data`` dataset, so that a
    later ``check`` can point its findings at your notebook cells or modules. ``pipedoctor
    check SCRIPT`` does this by itself; call it before building the pipeline in a notebook."""
    from pipedoctor.capture import sites

    sites.install()


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
    path_or_source: str | Path,
    *,
    select: list[str] | None = None,
    ignore: list[str] | None = None,
) -> Report:
    """Lint a file, a folder, or a string of source code, and return the :class:`Report`.

    A :class:`~pathlib.Path`, or a string naming an existing file or folder, is read from disk
    (with the nearest ``[tool.pipedoctor]`` configuration); any other string is linted as code.
    """
    from pipedoctor.config import load_config
    from pipedoctor.lint import lint_paths, lint_source

    candidate = Path(path_or_source)
    is_path = isinstance(path_or_source, Path) or (
        "\n" not in path_or_source and len(path_or_source) < 4096 and candidate.exists()
    )
    start = candidate if is_path else Path.cwd()
    config = load_config(start if start.is_dir() else start.parent, select=select, ignore=ignore)
    if is_path:
        return lint_paths([candidate], config)
    return lint_source(str(path_or_source), config)
