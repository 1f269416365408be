"""The child side of ``pipedoctor check``: run the user's script with hooks on training.

Run as ``python -m pipedoctor.capture.child --events FD --seconds S [--run-after] -- script
args...`` in the user's working directory. At the first ``Model.fit`` (or a strategy's
``experimental_distribute_dataset`` in a custom loop) it takes the model and dataset, runs the
measurement protocol, sends the result to the parent over the events pipe and stops the
script, unless ``--run-after`` lets it carry on training.

Events are JSON lines: ``started``, ``progress``, ``captured``, ``result``, ``exited``,
``user-error`` (the script raised: its own traceback, pipedoctor's frames removed) and
``error`` (the check could not measure, with a one-line reason).
"""

from __future__ import annotations

import argparse
import json
import os
import runpy
import sys
import time
import traceback
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any

PACKAGE_DIR = str(Path(__file__).resolve().parent.parent) + os.sep


class CaptureDone(BaseException):
    """Unwinds the user's script once the measurements are taken (not an ``Exception``, so
    ordinary ``except Exception`` blocks in the script do not swallow it)."""


class Events:
    def __init__(self, fd: int) -> None:
        self.stream = os.fdopen(fd, "w", buffering=1, encoding="utf-8")

    def send(self, event: str, **data: Any) -> None:
        try:
            self.stream.write(json.dumps({"event": event, **data}, default=str) + "\n")
            self.stream.flush()
        except (BrokenPipeError, OSError):
            pass  # the parent is gone (timeout or Ctrl-C); nothing left to tell


def user_traceback(exc: BaseException) -> str:
    """The exception as the user's own: frames inside pipedoctor and runpy removed."""
    frames = [
        f
        for f in traceback.extract_tb(exc.__traceback__)
        if not f.filename.startswith(PACKAGE_DIR) and Path(f.filename).name != "runpy.py"
    ]
    lines = ["Traceback (most recent call last):\n"]
    lines += traceback.format_list(frames)
    lines += traceback.format_exception_only(type(exc), exc)
    return "".join(lines)


class Capture:
    """Hooks on Keras and tf.distribute; measures at the first training call it sees."""

    def __init__(
        self,
        events: Events,
        deadline: float,
        run_after: bool,
        workers: int | None = None,
        selection: Any = None,
        profile: Path | None = None,
    ) -> None:
        from pipedoctor.rules import ALL_RULES

        self.selection = selection or ALL_RULES
        """The user's rule selection and params: the graph and measured rules honour them."""
        self.events = events
        self.deadline = deadline
        self.run_after = run_after
        self.workers = workers
        self.profile = profile
        self.validation: tuple[Any, Any] = (None, None)
        """``fit``'s validation data and its batch size."""
        self.done = False
        self.last_model: Any = None
        self.where: Any = None
        self.distribution_sites: dict[int, Any] = {}
        """Where each Keras distribution was set, by the distribution's id."""
        self.key_sites: dict[tuple[int, str], Any] = {}
        """Where each ``LayoutMap`` key was written, by the map's id and the key."""

    def install(self) -> None:
        """Hook Keras and TensorFlow once the script has imported them: never before, so the
        script still picks its Keras backend and device count itself."""
        from pipedoctor.capture.imports import after_import

        after_import("keras", lambda _: self.install_keras())
        after_import("tensorflow", lambda _: self.install_tensorflow())

    def install_keras(self) -> None:
        import keras

        from pipedoctor.capture import sites

        capture = self
        original_fit = keras.Model.fit

        def fit(
            model: Any, x: Any = None, y: Any = None, batch_size: Any = None, *args: Any, **kw: Any
        ):
            if not capture.done:
                capture.done = True
                capture.where = sites.user_site()
                capture.on_fit(model, x, y, batch_size, kw)
                if not capture.run_after:
                    raise CaptureDone
            return original_fit(model, x, y, batch_size, *args, **kw)

        fit.__wrapped__ = original_fit  # type: ignore[attr-defined]
        keras.Model.fit = fit

        original_init = keras.Model.__init__

        def init(model: Any, *args: Any, **kw: Any) -> None:
            original_init(model, *args, **kw)
            capture.last_model = model

        keras.Model.__init__ = init
        if hasattr(keras, "distribution"):
            self.install_distribution(keras.distribution)

    def install_distribution(self, api: Any) -> None:
        """Record where the script sets its distribution and each ``LayoutMap`` key, so that
        findings about them point at those lines."""
        from pipedoctor.capture import sites

        capture = self
        original_set = api.set_distribution

        def set_distribution(value: Any) -> None:
            capture.distribution_sites[id(value)] = sites.user_site()
            original_set(value)

        set_distribution.__wrapped__ = original_set  # type: ignore[attr-defined]
        api.set_distribution = set_distribution

        layout_map = api.LayoutMap
        original_setitem = layout_map.__setitem__

        def setitem(mapping: Any, key: Any, layout: Any) -> None:
            original_setitem(mapping, key, layout)
            capture.key_sites[(id(mapping), key)] = sites.user_site()

        layout_map.__setitem__ = setitem

    def install_tensorflow(self) -> None:
        import tensorflow as tf

        from pipedoctor.capture import sites

        sites.install()
        capture = self

        strategy_cls = tf.distribute.Strategy
        original_distribute = strategy_cls.experimental_distribute_dataset

        def distribute(strategy: Any, dataset: Any, *args: Any, **kw: Any):
            if not capture.done:
                capture.done = True
                model = (
                    capture.last_model if getattr(capture.last_model, "compiled", False) else None
                )
                capture.measure(dataset, model, {"hook": "experimental_distribute_dataset"})
                if not capture.run_after:
                    raise CaptureDone
            return original_distribute(strategy, dataset, *args, **kw)

        strategy_cls.experimental_distribute_dataset = distribute

        original_from_function = strategy_cls.distribute_datasets_from_function

        def from_function(strategy: Any, dataset_fn: Any, *args: Any, **kw: Any):
            if not capture.done:
                capture.done = True
                context = tf.distribute.InputContext(
                    num_input_pipelines=1,
                    input_pipeline_id=0,
                    num_replicas_in_sync=strategy.num_replicas_in_sync,
                )
                model = (
                    capture.last_model if getattr(capture.last_model, "compiled", False) else None
                )
                capture.measure(
                    dataset_fn(context), model, {"hook": "distribute_datasets_from_function"}
                )
                if not capture.run_after:
                    raise CaptureDone
            return original_from_function(strategy, dataset_fn, *args, **kw)

        strategy_cls.distribute_datasets_from_function = from_function

    def on_fit(self, model: Any, x: Any, y: Any, batch_size: Any, kw: dict[str, Any]) -> None:
        import tensorflow as tf

        if isinstance(x, tf.data.Dataset):
            dataset = x
            given = "a tf.data.Dataset"
        elif x is not None:
            size = batch_size or 32
            data = (x, y) if y is not None else x
            dataset = tf.data.Dataset.from_tensor_slices(data).batch(size)
            given = f"in-memory arrays (measured as from_tensor_slices(...).batch({size}))"
        else:
            raise_error(self.events, "`fit` was called without training data")
            raise CaptureDone
        self.validation = (kw.get("validation_data"), kw.get("validation_batch_size") or batch_size)
        self.measure(dataset, model, {"hook": "fit", "given": given})

    def measure(self, dataset: Any, model: Any, capture_info: dict[str, Any]) -> None:
        from pipedoctor.measure.job import measure_job
        from pipedoctor.measure.protocol import MeasureError

        self.events.send("captured", **capture_info, model=type(model).__name__ if model else None)
        try:
            job = measure_job(
                dataset,
                model,
                max(1.0, self.deadline - time.time()),
                progress=lambda message: self.events.send("progress", message=message),
                where=self.where,
                workers=self.workers,
                validation=self.validation,
                selection=self.selection,
                sites=self.sites(),
                profile=self.profile,
            )
        except MeasureError as exc:
            raise_error(self.events, str(exc))
            if self.run_after:  # the check failed, the training the user asked for goes on
                return
            raise CaptureDone from None
        self.events.send(
            "result",
            measurements=job.measurements,
            notes=job.notes,
            findings=[f.to_dict() for f in job.findings],
            capture=capture_info,
        )

    def sites(self) -> dict[str, Any]:
        """Where the active Keras distribution and its ``LayoutMap`` keys were set."""
        import keras

        api = getattr(keras, "distribution", None)
        active = api.distribution() if api is not None else None
        if active is None:
            return {}
        layout_map = getattr(active, "_layout_map", None)
        return {
            "distribution": self.distribution_sites.get(id(active)),
            "keys": {
                key: site
                for (owner, key), site in self.key_sites.items()
                if layout_map is not None and owner == id(layout_map)
            },
        }


def selection_from_json(text: str) -> Any:
    from pipedoctor.rules import Selection

    data = json.loads(text)
    return Selection(tuple(data["select"]), tuple(data["ignore"]), dict(data["params"]))


def raise_error(events: Events, message: str) -> None:
    events.send("error", message=message)


@contextmanager
def quiet_tensorflow() -> Any:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    yield


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="pipedoctor.capture.child")
    parser.add_argument("--events", type=int, required=True)
    parser.add_argument("--deadline", type=float, required=True, help="time.time() to finish by")
    parser.add_argument("--run-after", action="store_true")
    parser.add_argument("--workers", type=int)
    parser.add_argument("--selection", type=selection_from_json, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument("script")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    options = parser.parse_args(argv)
    events = Events(options.events)
    script = Path(options.script).resolve()
    with quiet_tensorflow():
        missing = [name for name in ("tensorflow", "keras") if find_spec(name) is None]
        if missing:
            raise_error(
                events,
                f"TensorFlow and Keras are needed to check (no module named {missing[0]!r}): "
                "pip install 'pipedoctor[tf]'",
            )
            return 2
        capture = Capture(
            events,
            options.deadline,
            options.run_after,
            options.workers,
            options.selection,
            options.profile,
        )
        capture.install()
        events.send("started", pid=os.getpid())
        sys.argv = [str(script), *options.args]
        sys.path.insert(0, str(script.parent))

        def carried_on() -> bool:
            """Training went on after the check (--run-after): the exit code is the script's."""
            return options.run_after and capture.done

        try:
            runpy.run_path(str(script), run_name="__main__")
        except CaptureDone:
            return 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if carried_on() and not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)  # as Python shows SystemExit("message")
            events.send("exited", code=code, trained=capture.done)
            return code if carried_on() else 0
        except KeyboardInterrupt:
            return 130
        except BaseException as exc:  # noqa: BLE001 - the user's own error, shown as theirs
            events.send(
                "user-error", traceback=user_traceback(exc), summary=f"{type(exc).__name__}: {exc}"
            )
            if carried_on():
                sys.stderr.write(user_traceback(exc))
                return 1
            return 3
        events.send("exited", code=0, trained=capture.done)
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
