# Fixture for PD204 small-replica-batchnorm.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
PER_REPLICA = 8

strategy = tf.distribute.MirroredStrategy()
data = tf.data.Dataset.range(100).batch(PER_REPLICA * strategy.num_replicas_in_sync)
data = data.prefetch(AUTO)

with strategy.scope():
    frozen = keras.layers.BatchNormalization(trainable=False)
    model = keras.Sequential(
        [
            keras.layers.Dense(8),
            # ruleid[medium]: PD204
            keras.layers.BatchNormalization(),
            # ok: PD204
            frozen,
        ]
    )
