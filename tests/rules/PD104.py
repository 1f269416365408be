# Fixture for PD104 sequential-reads.
import glob
import os

import tensorflow as tf

AUTO = tf.data.AUTOTUNE
shards = glob.glob("/data/train-*.tfrecord")

# ruleid[medium]: PD104
a = tf.data.TFRecordDataset(shards)
# ruleid[medium]: PD104
b = tf.data.TextLineDataset(["a.txt", "b.txt"])
# ok: PD104
c = tf.data.TFRecordDataset(shards, num_parallel_reads=AUTO)
files = tf.data.Dataset.list_files("/data/*.tfrecord")
# ruleid[medium]: PD104
d = files.interleave(tf.data.TFRecordDataset, cycle_length=4)
# ok: PD104
e = files.interleave(lambda f: tf.data.TFRecordDataset(f), num_parallel_calls=AUTO)
# ruleid[medium]: PD104
f = tf.data.Dataset.list_files("/data/*.tfrecord").flat_map(tf.data.TFRecordDataset)
# ok: PD104
g = tf.data.Dataset.range(3).flat_map(lambda i: tf.data.Dataset.range(i))
model = tf.keras.Sequential()
model.fit(a.batch(32).prefetch(AUTO), epochs=3)
model.fit(b.batch(32).prefetch(AUTO), epochs=3)
model.fit(d.batch(32).prefetch(AUTO), epochs=3)
model.fit(f.batch(32).prefetch(AUTO), epochs=3)


def read(paths):
    # a variable: several files as far as the reader knows, but only its plural name says so,
    # and the dataset is returned to callers elsewhere: both assumed
    # ruleid[low]: PD104
    return tf.data.FixedLengthRecordDataset(paths, record_bytes=16)


def read_one(filename):
    # one file per call, as `interleave` hands them out: nothing to read in parallel here
    # ok: PD104
    return tf.data.TFRecordDataset(filename)


def read_split(data_dir, split):
    # one file, its path built from strings: the reader does not glob
    # ok: PD104
    lines = tf.data.TextLineDataset(data_dir + "/" + split + ".txt")
    # ok: PD104
    records = tf.data.TFRecordDataset(f"{data_dir}/{split}.tfrecord")
    # ok: PD104
    csv = tf.data.TextLineDataset(os.path.join(data_dir, "taxi-train.csv"))
    # a pattern with a wildcard lists several files; returned to callers elsewhere, so
    # whether it trains is assumed
    # ruleid[low]: PD104
    shards = tf.data.TFRecordDataset(tf.io.gfile.glob(data_dir + "/train-*"))
    return lines, records, csv, shards


def _gzip_reader(filenames):
    # the factory below calls its reader with one file name at a time
    # ok: PD104
    return tf.data.TFRecordDataset(filenames, compression_type="GZIP")


def features_factory(feature_spec):
    # `reader_num_threads` defaults to 1: the shards are read one after another
    # ruleid[medium]: PD104
    train = tf.data.experimental.make_batched_features_dataset("gs://t-*", 64, feature_spec)
    # ok: PD104
    evaluation = tf.data.experimental.make_batched_features_dataset(
        "gs://bucket/eval-*.gz", 64, feature_spec, reader=_gzip_reader, reader_num_threads=AUTO
    )
    model.fit(train, validation_data=evaluation, epochs=3, steps_per_epoch=500)
