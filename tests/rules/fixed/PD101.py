# Fixture for PD101 missing-prefetch: the dataset handed to training must end with prefetch.
import keras
import numpy as np
import tensorflow as tf
import tensorflow_datasets as tfds
import tensorflow.compat.v2 as tf2
from tensorflow import data as tfd
from tensorflow.data import Dataset

AUTO = tf.data.AUTOTUNE
(x, y), _ = keras.datasets.mnist.load_data()
model = tf.keras.Sequential()


def make_train():
    ds = tf.data.Dataset.from_tensor_slices((x, y))
    ds = ds.shuffle(8)
    # ruleid[medium]: PD101
    ds = ds.batch(4).prefetch(AUTO)
    return ds


def make_eval():
    # ok: PD101
    return tfd.Dataset.from_tensor_slices((x, y)).batch(4).prefetch(AUTO)


def make_prefetch_then_map():
    ds = Dataset.from_tensor_slices(x).batch(4).prefetch(tf.data.experimental.AUTOTUNE)
    # ruleid: PD101
    return ds.map(lambda t: tf.image.resize(t, (64, 64))).prefetch(AUTO)


def make_prefetch_then_cheap_map():
    ds = Dataset.from_tensor_slices(x).batch(4).prefetch(AUTO)
    # Renaming the parts of a batch after the prefetch costs nothing worth a finding.
    # ok: PD101
    return ds.map(lambda t: {"features": t})


def make_prefetch_then_parallel_map():
    ds = Dataset.from_tensor_slices(x).batch(4).prefetch(AUTO)
    # A parallel map keeps its own buffer of results: it runs ahead of the step as well.
    # ok: PD101
    return ds.map(lambda t: t * 2, num_parallel_calls=AUTO)


def make_repeat_after_prefetch():
    # ok: PD101
    ds = tf2.data.Dataset.from_tensor_slices(x).batch(4).prefetch(AUTO).repeat()
    options = tf.data.Options()
    # ok: PD101
    return ds.with_options(options)


def base():
    # intermediate: extended by the caller, judged there
    return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8)


def train():
    # ok: PD101
    ds = base().batch(4).prefetch(AUTO)
    model.fit(ds, epochs=1)
    # ruleid[medium]: PD101
    model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(4).prefetch(AUTO), epochs=1)
    model.fit(make_train(), validation_data=make_eval())
    model.fit(make_prefetch_then_map())
    model.fit(make_prefetch_then_parallel_map())
    model.fit(make_prefetch_then_cheap_map())
    model.fit(make_repeat_after_prefetch())
    # A limit taken after the prefetch costs nothing per step.
    # ok: PD101
    model.fit(ds.take(100), epochs=1)


files = tf.data.Dataset.list_files("/data/*.tfrecord")
# ok: PD101
records = files.interleave(tf.data.TFRecordDataset, num_parallel_calls=AUTO).prefetch(AUTO)
for batch in records.take(1):
    print(batch)


class Loader:
    def __init__(self, batch_size):
        self.batch_size = batch_size
        self.raw = tf.data.TFRecordDataset(tf.io.gfile.glob("/data/train-*.tfrecord"))

    def dataset(self):
        # returned to callers elsewhere: that it trains is assumed
        # ruleid[medium]: PD101
        return self.raw.batch(self.batch_size).prefetch(AUTO)


# An unbatched dataset kept in a variable (a file list, a peek for a plot) is not a training input.
# ok: PD101
file_names = tf.data.Dataset.list_files("/data/*.png")
# ok: PD101
preview = tf.data.Dataset.from_tensor_slices(x).take(3)


def explore(features, labels):
    """Datasets that are only looked at, written out or adapted on never feed training."""
    # ok: PD101
    peek = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
    for batch in peek.take(1):
        print(batch)
    # ok: PD101
    numpy_batches = list(tf.data.Dataset.from_tensor_slices(features).batch(16).as_numpy_iterator())
    print(len(numpy_batches))
    normalizer = keras.layers.Normalization()
    # ok: PD101
    normalizer.adapt(tf.data.Dataset.from_tensor_slices(features).batch(256))
    # ok: PD101
    unused = tf.data.Dataset.from_tensor_slices(features).batch(16)
    # ok: PD101
    tf.data.Dataset.from_tensor_slices(features).batch(16).save("/tmp/exported")


def evaluate_only(features, labels):
    # ok: PD101
    test_ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(64)
    model.evaluate(test_ds)
    # ok: PD101
    model.predict(tf.data.Dataset.from_tensor_slices(features).batch(64))


def custom_loop(features, labels, train_step, test_step, epochs):
    # arrays handed in as parameters: their size is not seen
    # ruleid[low]: PD101
    train_ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1024).batch(64).prefetch(AUTO)
    # The test set runs every epoch inside the training loop: validation, judged too.
    # ruleid[low]: PD101
    val_ds = tf.data.Dataset.from_tensor_slices((features, labels)).batch(64).prefetch(AUTO)
    for _ in range(epochs):
        for images, targets in train_ds:
            train_step(images, targets)
        for images, targets in val_ds:
            test_step(images, targets)


def prefetch_where_consumed(features, labels, train_step):
    # The prefetch is added where the loop consumes the dataset: it counts.
    # ok: PD101
    ds = tf.data.Dataset.from_tensor_slices((features, labels)).shuffle(1024).batch(64)
    for images, targets in ds.prefetch(AUTO):
        train_step(images, targets)


def zip_of_prefetched(images, masks):
    left = tf.data.Dataset.from_tensor_slices(images).batch(8).prefetch(AUTO)
    right = tf.data.Dataset.from_tensor_slices(masks).batch(8).prefetch(AUTO)
    # ok: PD101
    model.fit(tf.data.Dataset.zip((left, right)), epochs=1)


def on_device(strategy_device):
    ds = tf.data.Dataset.from_tensor_slices(x).batch(4)
    # ok: PD101
    ds = ds.apply(tf.data.experimental.prefetch_to_device(strategy_device))
    model.fit(ds)


def directory_factory():
    # Keras directory factories shuffle, batch and prefetch on their own.
    # ok: PD101
    photos = keras.utils.image_dataset_from_directory("photos/", image_size=(64, 64))
    model.fit(photos, epochs=1)


def estimator_input_fns(estimator):
    def train_input_fn():
        # ruleid[medium]: PD101
        return tf.data.Dataset.from_tensor_slices((x, y)).shuffle(8).repeat().batch(4).prefetch(AUTO)

    def predict_input_fn():
        # ok: PD101
        return tf.data.Dataset.from_tensor_slices(np.zeros((4, 2))).batch(4)

    estimator.train(input_fn=train_input_fn, steps=10)
    estimator.predict(input_fn=predict_input_fn)


def csv_factory():
    # make_csv_dataset batches and prefetches on its own.
    # ok: PD101
    rows = tf.data.experimental.make_csv_dataset("train.csv", batch_size=32, label_name="y")
    model.fit(rows, epochs=1)


def validation_in_one_batch(x_val, y_val):
    # all 10,000 validation digits as one batch: there is no next batch to prepare
    # ok: PD101
    return tf.data.Dataset.from_tensor_slices((x_val, y_val)).batch(10000).cache().repeat()


def train_on(x_train, y_train, x_val, y_val):
    val = validation_in_one_batch(x_val, y_val)
    # the training set in batches of 10,000 is still read batch after batch
    # ruleid[low]: PD101
    train = tf.data.Dataset.from_tensor_slices((x_train, y_train)).shuffle(60000).batch(10000).prefetch(AUTO)
    keras.Sequential().fit(train, validation_data=val)


def from_a_builder(scale):
    # a TFDS builder's `as_dataset` is a dataset like `tfds.load`'s
    builder = tfds.builder("mnist")
    builder.download_and_prepare()
    # ruleid[medium]: PD101
    mnist = builder.as_dataset(split="train").map(scale, num_parallel_calls=4).batch(32).prefetch(AUTO)
    keras.Sequential().fit(mnist)


def made_up_points():
    # two hundred made-up points for a lesson: an epoch takes milliseconds
    x = np.random.uniform(-1, 1, size=(200, 2))
    y = np.random.randint(0, 2, size=200)
    # ok: PD101
    toy = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(200).batch(10)
    keras.Sequential().fit(toy)
    # random arrays are made up at any size: no finding on them either
    big_x = np.random.uniform(-1, 1, size=(100_000, 2))
    big_y = np.random.randint(0, 2, size=100_000)
    # ok: PD101
    big = tf.data.Dataset.from_tensor_slices((big_x, big_y)).shuffle(1000).batch(10)
    keras.Sequential().fit(big)


def trees(frame):
    import tensorflow_decision_forests as tfdf

    # a TF-DF model reads its dataset once, into its own cache, then grows trees
    # ok: PD101
    rows = tfdf.keras.pd_dataframe_to_tf_dataset(frame).map(lambda f, y: (f, y)).batch(64)
    tfdf.keras.RandomForestModel().fit(rows)


def tf1_contrib_input_fn(files):
    # TF1's contrib spelling of map_and_batch is the same op as tf.data.experimental's
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=4)
    # map_and_batch computes its batches ahead on background threads: no step waits on it
    # ok: PD101
    return ds.apply(tf.contrib.data.map_and_batch(tf.io.parse_tensor, batch_size=32))


def fit_under_a_strategy():
    # under a tf.distribute strategy, `fit` hands the dataset to the strategy, whose
    # iterator prefetches each replica's batches
    strategy = tf.distribute.MirroredStrategy()
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    # ok: PD101
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(tf.io.parse_tensor).batch(64)
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile("adam", "mse")
    model.fit(ds, epochs=5)


def a_library_strategy_subclass():
    # BytePS's MirroredStrategy extends tf.distribute's: fit hands the dataset to it as well
    from byteps.tensorflow.distribute import MirroredStrategy

    strategy = MirroredStrategy()
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    # ok: PD101
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(tf.io.parse_tensor).batch(64)
    with strategy.scope():
        model = keras.Sequential([keras.layers.Dense(1)])
        model.compile("adam", "mse")
    model.fit(ds, epochs=5)


def a_custom_loop_over_a_distributed_dataset(make_strategy, step, parse):
    # experimental_distribute_dataset belongs to tf.distribute strategies only: whichever
    # strategy it is, its iterator prefetches each replica's batches
    strategy = make_strategy()
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    # ok: PD101
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(parse).batch(64)
    for _ in range(10):
        for batch in strategy.experimental_distribute_dataset(ds):
            strategy.run(step, args=(batch,))


def a_cache_in_memory_after_the_prefetch(parse):
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(parse, num_parallel_calls=AUTO)
    # an in-memory cache after the prefetch replays elements from memory: nothing to hide
    # ok: PD101
    ds = ds.batch(64).prefetch(AUTO).cache()
    keras.Sequential().fit(ds, epochs=10)


def batches_replayed_from_memory(ratings):
    # the batches are cached in memory: every epoch after the first reads them from there
    # ok: PD101
    ds = tf.data.Dataset.from_tensor_slices(ratings).shuffle(100_000).batch(8192).cache()
    keras.Sequential().fit(ds, epochs=10)


def a_model_a_helper_builds_under_the_scope(constructor, parse):
    # a model built by code the analysis cannot see, inside the scope, is the strategy's:
    # fit hands the dataset to the strategy, whose iterator prefetches
    strategy = tf.distribute.MirroredStrategy()
    with strategy.scope():
        model = constructor.build_model()
        model.compile("adam", "mse")
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    # ok: PD101
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(parse).batch(64)
    model.fit(ds, epochs=5)


def a_cache_on_disk_after_the_prefetch(parse):
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(parse, num_parallel_calls=AUTO)
    # a cache on disk reads its file back in the step's path every epoch
    # ruleid: PD101
    ds = ds.batch(64).prefetch(AUTO).cache("/tmp/train.cache").prefetch(AUTO)
    keras.Sequential().fit(ds, epochs=10)


def a_demo_of_forty_steps(parse):
    files = tf.io.gfile.glob("data/train-*.tfrecord")
    # twenty epochs of two steps: a demo, whatever its pipeline
    # ok: PD101
    ds = tf.data.TFRecordDataset(files, num_parallel_reads=8).map(parse).repeat().batch(128)
    keras.Sequential().fit(ds, epochs=20, steps_per_epoch=2)
