"""Write a profile of a few real training steps that TensorBoard's Profile tab reads in full.

The steps run on a fresh copy of the model, after the measured phases (so the profiler's own
cost never enters the throughputs the verdict uses), each inside
``tf.profiler.experimental.Trace("train", step_num=i, _r=1)``: the ``_r=1`` marks it as a root
step event, which is what xprof's step-time analysis (overview page, input pipeline analyzer)
needs and what the Keras 3 TensorBoard callback does not write.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

WARMUP_STEPS = 2
"""Steps before the profiler starts: the first traces and compiles the training function."""
MAX_STEPS = 20
MIN_STEPS = 3
WINDOW_S = 4.0
"""The profiled window stops after this long once it has ``MIN_STEPS`` steps."""


def capture(dataset: Any, model: Any, logdir: Path, deadline: float) -> tuple[Path | None, str]:
    """Profile up to ``MAX_STEPS`` training steps of a copy of ``model`` on ``dataset`` into
    ``logdir``; the run folder written, or ``None`` and why not."""
    import keras
    import tensorflow as tf

    from pipedoctor.measure.protocol import MeasureError, brief, copy_model, endless

    if model is None:
        return None, "no profile written: profiling needs a compiled model"
    before = set(runs(logdir))
    try:
        twin = copy_model(model)
    except MeasureError as exc:
        return None, f"no profile written: {exc}"

    class StepMarkers(keras.callbacks.Callback):
        """Starts the profiler after the warm-up and wraps each step in a root step marker."""

        def __init__(self) -> None:
            super().__init__()
            self.trace: Any = None
            self.started: float | None = None
            self.steps = 0

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            if batch == WARMUP_STEPS:
                tf.profiler.experimental.start(str(logdir))
                self.started = time.perf_counter()
            if self.started is not None:
                self.trace = tf.profiler.experimental.Trace("train", step_num=self.steps, _r=1)
                self.trace.__enter__()

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            if self.trace is None:
                return
            self.trace.__exit__(None, None, None)
            self.trace = None
            self.steps += 1
            now = time.perf_counter()
            enough = self.steps >= MIN_STEPS and now - (self.started or now) >= WINDOW_S
            if self.steps >= MAX_STEPS or enough or now >= deadline:
                self.model.stop_training = True

    markers = StepMarkers()
    try:
        twin.fit(
            endless(dataset, []), epochs=1, steps_per_epoch=WARMUP_STEPS + MAX_STEPS, verbose=0,
            shuffle=False, callbacks=[markers],
        )  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the profile is extra: say why it is missing
        return None, f"no profile written: {brief(exc)}"
    finally:
        if markers.started is not None:
            try:
                tf.profiler.experimental.stop()
            except (tf.errors.UnavailableError, tf.errors.FailedPreconditionError):
                pass
    written = [run for run in runs(logdir) if run not in before]
    if not written:
        return None, "no profile written: the profiler saved nothing (is another one running?)"
    return max(written), f"profiled {markers.steps} training steps of a copy of the model"


def runs(logdir: Path) -> list[Path]:
    """The run folders under a log directory, as the profiler lays them out."""
    base = logdir / "plugins" / "profile"
    return sorted(p for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def profile_window(
    dataset: Any, model: Any, logdir: Path, deadline: float
) -> tuple[dict[str, Any], list[str]]:
    """Capture a profile into ``logdir`` and read it back: the measurements it adds (the
    input-wait share per host and per device, each iterator's time) and notes."""
    from pipedoctor.profile.reader import open_command, read_measurements
    from pipedoctor.profile.xspace import ProfileError

    run, message = capture(dataset, model, logdir, deadline)
    if run is None:
        return {}, [message]
    try:
        measurements, notes, _ = read_measurements([run])
    except ProfileError as exc:
        return {}, [f"the profile written to {run} could not be read back: {exc}"]
    measurements["profile"]["command"] = open_command(logdir)
    measurements["profile"]["logdirs"] = [str(logdir)]
    return measurements, notes
