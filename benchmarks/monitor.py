"""What ``pipedoctor.keras.Monitor`` costs, and how close its input-wait share comes to the truth.

Each sample script in sample_pipelines/ runs until its ``fit``; there, in the same process, its
own model trains on its own dataset (repeated) in turns:

- ``overhead``: one monitored ``fit`` whose steps come in blocks with the monitor switched off
  and on in ABBA order (off on on off, repeated); a timing callback present throughout gives
  each block's mean step period, and each group's on/off ratio is the per-step overhead
  (their geometric mean, with a 95% bootstrap interval over the groups), in wall time and in this
  process's CPU time (less sensitive to other jobs on a shared machine). Beside it, the
  monitor's own estimate (split fraction x what a split adds to a call / a call's period,
  medians over the run) and the seconds its hooks took in that ``fit`` (samplers, epoch end,
  the report).
- ``accuracy``: the truth is ``1 - ceiling step / training step``, both timed without a
  monitor: the ceiling on one of the dataset's batches repeated from memory (input costs
  nothing), training on the dataset itself. A monitored turn then gives its share. Besides the
  sample scripts, ``sleep-D`` pipelines whose batches take D ms to arrive without using the
  CPU: there the truth is exact, while on the samples the input's CPU work also slows the
  steps themselves (two cores shared), which the ratio counts as input cost and the monitor,
  which counts time blocked waiting for a batch, does not.

- ``run``: what a whole monitored ``fit`` costs where users run it: each turn a fresh process
  runs the sample up to its ``fit``, warms the model up with a short plain ``fit`` (tracing is
  the user's cost either way), then times one ``fit`` of ``--epochs`` epochs sized to about
  ``--seconds`` in all, plain, with ``Monitor()``, or with ``Monitor(log_dir=...)``, the three
  in rotating order. Each group's monitored/plain ratio of whole-``fit`` seconds is one
  measurement (geometric mean, 95% bootstrap interval over the groups), beside the median
  seconds from the last epoch's end to ``fit`` returning (the monitor's report is built there)
  and the seconds the monitor counted as its own.

    python benchmarks/monitor.py overhead|accuracy|run [--turns 3] [--steps N] [NAME ...]

A NAME ending in ``.py`` is any training script (its first ``fit`` on a dataset or on arrays).
"""

from __future__ import annotations

import argparse
import math
import os
import platform
import random
import runpy
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "sample_pipelines"
SPLIT: list[float | None] = [None]
"""``--split``: a fixed split fraction for the overhead runs (default: the adaptive one)."""
TURN_S = 3.0
"""Seconds a turn should take; the step count per turn is sized from a warm-up."""


class Stop(BaseException):
    """Unwinds the sample script once the turns are done."""


class StepTimes:
    """A Keras callback (made lazily, so Keras loads in the child only) timing steady steps."""

    def __new__(cls) -> Any:  # noqa: D102
        import keras

        class Timer(keras.callbacks.Callback):
            def on_train_begin(self, logs: Any = None) -> None:
                self.ends: list[float] = []

            def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
                self.ends.append(time.perf_counter())

            def step_s(self) -> float:
                ends = self.ends[5:]
                return (ends[-1] - ends[0]) / (len(ends) - 1)

        return Timer()


def turn(model: Any, data: Any, steps: int, monitored: bool) -> tuple[float, float, Any]:
    """(steady step seconds, whole fit seconds, the monitor or None) of one turn."""
    from pipedoctor.keras import Monitor

    timer = StepTimes()
    monitor = Monitor(verbose=0) if monitored else None
    callbacks = [timer] + ([monitor] if monitor else [])
    start = time.perf_counter()
    model.fit(data, epochs=1, steps_per_epoch=steps, verbose=0, callbacks=callbacks)
    return timer.step_s(), time.perf_counter() - start, monitor


def sized(model: Any, data: Any, steps: int | None) -> int:
    """Steps per turn: given, or what fills about ``TURN_S`` seconds after a warm-up."""
    step_s, _, _ = turn(model, data, 20, monitored=False)
    return steps or max(30, min(2000, int(TURN_S / step_s)))


def overhead(model: Any, data: Any, turns: int, steps: int | None) -> str:
    """Blocks of ``BLOCK`` steps inside one monitored ``fit``, with the monitor switched off and
    on in ABBA order (off, on, on, off, ...): a slow change in the machine's load moves both
    alike, which turns of whole ``fit`` calls on a shared 2-core machine do not allow."""
    import keras

    from pipedoctor.keras import Monitor

    steps = sized(model, data, steps)
    block = max(10, steps // 8)
    groups = max(turns, 2) * 2
    monitor = Monitor(verbose=0, split_fraction=SPLIT[0])

    class Toggle(keras.callbacks.Callback):
        def on_train_begin(self, logs: Any = None) -> None:
            self.periods: dict[tuple[int, bool], list[tuple[float, float]]] = {}
            self.last: tuple[float, float] | None = None

        def on_train_batch_begin(self, batch: int, logs: Any = None) -> None:
            on = (batch // block) % 4 in (1, 2)
            monitor._clock.active = on
            if batch % block == 0:
                self.last = None  # the first step after a switch is not counted

        def on_train_batch_end(self, batch: int, logs: Any = None) -> None:
            now = (time.perf_counter(), time.process_time())
            if self.last is not None:
                key = (batch // (4 * block), (batch // block) % 4 in (1, 2))
                step = (now[0] - self.last[0], now[1] - self.last[1])
                self.periods.setdefault(key, []).append(step)
            self.last = now

    toggle = Toggle()
    model.fit(data, epochs=1, steps_per_epoch=4 * block * groups, verbose=0,
              callbacks=[monitor, toggle])  # fmt: skip
    wall, cpu = [], []
    for group in range(groups):
        on, off = toggle.periods.get((group, True)), toggle.periods.get((group, False))
        if on and off:
            wall.append(statistics.mean(w for w, _ in on) / statistics.mean(w for w, _ in off))
            cpu.append(statistics.mean(c for _, c in on) / statistics.mean(c for _, c in off))
    if len(wall) < 2:
        return f"(only {len(wall)} ABBA group with steps on and off)"
    m = monitor.report.measurements
    return (
        f"{m['step_ms']['training']:9.2f} {len(wall):6d} {m['monitor']['split_fraction']:6.2f} "
        f"{interval(wall):>24} {interval(cpu):>24} "
        f"{100 * m['monitor'].get('overhead_estimate', 0.0):+7.2f}% "
        f"{m['time_split']['monitor_s']:8.3f}"
    )


def interval(ratios: list[float], resamples: int = 4000) -> str:
    """The groups' on/off ratios as one overhead, with its 95% bootstrap interval over the
    groups: what says whether the cost is shown to be under 1%, which quartiles of single
    groups cannot. The mean is taken of the ratios' logarithms: the arithmetic mean of a ratio
    whose denominator is noisy errs high (by about its relative variance, a point or more here),
    while the log of on/off is symmetric around the true value when on and off blocks are
    equally noisy."""
    logs = [math.log(r) for r in ratios]
    rng = random.Random(0)
    n = len(logs)
    means = sorted(statistics.fmean(rng.choices(logs, k=n)) for _ in range(resamples))
    low, high = means[int(0.025 * resamples)], means[int(0.975 * resamples) - 1]
    mean = statistics.fmean(logs)
    return (
        f"{100 * math.expm1(mean):+.2f}% "
        f"({100 * math.expm1(low):+.2f}..{100 * math.expm1(high):+.2f})"
    )


def accuracy(model: Any, data: Any, turns: int, steps: int | None) -> str:
    import tensorflow as tf

    steps = sized(model, data, steps)
    batch = next(iter(data))
    ceiling_data = tf.data.Dataset.from_tensors(batch).repeat()
    truths, shares, spreads = [], [], []
    for _ in range(turns):
        ceiling = turn(model, ceiling_data, steps, False)[0]
        training = turn(model, data, steps, False)[0]
        truths.append(max(0.0, 1 - ceiling / training))
        m = turn(model, data, steps, True)[2].report.measurements
        share = m["input_wait_fraction"]
        shares.append(share if share is not None else m["input_wait_estimate"])
        spreads.append(m["input_wait_ci"] or 0.0)
    truth, share = statistics.median(truths), statistics.median(shares)
    return (
        f"{truth:6.0%} ({min(truths):.0%}-{max(truths):.0%}) {share:6.0%} "
        f"±{statistics.median(spreads):.0%} {100 * (share - truth):+6.1f}"
    )


VARIANTS = ("plain", "Monitor()", "Monitor(log_dir)")
RUN_SECONDS = [10.0]
RUN_EPOCHS = [5]
VARIANT = [0]
"""``run``: the seconds a whole ``fit`` should take, its epochs, and the variant this process
times (an index into ``VARIANTS``)."""


def whole_fit(model: Any, data: Any, turns: int, steps: int | None) -> str:
    """One ``run`` turn: the whole ``fit`` of one variant, after a plain warm-up that sizes it."""
    import tempfile

    import keras

    from pipedoctor.keras import Monitor

    step_s = turn(model, data, 20, monitored=False)[0]
    per_epoch = steps or max(10, int(RUN_SECONDS[0] / RUN_EPOCHS[0] / step_s))
    variant = VARIANTS[VARIANT[0]]
    with tempfile.TemporaryDirectory() as log_dir:
        monitor = None
        if variant != "plain":
            monitor = Monitor(log_dir=log_dir if "log_dir" in variant else None)

        class EpochEnds(keras.callbacks.Callback):
            def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
                self.last = time.perf_counter()

        ends = EpochEnds()  # after the monitor: its epoch-end work counts inside the epoch
        start = time.perf_counter()
        model.fit(data, epochs=RUN_EPOCHS[0], steps_per_epoch=per_epoch, verbose=0,
                  callbacks=([monitor] if monitor else []) + [ends])  # fmt: skip
        done = time.perf_counter()
    own = monitor.report.measurements["time_split"]["monitor_s"] if monitor else 0.0
    return f"{variant} {done - start:.4f} {done - ends.last:.4f} {own:.4f} {per_epoch}"


def run_costs(name: str, turns: int, steps: int | None, base: list[str]) -> str:
    """The ``run`` row of one script: ``turns`` groups of the three variants in rotating order,
    each turn its own process. The first turn (plain) sizes the steps per epoch; every later
    turn runs that many, so that the variants' whole ``fit`` times compare."""
    seconds: dict[str, list[float]] = {v: [] for v in VARIANTS}
    tails: dict[str, list[float]] = {v: [] for v in VARIANTS}
    owns: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for group in range(turns):
        for k in range(len(VARIANTS)):
            variant = (group + k) % len(VARIANTS)
            done = subprocess.run(
                base + ["--variant", str(variant)], capture_output=True, text=True
            )
            label = Path(name).stem
            row = next((r for r in done.stdout.splitlines() if r.startswith(label)), "")
            fields = row[len(label) :].split()
            if len(fields) != 5 or fields[0] not in seconds:
                failure = (done.stderr.strip().splitlines() or ["?"])[-1]
                return f"{label:<26} (failed: {failure})"
            variant_name, (total, tail, own) = fields[0], map(float, fields[1:4])
            if steps is None:
                steps = int(fields[4])
                base = [*base, "--steps", str(steps)]
            seconds[variant_name].append(total)
            tails[variant_name].append(tail)
            owns[variant_name].append(own)
    plain = seconds["plain"]
    cells = [f"{statistics.median(plain):8.2f} {statistics.median(tails['plain']):6.2f}"]
    for variant in VARIANTS[1:]:
        ratios = [m / p for m, p in zip(seconds[variant], plain, strict=True)]
        cells.append(
            f"{interval(ratios):>24} {statistics.median(tails[variant]):6.2f} "
            f"{statistics.median(owns[variant]):6.2f}"
        )
    return f"{Path(name).stem:<26} " + " ".join(cells)


def synthetic(name: str, turns: int, steps: int | None) -> None:
    """``sleep-D``: batches that take D ms to arrive (a sleep in the pipeline: it costs no CPU,
    so training and the input do not compete, and the truth is exact) for a model with steps
    of about 10 ms here."""
    import keras
    import numpy as np
    import tensorflow as tf

    delay = float(name.split("-")[1]) / 1000.0

    def slow(features: np.ndarray) -> np.ndarray:
        time.sleep(delay)
        return features

    rng = np.random.default_rng(0)
    x = rng.normal(size=(64 * 64, 64)).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(64)
    if delay:
        data = data.map(
            lambda f, t: (tf.ensure_shape(tf.numpy_function(slow, [f], tf.float32), f.shape), t)
        )
    data = data.prefetch(1).repeat()
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((64,)),
            keras.layers.Dense(768, activation="relu"),
            keras.layers.Dense(768, activation="relu"),
            keras.layers.Dense(1),
        ]
    )
    model.compile("sgd", "mse")  # fmt: skip
    print(f"{name:<26} {accuracy(model, data, turns, steps)}", flush=True)


def one(mode: str, name: str, turns: int, steps: int | None) -> None:
    """One table row, from inside the sample's ``fit``."""
    import keras

    if name.startswith("sleep-"):
        return synthetic(name, turns, steps)

    measure = {"overhead": overhead, "accuracy": accuracy, "run": whole_fit}[mode]
    original = keras.Model.fit
    row: list[str] = []

    def fit(model: Any, x: Any = None, y: Any = None, *args: Any, **kwargs: Any) -> Any:
        keras.Model.fit = original
        row.append(measure(model, repeated(x, y, kwargs.get("batch_size")), turns, steps))
        raise Stop

    script = Path(name).resolve() if name.endswith(".py") else SAMPLES / f"{name}.py"
    keras.Model.fit = fit
    os.chdir(script.parent)
    sys.argv, sys.path[:0] = [str(script)], [str(script.parent)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except Stop:
        pass
    print(f"{script.stem:<26} {row[0] if row else '(never trained)'}", flush=True)


def repeated(x: Any, y: Any, batch_size: int | None) -> Any:
    """The script's training data as a dataset that does not end: its ``tf.data`` dataset, or
    its arrays batched as Keras batches them (32 by default), shuffled once."""
    import tensorflow as tf

    if isinstance(x, tf.data.Dataset):
        return x.repeat() if int(x.cardinality()) >= 0 else x
    data = tf.data.Dataset.from_tensor_slices(x if y is None else (x, y))
    return data.shuffle(4096, seed=0).batch(batch_size or 32).repeat()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=("overhead", "accuracy", "run"))
    parser.add_argument("names", nargs="*", help="sample names (default: all)")
    parser.add_argument("--turns", type=int, default=3, help="turns (accuracy); x2 ABBA groups")
    parser.add_argument("--steps", type=int, help="steps per turn (default: about 3 s worth)")
    parser.add_argument("--split", type=float, help="fixed split fraction (overhead)")
    parser.add_argument("--seconds", type=float, default=10.0, help="whole fit (run)")
    parser.add_argument("--epochs", type=int, default=5, help="epochs of the whole fit (run)")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--variant", type=int, default=0, help=argparse.SUPPRESS)
    options = parser.parse_args()
    SPLIT[0] = options.split
    RUN_SECONDS[0], RUN_EPOCHS[0], VARIANT[0] = options.seconds, options.epochs, options.variant
    if options.one:
        return one(options.mode, options.names[0], options.turns, options.steps)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    names = options.names or sorted(p.stem for p in SAMPLES.glob("*.py"))
    if options.mode == "accuracy" and not options.names:
        names = [f"sleep-{d}" for d in (0, 5, 10, 20, 40)] + names
    if options.mode == "run" and not options.names:
        names = ["missing_prefetch", "sequential_map", "no_cache_fixed"]
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {options.turns} "
        f"{'ABBA groups' if options.mode == 'overhead' else 'turns'} per sample"
    )
    if options.mode == "run":
        print(
            f"{options.epochs} epochs of about {options.seconds:g} s in all; each column: "
            "monitored/plain whole fit (95% CI), median s from the last epoch's end to fit "
            "returning (tail; for plain fits too), median s the monitor counted as its own"
        )
        print(
            f"{'script':<26} {'plain s':>8} {'tail s':>6} "
            + " ".join(f"{v:>38}" for v in VARIANTS[1:])
        )
    elif options.mode == "overhead":
        print(f"{'script':<26} {'step ms':>9} {'groups':>6} {'split':>6} "
              f"{'wall, mean (95% CI)':>24} {'CPU time, mean (95% CI)':>24} {'own est':>8} "
              f"{'hooks s':>8}")  # fmt: skip
    else:
        print(f"{'script':<26} {'truth':>6} {'(range)':<9} {'share':>6} {'±ci':<4} {'points':>6}")
    for name in names:
        base = (
            [sys.executable, __file__, options.mode, name, "--one", "--turns", str(options.turns)]
            + (["--steps", str(options.steps)] if options.steps else [])
            + (["--split", str(options.split)] if options.split else [])
            + ["--seconds", str(options.seconds), "--epochs", str(options.epochs)]
        )
        if options.mode == "run":
            print(run_costs(name, options.turns, options.steps, base), flush=True)
            continue
        done = subprocess.run(base, capture_output=True, text=True)
        label = Path(name).stem
        rows = [r for r in done.stdout.strip().splitlines() if r.startswith(label)]
        failure = (done.stderr.strip().splitlines() or ["?"])[-1]
        print(rows[-1] if rows else f"{label:<26} (failed: {failure})", flush=True)


if __name__ == "__main__":
    main()
