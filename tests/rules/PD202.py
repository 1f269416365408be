# Fixture for PD202 batch-not-scaled.
import keras
import tensorflow as tf

AUTO = tf.data.AUTOTUNE
BATCH = 64
PER_REPLICA = 32

strategy = tf.distribute.MirroredStrategy()
global_batch = PER_REPLICA * strategy.num_replicas_in_sync
base = tf.data.Dataset.range(1000)

# ruleid[low]: PD202
fixed = base.batch(BATCH).prefetch(AUTO)
# ok: PD202
scaled = base.batch(global_batch).prefetch(AUTO)
# ok: PD202
inline = base.batch(16 * strategy.num_replicas_in_sync).prefetch(AUTO)


def make(batch_size):
    # ruleid[low]: PD202
    return base.batch(batch_size, drop_remainder=True).prefetch(AUTO)


train = make(128)


def build_model():
    return keras.Sequential([keras.layers.Dense(1)])


def train_under_scope(features, labels):
    with strategy.scope():
        model = build_model()
        model.compile(optimizer="sgd", loss="mse")
    # ruleid[medium]: PD202
    model.fit(features, labels, batch_size=256, epochs=1)


def make_dataset(batch_size=64):
    # A default is not the value: the callers elsewhere pass their own.
    # ok: PD202
    return tf.data.Dataset.range(100).batch(batch_size).prefetch(AUTO)


def looked_at_only():
    # Only printed: the strategy never sees it.
    # ok: PD202
    for batch in base.batch(32).take(1):
        print(batch)


def parameter_server_training(cluster_resolver):
    # ParameterServerStrategy: each worker trains on its own batches, asynchronously.
    ps_strategy = tf.distribute.ParameterServerStrategy(cluster_resolver)
    with ps_strategy.scope():
        model = build_model()
        model.compile(optimizer="sgd", loss="mse")

    def dataset_fn(input_context):
        # ok: PD202
        return tf.data.Dataset.range(1000).shuffle(100).batch(64).repeat()

    model.fit(tf.keras.utils.experimental.DatasetCreator(dataset_fn), epochs=1)
    coordinator = tf.distribute.coordinator.ClusterCoordinator(ps_strategy)
    return coordinator.create_per_worker_dataset(dataset_fn)


def estimator_input_fn():
    # An Estimator's input_fn batch is per replica: it already scales with the devices.
    # ok: PD202
    return tf.data.Dataset.range(1000).batch(32).prefetch(AUTO)


def estimator_training(model_fn):
    config = tf.estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy())
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    estimator.train(input_fn=estimator_input_fn, steps=100)


def keras_distribution_training(features, labels):
    # The Keras distribution API: a data-parallel layout splits the global batch too.
    keras.distribution.set_distribution(keras.distribution.DataParallel())
    model = build_model()
    model.compile(optimizer="sgd", loss="mse")
    # ruleid[medium]: PD202
    model.fit(features, labels, batch_size=512, epochs=1)


def model_parallel_training(features, labels, mesh, layout_map):
    # A model-parallel layout shards the weights; this rule is about data-parallel batches.
    keras.distribution.set_distribution(keras.distribution.ModelParallel(layout_map=layout_map))
    model = build_model()
    model.compile(optimizer="sgd", loss="mse")
    # ok: PD202
    model.fit(features, labels, batch_size=512, epochs=1)


def one_listed_device(features, labels):
    # A strategy given a literal list of one device has one replica: no batch is split.
    one = tf.distribute.MirroredStrategy(devices=["/gpu:0"])
    with one.scope():
        model = build_model()
        model.compile(optimizer="sgd", loss="mse")
    # ok: PD202
    model.fit(features, labels, batch_size=256, epochs=5)
