"""A compiled step that reads an iterator it captures from the enclosing scope, not one
handed to it as an argument."""

import numpy as np
import tensorflow as tf
from tensorflow import keras

x = np.random.rand(4096, 16).astype("float32")
y = np.random.randint(0, 4, 4096)
strategy = tf.distribute.get_strategy()
dist = strategy.experimental_distribute_dataset(
    tf.data.Dataset.from_tensor_slices((x, y)).batch(64).repeat()
)
iterator = iter(dist)

with strategy.scope():
    model = keras.Sequential([keras.Input((16,)), keras.layers.Dense(4)])
    optimizer = keras.optimizers.SGD(0.1)


@tf.function
def step():
    features, labels = next(iterator)
    with tf.GradientTape() as tape:
        logits = model(features, training=True)
        loss = tf.reduce_mean(
            keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        )
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=False))
    return loss


for _ in range(500):
    step()
with open("log.txt", "w") as log:
    log.write("done\n")
