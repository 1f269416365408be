# Fixture for PD102 sequential-map.
import functools

import keras
import pandas as pd
import tensorflow as tf
import tensorflow_datasets as tfds
from tensorflow.data import Dataset

AUTOTUNE = tf.data.AUTOTUNE
model = keras.Sequential()


def load_image(path, size):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (size, size))


def decode(path):
    return load_image(path, 224)


def double(x):
    return x * 2


ds = Dataset.list_files("images/*.jpg")
# ruleid: PD102
ds = ds.map(decode, num_parallel_calls=AUTOTUNE)
# ruleid: PD102
ds = ds.map(functools.partial(load_image, size=128), num_parallel_calls=AUTOTUNE)
# ok: PD102
ds = ds.map(decode, num_parallel_calls=AUTOTUNE)
# ok: PD102
ds = ds.map(decode, AUTOTUNE)
ds = ds.prefetch(AUTOTUNE)
model.fit(ds, epochs=3)

# Not tf.data: pandas has .map too.
frame = pd.DataFrame({"a": [1, 2]})
# ok: PD102
frame["a"] = frame["a"].map(double)


class Pipeline:
    """A user class with a map method: not a dataset."""

    def map(self, fn):
        return self


# ok: PD102
Pipeline().map(double)


def chained(image_paths):
    return (
        tf.data.Dataset.from_tensor_slices(image_paths)
        # returned to callers elsewhere, paths of unseen number: both assumed
        # ruleid[low]: PD102
        .map(decode, num_parallel_calls=AUTOTUNE)
        .batch(2)
        .prefetch(AUTOTUNE)
    )


def from_hf(hf_dataset):
    # Hugging Face datasets: unknown object, stays silent.
    # ok: PD102
    return hf_dataset.map(double).shuffle(3)


def cheap_maps(features, labels):
    """Maps that only pick keys, cast or rescale cost too little to matter."""
    ds = tf.data.Dataset.from_tensor_slices(({"pixels": features, "id": labels}, labels))
    # ok: PD102
    ds = ds.map(lambda inputs, label: (inputs["pixels"], label))
    # ok: PD102
    ds = ds.map(lambda pixels, label: (tf.cast(pixels, tf.float32) / 255.0, label))
    # ok: PD102
    ds = ds.map(lambda pixels, label: {"image": pixels, "label": label})
    return ds.batch(32).prefetch(AUTOTUNE)


def cached_after(paths):
    # The map's output is cached: it runs once, on the first epoch.
    # ok: PD102
    ds = tf.data.Dataset.from_tensor_slices(paths).map(decode).cache()
    return ds.shuffle(1000).batch(32).prefetch(AUTOTUNE)


def inline_fit(paths):
    # Inline in the call that trains: judged too (how many files it reads is not seen).
    # ruleid[medium]: PD102
    model.fit(tf.data.Dataset.from_tensor_slices(paths).map(decode, num_parallel_calls=AUTOTUNE).batch(32), epochs=1)


def tfds_dict_dataset():
    ds = tfds.load("oxford_flowers102", split="train")
    # ruleid: PD102
    ds = ds.map(lambda example: (tf.image.resize(example["image"], (224, 224)), example["label"]), num_parallel_calls=AUTOTUNE)
    model.fit(ds.batch(32).prefetch(AUTOTUNE), epochs=1)


def zipped(paths, masks):
    images = tf.data.Dataset.from_tensor_slices(paths)
    labels = tf.data.Dataset.from_tensor_slices(masks)
    # ruleid[medium]: PD102
    pairs = tf.data.Dataset.zip((images.map(decode, num_parallel_calls=AUTOTUNE), labels))
    model.fit(pairs.batch(8).prefetch(AUTOTUNE), epochs=1)


def inspected_only(paths):
    # ok: PD102
    for image in tf.data.Dataset.from_tensor_slices(paths).map(decode).take(3):
        print(image.shape)


def split_label(row):
    # only rearranges the row's dict of features: nothing to run in parallel
    label = row.pop("fare")
    for unwanted in ["key"]:
        row.pop(unwanted)
    return row, label


def rename(record):
    renamed = {}
    for name in list(record.keys()):
        tensor = record[name]
        if tensor.dtype == tf.int64:
            tensor = tf.cast(tensor, tf.int32)
        renamed["input_" + name] = tensor
    return renamed


rows = tf.data.experimental.make_csv_dataset("taxi-*.csv", batch_size=32)
# ok: PD102
split = rows.map(split_label).map(rename).prefetch(tf.data.AUTOTUNE)


def split_and_decode(row):
    # the same split, but it decodes an image too: work worth spreading over cores
    label = row.pop("label")
    return tf.io.decode_jpeg(row["image"]), label


# ruleid: PD102
decoded = rows.map(split_and_decode, num_parallel_calls=AUTOTUNE).prefetch(tf.data.AUTOTUNE)
model.fit(decoded, epochs=3)


def python_work(text_files):
    # Python under the GIL gains little from parallel calls: PD108 names it, not PD102.
    ds = tf.data.TextLineDataset(tf.io.gfile.glob("corpus/part-*.txt"), num_parallel_reads=-1)
    # ok: PD102
    ds = ds.map(lambda line: tf.py_function(str.lower, [line], tf.string))
    model.fit(ds.batch(32).prefetch(AUTOTUNE), epochs=3)
