"""The style matrix's job: settings from `argparse`, run under a `__main__` guard."""

import argparse
import time

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--hidden", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    return parser.parse_args(argv)


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


def train(args):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(2048, 16)).astype("float32")
    labels = rng.integers(0, 10, size=(2048,)).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(args.batch_size)
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(args.hidden, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        keras.optimizers.Adam(args.lr),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model.fit(ds, epochs=args.epochs)


if __name__ == "__main__":
    train(parse_args())
