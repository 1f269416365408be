# Fixture for PD202 batch-not-scaled.
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
BATCH = 64
PER_REPLICA = 32

strategy = tf.distribute.MirroredStrategy()
global_batch = PER_REPLICA * strategy.num_replicas_in_sync
base = tf.data.Dataset.range(1000)

# ruleid: PD202
fixed = base.batch(BATCH).prefetch(AUTO)
# ok: PD202
scaled = base.batch(global_batch).prefetch(AUTO)
# ok: PD202
inline = base.batch(16 * strategy.num_replicas_in_sync).prefetch(AUTO)


def make(batch_size):
    # ruleid: PD202
    return base.batch(batch_size, drop_remainder=True).prefetch(AUTO)


train = make(128)
