"""The style matrix's job: TensorFlow imported before Keras."""

import time

import tensorflow as tf  # isort: skip
import keras  # isort: skip
import numpy as np


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


rng = np.random.default_rng(0)
features = rng.normal(size=(2048, 16)).astype("float32")
labels = rng.integers(0, 10, size=(2048,)).astype("int32")

ds = tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(32)

model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
)
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=3)
