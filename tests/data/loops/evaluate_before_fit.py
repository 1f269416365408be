"""A baseline printed before training, as tutorials do: `evaluate` and `predict` on the
dataset first, under a `MirroredStrategy` of two replicas, then `fit`. Keras distributes the
dataset for its own evaluation; only `fit` is training."""

import numpy as np
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])

rng = np.random.default_rng(0)
features = rng.normal(size=(8192, 32)).astype("float32")
labels = rng.integers(0, 10, size=8192)
ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(8192).batch(128)

with strategy.scope():
    model = tf.keras.Sequential(
        [tf.keras.Input((32,)), tf.keras.layers.Dense(128, activation="relu"),
         tf.keras.layers.Dense(10)]
    )  # fmt: skip
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )

loss, accuracy = model.evaluate(ds, verbose=0)
print(f"before training: loss {loss:.3f}, accuracy {accuracy:.3f}")
model.predict(ds.take(2), verbose=0)
model.fit(ds, epochs=3)
