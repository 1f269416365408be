# Origin: GoogleCloudPlatform/vertex-ai-samples, commit cc0d791ef25a4f8a9bbd9b6c9ef4928b8b96c35a,
#   notebooks/community/gapic/custom/showcase_custom_image_classification_online.ipynb, cell 56
#   (the notebook writes it out as custom/trainer/task.py)
# Licence: Apache License 2.0 (the notebook's first cell).
# Changes from the published cell (line numbers are this file's):
#   the cell's first line, the magic "%%writefile custom/trainer/task.py", is left out
#   line 20: import tensorflow_datasets as tfds -> import numpy as np (not installed), and
#     line 27: tfds.disable_progress_bar() commented out
#   line 25: import tempfile (added)
#   line 31: --model-dir default os.getenv("AIP_MODEL_DIR") (set by Vertex AI) -> that, or a
#     new temporary directory
#   line 36: --epochs default 10 -> 1
#   lines 80-82: tfds.load(name='cifar10', with_info=True, as_supervised=True) -> a dict
#     with a 'train' dataset of 640 generated (32, 32, 3) uint8 images and int64 labels, the
#     same structure (instead of 50,000), and None for the info
#   line 116: model.save(args.model_dir) -> model.export(args.model_dir) (Keras 3 saves a
#     SavedModel directory with export)
# Single, Mirror and Multi-Machine Distributed Training for CIFAR-10

import numpy as np
import tensorflow as tf
from tensorflow.python.client import device_lib
import argparse
import os
import tempfile
import sys
# tfds.disable_progress_bar()

parser = argparse.ArgumentParser()
parser.add_argument('--model-dir', dest='model_dir',
                    default=os.getenv("AIP_MODEL_DIR", tempfile.mkdtemp()), type=str, help='Model dir.')
parser.add_argument('--lr', dest='lr',
                    default=0.01, type=float,
                    help='Learning rate.')
parser.add_argument('--epochs', dest='epochs',
                    default=1, type=int,
                    help='Number of epochs.')
parser.add_argument('--steps', dest='steps',
                    default=200, type=int,
                    help='Number of steps per epoch.')
parser.add_argument('--distribute', dest='distribute', type=str, default='single',
                    help='distributed training strategy')
args = parser.parse_args()

print('Python Version = {}'.format(sys.version))
print('TensorFlow Version = {}'.format(tf.__version__))
print('TF_CONFIG = {}'.format(os.environ.get('TF_CONFIG', 'Not found')))
print('DEVICES', device_lib.list_local_devices())

# Single Machine, single compute device
if args.distribute == 'single':
    if tf.test.is_gpu_available():
        strategy = tf.distribute.OneDeviceStrategy(device="/gpu:0")
    else:
        strategy = tf.distribute.OneDeviceStrategy(device="/cpu:0")
# Single Machine, multiple compute device
elif args.distribute == 'mirror':
    strategy = tf.distribute.MirroredStrategy()
# Multiple Machine, multiple compute device
elif args.distribute == 'multi':
    strategy = tf.distribute.experimental.MultiWorkerMirroredStrategy()

# Multi-worker configuration
print('num_replicas_in_sync = {}'.format(strategy.num_replicas_in_sync))

# Preparing dataset
BUFFER_SIZE = 10000
BATCH_SIZE = 64


def make_datasets_unbatched():

  # Scaling CIFAR10 data from (0, 255] to (0., 1.]
  def scale(image, label):
    image = tf.cast(image, tf.float32)
    image /= 255.0
    return image, label


  datasets, info = {'train': tf.data.Dataset.from_tensor_slices((
      np.random.randint(0, 256, (640, 32, 32, 3), dtype=np.uint8),
      np.random.randint(0, 10, 640).astype(np.int64)))}, None
  return datasets['train'].map(scale).cache().shuffle(BUFFER_SIZE).repeat()


# Build the Keras model
def build_and_compile_cnn_model():
  model = tf.keras.Sequential([
      tf.keras.layers.Conv2D(32, 3, activation='relu', input_shape=(32, 32, 3)),
      tf.keras.layers.MaxPooling2D(),
      tf.keras.layers.Conv2D(32, 3, activation='relu'),
      tf.keras.layers.MaxPooling2D(),
      tf.keras.layers.Flatten(),
      tf.keras.layers.Dense(10, activation='softmax')
  ])
  model.compile(
      loss=tf.keras.losses.sparse_categorical_crossentropy,
      optimizer=tf.keras.optimizers.SGD(learning_rate=args.lr),
      metrics=['accuracy'])
  return model


# Train the model
NUM_WORKERS = strategy.num_replicas_in_sync
# Here the batch size scales up by number of workers since
# `tf.data.Dataset.batch` expects the global batch size.
GLOBAL_BATCH_SIZE = BATCH_SIZE * NUM_WORKERS
train_dataset = make_datasets_unbatched().batch(GLOBAL_BATCH_SIZE)

with strategy.scope():
  # Creation of dataset, and model building/compiling need to be within
  # `strategy.scope()`.
  model = build_and_compile_cnn_model()

model.fit(x=train_dataset, epochs=args.epochs, steps_per_epoch=args.steps)
model.export(args.model_dir)
