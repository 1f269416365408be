# Fixture for PD106 missing-cache (static: info).
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
model = keras.Sequential()


def decode(path, label):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (64, 64)), label


def load_paths():
    return tf.data.Dataset.from_tensor_slices((["a.jpg", "b.jpg"], [0, 1]))


def uncached():
    ds = load_paths()
    # two images: a toy, nothing worth caching
    # ok: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO)
    model.fit(ds.batch(2).prefetch(AUTO), epochs=20)


def uncached_returned():
    ds = load_paths()
    # ok: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO)
    return ds.batch(2).prefetch(AUTO)


def one_epoch():
    # read once: a cache saves nothing
    # ok: PD106
    ds = load_paths().map(decode, num_parallel_calls=AUTO)
    model.fit(ds.batch(2).prefetch(AUTO), epochs=1)


def cached():
    ds = load_paths()
    # ok: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO).cache()
    return ds.shuffle(100).batch(2).prefetch(AUTO)


def not_decoding():
    # ok: PD106
    return load_paths().map(lambda p, y: (p, y), num_parallel_calls=AUTO).batch(2).prefetch(AUTO)


# a folder's size is not in the code: that it is more than a toy, and that its decoded images
# fit in RAM, are both assumed
# ruleid[low]: PD106
images = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64))
model.fit(images, epochs=10)
# ok: PD106
cached_images = tf.keras.utils.image_dataset_from_directory("photos/").cache().prefetch(AUTO)


def cached_later_in_the_chain():
    # The cache comes a few reassignments later: it still counts.
    # ok: PD106
    ds = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64), shuffle=False)
    ds = ds.map(lambda x, y: (x / 255.0, y), num_parallel_calls=AUTO)
    ds = ds.cache()
    model.fit(ds.prefetch(AUTO), epochs=3)


def decode_in_memory(png_bytes, labels):
    # Encoded images already in memory: a bounded data set the code shows, though not its size.
    ds = tf.data.Dataset.from_tensor_slices((png_bytes, labels))
    # ruleid[medium]: PD106
    ds = ds.map(lambda png, y: (tf.io.decode_png(png), y), num_parallel_calls=AUTO)
    model.fit(ds.batch(32).prefetch(AUTO), epochs=3)


def streaming_corpus(pattern):
    # Hundreds of gigabytes of records, repeated before the parse: its size is not visible,
    # and the measured check sizes it.
    files = tf.data.Dataset.list_files(pattern)
    ds = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTO).repeat()
    # ok: PD106
    ds = ds.map(tf.io.parse_tensor, num_parallel_calls=AUTO)
    model.fit(ds.batch(256).prefetch(AUTO), steps_per_epoch=1000)


def file_list_of_unseen_size(paths, labels):
    # Paths from elsewhere, each read from disk: how much that is, the code does not say.
    ds = tf.data.Dataset.from_tensor_slices((paths, labels))
    # ok: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO)
    model.fit(ds.batch(32).prefetch(AUTO), epochs=3)


def evaluation_only():
    # One pass over the test set: nothing to save on later epochs.
    # ok: PD106
    test = keras.utils.image_dataset_from_directory("photos/test", image_size=(64, 64))
    model.evaluate(test)


def split_both():
    # `subset="both"` gives the training and the validation set at once, as the Keras
    # image-classification tutorial writes it: both decode every image every epoch
    # ruleid[low]: PD106
    train, val = keras.utils.image_dataset_from_directory(
        "photos/", validation_split=0.2, subset="both", seed=1, image_size=(64, 64)
    )
    keras.Sequential().fit(train, validation_data=val, epochs=10)
