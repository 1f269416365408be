"""Data-parallel training of a tabular classifier with ``tf.distribute.MirroredStrategy``
(fixed twin of distributed_batch.py).

The host CPU is split into two logical devices so the strategy has two replicas to mirror the
model on, the way it would spread a model over two GPUs.

Pipeline: float32 features and labels in memory -> shuffle -> batch -> prefetch.

Fixed (PD202 batch-not-scaled, PD203 lr-not-scaled): the batch size is fixed *per replica*
and the global batch is ``PER_REPLICA_BATCH * strategy.num_replicas_in_sync``; the learning
rate is scaled by the same factor (the linear scaling rule). Each replica always gets 32
examples per step whatever the number of devices, and the optimiser sees a learning rate that
matches the larger global batch. Model, optimiser and ``compile`` are all created inside
``strategy.scope()``.
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
PER_REPLICA_BATCH = 32
BASE_LEARNING_RATE = 1e-3  # tuned for one replica with PER_REPLICA_BATCH examples per step


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
replicas = strategy.num_replicas_in_sync
print(f"replicas in sync: {replicas}")

global_batch = PER_REPLICA_BATCH * replicas
learning_rate = BASE_LEARNING_RATE * replicas

features, labels = synthesize_table(NUM_ROWS)
train_ds = tf.data.Dataset.from_tensor_slices((features, labels))
train_ds = train_ds.shuffle(len(features), seed=0)
train_ds = train_ds.batch(global_batch)
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
        optimizer=keras.optimizers.Adam(learning_rate=learning_rate),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
model.fit(train_ds, epochs=2, verbose=2)
