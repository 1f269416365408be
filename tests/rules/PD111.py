# Fixture for PD111 shuffle-after-batch.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
base = tf.data.Dataset.range(100)
# ruleid: PD111
a = base.batch(10).shuffle(10)
# ruleid: PD111
b = base.shuffle(buffer_size=1).batch(10)
# ok: PD111
c = base.shuffle(100).batch(10).prefetch(AUTO)
# ok: PD111
d = base.batch(10).unbatch().shuffle(100)
# Cutting a stream into sequences, then shuffling and batching those: not a shuffle of batches.
chunks = base.batch(101, drop_remainder=True)
# ok: PD111
e = chunks.shuffle(1000).batch(64).prefetch(AUTO)
# Keras directory factories batch on their own, after shuffling their files each epoch: a
# shuffle after them is redundant, not harmful; told not to shuffle, their batches are fixed.
photos = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64))
# ok: PD111
reshuffled_batches = photos.shuffle(100)
# Cached, the factory's first batches are replayed every epoch: the shuffle reorders them only.
# ruleid: PD111
frozen_batches = photos.cache().shuffle(100)
fixed = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64), shuffle=False)
# ruleid: PD111
shuffled_batches = fixed.shuffle(100)
# ok: PD111
unbatched = keras.utils.image_dataset_from_directory("photos/", batch_size=None).shuffle(100)
# make_csv_dataset shuffles its rows, then batches, on its own too.
rows = tf.data.experimental.make_csv_dataset("train.csv", batch_size=32, label_name="y")
# ok: PD111
shuffled_rows = rows.shuffle(1000)
ordered = tf.data.experimental.make_csv_dataset("train.csv", 32, label_name="y", shuffle=False)
# ruleid: PD111
shuffled_ordered = ordered.shuffle(1000)
# Batches of one element: shuffling them shuffles the examples.
# ok: PD111
singles = base.batch(1).shuffle(100)
model = keras.Sequential()
model.fit(a, epochs=5)
model.fit(b, epochs=5)
model.fit(frozen_batches, epochs=5)
model.fit(shuffled_batches, epochs=5)
model.fit(shuffled_ordered, epochs=5)
# Examples reshuffled before the batch make new batches every epoch: a shuffle after is harmless.
reshuffled = tf.data.TFRecordDataset(tf.io.gfile.glob("data/train-*.tfrecord"), num_parallel_reads=-1)
# ok: PD111
twice = reshuffled.shuffle(10_000).batch(32).shuffle(10)
# ok: PD111
listed = tf.data.Dataset.list_files("images/*.jpg").map(tf.io.read_file).batch(32).shuffle(10)
model.fit(twice, epochs=5)
model.fit(listed, epochs=5)
