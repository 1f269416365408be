"""The model, data and compiled step the small loop scripts beside it share: 6,400 rows of 32
features in batches of 32 (200 a pass), a dense classifier and a `tf.function` step."""

import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x = rng.random((6400, 32), dtype=np.float32)
y = rng.integers(0, 10, size=(6400,))
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(1000).batch(32).prefetch(2)
model = tf.keras.Sequential(
    [tf.keras.Input((32,)), tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(10)]
)
optimizer = tf.keras.optimizers.Adam(1e-3)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss
