# Origin: tensorflow/docs, commit 7c3650212740204359d4ceae481abc79345541be,
#   site/en/tutorials/images/segmentation.ipynb, written out as a script from its code cells
#   (each under a "# Cell N" line; cell 5, "!pip install ...", is left out); the module it
#   imports from tensorflow_examples is tfdocs_segmentation_helpers/pix2pix.py beside this file
# Licence: Apache License 2.0 (the notebook's first cell).
# Changes from the published cells (line numbers are this file's):
#   line 25: import tensorflow_datasets as tfds (not installed) commented out, and lines
#     27-43 (added) define load_generated_oxford_iiit_pet(), which returns what
#     tfds.load('oxford_iiit_pet:3.*.*', with_info=True) returns: train and test datasets
#     of dicts of the same keys and dtypes (128 and 320 generated 160 x 200 examples instead
#     of 3,680 and 3,669) and an info with the splits' num_examples
#   line 52: tfds.load( -> load_generated_oxford_iiit_pet(
#   line 46: from tensorflow_examples.models.pix2pix import pix2pix -> from
#     tfdocs_segmentation_helpers import pix2pix
#   line 49: matplotlib (not installed) commented out, and so are the lines that only draw
#     (in display(), lines 110-119, and lines 228-236) and plot_model (line 185, needs pydot)
#   line 127: MobileNetV2(..., include_top=False) -> weights=None added (the default,
#     'imagenet', is a download)
#   lines 75, 214: BATCH_SIZE = 64 -> 16, EPOCHS = 20 -> 1
#   line 257: tf.keras.losses.Reduction.NONE -> 'none' (Keras 3 has no Reduction enum)
# Cell 6
import numpy as np

import tensorflow as tf
# import tensorflow_datasets as tfds

def load_generated_oxford_iiit_pet(name, with_info):
  """Generated stand-in for tfds.load('oxford_iiit_pet:3.*.*', with_info=True): 'train' and
  'test' datasets of dicts with the same keys and dtypes (uint8 RGB image, uint8 segmentation
  mask of values 1 to 3, int64 label and species, string file_name), 128 and 320 examples of
  160 x 200 instead of 3,680 and 3,669 of varying sizes, and an info with the splits' sizes."""
  rng = np.random.default_rng(0)
  def split(count):
    return tf.data.Dataset.from_tensor_slices({
        'image': rng.integers(0, 256, (count, 160, 200, 3), dtype=np.uint8),
        'segmentation_mask': rng.integers(1, 4, (count, 160, 200, 1), dtype=np.uint8),
        'label': rng.integers(0, 37, count),
        'species': rng.integers(0, 2, count),
        'file_name': np.array(['pet_%d.jpg' % i for i in range(count)]),
    })
  counts = {'train': 128, 'test': 320}
  splits = {k: type('SplitInfo', (), {'num_examples': v}) for k, v in counts.items()}
  return {k: split(v) for k, v in counts.items()}, type('DatasetInfo', (), {'splits': splits})

# Cell 7
from tfdocs_segmentation_helpers import pix2pix

from IPython.display import clear_output
# import matplotlib.pyplot as plt

# Cell 9
dataset, info = load_generated_oxford_iiit_pet('oxford_iiit_pet:3.*.*', with_info=True)

# Cell 11
def normalize(input_image, input_mask):
  input_image = tf.cast(input_image, tf.float32) / 255.0
  input_mask -= 1
  return input_image, input_mask

# Cell 12
def load_image(datapoint):
  input_image = tf.image.resize(datapoint['image'], (128, 128))
  input_mask = tf.image.resize(
    datapoint['segmentation_mask'],
    (128, 128),
    method = tf.image.ResizeMethod.NEAREST_NEIGHBOR,
  )

  input_image, input_mask = normalize(input_image, input_mask)

  return input_image, input_mask

# Cell 14
TRAIN_LENGTH = info.splits['train'].num_examples
BATCH_SIZE = 16
BUFFER_SIZE = 1000
STEPS_PER_EPOCH = TRAIN_LENGTH // BATCH_SIZE

# Cell 15
train_images = dataset['train'].map(load_image, num_parallel_calls=tf.data.AUTOTUNE)
test_images = dataset['test'].map(load_image, num_parallel_calls=tf.data.AUTOTUNE)

# Cell 17
class Augment(tf.keras.layers.Layer):
  def __init__(self, seed=42):
    super().__init__()
    # both use the same seed, so they'll make the same random changes.
    self.augment_inputs = tf.keras.layers.RandomFlip(mode="horizontal", seed=seed)
    self.augment_labels = tf.keras.layers.RandomFlip(mode="horizontal", seed=seed)

  def call(self, inputs, labels):
    inputs = self.augment_inputs(inputs)
    labels = self.augment_labels(labels)
    return inputs, labels

# Cell 19
train_batches = (
    train_images
    .cache()
    .shuffle(BUFFER_SIZE)
    .batch(BATCH_SIZE)
    .repeat()
    .map(Augment())
    .prefetch(buffer_size=tf.data.AUTOTUNE))

test_batches = test_images.batch(BATCH_SIZE)

# Cell 21
def display(display_list):
#   plt.figure(figsize=(15, 15))

  title = ['Input Image', 'True Mask', 'Predicted Mask']

#   for i in range(len(display_list)):
#     plt.subplot(1, len(display_list), i+1)
#     plt.title(title[i])
#     plt.imshow(tf.keras.utils.array_to_img(display_list[i]))
#     plt.axis('off')
#   plt.show()

# Cell 22
for images, masks in train_batches.take(2):
  sample_image, sample_mask = images[0], masks[0]
  display([sample_image, sample_mask])

# Cell 25
base_model = tf.keras.applications.MobileNetV2(input_shape=[128, 128, 3], include_top=False, weights=None)

# Use the activations of these layers
layer_names = [
    'block_1_expand_relu',   # 64x64
    'block_3_expand_relu',   # 32x32
    'block_6_expand_relu',   # 16x16
    'block_13_expand_relu',  # 8x8
    'block_16_project',      # 4x4
]
base_model_outputs = [base_model.get_layer(name).output for name in layer_names]

# Create the feature extraction model
down_stack = tf.keras.Model(inputs=base_model.input, outputs=base_model_outputs)

down_stack.trainable = False

# Cell 27
up_stack = [
    pix2pix.upsample(512, 3),  # 4x4 -> 8x8
    pix2pix.upsample(256, 3),  # 8x8 -> 16x16
    pix2pix.upsample(128, 3),  # 16x16 -> 32x32
    pix2pix.upsample(64, 3),   # 32x32 -> 64x64
]

# Cell 28
def unet_model(output_channels:int):
  inputs = tf.keras.layers.Input(shape=[128, 128, 3])

  # Downsampling through the model
  skips = down_stack(inputs)
  x = skips[-1]
  skips = reversed(skips[:-1])

  # Upsampling and establishing the skip connections
  for up, skip in zip(up_stack, skips):
    x = up(x)
    concat = tf.keras.layers.Concatenate()
    x = concat([x, skip])

  # This is the last layer of the model
  last = tf.keras.layers.Conv2DTranspose(
      filters=output_channels, kernel_size=3, strides=2,
      padding='same')  #64x64 -> 128x128

  x = last(x)

  return tf.keras.Model(inputs=inputs, outputs=x)

# Cell 31
OUTPUT_CLASSES = 3

model = unet_model(output_channels=OUTPUT_CLASSES)
model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])

# Cell 33
# tf.keras.utils.plot_model(model, show_shapes=True, expand_nested=True, dpi=64)

# Cell 35
def create_mask(pred_mask):
  pred_mask = tf.math.argmax(pred_mask, axis=-1)
  pred_mask = pred_mask[..., tf.newaxis]
  return pred_mask[0]

# Cell 36
def show_predictions(dataset=None, num=1):
  if dataset:
    for image, mask in dataset.take(num):
      pred_mask = model.predict(image)
      display([image[0], mask[0], create_mask(pred_mask)])
  else:
    display([sample_image, sample_mask,
             create_mask(model.predict(sample_image[tf.newaxis, ...]))])

# Cell 37
show_predictions()

# Cell 39
class DisplayCallback(tf.keras.callbacks.Callback):
  def on_epoch_end(self, epoch, logs=None):
    clear_output(wait=True)
    show_predictions()
    print ('\nSample Prediction after epoch {}\n'.format(epoch+1))

# Cell 40
EPOCHS = 1
VAL_SUBSPLITS = 5
VALIDATION_STEPS = info.splits['test'].num_examples//BATCH_SIZE//VAL_SUBSPLITS

model_history = model.fit(train_batches, epochs=EPOCHS,
                          steps_per_epoch=STEPS_PER_EPOCH,
                          validation_steps=VALIDATION_STEPS,
                          validation_data=test_batches,
                          callbacks=[DisplayCallback()])

# Cell 41
loss = model_history.history['loss']
val_loss = model_history.history['val_loss']

# plt.figure()
# plt.plot(model_history.epoch, loss, 'r', label='Training loss')
# plt.plot(model_history.epoch, val_loss, 'bo', label='Validation loss')
# plt.title('Training and Validation Loss')
# plt.xlabel('Epoch')
# plt.ylabel('Loss Value')
# plt.ylim([0, 1])
# plt.legend()
# plt.show()

# Cell 44
show_predictions(test_batches, 3)

# Cell 47
try:
  model_history = model.fit(train_batches, epochs=EPOCHS,
                            steps_per_epoch=STEPS_PER_EPOCH,
                            class_weight = {0:2.0, 1:2.0, 2:1.0})
  assert False
except Exception as e:
  print(f"Expected {type(e).__name__}: {e}")

# Cell 49
label = np.array([0,0])
prediction = np.array([[-3., 0], [-3, 0]])
sample_weight = [1, 10]

loss = tf.keras.losses.SparseCategoricalCrossentropy(
    from_logits=True,
    reduction='none'
)
loss(label, prediction, sample_weight).numpy()

# Cell 51
def add_sample_weights(image, label):
  # The weights for each class, with the constraint that:
  #     sum(class_weights) == 1.0
  class_weights = tf.constant([2.0, 2.0, 1.0])
  class_weights = class_weights/tf.reduce_sum(class_weights)

  # Create an image of `sample_weights` by using the label at each pixel as an
  # index into the `class weights` .
  sample_weights = tf.gather(class_weights, indices=tf.cast(label, tf.int32))

  return image, label, sample_weights

# Cell 53
train_batches.map(add_sample_weights).element_spec

# Cell 55
weighted_model = unet_model(OUTPUT_CLASSES)
weighted_model.compile(
    optimizer='adam',
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=['accuracy'])

# Cell 56
weighted_model.fit(
    train_batches.map(add_sample_weights),
    epochs=1,
    steps_per_epoch=10)
