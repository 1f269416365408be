# Fixture for PD103 fixed-parallelism.
import tensorflow as tf
from tensorflow.data.experimental import AUTOTUNE as TUNED

AUTO = tf.data.AUTOTUNE
WORKERS = 4

files = tf.data.Dataset.list_files("/data/*.tfrecord")
# ruleid: PD103
ds = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=WORKERS)
# ruleid: PD103
ds = ds.map(lambda r: r, num_parallel_calls=8)
# ok: PD103
ds = ds.map(lambda r: r, num_parallel_calls=AUTO)
# ok: PD103
ds = ds.map(lambda r: r, num_parallel_calls=TUNED)
ds = ds.batch(32)
# ruleid: PD103
ds = ds.prefetch(1)
# ok: PD103
other = ds.prefetch(buffer_size=tf.data.experimental.AUTOTUNE)
# ruleid: PD103
reader = tf.data.TFRecordDataset(["a.tfrecord", "b.tfrecord"], num_parallel_reads=2)
