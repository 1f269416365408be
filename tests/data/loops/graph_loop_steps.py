"""A compiled step that runs several steps per call in a graph loop (`tf.range`), as
model-garden trainers do with `steps_per_loop`; its iterator is a plain tf.data one."""

import keras
import numpy as np
import tensorflow as tf

x = np.random.rand(4096, 16).astype("float32")
y = np.random.randint(0, 4, 4096)
ds = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(4096).batch(64).repeat()

model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(32), keras.layers.Dense(4)])
optimizer = keras.optimizers.SGD(0.1)
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)


@tf.function
def train_loop(iterator, steps):
    for _ in tf.range(steps):
        features, labels = next(iterator)
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=False))
    return loss


iterator = iter(ds)
for _ in range(200):
    train_loop(iterator, tf.constant(10))
model.save_weights("trained.weights.h5")
