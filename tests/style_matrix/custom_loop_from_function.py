"""The style matrix's job in a custom training loop under `MirroredStrategy`, fed by
`strategy.distribute_datasets_from_function` and stepped with an explicit iterator."""

import time

import keras
import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 32
STEPS = 100 * 2048 // GLOBAL_BATCH  # a hundred epochs


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


def dataset_fn(input_context):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(2048, 16)).astype("float32")
    labels = rng.integers(0, 10, size=(2048,)).astype("int32")
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    ds = ds.map(load).batch(input_context.get_per_replica_batch_size(GLOBAL_BATCH))
    return ds.repeat()


class Trainer:
    def __init__(self, strategy):
        self.strategy = strategy
        with strategy.scope():
            self.model = keras.Sequential(
                [
                    keras.Input((16,)),
                    keras.layers.Dense(32, activation="relu"),
                    keras.layers.Dense(10),
                ]
            )
            self.optimizer = keras.optimizers.Adam()
            self.optimizer.build(self.model.trainable_variables)
            self.loss_object = keras.losses.SparseCategoricalCrossentropy(
                from_logits=True, reduction="none"
            )

    def _step(self, x, y):
        with tf.GradientTape() as tape:
            logits = self.model(x, training=True)
            per_example = self.loss_object(y, logits)
            loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)
        variables = self.model.trainable_variables
        self.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables, strict=True))
        return loss

    @tf.function
    def train_step(self, batch):
        losses = self.strategy.run(self._step, args=batch)
        return self.strategy.reduce(tf.distribute.ReduceOp.SUM, losses, axis=None)

    def fit(self, steps):
        iterator = iter(self.strategy.distribute_datasets_from_function(dataset_fn))
        for step in range(steps):
            loss = self.train_step(next(iterator))
            if step % 50 == 0:
                print(f"step {step}: loss {float(loss):.4f}")


def main():
    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
    Trainer(strategy).fit(STEPS)


if __name__ == "__main__":
    main()
