# Shared fixture: a script that trains at its top level, as book chapters write them. No
# module imports it (that would train), so a dataset it builds and never uses is unused, not
# exported: nothing is said about it. TensorFlow 2.0's `make_dataset_iterator` distributes its
# dataset, whose iterator prefetches to each replica.
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
(x, y), (x_test, y_test) = tf.keras.datasets.cifar10.load_data()
train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(50_000)
# fit under the scope below distributes it: the strategy's iterator prefetches
# ok: PD101
train = train.batch(128 * strategy.num_replicas_in_sync)
files = tf.io.gfile.glob("gs://bucket/cifar/test-*.tfrecord")
# ok: PD104, PD101, PD202
test = tf.data.TFRecordDataset(files).batch(256)

with strategy.scope():
    model = tf.keras.applications.ResNet50(weights=None, classes=10, input_shape=(32, 32, 3))
    model.compile(optimizer="sgd", loss="sparse_categorical_crossentropy")

held_out = tf.data.Dataset.from_tensor_slices((x_test, y_test)).repeat()
# ok: PD101
held_out = held_out.batch(128 * strategy.num_replicas_in_sync)
iterator = strategy.make_dataset_iterator(held_out)
model.fit(train, epochs=30)
