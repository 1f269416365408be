# Fixture for PD205 created-outside-scope.
import keras
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()


def build():
    return keras.Sequential([keras.layers.Dense(1)])


with strategy.scope():
    # ok: PD205
    good = build()
    # ok: PD205
    good.compile(optimizer=keras.optimizers.Adam(), loss="mse")

# ruleid: PD205
bad = keras.Sequential([keras.layers.Dense(1)])
# ruleid: PD205
bad.compile(optimizer="adam", loss="mse")
# ruleid: PD205
opt = keras.optimizers.SGD()
