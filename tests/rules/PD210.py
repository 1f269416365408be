# Fixture for PD210 autoshard-data.
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
files = tf.data.Dataset.list_files("/data/train-*.tfrecord")
records = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=tf.data.AUTOTUNE)

by_record = tf.data.Options()
# ruleid: PD210
by_record.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
by_file = tf.data.Options()
# ok: PD210
by_file.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
everything = tf.data.Options()
# ruleid: PD210
everything.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF

train_a = records.batch(64).with_options(by_record).prefetch(tf.data.AUTOTUNE)
train_b = records.batch(64).with_options(by_file).prefetch(tf.data.AUTOTUNE)
train_c = records.batch(64).with_options(everything).prefetch(tf.data.AUTOTUNE)


def shown_not_used():
    # Options built to show the API, never given to a dataset that trains.
    unused = tf.data.Options()
    # ok: PD210
    unused.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    return unused


def in_memory_arrays(x, y):
    # data in memory has no files to split: only DATA sharding can give each worker its part
    options = tf.data.Options()
    # ok: PD210
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    rows = tf.data.Dataset.from_tensor_slices((x, y)).with_options(options).batch(64)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.fit(rows, epochs=5)


def a_tfds_split():
    import tensorflow_datasets as tfds

    # how many files a TFDS split is stored in is not in the code (MNIST's train split is one)
    options = tf.data.Options()
    # ruleid[medium]: PD210
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    images = tfds.load("imagenet2012", split="train").with_options(options).batch(64)
    model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
    model.fit(images, epochs=5)


def sharded_by_hand(task_index, workers):
    # each worker keeps its own share of the file names itself: nothing is duplicated
    own = tf.data.Options()
    # ok: PD210
    own.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    names = tf.data.Dataset.list_files("/data/train-*.tfrecord", shuffle=False)
    mine = names.shard(workers, task_index).interleave(tf.data.TFRecordDataset)
    return mine.batch(64).with_options(own).prefetch(tf.data.AUTOTUNE)


def this_workers_partition(partition):
    # arrays handed in by the caller may be this worker's partition alone (Horovod-style)
    part = tf.data.Options()
    # ruleid[medium]: PD210
    part.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    data = tf.data.Dataset.from_tensor_slices(partition)
    return data.batch(64).with_options(part).prefetch(tf.data.AUTOTUNE)
