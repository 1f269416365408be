"""A dataset distributed by hand, then handed to `fit`: measured as a `fit`, on two replicas."""

import numpy as np
import tensorflow as tf
from tensorflow import keras

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
x = np.random.rand(8192, 32).astype("float32")
y = np.random.randint(0, 10, 8192).astype("int64")
ds = tf.data.Dataset.from_tensor_slices((x, y)).map(lambda a, b: (tf.sin(a), b)).batch(128)
dist_ds = strategy.experimental_distribute_dataset(ds)
with strategy.scope():
    model = keras.Sequential(
        [keras.Input((32,)), keras.layers.Dense(128, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(dist_ds, epochs=2)
