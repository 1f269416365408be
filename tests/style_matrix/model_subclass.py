"""The style matrix's job: a `tf.keras.Model` subclass with its own `call`."""

import time

import numpy as np
import tensorflow as tf


class Classifier(tf.keras.Model):
    def __init__(self, hidden=32, classes=10, **kwargs):
        super().__init__(**kwargs)
        self.hidden = tf.keras.layers.Dense(hidden, activation="relu")
        self.head = tf.keras.layers.Dense(classes)

    def call(self, inputs, training=False):
        return self.head(self.hidden(inputs))


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

model = Classifier()
model.compile(
    optimizer=tf.keras.optimizers.Adam(),
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(ds, epochs=3)
