"""The style matrix's job under `MirroredStrategy`, Keras imported first: the model comes from a
factory called under `strategy.scope()`, and `fit` gets the dataset from
`distribute_datasets_from_function`."""

import time

import keras
import numpy as np
import tensorflow as tf

GLOBAL_BATCH = 32
STEPS_PER_EPOCH = 2048 // GLOBAL_BATCH


def configure_devices(count):
    (cpu,) = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(
        cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(count)]
    )
    return [device.name for device in tf.config.list_logical_devices("CPU")]


def slow_read(x):
    time.sleep(0.002)  # a slow read from a remote store
    return x


def load(x, y):
    x = tf.py_function(slow_read, [x], tf.float32)
    x.set_shape((16,))
    return x, y


def dataset_fn(input_context):
    rng = np.random.default_rng(input_context.input_pipeline_id)
    features = rng.normal(size=(2048, 16)).astype("float32")
    labels = rng.integers(0, 10, size=(2048,)).astype("int32")
    batch_size = input_context.get_per_replica_batch_size(GLOBAL_BATCH)
    ds = tf.data.Dataset.from_tensor_slices((features, labels))
    ds = ds.shard(input_context.num_input_pipelines, input_context.input_pipeline_id)
    return ds.map(load).batch(batch_size).repeat()


def build_model():
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(32, activation="relu"), keras.layers.Dense(10)]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    )
    return model


strategy = tf.distribute.MirroredStrategy(configure_devices(2))
with strategy.scope():
    model = build_model()
train_ds = strategy.distribute_datasets_from_function(dataset_fn)
model.fit(train_ds, epochs=3, steps_per_epoch=STEPS_PER_EPOCH)
