"""`fit` in a non-daemon thread while the main thread returns."""

import threading

import numpy as np
import tensorflow as tf


def train():
    x = np.random.default_rng(0).normal(size=(4096, 16)).astype("float32")
    y = np.random.default_rng(1).integers(0, 10, size=4096)
    ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096).batch(64)
    model = tf.keras.Sequential([tf.keras.Input((16,)), tf.keras.layers.Dense(10)])
    model.compile("adam", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    model.fit(ds, epochs=20)
    model.save("model.keras")


threading.Thread(target=train).start()
