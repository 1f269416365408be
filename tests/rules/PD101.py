# Fixture for PD101 missing-prefetch: the dataset handed to training must end with prefetch.
import tensorflow as tf
import tensorflow.compat.v2 as tf2
from tensorflow import data as tfd
from tensorflow.data import Dataset

AUTO = tf.data.AUTOTUNE
x = [[1.0, 2.0]] * 8
y = [0, 1] * 4
model = tf.keras.Sequential()


def make_train():
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(8)
    # ruleid: PD101
    ds = ds.batch(4)
    return ds


def make_eval():
    # ok: PD101
    return tfd.Dataset.from_tensor_slices((x, y)).batch(4).prefetch(AUTO)


def make_prefetch_then_map():
    ds = Dataset.from_tensor_slices(x).batch(4).prefetch(tf.data.experimental.AUTOTUNE)
    # ruleid: PD101
    return ds.map(lambda t: t * 2, num_parallel_calls=AUTO)


def make_repeat_after_prefetch():
    # ok: PD101
    ds = tf2.data.Dataset.from_tensor_slices(x).batch(4).prefetch(AUTO).repeat()
    options = tf.data.Options()
    # ok: PD101
    return ds.with_options(options)


def base():
    # intermediate: extended by the caller, judged there
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8)


def train():
    # ok: PD101
    ds = base().batch(4).prefetch(AUTO)
    model.fit(ds, epochs=1)
    # ruleid: PD101
    model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(4), epochs=1)
    model.fit(make_train(), validation_data=make_eval())
    model.fit(make_prefetch_then_map())
    model.fit(make_repeat_after_prefetch())


files = tf.data.Dataset.list_files("/data/*.tfrecord")
# ok: PD101
records = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTO).prefetch(AUTO)
for batch in records.take(1):
    print(batch)


class Loader:
    def __init__(self, batch_size):
        self.batch_size = batch_size
        self.raw = tf.data.Dataset.range(100)

    def dataset(self):
        # ruleid: PD101
        return self.raw.batch(self.batch_size)


# An unbatched dataset kept in a variable (a file list, a peek for a plot) is not a training input.
# ok: PD101
file_names = tf.data.Dataset.list_files("/data/*.png")
# ok: PD101
preview = tf.data.Dataset.from_tensor_slices(x).take(3)
