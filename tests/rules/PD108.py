# Fixture for PD108 python-in-pipeline.
import time

import numpy as np
import tensorflow as tf

AUTO = tf.data.AUTOTUNE


def np_normalize(x):
    return (x / np.max(x)).astype(np.float32)


def tf_normalize(x):
    return tf.numpy_function(np_normalize, [x], tf.float32)


def gen():
    yield from range(10)


(images, _), _ = tf.keras.datasets.mnist.load_data()
base = tf.data.Dataset.from_tensor_slices(images)
# Python the code calls may have no TensorFlow equivalent: that is assumed, never seen.
# ruleid[medium]: PD108
a = base.map(tf_normalize, num_parallel_calls=AUTO)
# ruleid[medium]: PD108
b = base.map(lambda x: tf.py_function(np_normalize, [x], tf.float32), num_parallel_calls=AUTO)
# what a generator yields is not seen either
# ruleid[medium]: PD108
c = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec((), tf.int64))
# ok: PD108
d = base.map(lambda x: x / tf.reduce_max(x), num_parallel_calls=AUTO)


# A lesson's simulated I/O: the Python only sleeps, and sleeping releases the GIL.
def slow_read(x):
    time.sleep(0.01)
    return x


def slow_samples(num_samples=3):
    time.sleep(0.03)
    for sample_idx in range(num_samples):
        time.sleep(0.015)
        yield (sample_idx,)


# ok: PD108
e = base.map(lambda x: tf.py_function(slow_read, [x], tf.float32), num_parallel_calls=AUTO)
# ok: PD108
f = tf.data.Dataset.from_generator(slow_samples, output_signature=(tf.TensorSpec((), tf.int64),))


def slow_and_busy(x):
    time.sleep(0.01)
    return np.sort(x)


# ruleid[medium]: PD108
g = base.map(lambda x: tf.py_function(slow_and_busy, [x], tf.float32), num_parallel_calls=AUTO)
model = tf.keras.Sequential()
model.fit(a.batch(32), epochs=3)
model.fit(b.batch(32), epochs=3)
model.fit(c.batch(32), epochs=3)
model.fit(g.batch(32), epochs=3)


# A Python parser cached right after: it runs on the first epoch only.
# ok: PD108
h = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec((), tf.int64)).cache()
