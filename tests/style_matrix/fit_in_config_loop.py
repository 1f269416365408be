"""The style matrix's job as a small sweep: `fit` sits in a function called once per config."""

import time

import tensorflow as tf  # isort: skip
import keras  # isort: skip
import numpy as np

CONFIGS = [
    {"name": "small", "hidden": 32, "lr": 1e-3},
    {"name": "wide", "hidden": 128, "lr": 3e-4},
]


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


def run(config, ds):
    model = keras.Sequential(
        [
            keras.Input((16,)),
            keras.layers.Dense(config["hidden"], activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    model.compile(
        keras.optimizers.Adam(config["lr"]),
        keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    history = model.fit(ds, epochs=3, verbose=0)
    return history.history["loss"][-1]


def main():
    ds = make_dataset(batch_size=32)
    results = {}
    for config in CONFIGS:
        results[config["name"]] = run(config, ds)
        print(config["name"], results[config["name"]])


if __name__ == "__main__":
    main()
