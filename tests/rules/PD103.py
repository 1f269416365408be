# Fixture for PD103 fixed-parallelism.
import tensorflow as tf
from tensorflow.data.experimental import AUTOTUNE as TUNED

AUTO = tf.data.AUTOTUNE
WORKERS = 4

files = tf.data.Dataset.list_files("/data/*.tfrecord")
# ruleid[medium]: PD103
ds = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=WORKERS)
# ruleid[medium]: PD103
ds = ds.map(tf.io.parse_tensor, num_parallel_calls=8)
# a map that only passes its input on does no work to spread over cores
# ok: PD103
ds = ds.map(lambda r: r, num_parallel_calls=8)
# ok: PD103
ds = ds.map(lambda r: r, num_parallel_calls=AUTO)
# ok: PD103
ds = ds.map(lambda r: r, num_parallel_calls=TUNED)
ds = ds.batch(32)
# a fixed prefetch buffer: no finding judged right on the first looks (0 of 96); the code does not
# show the step's time, so the lint leaves it to `check`, which measures it
# ok: PD103
ds = ds.prefetch(1)
# ok: PD103
other = ds.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)
# ruleid[medium]: PD103
reader = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord", "c.tfrecord"], num_parallel_reads=2)
# as many parallel reads as files: the fixed number is already the right one
# ok: PD103
pair = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], num_parallel_reads=2)
model = tf.keras.Sequential()
model.fit(ds, epochs=5)
model.fit(reader.batch(32).prefetch(AUTO), validation_data=pair.batch(32).prefetch(AUTO))


def make_pipeline(files, parallel_reads=16, buffer=8):
    # The defaults are not the values: callers elsewhere pass flags or a config.
    # ok: PD103
    records = tf.data.TFRecordDataset(files, num_parallel_reads=parallel_reads)
    # ok: PD103
    return records.batch(64).prefetch(buffer)


def build_from_config(config, files):
    # Called with literals here: these are the values.
    return make_reader(files, 4)


def make_reader(files, reads):
    # returned to callers elsewhere, files of unseen size: both assumed
    # ruleid[low]: PD103
    return tf.data.TFRecordDataset(files, num_parallel_reads=reads).batch(8).prefetch(AUTO)


def cached_parse(files):
    # The map's output is cached: its parallelism matters on the first epoch only.
    # ok: PD103
    return tf.data.TFRecordDataset(files).map(tf.io.parse_tensor, num_parallel_calls=4).cache()


def prefetch_depths(files):
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)
    # a thousand batches ahead: no step outruns it, AUTOTUNE would only save memory
    # ok: PD103
    deep = ds.batch(32).prefetch(1000)
    # two batches ahead, fixed: left to `check`, like every fixed prefetch buffer
    # ok: PD103
    shallow = ds.batch(32).prefetch(2)
    # a prefetch in the middle: the fix is to move it to the end (PD101 says so)
    # ok: PD103
    middle = ds.prefetch(1).map(tf.io.parse_tensor).batch(32)
    return deep, shallow, middle
