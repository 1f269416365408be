# Fixture for PD203 lr-not-scaled.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
strategy = tf.distribute.MirroredStrategy()
BASE_LR = 1e-3
GLOBAL_BATCH = 64 * strategy.num_replicas_in_sync


def build():
    return keras.Sequential([keras.layers.Dense(10)])


def train(features, labels):
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1024)
    ds = ds.batch(GLOBAL_BATCH).prefetch(AUTO)
    with strategy.scope():
        model = build()
        # ruleid[medium]: PD203
        model.compile(optimizer=keras.optimizers.Adam(learning_rate=BASE_LR), loss="mse")
    model.fit(ds, epochs=3)

    with strategy.scope():
        second = build()
        # ruleid[medium]: PD203
        second.compile(optimizer=tf.keras.optimizers.SGD(), loss="mse")
    second.fit(ds, epochs=3)

    with strategy.scope():
        scaled = build()
        # ok: PD203
        scaled.compile(keras.optimizers.Adam(BASE_LR * strategy.num_replicas_in_sync), "mse")
    scaled.fit(ds, epochs=3)

    warm = keras.optimizers.schedules.CosineDecay(1e-3, 1000, warmup_target=4e-3, warmup_steps=100)
    with strategy.scope():
        warmed = build()
        # ok: PD203
        warmed.compile(optimizer=keras.optimizers.Adam(learning_rate=warm), loss="mse")
    warmed.fit(ds, epochs=3)

    with strategy.scope():
        scheduled = build()
        # A callback sets the learning rate every epoch, scaled with the replicas.
        # ok: PD203
        scheduled.compile(optimizer=keras.optimizers.Adam(learning_rate=BASE_LR), loss="mse")
    peak = BASE_LR * strategy.num_replicas_in_sync
    scheduler = keras.callbacks.LearningRateScheduler(lambda epoch: peak * min(1, epoch / 5))
    scheduled.fit(ds, epochs=3, callbacks=[scheduler])

    with strategy.scope():
        decayed = build()
        # The callback's schedule is a constant too: the rate still ignores the replicas.
        # ruleid[medium]: PD203
        decayed.compile(optimizer=keras.optimizers.Adam(learning_rate=BASE_LR), loss="mse")
    decay = keras.callbacks.LearningRateScheduler(lambda epoch: 1e-3 if epoch < 3 else 1e-4)
    decayed.fit(ds, epochs=3, callbacks=[decay])


def single_device(features, labels):
    # No strategy trains this model: nothing to scale with.
    model = build()
    # ok: PD203
    model.compile(optimizer=keras.optimizers.Adam(learning_rate=BASE_LR), loss="mse")
    model.fit(features, labels, batch_size=32)


def default_batch(features, labels):
    with strategy.scope():
        model = build()
        # fit's default batch: the code does not say the global batch grows.
        # ok: PD203
        model.compile(optimizer=keras.optimizers.SGD(0.01), loss="mse")
    model.fit(features, labels, epochs=1)


def keras_data_parallel(features, labels):
    # The Keras distribution API splits the global batch across the devices too.
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    model = build()
    # the batch is a constant too: PD202's, whose fix scales the rate with it; alone, the
    # rate fits the batch it was tuned for
    # ok: PD203
    model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.1), loss="mse")
    model.fit(features, labels, batch_size=1024, epochs=1)
