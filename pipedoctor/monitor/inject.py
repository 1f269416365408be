"""A ``Monitor`` on every ``fit`` inside a block, for scripts that cannot be edited.

    with monitored(log_dir="logs") as monitors:
        runpy.run_path("train.py", run_name="__main__")
    monitors[0].report

Each ``fit`` gets its own monitor, appended to its callbacks (after the script's own), unless
the script already passes one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def monitored(**options: Any) -> Iterator[list[Any]]:
    """Patch ``keras.Model.fit`` for the block; yields the monitors made, in order."""
    import keras

    from pipedoctor.monitor.callback import Monitor

    made: list[Monitor] = []
    original = keras.Model.fit

    def fit(model: Any, *args: Any, **kwargs: Any) -> Any:
        callbacks = list(kwargs.get("callbacks") or [])
        if not any(isinstance(c, Monitor) for c in callbacks):
            monitor = Monitor(**options)
            made.append(monitor)
            kwargs["callbacks"] = [*callbacks, monitor]
        return original(model, *args, **kwargs)

    keras.Model.fit = fit
    try:
        yield made
    finally:
        keras.Model.fit = original
