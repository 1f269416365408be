"""A loop as resuming trainers write it: a `CheckpointManager` (two kept) restored before the
loop and saved at step 0 and every 50 steps, and a log opened before the loop, written every
step."""

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


checkpoint = tf.train.Checkpoint(model=model, optimizer=optimizer)
manager = tf.train.CheckpointManager(checkpoint, "ckpts", max_to_keep=2)
checkpoint.restore(manager.latest_checkpoint)
log = open("train.log", "a")  # noqa: SIM115 - held for the whole run, as trainers do
for step, (xb, yb) in enumerate(ds):
    loss = train_step(xb, yb)
    log.write(f"step {step} loss {float(loss):.4f}\n")
    log.flush()
    if step % 50 == 0:
        manager.save()
