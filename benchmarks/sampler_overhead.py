"""What do the background samplers cost a training run?

Trains a small Keras model (TensorFlow, in-memory tensors) three ways in one run: no sampler,
the host sampler, and the host and GPU samplers together (the GPU one is a no-op where no
NVIDIA GPU is visible). Trials alternate, rotating which arm goes first, so drift on a shared
machine hurts every arm alike. Step time is read from batch-end timestamps, after the first
steps of each trial. Prints the mean step time of each arm with its spread across trials and
the overhead against no sampler; the goal is under 1% of step time. Beside the overhead of the
means it prints a paired figure, steadier on a shared machine: per round, each arm's median step
against the no-sampler trial of the same round, then the median over rounds.

A difference of well under 1% drowns in run-to-run noise, so a fourth arm runs the host
sampler ``--amplify`` times faster than its default (GIL hand-offs and all) and its overhead,
divided by that factor, is the in-training cost at the default rate. It also times the sampling
functions directly (a sample, then a listing of child processes), in wall and in CPU time, and
prints their share at the default intervals: the bound on what the training run can lose.

    python benchmarks/sampler_overhead.py [--steps 100] [--repeats 8] [--amplify 50]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from pipedoctor.measure.samplers import GpuSampler, HostSampler  # noqa: E402

WARMUP_STEPS = 20
FEATURES, HIDDEN, CLASSES = 64, 256, 10


def build(batch: int, steps: int) -> tuple[object, object, object, type]:
    try:
        import keras
        import numpy as np
    except ImportError:
        sys.exit("TensorFlow/Keras is not installed here: install pipedoctor[tf] to run this")
    rng = np.random.default_rng(0)
    x = rng.standard_normal((batch * (steps + WARMUP_STEPS), FEATURES), dtype=np.float32)
    y = rng.integers(0, CLASSES, len(x))
    model = keras.Sequential(
        [
            keras.Input((FEATURES,)),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(HIDDEN, activation="relu"),
            keras.layers.Dense(CLASSES),
        ]
    )
    model.compile(
        optimizer="adam", loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    )

    class StepClock(keras.callbacks.Callback):
        """Batch-end timestamps: step time without fit()'s setup and teardown."""

        def on_train_begin(self, logs: object = None) -> None:
            self.ends: list[float] = []

        def on_train_batch_end(self, batch: int, logs: object = None) -> None:
            self.ends.append(time.perf_counter())

    return model, x, y, StepClock


def trial(model, x, y, clock_type: type, batch: int, arm: str, amplify: int) -> list[float]:
    """Seconds per step of one fit() over the data, with ``arm``'s samplers running."""
    clock = clock_type()
    samplers: list[HostSampler | GpuSampler] = []
    if arm == "host":
        samplers.append(HostSampler().start())
    elif arm.startswith("host x"):
        samplers.append(HostSampler(interval_s=HostSampler().interval_s / amplify).start())
    elif arm == "host+gpu":
        samplers.append(HostSampler().start())
    if arm == "host+gpu":
        samplers.append(GpuSampler().start())
    try:
        model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0, callbacks=[clock])
    finally:
        for sampler in samplers:
            sampler.stop()
    ends = clock.ends[WARMUP_STEPS:]
    return [later - earlier for earlier, later in zip(ends, ends[1:], strict=False)]


def per_call(function: Callable[[], object], calls: int) -> tuple[float, float]:
    """Seconds per call, wall and CPU (this thread's): they differ on a busy machine."""
    wall, cpu = time.perf_counter(), time.thread_time()
    for _ in range(calls):
        function()
    return (time.perf_counter() - wall) / calls, (time.thread_time() - cpu) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100, help="timed steps per trial")
    parser.add_argument("--repeats", type=int, default=8, help="trials per arm")
    parser.add_argument("--amplify", type=int, default=50, help="rate factor of the 4th arm")
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()

    model, x, y, clock_type = build(args.batch, args.steps)
    import tensorflow as tf

    gpus = len(tf.config.list_physical_devices("GPU"))
    print(
        f"Python {platform.python_version()}, TensorFlow {tf.__version__}, "
        f"{os.cpu_count()} CPU cores, {gpus} GPUs visible to TensorFlow"
    )
    print(
        f"model: MLP {FEATURES}-{HIDDEN}-{HIDDEN}-{CLASSES}, batch {args.batch}, "
        f"{args.steps} timed steps x {args.repeats} trials per arm\n"
    )
    trial(model, x, y, clock_type, args.batch, "none", 1)  # trace and warm up once

    arms = ["none", "host", "host+gpu", f"host x{args.amplify}"]
    steps: dict[str, list[float]] = {arm: [] for arm in arms}
    trial_means: dict[str, list[float]] = {arm: [] for arm in arms}
    trial_medians: dict[str, list[float]] = {arm: [] for arm in arms}
    for repeat in range(args.repeats):
        order = arms[repeat % len(arms) :] + arms[: repeat % len(arms)]
        for arm in order:
            durations = trial(model, x, y, clock_type, args.batch, arm, args.amplify)
            steps[arm].extend(durations)
            trial_means[arm].append(statistics.mean(durations))
            trial_medians[arm].append(statistics.median(durations))

    base = statistics.mean(steps["none"])
    paired: dict[str, float] = {}
    print(f"{'arm':<10} {'mean ms':>9} {'spread':>8} {'vs none':>9} {'paired':>9}")
    for arm in arms:
        mean = statistics.mean(steps[arm])
        spread = statistics.stdev(trial_means[arm]) / mean * 100 if args.repeats > 1 else 0.0
        vs_none = vs_paired = ""
        if arm != "none":
            vs_none = f"{(mean / base - 1) * 100:+.2f}%"
            ratios = [a / b for a, b in zip(trial_medians[arm], trial_medians["none"], strict=True)]
            paired[arm] = statistics.median(ratios) - 1
            vs_paired = f"{paired[arm] * 100:+.2f}%"
        print(f"{arm:<10} {mean * 1000:>9.3f} {f'±{spread:.1f}%':>8} {vs_none:>9} {vs_paired:>9}")
    print("(spread: standard deviation of the trial means, relative to the mean)")
    amplified = paired[arms[-1]]
    print(
        f"host sampler in training at its default rate, from the x{args.amplify} arm: "
        f"{amplified / args.amplify * 100:+.3f}% of step time\n"
    )

    host_defaults, gpu_defaults = HostSampler(), GpuSampler()
    host = HostSampler(interval_s=3600).start()  # the thread samples once, then idles
    host_sample = per_call(host.sample_once, 1000)
    host_children = per_call(host.refresh_children, 50)
    host.stop()
    gpu = GpuSampler(interval_s=3600).start()
    gpu_sample = per_call(gpu.sample_once, 1000)
    gpu_report = gpu.stop()

    rows = [
        ("host sample", host_sample, host_defaults.interval_s),
        ("host children list", host_children, host_defaults.children_every_s),
        ("GPU sample", gpu_sample, gpu_defaults.interval_s),
    ]
    print(f"direct cost per call {'wall us':>10} {'CPU us':>9}  every   CPU share")
    share = 0.0
    for name, (wall_s, cpu_s), every in rows:
        share += cpu_s / every
        print(
            f"  {name:<18} {wall_s * 1e6:>10.1f} {cpu_s * 1e6:>9.1f}  {every:>4g} s "
            f"{cpu_s / every * 100:>9.3f}%"
        )
    if not gpu_report.available:
        print(f"  ({gpu_report.note})")
    wall_share = sum(wall / every for _, (wall, _), every in rows)
    verdict = "met" if max(share, wall_share) < 0.01 else "NOT met"
    print(
        f"samplers' share: {share * 100:.3f}% of one core's CPU time, {wall_share * 100:.3f}% "
        f"counted in wall time; goal under 1% of step time: {verdict}"
    )


if __name__ == "__main__":
    main()
