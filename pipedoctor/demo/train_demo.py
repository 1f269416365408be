"""pipedoctor's demo: a small image classifier whose input pipeline is deliberately slow.

This is the training script pipedoctor ships to show what it finds. It is meant to be
input-bound on purpose: the model is tiny and cheap, while the ``tf.data`` pipeline feeding it
makes three classic mistakes, so the model spends most of each step waiting for data.

The data are generated in memory at start-up (no downloads, no files): 128x128 RGB images,
PNG-encoded, each stored with its class name as a string. The pipeline then is

    (PNG bytes, class name) -> shuffle -> map(decode_and_resize) -> batch -> fit

and its defects are

* PD102 sequential-map: ``map(decode_and_resize)`` has no ``num_parallel_calls``, so the PNGs
  are decoded one at a time on one core. (The class-name lookup goes through a hash table, a
  stateful op, which also keeps tf.data from parallelising the map on its own.)
* PD106 missing-cache: the decoded 32x32 images never change, yet every epoch decodes and
  resizes all the PNGs again; there is no ``cache()`` after the decode map.
* PD101 missing-prefetch: the dataset handed to ``fit`` does not end with
  ``prefetch(tf.data.AUTOTUNE)``.

The healthy version would read ``map(decode_and_resize, num_parallel_calls=tf.data.AUTOTUNE)``,
then ``cache()``, then shuffle and batch, and end with ``prefetch(tf.data.AUTOTUNE)``.
Run it directly with ``python train_demo.py``; it trains for a few seconds on the CPU.
"""

import numpy as np
import tensorflow as tf
from tensorflow import keras

CLASS_NAMES = ("top_left", "top_right", "bottom_left", "bottom_right")
NUM_IMAGES = 1024
SOURCE_SIZE = 128  # stored PNGs are 128x128, the model sees 32x32
IMAGE_SIZE = 32
BATCH_SIZE = 64
EPOCHS = 3

CLASS_TABLE = tf.lookup.StaticHashTable(
    tf.lookup.KeyValueTensorInitializer(
        tf.constant(CLASS_NAMES), tf.range(len(CLASS_NAMES), dtype=tf.int64)
    ),
    default_value=-1,
)


def synthesize_dataset(num_images, seed=0):
    """PNG-encoded noisy images; the brighter quadrant is the class, stored by name."""
    rng = np.random.default_rng(seed)
    classes = rng.integers(0, len(CLASS_NAMES), size=num_images)
    coarse = rng.uniform(0, 150, size=(num_images, 8, 8, 3))
    for i, label in enumerate(classes):
        rows, cols = divmod(int(label), 2)
        coarse[i, rows * 4 : (rows + 1) * 4, cols * 4 : (cols + 1) * 4] += 90
    cell = SOURCE_SIZE // 8
    images = np.repeat(np.repeat(coarse, cell, axis=1), cell, axis=2)
    images += rng.normal(0, 10, size=images.shape)
    images = np.clip(images, 0, 255).astype(np.uint8)
    pngs = [tf.io.encode_png(image).numpy() for image in images]
    names = [CLASS_NAMES[label] for label in classes]
    return pngs, names


def decode_and_resize(png, class_name):
    image = tf.io.decode_png(png, channels=3)
    image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE)) / 255.0
    return image, CLASS_TABLE.lookup(class_name)


def make_dataset(pngs, names):
    ds = tf.data.Dataset.from_tensor_slices((pngs, names))
    ds = ds.shuffle(len(pngs), seed=0)
    ds = ds.map(decode_and_resize)  # sequential, and never cached: decoded again every epoch
    ds = ds.batch(BATCH_SIZE)
    return ds  # no prefetch at the end


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(len(CLASS_NAMES)),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main():
    keras.utils.set_random_seed(0)
    pngs, names = synthesize_dataset(NUM_IMAGES)
    train_ds = make_dataset(pngs, names)
    model = build_model()
    model.fit(train_ds, epochs=EPOCHS, verbose=2)


if __name__ == "__main__":
    main()
