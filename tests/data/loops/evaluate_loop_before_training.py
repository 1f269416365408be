"""The distribute tutorial's custom loop with a baseline first: `import tensorflow` only, the
strategy made at module level, and in `main()` the test set distributed before the training
set and evaluated in a loop of its own (a compiled step with no optimizer) before the training
loop starts. Only the training loop, batches of 128, is training; the evaluation loop, batches
of 32, runs as written."""

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

TRAIN_BATCH, TEST_BATCH, EPOCHS = 128, 32, 20
rng = np.random.default_rng(0)
features = rng.normal(size=(4096, 32)).astype("float32")
labels = rng.integers(0, 10, size=4096)

with strategy.scope():
    model = tf.keras.Sequential(
        [tf.keras.Input((32,)), tf.keras.layers.Dense(128, activation="relu"),
         tf.keras.layers.Dense(10)]
    )  # fmt: skip
    optimizer = tf.keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    loss_object = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    test_accuracy = tf.keras.metrics.SparseCategoricalAccuracy()


def train_step(inputs):
    x, y = inputs
    with tf.GradientTape() as tape:
        loss = tf.nn.compute_average_loss(loss_object(y, model(x, training=True)),
                                          global_batch_size=TRAIN_BATCH)  # fmt: skip
    gradients = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(gradients, model.trainable_variables, strict=True))
    return loss


def test_step(inputs):
    x, y = inputs
    test_accuracy.update_state(y, model(x, training=False))


@tf.function
def distributed_train_step(batch):
    losses = strategy.run(train_step, args=(batch,))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


@tf.function
def distributed_test_step(batch):
    strategy.run(test_step, args=(batch,))


def main():
    test_ds = tf.data.Dataset.from_tensor_slices((features[:1024], labels[:1024]))
    train_ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(4096)
    test_dist = strategy.experimental_distribute_dataset(test_ds.batch(TEST_BATCH))
    train_dist = strategy.experimental_distribute_dataset(train_ds.batch(TRAIN_BATCH))
    for batch in test_dist:
        distributed_test_step(batch)
    print(f"baseline accuracy {float(test_accuracy.result()):.3f}")
    for epoch in range(EPOCHS):
        total = 0.0
        for batch in train_dist:
            total += float(distributed_train_step(batch))
        print(f"epoch {epoch + 1}: loss {total:.3f}")


if __name__ == "__main__":
    main()
