# Fixture for PD106 missing-cache (static: info).
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE


def decode(path, label):
    image = tf.io.decode_jpeg(tf.io.read_file(path), channels=3)
    return tf.image.resize(image, (64, 64)), label


def load_paths():
    return tf.data.Dataset.from_tensor_slices((["a.jpg", "b.jpg"], [0, 1]))


def uncached():
    ds = load_paths()
    # ruleid: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO)
    return ds.batch(2).prefetch(AUTO)


def cached():
    ds = load_paths()
    # ok: PD106
    ds = ds.map(decode, num_parallel_calls=AUTO).cache()
    return ds.shuffle(100).batch(2).prefetch(AUTO)


def not_decoding():
    # ok: PD106
    return load_paths().map(lambda p, y: (p, y), num_parallel_calls=AUTO).batch(2).prefetch(AUTO)


# ruleid: PD106
images = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64))
# ok: PD106
cached_images = tf.keras.utils.image_dataset_from_directory("photos/").cache().prefetch(AUTO)
