"""CIFAR-style image classifier written as a flat script: data, pipeline and training at top level.

Pipeline: uint8 images and labels in memory -> shuffle -> batch -> ``map(normalize)`` (cast,
scale, per-channel standardisation, once per batch and in parallel). Training runs straight
away when the file is executed.

Defect (PD101 missing-prefetch): the dataset handed to ``fit`` does not end with
``prefetch(tf.data.AUTOTUNE)``. Nothing then guarantees that the next batch is prepared while
the model is busy with the current one; how far the pipeline runs ahead is left to whatever
buffering its last transformation happens to have. (Recent tf.data versions inject a prefetch
automatically when the last transformation is synchronous, but that is an optimisation the
code should not rely on.)
"""

import numpy as np
import tensorflow as tf
from tensorflow import keras

NUM_IMAGES = 16_384
IMAGE_SIZE = 32
NUM_CLASSES = 10
BATCH_SIZE = 128
CHANNEL_MEAN = tf.constant([0.49, 0.48, 0.45])
CHANNEL_STD = tf.constant([0.25, 0.24, 0.26])

keras.utils.set_random_seed(0)

# Synthetic CIFAR-like data: random uint8 images with a label-dependent colour cast.
rng = np.random.default_rng(0)
labels = rng.integers(0, NUM_CLASSES, size=NUM_IMAGES).astype(np.int32)
palette = rng.uniform(40, 200, size=(NUM_CLASSES, 1, 1, 3))
noise = rng.normal(0, 40, size=(NUM_IMAGES, IMAGE_SIZE, IMAGE_SIZE, 3))
images = np.clip(palette[labels] + noise, 0, 255).astype(np.uint8)


def normalize(batch_images, batch_labels):
    batch_images = tf.cast(batch_images, tf.float32) / 255.0
    return (batch_images - CHANNEL_MEAN) / CHANNEL_STD, batch_labels


train_ds = tf.data.Dataset.from_tensor_slices((images, labels))
train_ds = train_ds.shuffle(NUM_IMAGES, seed=0)
train_ds = train_ds.batch(BATCH_SIZE)
train_ds = train_ds.map(normalize, num_parallel_calls=tf.data.AUTOTUNE)
# DEFECT: no .prefetch(tf.data.AUTOTUNE) at the end of the pipeline.

model = keras.Sequential(
    [
        keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
        keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
        keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
        keras.layers.Flatten(),
        keras.layers.Dense(NUM_CLASSES),
    ]
)
model.compile(
    optimizer="adam",
    loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(train_ds, epochs=2, verbose=2)
