# Fixture for PD205 created-outside-scope.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
strategy = tf.distribute.MirroredStrategy()
GLOBAL_BATCH = 32 * strategy.num_replicas_in_sync


def build():
    return keras.Sequential([keras.layers.Dense(1)])


augment = keras.Sequential([keras.layers.RandomFlip()])  # an augmenter, not the model


def train(features, labels):
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(GLOBAL_BATCH).prefetch(AUTO)
    with strategy.scope():
        # A model built in a helper called inside the scope is inside the scope.
        # ok: PD205
        good = build()
        # ok: PD205
        good.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    good.fit(ds, epochs=1)

    # Built outside the scope, yet trained on a batch sized for the strategy's replicas.
    # ruleid[medium]: PD205
    bad = keras.Sequential([keras.layers.Dense(1)])
    # Keras compiles under the strategy the model was built in: `compile` itself is not the mistake.
    # ok: PD205
    bad.compile(optimizer="adam", loss="mse")
    bad.fit(ds, epochs=1)

    # ruleid[medium]: PD205
    opt = keras.optimizers.SGD()
    with strategy.scope():
        other = build()
        other.compile(optimizer=opt, loss="mse")
    other.fit(ds, epochs=1)


def tpu_or_default():
    try:
        resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
        tpu = tf.distribute.TPUStrategy(resolver)
    except ValueError:
        tpu = tf.distribute.get_strategy()
    with tpu.scope():
        # ok: PD205
        model = keras.Sequential([keras.layers.Dense(1)])
    return model


def strategy_or_none(use_tpu, features, labels):
    if use_tpu:
        chosen = tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver())
    else:
        chosen = None
    if chosen is not None:
        with chosen.scope():
            model = build()
            model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
    else:
        # The branch without a strategy: nothing to be outside of.
        # ok: PD205
        model = build()
        # ok: PD205
        optimizer = keras.optimizers.Adam()
        model.compile(optimizer=optimizer, loss="mse")
    model.fit(features, labels, batch_size=32)


def evaluate_restored(features, labels):
    # Restored without a strategy, to check the checkpoint on one device.
    # ok: PD205
    plain = build()
    plain.compile(optimizer="adam", loss="mse")
    plain.evaluate(features, labels)


def estimator_config(model_fn):
    # The only strategy here runs through an Estimator's RunConfig.
    config = tf.estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy())
    keras_model = keras.Sequential([keras.layers.Dense(1)])
    keras_model.compile(optimizer="adam", loss="mse")
    return tf.keras.estimator.model_to_estimator(keras_model=keras_model, config=config)
