"""A plain custom loop that raises at its 300th step, as a loop whose logging or metrics code
fails part-way does."""

import numpy as np
import tensorflow as tf

x = np.random.rand(6400, 32).astype("float32")
y = np.random.randint(0, 10, 6400)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(32)
model = tf.keras.Sequential([tf.keras.Input((32,)), tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.SGD(0.01)
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_step(xb, yb):
    with tf.GradientTape() as tape:
        loss = loss_fn(yb, model(xb, training=True))
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    return loss


for epoch in range(100):
    for step, (xb, yb) in enumerate(ds):
        train_step(xb, yb)
        if epoch * 200 + step == 300:
            raise RuntimeError("the metrics server went away")
