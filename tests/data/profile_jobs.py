"""Capture real TensorFlow profiles on CPU the ways users take them, for the profile tests.

    python profile_jobs.py OUT

writes, under OUT: ``callback/`` (Keras ``TensorBoard(profile_batch=...)``, an input-bound job),
``raw/`` (``tf.profiler.experimental.start/stop`` around ``fit``, the same job), ``compute/``
(start/stop around a compute-bound job), ``replicas/`` (start/stop around ``fit`` under
``MirroredStrategy`` on two logical CPU devices) and ``loop/`` (a custom training loop, as in
TensorFlow's DCGAN tutorial: ``for batch in dataset: train_step(batch)``, the same slow input).
One process, so TensorFlow starts once.
"""

from __future__ import annotations

import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402

BATCH = 32


def slow_pipeline() -> tf.data.Dataset:
    """A sequential map that sleeps 3 ms per element in Python: input-bound anywhere."""

    def wait(x: np.ndarray) -> np.ndarray:
        time.sleep(0.003)
        return x

    def parse(x: tf.Tensor, y: tf.Tensor) -> tuple[tf.Tensor, tf.Tensor]:
        x = tf.numpy_function(wait, [x], tf.float32)
        return tf.ensure_shape(x, (16,)), y

    x = np.random.default_rng(0).normal(size=(4096, 16)).astype("float32")
    y = np.zeros((4096,), "float32")
    return tf.data.Dataset.from_tensor_slices((x, y)).map(parse).batch(BATCH).prefetch(2)


def fast_pipeline(features: int) -> tf.data.Dataset:
    x = np.random.default_rng(0).normal(size=(512, features)).astype("float32")
    y = np.zeros((512,), "float32")
    ds = tf.data.Dataset.from_tensor_slices((x, y)).cache().repeat().batch(BATCH)
    return ds.prefetch(tf.data.AUTOTUNE)


def model(features: int, width: int, depth: int) -> keras.Model:
    layers = [keras.layers.Dense(width, activation="relu") for _ in range(depth)]
    built = keras.Sequential([keras.Input((features,)), *layers, keras.layers.Dense(1)])
    built.compile("sgd", "mse")
    return built


def main(out: str) -> None:
    slow = slow_pipeline()
    keras_callback = keras.callbacks.TensorBoard(
        os.path.join(out, "callback"), profile_batch=(3, 7)
    )
    model(16, 32, 1).fit(slow.take(9), epochs=1, verbose=0, callbacks=[keras_callback])

    job = model(16, 32, 1)
    job.fit(slow.take(2), verbose=0)  # traced before the profiler starts
    tf.profiler.experimental.start(os.path.join(out, "raw"))
    job.fit(slow.take(6), verbose=0)
    tf.profiler.experimental.stop()

    heavy = model(256, 512, 3)
    heavy.fit(fast_pipeline(256), steps_per_epoch=2, verbose=0)
    tf.profiler.experimental.start(os.path.join(out, "compute"))
    heavy.fit(fast_pipeline(256), steps_per_epoch=12, verbose=0)
    tf.profiler.experimental.stop()

    custom = model(16, 32, 1)
    optimizer = keras.optimizers.Adam()

    @tf.function
    def train_step(x: tf.Tensor, y: tf.Tensor) -> tf.Tensor:
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((custom(x)[:, 0] - y) ** 2)
        grads = tape.gradient(loss, custom.trainable_variables)
        optimizer.apply_gradients(zip(grads, custom.trainable_variables, strict=True))
        return loss

    for x, y in slow.take(2):
        train_step(x, y)
    tf.profiler.experimental.start(os.path.join(out, "loop"))
    for x, y in slow.take(6):
        train_step(x, y)
    tf.profiler.experimental.stop()

    with tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).scope():
        mirrored = model(64, 256, 2)
    mirrored.fit(fast_pipeline(64), steps_per_epoch=2, verbose=0)
    tf.profiler.experimental.start(os.path.join(out, "replicas"))
    mirrored.fit(fast_pipeline(64), steps_per_epoch=8, verbose=0)
    tf.profiler.experimental.stop()


if __name__ == "__main__":
    main(sys.argv[1])
