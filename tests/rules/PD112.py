# Fixture for PD112 discarded-transformation.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
model = keras.Sequential()


def train(files, batch_size, device):
    dataset = tf.data.TFRecordDataset(files, num_parallel_reads=AUTO)
    dataset = dataset.map(tf.io.parse_tensor, num_parallel_calls=AUTO)
    # ruleid[medium]: PD112
    dataset.shuffle(10_000)
    dataset = dataset.batch(batch_size)
    # ruleid[medium]: PD112
    dataset.apply(tf.data.experimental.prefetch_to_device(device))
    # ok: PD112
    dataset = dataset.prefetch(AUTO)
    model.fit(dataset, epochs=2)


def evaluate(files):
    ds = tf.data.TFRecordDataset(files)
    # Discarded on a dataset only evaluated once: no training is slower or wrong for it.
    # ok: PD112
    ds.batch(64)
    model.evaluate(ds)


def traced(ds):
    # A map as a statement still traces its function (tests rely on it): not flagged.
    # ok: PD112
    ds.map(tf.io.parse_tensor)


class Chain:
    """A user class whose shuffle changes the object in place: not a dataset."""

    def shuffle(self, n):
        return self


# ok: PD112
Chain().shuffle(10)
