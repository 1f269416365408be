# Fixture for PD107 cache-after-random.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
flip = keras.layers.RandomFlip("horizontal")
model = keras.Sequential()


def augment(image, label):
    image = tf.image.random_flip_left_right(image)
    return image, label


def fixed_crop(image, label):
    return tf.image.stateless_random_crop(image, (24, 24, 3), seed=(1, 2)), label


base = tf.data.Dataset.from_tensor_slices((tf.zeros((8, 32, 32, 3)), tf.zeros(8)))

# ruleid: PD107
a = base.shuffle(8).cache().batch(4).prefetch(AUTO)
# ruleid: PD107
b = base.map(augment, num_parallel_calls=AUTO).cache().batch(4).prefetch(AUTO)
# ruleid: PD107
c = base.map(lambda x, y: (flip(x), y), num_parallel_calls=AUTO).cache().prefetch(AUTO)
# ok: PD107
d = base.cache().shuffle(8).map(augment, num_parallel_calls=AUTO).batch(4).prefetch(AUTO)
# ok: PD107
e = base.map(fixed_crop, num_parallel_calls=AUTO).cache().batch(4).prefetch(AUTO)
# The same order every epoch anyway: caching it freezes nothing.
# ok: PD107
f = base.shuffle(8, reshuffle_each_iteration=False).cache().batch(4).prefetch(AUTO)
# A random map in one zip input is not upstream of a cache in the other.
randomized = base.map(augment, num_parallel_calls=AUTO)
# ok: PD107
g = tf.data.Dataset.zip((randomized, base.cache())).batch(4).prefetch(AUTO)
# image_dataset_from_directory shuffles unless told not to.
# ruleid: PD107
h = keras.utils.image_dataset_from_directory("photos/").cache().prefetch(AUTO)
# ok: PD107
i = keras.utils.image_dataset_from_directory("photos/", shuffle=False).cache().prefetch(AUTO)
# An endless repeat before the cache: it never completes a pass, so nothing is replayed.
# ok: PD107
j = base.shuffle(8).repeat().cache().batch(4).prefetch(AUTO)
model.fit(a, epochs=5)
model.fit(b, epochs=5)
model.fit(j, steps_per_epoch=2, epochs=5)
model.fit(c.batch(4), epochs=5)
model.fit(h, epochs=5)


def validation_set(features, labels):
    # A validation set in a fixed order is fine: caching it freezes nothing that matters.
    # ok: PD107
    val = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(100).cache().batch(32)
    model.fit(a, validation_data=val, epochs=2)


def input_fn(use_fake_data, files):
    ds = tf.data.TFRecordDataset(files).shuffle(1024).repeat()
    if use_fake_data:
        # One batch cached on purpose, to take input out of a benchmark.
        # ok: PD107
        ds = ds.take(1).cache().repeat()
    return ds.batch(32).prefetch(AUTO)


def factory_shuffles():
    train = keras.utils.image_dataset_from_directory("photos/train", image_size=(64, 64))
    # ruleid: PD107
    model.fit(train.cache().prefetch(AUTO), epochs=5)


def csv_rows():
    # make_csv_dataset shuffles by default: a cache after it freezes the first epoch's order.
    rows = tf.data.experimental.make_csv_dataset(
        "train.csv", batch_size=32, label_name="y", num_epochs=1
    )
    # ruleid: PD107
    model.fit(rows.cache(), epochs=5)


def csv_rows_forever():
    # By default it also repeats forever: the cache never completes an epoch to replay.
    rows = tf.data.experimental.make_csv_dataset("train.csv", batch_size=32, label_name="y")
    # ok: PD107
    model.fit(rows.cache(), epochs=5, steps_per_epoch=100)
