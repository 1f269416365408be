# Origin: tensorflow/ecosystem, commit 2fb34e46bb4a55019529aeec7b5482a584481565,
#   distribution_strategy/multi_worker_mirrored_strategy/examples/keras_mnist.py
# Licence: Apache License 2.0 (the file's own header follows).
# Changes from the published file (line numbers are this file's):
#   line 47: import tempfile (added, for the model directory)
#   line 56: MAIN_MODEL_PATH '/pvcmnt' -> a new temporary directory
#   lines 84-85: tf.keras.datasets.mnist.load_data() -> generated arrays of the same dtypes
#     (uint8 images, uint8 labels) and image shape (28, 28), 4,096 images instead of 60,000
#   line 110: os.environ['TF_CONFIG'] -> os.environ.get('TF_CONFIG', <one worker>), so the
#     script runs as a single worker when no cluster is configured
#   line 119: tf.keras.callbacks.experimental.BackupAndRestore ->
#     tf.keras.callbacks.BackupAndRestore (Keras 3 has no experimental namespace)
#   line 122: epochs 10, steps_per_epoch 70 -> epochs 1, steps_per_epoch 20
#   line 124: model.save(filepath=<directory>) -> a .keras file in that directory (Keras 3
#     saves only .keras / .h5 files)
# ==============================================================================
# Copyright 2021 The TensorFlow Authors. All Rights Reserved.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
# ==============================================================================

# This code serves as an example of using Tensorflow 2.x Keras API to build and train a CNN model on the 
# MNIST dataset using the tf.distribute.MultiWorkerMirroredStrategy described here 
# https://www.tensorflow.org/api_docs/python/tf/distribute/experimental/MultiWorkerMirroredStrategy.
# This code is very similar to the example provided here
# https://www.tensorflow.org/tutorials/distribute/multi_worker_with_keras
# Assumptions: 
#   1) The code assumes that the cluster configuration needed for the TF distribute strategy is available through the 
#   TF_CONFIG environment variable. See the link provided above for details
#   2) The model is checkpointed and saved in /pvcmnt by the chief worker process.


from __future__ import print_function

import math
import os
import tempfile
import tensorflow as tf
import numpy as np
import json

# Used to run example using CPU only. Untested on GPU
os.environ["CUDA_VISIBLE_DEVICES"] = "-1"

# Model save directory
MAIN_MODEL_PATH = tempfile.mkdtemp()

GLOBAL_BATCH_SIZE = 128

def _is_chief(task_type, task_id):
  # If `task_type` is None, this may be operating as single worker, which works
  # effectively as chief.
  return task_type is None or task_type == 'chief' or (
            task_type == 'worker' and task_id == 0)

def _get_temp_dir(task_id):
  base_dirpath = 'workertemp_' + str(task_id)
  temp_dir = os.path.join("/tmp", base_dirpath)
  os.makedirs(temp_dir)
  return temp_dir

def write_filepath(strategy):
  task_type, task_id = strategy.cluster_resolver.task_type, strategy.cluster_resolver.task_id
  if not _is_chief(task_type, task_id):
    checkpoint_dir = _get_temp_dir(task_id)
  else:
    base_dirpath = 'workertemp_' + str(task_id)
    checkpoint_dir = os.path.join(MAIN_MODEL_PATH, base_dirpath)
    if not os.path.exists(checkpoint_dir):
      os.makedirs(checkpoint_dir)
  return checkpoint_dir

def mnist_dataset(batch_size):
  rng = np.random.default_rng(0)
  (x_train, y_train), _ = (rng.integers(0, 256, (4096, 28, 28), dtype=np.uint8), rng.integers(0, 10, (4096,), dtype=np.uint8)), None
  # The `x` arrays are in uint8 and have values in the range [0, 255].
  # You need to convert them to float32 with values in the range [0, 1]
  x_train = x_train / np.float32(255)
  y_train = y_train.astype(np.int64)
  train_dataset = tf.data.Dataset.from_tensor_slices(
      (x_train, y_train)).shuffle(60000).repeat().batch(batch_size)
  return train_dataset

def build_and_compile_cnn_model():
  model = tf.keras.Sequential([
      tf.keras.Input(shape=(28, 28)),
      tf.keras.layers.Reshape(target_shape=(28, 28, 1)),
      tf.keras.layers.Conv2D(32, 3, activation='relu'),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(128, activation='relu'),
      tf.keras.layers.Dense(10)
  ])
  model.compile(
      loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
      optimizer=tf.keras.optimizers.SGD(learning_rate=0.001),
      metrics=['accuracy'])
  return model

def main():
  tf_config = json.loads(os.environ.get('TF_CONFIG', '{"cluster": {"worker": ["localhost:12345"]}}'))
  num_workers = len(tf_config['cluster']['worker'])
  strategy = tf.distribute.MultiWorkerMirroredStrategy()
  
  multi_worker_dataset = mnist_dataset(GLOBAL_BATCH_SIZE)
  
  # missing needs to be fixed
  # multi_worker_dataset = strategy.distribute_datasets_from_function(mnist_dataset(global_batch_size))  
  
  callbacks = [tf.keras.callbacks.BackupAndRestore(backup_dir=write_filepath(strategy))]
  with strategy.scope():
      multi_worker_model = build_and_compile_cnn_model()
  multi_worker_model.fit(multi_worker_dataset, epochs=1, steps_per_epoch=20,
                          callbacks=callbacks)
  multi_worker_model.save(filepath=os.path.join(write_filepath(strategy), 'model.keras'))

if __name__=="__main__":
  main()
