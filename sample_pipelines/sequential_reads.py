"""Image classifier trained from GZIP-compressed TFRecord shards.

At start-up the script exports a synthetic image set to eight TFRecord shards of
``tf.train.Example`` protos (raw uint8 pixels plus a label) in a temporary directory, the way a
data-preparation job would. Training then reads them back.

Pipeline: ``TFRecordDataset(files)`` -> ``map(parse_example)`` -> cache -> shuffle -> batch ->
prefetch.

Defect (PD104 sequential-reads): the reader is given all eight shards but no
``num_parallel_reads``, so it opens and decompresses them strictly one after another on a
single thread, and every record of shard 0 comes out before any record of shard 1. On remote
or network storage each shard's read latency is paid in series as well.
"""

import glob
import os
import tempfile

import keras
import numpy as np
import tensorflow as tf

NUM_IMAGES = 8192
NUM_SHARDS = 8
IMAGE_SIZE = 32
NUM_CLASSES = 4
BATCH_SIZE = 128

FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def synthesize_images(num_images, seed=0):
    """Blocky uint8 images with mild noise; the brighter quadrant is the label."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=num_images)
    coarse = rng.integers(0, 150, size=(num_images, 4, 4, 3), dtype=np.int16)
    for i, label in enumerate(labels):
        rows, cols = divmod(int(label), 2)
        coarse[i, rows * 2 : (rows + 1) * 2, cols * 2 : (cols + 1) * 2] += 90
    images = np.repeat(np.repeat(coarse, IMAGE_SIZE // 4, axis=1), IMAGE_SIZE // 4, axis=2)
    images += rng.integers(-3, 4, size=images.shape, dtype=np.int16)
    return np.clip(images, 0, 255).astype(np.uint8), labels


def write_shards(directory, images, labels, num_shards=NUM_SHARDS):
    """Write the examples round-robin into ``num_shards`` GZIP-compressed TFRecord files."""
    options = tf.io.TFRecordOptions(compression_type="GZIP")
    for shard in range(num_shards):
        path = os.path.join(directory, f"train-{shard:05d}-of-{num_shards:05d}.tfrecord.gz")
        with tf.io.TFRecordWriter(path, options) as writer:
            for image, label in zip(
                images[shard::num_shards], labels[shard::num_shards], strict=True
            ):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "image": tf.train.Feature(
                                bytes_list=tf.train.BytesList(value=[image.tobytes()])
                            ),
                            "label": tf.train.Feature(
                                int64_list=tf.train.Int64List(value=[int(label)])
                            ),
                        }
                    )
                )
                writer.write(example.SerializeToString())


def parse_example(record):
    example = tf.io.parse_single_example(record, FEATURES)
    image = tf.io.decode_raw(example["image"], tf.uint8)
    image = tf.reshape(image, (IMAGE_SIZE, IMAGE_SIZE, 3))
    return tf.cast(image, tf.float32) / 255.0, example["label"]


def make_dataset(files):
    # DEFECT: several shards, no num_parallel_reads: the files are read one after another.
    ds = tf.data.TFRecordDataset(files, compression_type="GZIP")
    ds = ds.map(parse_example, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache()  # 8192 parsed images of 32x32x3 float32: about 100 MB in memory
    ds = ds.shuffle(NUM_IMAGES, seed=0)
    ds = ds.batch(BATCH_SIZE)
    return ds.prefetch(tf.data.AUTOTUNE)


def build_model():
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
    return model


def main():
    keras.utils.set_random_seed(0)
    images, labels = synthesize_images(NUM_IMAGES)
    with tempfile.TemporaryDirectory(prefix="sequential_reads_") as data_dir:
        write_shards(data_dir, images, labels)
        files = sorted(glob.glob(os.path.join(data_dir, "train-*.tfrecord.gz")))
        train_ds = make_dataset(files)
        model = build_model()
        model.fit(train_ds, epochs=2, verbose=2)


if __name__ == "__main__":
    main()
