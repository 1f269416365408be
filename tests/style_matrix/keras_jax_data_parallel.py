"""The style matrix's job with Keras on JAX under `keras.distribution.DataParallel` over two
host devices, fed by tf.data; TensorFlow imported before Keras."""

import os

os.environ["KERAS_BACKEND"] = "jax"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"

import time  # noqa: E402

import tensorflow as tf  # noqa: E402  # isort: skip
import keras  # noqa: E402  # isort: skip
import numpy as np  # noqa: E402


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


devices = keras.distribution.list_devices()
keras.distribution.set_distribution(keras.distribution.DataParallel(devices=devices))

rng = np.random.default_rng(0)
features = rng.normal(size=(2048, 16)).astype("float32")
labels = rng.integers(0, 10, size=(2048,)).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(32)

model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
)
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=3)
