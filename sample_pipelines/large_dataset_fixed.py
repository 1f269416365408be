"""Image classifier trained from JPEG files on disk, with more decoded data than RAM to spare.

At start-up the script writes a synthetic photo set as JPEG files into a temporary directory.
Training lists the files, reads and decodes each one, and resizes it.

Pipeline: ``list_files(shuffle=False)`` -> ``map(load_image)`` (read, JPEG decode, resize,
scale) -> shuffle -> batch -> prefetch.
``--epochs`` is an ``argparse`` option.

Fixed (PD106 missing-cache): the decoded images (about 150 MB, more than this job may keep in
memory) are cached to files on local disk, next to the data, so only the first epoch reads and
decodes the JPEGs.
"""

import argparse
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf
from keras import layers

NUM_IMAGES = 3000
SOURCE_SIZE = 128
IMAGE_SIZE = 64
NUM_CLASSES = 5
BATCH_SIZE = 64


def write_jpegs(directory, seed=0):
    """JPEG files named ``<index>_<label>.jpg``; the label is the dominant colour channel mix."""
    rng = np.random.default_rng(seed)
    for i in range(NUM_IMAGES):
        label = int(rng.integers(0, NUM_CLASSES))
        image = rng.integers(0, 100, size=(SOURCE_SIZE, SOURCE_SIZE, 3))
        image[..., label % 3] += 60 + 30 * (label // 3)
        jpeg = tf.io.encode_jpeg(np.clip(image, 0, 255).astype(np.uint8), quality=90)
        tf.io.write_file(os.path.join(directory, f"{i:05d}_{label}.jpg"), jpeg)


def load_image(path):
    label = tf.strings.to_number(
        tf.strings.split(tf.strings.split(path, "_")[-1], ".")[0], tf.int32
    )
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE))
    return image / 255.0, label


def make_dataset(image_dir, cache_dir):
    files = tf.data.Dataset.list_files(os.path.join(image_dir, "*.jpg"), shuffle=False)
    ds = files.map(load_image, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache(os.path.join(cache_dir, "decoded"))  # on local disk: too big for memory here
    ds = ds.shuffle(2048)
    ds = ds.batch(BATCH_SIZE)
    return ds.prefetch(tf.data.AUTOTUNE)


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
            layers.Conv2D(16, 3, strides=2, activation="relu"),
            layers.Conv2D(32, 3, strides=2, activation="relu"),
            layers.GlobalAveragePooling2D(),
            layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main(epochs):
    keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory(prefix="large_dataset_") as work_dir:
        image_dir, cache_dir = os.path.join(work_dir, "images"), os.path.join(work_dir, "cache")
        os.makedirs(image_dir)
        os.makedirs(cache_dir)
        write_jpegs(image_dir)
        model = build_model()
        model.fit(make_dataset(image_dir, cache_dir), epochs=epochs, verbose=2)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3, help="passes over the JPEG files")
    main(parser.parse_args().epochs)
