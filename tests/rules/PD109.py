# Fixture for PD109 unvectorized-map.
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
MEAN = 0.5


def normalize(image, label):
    image = tf.cast(image, tf.float32) / 255.0
    return image - MEAN, label


def decode(image, label):
    return tf.io.decode_png(image), label


base = tf.data.Dataset.from_tensor_slices(tf.keras.datasets.cifar10.load_data()[0])
# ruleid[medium]: PD109
a = base.map(normalize, num_parallel_calls=AUTO).batch(4).prefetch(AUTO)
# ok: PD109
b = base.batch(4).map(normalize, num_parallel_calls=AUTO).prefetch(AUTO)
# ok: PD109
c = base.map(normalize, num_parallel_calls=AUTO).cache().batch(4).prefetch(AUTO)
# ok: PD109
d = base.map(decode, num_parallel_calls=AUTO).batch(4).prefetch(AUTO)
# ruleid[medium]: PD109
e = base.map(lambda x, y: (tf.clip_by_value(x, 0, 1), y), num_parallel_calls=AUTO).batch(4)
# Cached after batching: the map runs once, on the first epoch.
# ok: PD109
f = base.map(normalize, num_parallel_calls=AUTO).batch(4).cache().prefetch(AUTO)
model = tf.keras.Sequential()
model.fit(a, epochs=5)
model.fit(e, epochs=5)
