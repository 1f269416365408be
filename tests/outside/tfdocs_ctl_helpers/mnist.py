# Origin: tensorflow/docs, commit 7c3650212740204359d4ceae481abc79345541be,
#   site/en/tutorials/distribute/multi_worker_with_ctl.ipynb, cell 17 (the notebook writes it
#   out as mnist.py)
# Licence: Apache License 2.0 (the notebook's first cell).
# Changes from the published cell (line numbers are this file's):
#   the cell's first line, the magic "%%writefile mnist.py", is left out
#   lines 14-15: tf.keras.datasets.mnist.load_data() -> generated arrays of the same dtypes
#     (uint8 images, uint8 labels) and image shape (28, 28), 4,096 images instead of 60,000
import os
import tensorflow as tf
import numpy as np

def mnist_dataset(batch_size):
  rng = np.random.default_rng(0)
  (x_train, y_train), _ = (rng.integers(0, 256, (4096, 28, 28), dtype=np.uint8), rng.integers(0, 10, (4096,), dtype=np.uint8)), None
  # The `x` arrays are in uint8 and have values in the range [0, 255].
  # You need to convert them to float32 with values in the range [0, 1]
  x_train = x_train / np.float32(255)
  y_train = y_train.astype(np.int64)
  train_dataset = tf.data.Dataset.from_tensor_slices(
      (x_train, y_train)).shuffle(60000)
  return train_dataset

def dataset_fn(global_batch_size, input_context):
  batch_size = input_context.get_per_replica_batch_size(global_batch_size)
  dataset = mnist_dataset(batch_size)
  dataset = dataset.shard(input_context.num_input_pipelines,
                          input_context.input_pipeline_id)
  dataset = dataset.batch(batch_size)
  return dataset

def build_cnn_model():
  regularizer = tf.keras.regularizers.L2(1e-5)
  return tf.keras.Sequential([
      tf.keras.Input(shape=(28, 28)),
      tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
      tf.keras.layers.Conv2D(32, 3,
                             activation='relu',
                             kernel_regularizer=regularizer),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(128,
                            activation='relu',
                            kernel_regularizer=regularizer),
      tf.keras.layers.Dense(10, kernel_regularizer=regularizer)
  ])
