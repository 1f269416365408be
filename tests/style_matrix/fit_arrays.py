"""The style matrix's model trained with `fit` on in-memory NumPy arrays: no tf.data in the
script, so this job is not the slow-pipeline one."""

import tensorflow as tf  # isort: skip
import keras  # isort: skip
import numpy as np

tf.random.set_seed(0)
rng = np.random.default_rng(0)
x_train = rng.normal(size=(2048, 16)).astype("float32")
y_train = rng.integers(0, 10, size=(2048,)).astype("int32")

model = keras.Sequential(
    [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
)
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
model.fit(x_train, y_train, batch_size=32, epochs=3, validation_split=0.1)
