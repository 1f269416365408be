"""CIFAR-style image classifier written as a flat script: data, pipeline and training at top level.

Pipeline: uint8 images and labels loaded by ``load_images()`` -> shuffle -> batch; the model
casts, scales and standardises each batch itself (``Rescaling`` and ``Normalization`` layers).
Training runs straight away when the file is executed.

Defect (PD101 missing-prefetch): the dataset handed to ``fit`` does not end with
``prefetch(tf.data.AUTOTUNE)``. Nothing then guarantees that the next batch is prepared while
the model is busy with the current one; how far the pipeline runs ahead is left to whatever
buffering its last transformation happens to have, and ``batch`` has none. (Recent tf.data
versions inject a prefetch automatically when the last transformation is synchronous, but that
is an optimisation the code should not rely on.)
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
# DEFECT: no .prefetch(tf.data.AUTOTUNE) at the end of the pipeline.

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
