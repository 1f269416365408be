# Fixture for PD107 cache-after-random.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
flip = keras.layers.RandomFlip("horizontal")


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
