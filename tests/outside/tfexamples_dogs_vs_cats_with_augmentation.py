# Origin: tensorflow/examples, commit 608f7db8c511e3dcc420afc564496e4516ceb800,
#   courses/udacity_intro_to_tensorflow_for_deep_learning/l05c02_dogs_vs_cats_with_augmentation.ipynb,
#   written out as a script from its code cells (each under a "# Cell N" line)
# Licence: Apache License 2.0 (the notebook's first cell).
# Changes from the published cells (line numbers are this file's):
#   line 27: matplotlib (not installed) commented out, and so are the lines that only draw
#     (plotImages, lines 85-91, its four calls and the plots of cell 63)
#   line 26: import tempfile (added)
#   lines 30-42 (added): write_generated_cats_and_dogs() writes generated 200 x 150 JPEG
#     images into the layout of cats_and_dogs_filtered in a new temporary directory (150 and
#     50 images a class in train/ and validation/ instead of 1,000 and 500)
#   line 46: tf.keras.utils.get_file('cats_and_dogs_filterted.zip', ...) ->
#     write_generated_cats_and_dogs()
#   lines 80, 188: BATCH_SIZE 100 -> 32, epochs=100 -> 1
#   line 189: model.fit_generator( -> model.fit( (Keras 3 has no fit_generator; fit takes the
#     same iterator)
# Cell 7
import tensorflow as tf

# Cell 8
from tensorflow.keras.preprocessing.image import ImageDataGenerator

# Cell 9
import os
import numpy as np
import tempfile
# import matplotlib.pyplot as plt

# Cell 12
def write_generated_cats_and_dogs(per_class=(150, 50)):
  """Generated stand-in for cats_and_dogs_filtered.zip, extracted beside where the zip would
  be: train/ and validation/, each with cats/ and dogs/ of JPEG images."""
  zip_dir = os.path.join(tempfile.mkdtemp(), 'cats_and_dogs_filterted.zip')
  root = os.path.join(os.path.dirname(zip_dir), 'cats_and_dogs_filtered')
  for split, count in zip(('train', 'validation'), per_class):
    for label in ('cats', 'dogs'):
      os.makedirs(os.path.join(root, split, label))
      for i in range(count):
        image = tf.random.uniform([150, 200, 3], 0, 256, dtype=tf.int32)
        tf.io.write_file(os.path.join(root, split, label, '%s.%d.jpg' % (label[:-1], i)),
                         tf.io.encode_jpeg(tf.cast(image, tf.uint8)))
  return zip_dir

_URL = 'https://download.mlcc.google.com/mledu-datasets/cats_and_dogs_filtered.zip'

zip_dir = write_generated_cats_and_dogs()

# Cell 15
base_dir = os.path.join(os.path.dirname(zip_dir), 'cats_and_dogs_filtered')
train_dir = os.path.join(base_dir, 'train')
validation_dir = os.path.join(base_dir, 'validation')

# Cell 16
train_cats_dir = os.path.join(train_dir, 'cats')  # directory with our training cat pictures
train_dogs_dir = os.path.join(train_dir, 'dogs')  # directory with our training dog pictures
validation_cats_dir = os.path.join(validation_dir, 'cats')  # directory with our validation cat pictures
validation_dogs_dir = os.path.join(validation_dir, 'dogs')  # directory with our validation dog pictures

# Cell 19
num_cats_tr = len(os.listdir(train_cats_dir))
num_dogs_tr = len(os.listdir(train_dogs_dir))

num_cats_val = len(os.listdir(validation_cats_dir))
num_dogs_val = len(os.listdir(validation_dogs_dir))

total_train = num_cats_tr + num_dogs_tr
total_val = num_cats_val + num_dogs_val

# Cell 20
print('total training cat images:', num_cats_tr)
print('total training dog images:', num_dogs_tr)

print('total validation cat images:', num_cats_val)
print('total validation dog images:', num_dogs_val)
print("--")
print("Total training images:", total_train)
print("Total validation images:", total_val)

# Cell 23
BATCH_SIZE = 32
IMG_SHAPE  = 150 # Our training data consists of images with width of 150 pixels and height of 150 pixels

# Cell 27
# This function will plot images in the form of a grid with 1 row and 5 columns where images are placed in each column.
# def plotImages(images_arr):
#     fig, axes = plt.subplots(1, 5, figsize=(20,20))
#     axes = axes.flatten()
#     for img, ax in zip(images_arr, axes):
#         ax.imshow(img)
#     plt.tight_layout()
#     plt.show()

# Cell 30
image_gen = ImageDataGenerator(rescale=1./255, horizontal_flip=True)

train_data_gen = image_gen.flow_from_directory(batch_size=BATCH_SIZE,
                                               directory=train_dir,
                                               shuffle=True,
                                               target_size=(IMG_SHAPE,IMG_SHAPE))

# Cell 32
augmented_images = [train_data_gen[0][0][0] for i in range(5)]
# plotImages(augmented_images)

# Cell 35
image_gen = ImageDataGenerator(rescale=1./255, rotation_range=45)

train_data_gen = image_gen.flow_from_directory(batch_size=BATCH_SIZE,
                                               directory=train_dir,
                                               shuffle=True,
                                               target_size=(IMG_SHAPE, IMG_SHAPE))

# Cell 37
augmented_images = [train_data_gen[0][0][0] for i in range(5)]
# plotImages(augmented_images)

# Cell 40
image_gen = ImageDataGenerator(rescale=1./255, zoom_range=0.5)

train_data_gen = image_gen.flow_from_directory(batch_size=BATCH_SIZE,
                                               directory=train_dir,
                                               shuffle=True,
                                               target_size=(IMG_SHAPE, IMG_SHAPE))


# Cell 42
augmented_images = [train_data_gen[0][0][0] for i in range(5)]
# plotImages(augmented_images)

# Cell 45
image_gen_train = ImageDataGenerator(
      rescale=1./255,
      rotation_range=40,
      width_shift_range=0.2,
      height_shift_range=0.2,
      shear_range=0.2,
      zoom_range=0.2,
      horizontal_flip=True,
      fill_mode='nearest')

train_data_gen = image_gen_train.flow_from_directory(batch_size=BATCH_SIZE,
                                                     directory=train_dir,
                                                     shuffle=True,
                                                     target_size=(IMG_SHAPE,IMG_SHAPE),
                                                     class_mode='binary')

# Cell 47
augmented_images = [train_data_gen[0][0][0] for i in range(5)]
# plotImages(augmented_images)

# Cell 50
image_gen_val = ImageDataGenerator(rescale=1./255)

val_data_gen = image_gen_val.flow_from_directory(batch_size=BATCH_SIZE,
                                                 directory=validation_dir,
                                                 target_size=(IMG_SHAPE, IMG_SHAPE),
                                                 class_mode='binary')

# Cell 53
model = tf.keras.models.Sequential([
    tf.keras.layers.Conv2D(32, (3,3), activation='relu', input_shape=(150, 150, 3)),
    tf.keras.layers.MaxPooling2D(2, 2),

    tf.keras.layers.Conv2D(64, (3,3), activation='relu'),
    tf.keras.layers.MaxPooling2D(2,2),

    tf.keras.layers.Conv2D(128, (3,3), activation='relu'),
    tf.keras.layers.MaxPooling2D(2,2),

    tf.keras.layers.Conv2D(128, (3,3), activation='relu'),
    tf.keras.layers.MaxPooling2D(2,2),

    tf.keras.layers.Dropout(0.5),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(512, activation='relu'),
    tf.keras.layers.Dense(2)
])

# Cell 55
model.compile(optimizer='adam',
              loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
              metrics=['accuracy'])

# Cell 57
model.summary()

# Cell 60
epochs=1
history = model.fit(
    train_data_gen,
    steps_per_epoch=int(np.ceil(total_train / float(BATCH_SIZE))),
    epochs=epochs,
    validation_data=val_data_gen,
    validation_steps=int(np.ceil(total_val / float(BATCH_SIZE)))
)

# Cell 63
acc = history.history['accuracy']
val_acc = history.history['val_accuracy']

loss = history.history['loss']
val_loss = history.history['val_loss']

epochs_range = range(epochs)

# plt.figure(figsize=(8, 8))
# plt.subplot(1, 2, 1)
# plt.plot(epochs_range, acc, label='Training Accuracy')
# plt.plot(epochs_range, val_acc, label='Validation Accuracy')
# plt.legend(loc='lower right')
# plt.title('Training and Validation Accuracy')

# plt.subplot(1, 2, 2)
# plt.plot(epochs_range, loss, label='Training Loss')
# plt.plot(epochs_range, val_loss, label='Validation Loss')
# plt.legend(loc='upper right')
# plt.title('Training and Validation Loss')
# plt.show()
