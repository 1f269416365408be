"""A custom loop over NumPy slices: no tf.data for the check to time."""

import keras
import numpy as np
import tensorflow as tf

model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
opt = keras.optimizers.SGD()
x = np.random.rand(512, 8).astype("float32")
for i in range(0, 512, 32):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(model(x[i : i + 32]) ** 2)
    g = tape.gradient(loss, model.trainable_weights)
    opt.apply_gradients(zip(g, model.trainable_weights, strict=False))
print("done")
