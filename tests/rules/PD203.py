# Fixture for PD203 lr-not-scaled.
import keras
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
BASE_LR = 1e-3

with strategy.scope():
    # ruleid: PD203
    plain = keras.optimizers.Adam(learning_rate=BASE_LR)
    # ruleid: PD203
    default = tf.keras.optimizers.SGD()
    # ok: PD203
    scaled = keras.optimizers.Adam(BASE_LR * strategy.num_replicas_in_sync)
    warm = keras.optimizers.schedules.CosineDecay(1e-3, 1000, warmup_target=4e-3, warmup_steps=100)
    # ok: PD203
    with_warmup = keras.optimizers.Adam(learning_rate=warm)
