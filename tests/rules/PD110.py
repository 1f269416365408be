# Fixture for PD110 augmentation-on-host.
import keras
import tensorflow as tf
from keras import layers

AUTO = tf.data.AUTOTUNE
augmenter = keras.Sequential([layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)])


def jitter(image, label):
    image = tf.image.random_brightness(image, 0.2)
    return image, label


base = tf.data.Dataset.from_tensor_slices((tf.zeros((8, 32, 32, 3)), tf.zeros(8)))
# ruleid: PD110
a = base.map(jitter, num_parallel_calls=AUTO)
# ruleid: PD110
b = base.map(lambda x, y: (augmenter(x, training=True), y), num_parallel_calls=AUTO)
# ok: PD110
c = base.map(lambda x, y: (tf.image.flip_left_right(x), y), num_parallel_calls=AUTO)

# In the model instead: no finding.
model = keras.Sequential([keras.Input((32, 32, 3)), layers.RandomFlip("horizontal")])
