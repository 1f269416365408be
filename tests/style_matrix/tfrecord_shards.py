"""The style matrix's job: examples written as TFRecord shards to a temporary folder, read back
with `interleave`."""

import os
import tempfile
import time

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip

SHARDS = 4
FEATURE_SPEC = {
    "features": tf.io.FixedLenFeature([16], tf.float32),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def write_shards(folder, features, labels):
    paths = []
    for shard in range(SHARDS):
        path = os.path.join(folder, f"train-{shard:05d}-of-{SHARDS:05d}.tfrecord")
        with tf.io.TFRecordWriter(path) as writer:
            for x, y in zip(features[shard::SHARDS], labels[shard::SHARDS], strict=True):
                example = tf.train.Example(
                    features=tf.train.Features(
                        feature={
                            "features": tf.train.Feature(float_list=tf.train.FloatList(value=x)),
                            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[y])),
                        }
                    )
                )
                writer.write(example.SerializeToString())
        paths.append(path)
    return paths


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def parse(record):
    example = tf.io.parse_single_example(record, FEATURE_SPEC)
    x = tf.py_function(slow_read, [example["features"]], tf.float32)
    x.set_shape((16,))
    return x, tf.cast(example["label"], tf.int32)


def make_dataset(paths, batch_size=32):
    files = tf.data.Dataset.from_tensor_slices(paths)
    records = files.interleave(
        tf.data.TFRecordDataset, cycle_length=SHARDS, num_parallel_calls=tf.data.AUTOTUNE
    )
    return records.map(parse).batch(batch_size)


def main():
    rng = np.random.default_rng(0)
    features = rng.normal(size=(2048, 16)).astype("float32")
    labels = rng.integers(0, 10, size=(2048,))
    with tempfile.TemporaryDirectory(prefix="style-matrix-") as folder:
        ds = make_dataset(write_shards(folder, features, labels))
        model = keras.Sequential(
            [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
        )
        model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        model.fit(ds, epochs=3)


if __name__ == "__main__":
    main()
