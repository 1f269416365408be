"""A loop under MirroredStrategy that reads its batches inside the compiled step, as the
multi-worker tutorial does, checkpointing every epoch into the working directory."""

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)

strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
GLOBAL_BATCH = 64 * strategy.num_replicas_in_sync
x = np.random.rand(8192, 32).astype("float32")
y = np.random.randint(0, 10, 8192).astype("int64")


def slow(a, b):
    return tf.py_function(lambda t: t, [a], tf.float32), b


ds = tf.data.Dataset.from_tensor_slices((x, y)).map(slow)
ds = ds.map(lambda a, b: (tf.ensure_shape(a, (32,)), b)).batch(GLOBAL_BATCH)
dist_ds = strategy.experimental_distribute_dataset(ds)

with strategy.scope():
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)]
    )
    model.build((None, 32))
    loss_obj = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True, reduction="none")
    optimizer = tf.keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)


def train_step(inputs):
    images, labels = inputs
    with tf.GradientTape() as tape:
        logits = model(images, training=True)
        per_example = loss_obj(labels, logits)
        loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=False))
    return loss


@tf.function
def distributed_train_step(iterator):
    losses = strategy.run(train_step, args=(next(iterator),))
    return strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)


checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(checkpoint, "checkpoints", max_to_keep=1)
for epoch in range(40):
    total = 0.0
    n = 0
    it = iter(dist_ds)
    for _ in range(64):
        total += distributed_train_step(it)
        n += 1
    print("epoch", epoch, float(total) / n)
    manager.save()
model.save("model.keras")
