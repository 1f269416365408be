"""CIFAR-style image classifier as a flat script (fixed twin of missing_prefetch.py).

Pipeline: uint8 images and labels loaded by ``load_images()`` -> shuffle -> batch ->
prefetch; the model casts, scales and standardises each batch itself (``Rescaling`` and
``Normalization`` layers). Training runs straight away when the file is executed.

Fixed (PD101 missing-prefetch): the pipeline ends with ``prefetch(tf.data.AUTOTUNE)``, so
tf.data prepares the next batches in the background while the model trains on the current
one, with a buffer size tuned at run time.
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


def load_images():
    """The training images and labels (generated here: CIFAR-like colour classes plus noise)."""
    rng = np.random.default_rng(0)
    labels = rng.integers(0, NUM_CLASSES, size=NUM_IMAGES).astype(np.int32)
    palette = rng.uniform(40, 200, size=(NUM_CLASSES, 1, 1, 3))
    noise = rng.normal(0, 40, size=(NUM_IMAGES, IMAGE_SIZE, IMAGE_SIZE, 3))
    return np.clip(palette[labels] + noise, 0, 255).astype(np.uint8), labels


images, labels = load_images()

train_ds = tf.data.Dataset.from_tensor_slices((images, labels))
train_ds = train_ds.shuffle(NUM_IMAGES, seed=0)
train_ds = train_ds.batch(BATCH_SIZE)
train_ds = train_ds.prefetch(tf.data.AUTOTUNE)  # overlap input preparation with training

model = keras.Sequential(
    [
        keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
        keras.layers.Rescaling(1.0 / 255),
        keras.layers.Normalization(mean=CHANNEL_MEAN, variance=tf.square(CHANNEL_STD)),
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
