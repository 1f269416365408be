# Fixture for PD205 created-outside-scope.
import keras
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()


def build():
    return keras.Sequential([keras.layers.Dense(1)])


augment = keras.Sequential([keras.layers.RandomFlip()])  # an augmenter, not the model

with strategy.scope():
    # ok: PD205
    good = build()
    # ok: PD205
    good.compile(optimizer=keras.optimizers.Adam(), loss="mse")

# ruleid: PD205
bad = keras.Sequential([keras.layers.Dense(1)])
# Keras compiles under the strategy the model was built in: `compile` itself is not the mistake.
# ok: PD205
bad.compile(optimizer="adam", loss="mse")
# ruleid: PD205
opt = keras.optimizers.SGD()


def tpu_or_default():
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        strategy = tf.distribute.TPUStrategy(resolver)
    except ValueError:
        strategy = tf.distribute.get_strategy()
    with strategy.scope():
        # ok: PD205
        model = keras.Sequential([keras.layers.Dense(1)])
    return model
