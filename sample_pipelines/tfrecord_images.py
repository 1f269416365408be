"""Image classifier trained from PNG images stored in TFRecord shards.

At start-up the script exports a synthetic image set as PNG-encoded ``tf.train.Example`` protos
in eight TFRecord shards, in a temporary directory, the way a data-preparation job would.
Training then reads the shards back through the usual input function.

Pipeline: ``list_files(shuffle=True)`` -> ``interleave(TFRecordDataset)`` ->
``map(parse_example)`` (parse the proto, decode the PNG, resize, scale) -> shuffle -> batch ->
prefetch.

Defect (PD106 missing-cache): the decoded images never change, yet every epoch parses, decodes
and resizes every record again. The decoded set is about 70 MB, so it belongs in a ``cache()``
right after the parse map. The file names are shuffled before the records are read, so a cache
after the map would replay the first epoch's file order; the fix reads the files in a fixed
order and keeps the record shuffle after the cache.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf
from tensorflow import keras

NUM_SHARDS = 8
IMAGES_PER_SHARD = 320
SOURCE_SIZE = 96  # stored PNGs are 96x96, the model sees 48x48
IMAGE_SIZE = 48
NUM_CLASSES = 4
BATCH_SIZE = 64
SHUFFLE_BUFFER = 1024
EPOCHS = 3

FEATURES = {
    "image/encoded": tf.io.FixedLenFeature([], tf.string),
    "image/class/label": tf.io.FixedLenFeature([], tf.int64),
}


def synthetic_images(count, seed):
    """Blocky RGB images with noise; the brighter quadrant is the label."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=count)
    coarse = rng.uniform(0, 150, size=(count, 8, 8, 3))
    for i, label in enumerate(labels):
        rows, cols = divmod(int(label), 2)
        coarse[i, rows * 4 : (rows + 1) * 4, cols * 4 : (cols + 1) * 4] += 90
    images = np.repeat(np.repeat(coarse, SOURCE_SIZE // 8, axis=1), SOURCE_SIZE // 8, axis=2)
    images += rng.normal(0, 8, size=images.shape)
    return np.clip(images, 0, 255).astype(np.uint8), labels


def export_shards(directory):
    """Write ``NUM_SHARDS`` files of PNG-encoded examples; returns their glob pattern."""
    for shard in range(NUM_SHARDS):
        images, labels = synthetic_images(IMAGES_PER_SHARD, seed=shard)
        path = os.path.join(directory, f"train-{shard:05d}-of-{NUM_SHARDS:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for image, label in zip(images, labels, strict=True):
                feature = {
                    "image/encoded": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[tf.io.encode_png(image).numpy()])
                    ),
                    "image/class/label": tf.train.Feature(
                        int64_list=tf.train.Int64List(value=[int(label)])
                    ),
                }
                example = tf.train.Example(features=tf.train.Features(feature=feature))
                writer.write(example.SerializeToString())
    return os.path.join(directory, "train-*.tfrecord")


def parse_example(serialized):
    example = tf.io.parse_single_example(serialized, FEATURES)
    image = tf.io.decode_png(example["image/encoded"], channels=3)
    image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE))
    return image / 255.0, example["image/class/label"]


def input_fn(file_pattern, batch_size=BATCH_SIZE):
    files = tf.data.Dataset.list_files(file_pattern, shuffle=True)
    ds = files.interleave(
        tf.data.TFRecordDataset, cycle_length=4, num_parallel_calls=tf.data.AUTOTUNE
    )
    # DEFECT: nothing caches the parsed, decoded and resized images.
    ds = ds.map(parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.shuffle(SHUFFLE_BUFFER)
    ds = ds.batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


def build_model(num_classes=NUM_CLASSES):
    """A small convolutional classifier, built with the functional API."""
    inputs = keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3))
    x = keras.layers.Conv2D(16, 3, strides=2, activation="relu")(inputs)
    x = keras.layers.Conv2D(32, 3, strides=2, activation="relu")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    outputs = keras.layers.Dense(num_classes)(x)
    model = keras.Model(inputs, outputs)
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main():
    keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory(prefix="tfrecord_images_") as data_dir:
        pattern = export_shards(data_dir)
        model = build_model()
        model.fit(input_fn(pattern), epochs=EPOCHS, verbose=2)


if __name__ == "__main__":
    main()
