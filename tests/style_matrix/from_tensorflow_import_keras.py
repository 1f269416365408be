"""The style matrix's job: Keras reached as `from tensorflow import keras`."""

import time

import numpy as np
import tensorflow as tf
from tensorflow import keras

BATCH_SIZE = 32


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

train_ds = tf.data.Dataset.from_tensor_slices((features, labels))
train_ds = train_ds.map(load)
train_ds = train_ds.batch(BATCH_SIZE)

model = keras.models.Sequential(
    [
        keras.layers.InputLayer(shape=(16,)),
        keras.layers.Dense(32, activation="relu"),
        keras.layers.Dense(10),
    ]
)
model.compile(
    optimizer=keras.optimizers.Adam(learning_rate=1e-3),
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.summary()
history = model.fit(train_ds, epochs=3)
print(history.history)
