"""The style matrix's job in a custom training loop under `MirroredStrategy`: `strategy.run`
inside a `tf.function`, over `strategy.experimental_distribute_dataset`."""

import time

import tensorflow as tf  # isort: skip

cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

import keras  # noqa: E402
import numpy as np  # noqa: E402

GLOBAL_BATCH = 32
EPOCHS = 100


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

rng = np.random.default_rng(0)
features = rng.normal(size=(2048, 16)).astype("float32")
labels = rng.integers(0, 10, size=(2048,)).astype("int32")
ds = tf.data.Dataset.from_tensor_slices((features, labels)).map(load).batch(GLOBAL_BATCH)

with strategy.scope():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    optimizer = keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)  # its slots live on every replica
    loss_object = keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")


def compute_loss(labels, logits):
    per_example_loss = loss_object(labels, logits)
    return tf.nn.compute_average_loss(per_example_loss, global_batch_size=GLOBAL_BATCH)


@tf.function
def train_step(batch):
    def step_fn(inputs):
        x, y = inputs
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss = compute_loss(y, logits)
        gradients = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
        return loss

    per_replica_losses = strategy.run(step_fn, args=(batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica_losses, axis=None)


dist_ds = strategy.experimental_distribute_dataset(ds)
for epoch in range(EPOCHS):
    total, batches = 0.0, 0
    for batch in dist_ds:
        total += float(train_step(batch))
        batches += 1
    print(f"epoch {epoch + 1}: loss {total / batches:.4f}")
