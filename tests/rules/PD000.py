# Fixture for PD000 not-analysed: this file does not parse.
import tensorflow as tf

# ruleid: PD000
ds = tf.data.Dataset.range(10).map(lambda x: x +)
