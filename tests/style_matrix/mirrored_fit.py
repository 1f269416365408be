"""The style matrix's job under `MirroredStrategy` on two logical CPU devices, trained with
`fit`; TensorFlow imported first and the devices configured before anything else."""

import time

import tensorflow as tf  # isort: skip

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(
    cpus[0], [tf.config.LogicalDeviceConfiguration(), tf.config.LogicalDeviceConfiguration()]
)

import keras  # noqa: E402
import numpy as np  # noqa: E402

GLOBAL_BATCH = 32


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
print("replicas:", strategy.num_replicas_in_sync)

rng = np.random.default_rng(0)
features = rng.normal(size=(2048, 16)).astype("float32")
labels = rng.integers(0, 10, size=(2048,)).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(GLOBAL_BATCH)

with strategy.scope():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(ds, epochs=3)
