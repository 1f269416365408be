"""The style matrix's job: an `absl.app` program whose settings are `absl.flags`."""

import time

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip
from absl import app, flags, logging

FLAGS = flags.FLAGS
flags.DEFINE_integer("epochs", 3, "Passes over the training data.")
flags.DEFINE_integer("batch_size", 32, "Examples per training step.")
flags.DEFINE_float("learning_rate", 1e-3, "Adam's learning rate.")


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


def make_dataset(batch_size):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(2048, 16)).astype("float32")
    labels = rng.integers(0, 10, size=(2048,)).astype("int32")
    return tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(batch_size)


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments.")
    logging.info("training for %d epochs", FLAGS.epochs)
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        keras.optimizers.Adam(FLAGS.learning_rate),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    model.fit(make_dataset(FLAGS.batch_size), epochs=FLAGS.epochs)


if __name__ == "__main__":
    app.run(main)
