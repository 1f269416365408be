# Fixture for PD111 shuffle-after-batch.
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
