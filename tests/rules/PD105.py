# Fixture for PD105 unsharded-files.
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
strategy = tf.distribute.MultiWorkerMirroredStrategy()  # several workers to split the files
FEATURES = {"x": tf.io.FixedLenFeature([], tf.string)}


def parse(record):
    return tf.io.parse_single_example(record, FEATURES)


# ruleid[medium]: PD105
one = tf.data.TFRecordDataset("/data/train.tfrecord")
# ok: PD105
many = tf.data.TFRecordDataset(["/data/a.tfrecord", "/data/b.tfrecord"], num_parallel_reads=AUTO)

files = tf.data.Dataset.list_files("/data/*.tfrecord", shuffle=False)
# ok: PD105
files = files.shard(2, 0)
records = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTO)
parsed = records.map(parse, num_parallel_calls=AUTO)
# ruleid[medium]: PD105
late = parsed.shard(num_shards=2, index=1)
# Read, not even parsed, before sharding: still every worker reads every file.
# ruleid[medium]: PD105
raw_late = tf.data.TFRecordDataset(["/data/a.rec", "/data/b.rec"], num_parallel_reads=AUTO).shard(2, 0)
