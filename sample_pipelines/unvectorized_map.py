"""Tabular classifier (sensor readings -> machine state) trained from arrays held in memory.

Pipeline: raw int16 sensor readings and labels -> shuffle -> ``map(standardize)`` (cast to
float, subtract the per-feature mean, divide by the per-feature std) -> batch -> prefetch.

Defect (PD109 unvectorized-map): ``standardize`` is pure element-wise arithmetic, yet it runs
once per row, before ``batch``. A row is only 48 numbers, so each call is almost all fixed
overhead (a function invocation and a few tiny kernel launches). Batching first and
standardising a whole batch per call does the same maths at a fraction of the cost.
"""

import numpy as np
import tensorflow as tf

NUM_ROWS = 65_536
NUM_FEATURES = 48
NUM_CLASSES = 3
BATCH_SIZE = 256


def synthesize_readings(num_rows, seed=0):
    """Raw int16 sensor readings; the machine state shifts a few of the sensors."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=num_rows)
    offsets = rng.normal(0, 300, size=(NUM_CLASSES, NUM_FEATURES))
    scale = rng.uniform(200, 2000, size=NUM_FEATURES)
    readings = offsets[labels] + rng.normal(1000, 1, size=(num_rows, NUM_FEATURES)) * scale
    return readings.astype(np.int16), labels.astype(np.int32)


readings, labels = synthesize_readings(NUM_ROWS)
# Per-feature statistics, computed once over the training set.
FEATURE_MEAN = tf.constant(readings.mean(axis=0), dtype=tf.float32)
FEATURE_STD = tf.constant(readings.std(axis=0), dtype=tf.float32)


def standardize(features, label):
    return (tf.cast(features, tf.float32) - FEATURE_MEAN) / FEATURE_STD, label


train_ds = tf.data.Dataset.from_tensor_slices((readings, labels))
train_ds = train_ds.shuffle(NUM_ROWS, seed=0)
# DEFECT: element-wise arithmetic applied one row at a time, before batching.
train_ds = train_ds.map(standardize, num_parallel_calls=tf.data.AUTOTUNE)
train_ds = train_ds.batch(BATCH_SIZE)
train_ds = train_ds.prefetch(tf.data.AUTOTUNE)


def build_model():
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(NUM_FEATURES,)),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(64, activation="relu"),
            tf.keras.layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main():
    tf.keras.utils.set_random_seed(0)
    model = build_model()
    model.fit(train_ds, epochs=2, verbose=2)


if __name__ == "__main__":
    main()
