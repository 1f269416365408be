"""A loop as resuming trainers write it: a `CheckpointManager` (two kept) restored before the
loop and saved at step 0 and every 50 steps, and a log opened before the loop, written every
step."""

import tensorflow as tf
from tiny_loop import ds, model, optimizer, train_step

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
