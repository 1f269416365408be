"""The input pipeline, kept out of the training script."""

import time

import numpy as np
import tensorflow as tf

FEATURES = 16


def _slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def _load(x, y):
    x = tf.py_function(_slow_read, [x], tf.float32)
    x.set_shape((FEATURES,))
    return x, y


def synthetic_examples(count=2048, seed=0):
    rng = np.random.default_rng(seed)
    features = rng.normal(size=(count, FEATURES)).astype("float32")
    labels = rng.integers(0, 10, size=(count,)).astype("int32")
    return features, labels


def make_dataset(features, labels, batch_size=32):
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    ds = ds.map(_load)
    return ds.batch(batch_size)
