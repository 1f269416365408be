"""Data-parallel training of a tabular classifier with ``tf.distribute.MirroredStrategy``.

The host CPU is split into two logical devices so the strategy has two replicas to mirror the
model on, the way it would spread a model over two GPUs.

Pipeline: float32 features and labels in memory -> shuffle -> batch -> prefetch.

Defect (PD202 batch-not-scaled, whose fix scales the learning rate with the batch): the
global batch size is the constant ``BATCH = 64`` and the learning rate is a constant too. Under
a strategy every step splits the global batch across the replicas, so each replica gets
64 / num_replicas examples: add replicas and each one gets less work and a noisier gradient,
while the learning rate stays tuned for a different effective batch. Both should be derived
from ``strategy.num_replicas_in_sync``.
"""

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip

# Split the CPU into two logical devices before anything else initialises the TF runtime.
cpus = tf.config.list_physical_devices("CPU")
tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)

NUM_ROWS = 32_768
NUM_FEATURES = 32
NUM_CLASSES = 5
BATCH = 64  # DEFECT: global batch hard-coded, not derived from the number of replicas
LEARNING_RATE = 1e-3  # DEFECT: not scaled with the number of replicas


def synthesize_table(num_rows, seed=0):
    """Gaussian clusters, one per class, already standardised."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=num_rows)
    centres = rng.normal(0, 1, size=(NUM_CLASSES, NUM_FEATURES))
    features = centres[labels] + rng.normal(0, 1.5, size=(num_rows, NUM_FEATURES))
    return features.astype(np.float32), labels.astype(np.int32)


keras.utils.set_random_seed(0)
devices = [device.name for device in tf.config.list_logical_devices("CPU")]
strategy = tf.distribute.MirroredStrategy(devices=devices)
print(f"replicas in sync: {strategy.num_replicas_in_sync}")

features, labels = synthesize_table(NUM_ROWS)
train_ds = tf.data.Dataset.from_tensor_slices((features, labels))
train_ds = train_ds.shuffle(len(features), seed=0)
train_ds = train_ds.batch(BATCH)
train_ds = train_ds.prefetch(tf.data.AUTOTUNE)

with strategy.scope():
    model = keras.Sequential(
        [
            keras.Input(shape=(NUM_FEATURES,)),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(64, activation="relu"),
            keras.layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(learning_rate=LEARNING_RATE),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
model.fit(train_ds, epochs=2, verbose=2)
