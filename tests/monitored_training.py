"""A small training script with ``pipedoctor.keras.Monitor``, run as a real process by the tests.

    python monitored_training.py OUT.json [--strategy none|mirrored|multiworker]
        [--replicas N] [--input-ms MS] [--epochs E] [--steps S] [--log-dir DIR]
        [--kill-after-epoch K] [--twice] [--wait-for-workers S]

``--input-ms`` makes each batch take that long to arrive (a sleep in the pipeline, so the
process's own CPU stays free); the model takes a few milliseconds per step. The report and the
trained weights go to OUT.json (with ``--twice``, also the weights of the same training run
without a monitor). ``--kill-after-epoch`` kills the process with
SIGKILL right after the monitor has written that epoch's record: a worker dying mid-run.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


BATCH = 32


def make_dataset(input_ms: float, steps: int, batch: int = BATCH):  # noqa: ANN201
    """``steps`` batches of random features; each takes ``input_ms`` to arrive (a sleep, so
    the slow input costs no CPU), then ``prefetch(1)``."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(0)
    x = rng.normal(size=(batch * steps, 64)).astype("float32")
    y = (x[:, :1] > 0).astype("float32")
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)
    if input_ms:
        delay = input_ms / 1000.0

        def slow(features: np.ndarray) -> np.ndarray:
            time.sleep(delay)
            return features

        dataset = dataset.map(
            lambda f, t: (tf.ensure_shape(tf.numpy_function(slow, [f], tf.float32), f.shape), t)
        )
    return dataset.prefetch(1)


def make_model(strategy=None, width: int = 512):  # noqa: ANN001, ANN201
    """A compiled MLP, the same weights every time (seeded), built under ``strategy``."""
    import keras
    import tensorflow as tf

    keras.utils.set_random_seed(7)
    with (strategy or tf.distribute.get_strategy()).scope():
        model = keras.Sequential(
            [
                keras.Input((64,)),
                keras.layers.Dense(width, activation="relu"),
                keras.layers.Dense(width, activation="relu"),
                keras.layers.Dense(1, activation="sigmoid"),
            ]
        )
        model.compile(keras.optimizers.SGD(0.01), "binary_crossentropy")
    return model


def multi_worker_workarounds(model) -> None:  # noqa: ANN001
    """Keras 3 cannot ``fit`` under ``MultiWorkerMirroredStrategy`` as it ships
    (github.com/keras-team/keras/issues/20585): its symbolic build reduces a batch of
    per-replica values eagerly, and each step reduces the scalar metrics with ``axis=0``. The
    model is built already (``keras.Input``), so the first can be skipped, and metrics of shape
    ``[1]`` reduce fine; the steps themselves all-reduce across the processes as usual."""
    import tensorflow as tf

    model._maybe_symbolic_build = lambda *args, **kwargs: None
    step = model.train_step

    def train_step(data):  # noqa: ANN001, ANN202
        return {name: tf.reshape(value, [1]) for name, value in step(data).items()}

    model.train_step = train_step


def written(log_dir: str | None, epochs: int, timeout_s: float = 10.0) -> None:
    """Wait until this worker's record holds ``epochs`` epochs (or ``timeout_s`` passes)."""
    from pipedoctor.monitor.records import read_record, record_path
    from pipedoctor.monitor.worker import identify

    if log_dir is None:
        return
    path = record_path(log_dir, identify("tensorflow").name)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if len(read_record(path)["measurements"].get("epochs") or []) >= epochs:
                return
        except (ValueError, KeyError):
            pass
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--strategy", default="none")
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--input-ms", type=float, default=0.0)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--log-dir")
    parser.add_argument("--kill-after-epoch", type=int)
    parser.add_argument("--twice", action="store_true", help="train without, then with, a monitor")
    parser.add_argument("--wait-for-workers", type=float, default=10.0)
    options = parser.parse_args()

    import tensorflow as tf

    if options.strategy == "mirrored":
        cpu = tf.config.list_physical_devices("CPU")[0]
        tf.config.set_logical_device_configuration(
            cpu, [tf.config.LogicalDeviceConfiguration()] * options.replicas
        )
    import keras

    from pipedoctor.keras import Monitor

    if options.strategy == "mirrored":
        strategy = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(options.replicas)])
    elif options.strategy == "multiworker":
        strategy = tf.distribute.MultiWorkerMirroredStrategy()
    else:
        strategy = tf.distribute.get_strategy()

    dataset = make_dataset(options.input_ms, options.steps)
    result: dict = {}
    if options.twice:  # the same training without a monitor first: its weights to compare
        plain = make_model(strategy)
        plain.fit(dataset, epochs=options.epochs, verbose=0)
        result["plain_weights"] = [w.tolist() for w in plain.get_weights()]
    model = make_model(strategy)
    if options.strategy == "multiworker":
        multi_worker_workarounds(model)
    monitor = Monitor(options.log_dir, wait_for_workers_s=options.wait_for_workers)
    callbacks: list = [monitor]
    if options.kill_after_epoch is not None:

        class Die(keras.callbacks.Callback):
            def on_epoch_end(self, epoch: int, logs: object = None) -> None:
                if epoch + 1 >= options.kill_after_epoch:
                    written(options.log_dir, epoch + 1)  # the monitor writes on its own thread
                    sys.stdout.flush()
                    os.kill(os.getpid(), signal.SIGKILL)

        callbacks.append(Die())
    model.fit(dataset, epochs=options.epochs, verbose=0, callbacks=callbacks)
    result["weights"] = [w.tolist() for w in model.get_weights()]
    if monitor.report is not None:
        result["report"] = monitor.report.to_dict()
    with open(options.out, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main()
