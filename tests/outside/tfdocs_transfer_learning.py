# Origin: tensorflow/docs, commit 7c3650212740204359d4ceae481abc79345541be,
#   site/en/tutorials/images/transfer_learning.ipynb, written out as a script from its code
#   cells (each under a "# Cell N" line)
# Licence: Apache License 2.0 and MIT (the notebook's first two cells).
# Changes from the published cells (line numbers are this file's):
#   line 16: matplotlib (not installed) commented out, and so are the lines that only draw
#     (61-67, 92-99, 182-199, 243-262, 277-282) and plot_model (line 153, needs pydot)
#   line 19: import tempfile (added)
#   lines 23-35 (added): write_generated_cats_and_dogs() writes generated 200 x 150 JPEG
#     images into the layout of cats_and_dogs_filtered in a new temporary directory (80
#     images a class in train/ and validation/ instead of 1,000 and 500)
#   line 38: tf.keras.utils.get_file('cats_and_dogs.zip', ...) -> write_generated_cats_and_dogs()
#   line 112: MobileNetV2 weights='imagenet' (a download) -> weights=None
#   lines 45, 137, 162, 227: image sizes 160 -> 96 (IMG_SIZE, Input), both epoch counts 10 -> 1
# Cell 6
# import matplotlib.pyplot as plt
import numpy as np
import os
import tempfile
import tensorflow as tf

# Cell 10
def write_generated_cats_and_dogs(per_class=(80, 80)):
  """Generated stand-in for cats_and_dogs_filtered.zip, extracted beside where the zip would
  be: train/ and validation/, each with cats/ and dogs/ of JPEG images."""
  path_to_zip = os.path.join(tempfile.mkdtemp(), 'cats_and_dogs.zip')
  root = os.path.join(os.path.dirname(path_to_zip), 'cats_and_dogs_filtered')
  for split, count in zip(('train', 'validation'), per_class):
    for label in ('cats', 'dogs'):
      os.makedirs(os.path.join(root, split, label))
      for i in range(count):
        image = tf.random.uniform([150, 200, 3], 0, 256, dtype=tf.int32)
        tf.io.write_file(os.path.join(root, split, label, '%s.%d.jpg' % (label[:-1], i)),
                         tf.io.encode_jpeg(tf.cast(image, tf.uint8)))
  return path_to_zip

_URL = 'https://download.mlcc.google.com/mledu-datasets/cats_and_dogs_filtered.zip'
path_to_zip = write_generated_cats_and_dogs()
PATH = os.path.join(os.path.dirname(path_to_zip), 'cats_and_dogs_filtered')

train_dir = os.path.join(PATH, 'train')
validation_dir = os.path.join(PATH, 'validation')

BATCH_SIZE = 32
IMG_SIZE = (96, 96)

train_dataset = tf.keras.utils.image_dataset_from_directory(train_dir,
                                                            shuffle=True,
                                                            batch_size=BATCH_SIZE,
                                                            image_size=IMG_SIZE)

# Cell 11
validation_dataset = tf.keras.utils.image_dataset_from_directory(validation_dir,
                                                                 shuffle=True,
                                                                 batch_size=BATCH_SIZE,
                                                                 image_size=IMG_SIZE)

# Cell 13
class_names = train_dataset.class_names

# plt.figure(figsize=(10, 10))
# for images, labels in train_dataset.take(1):
#   for i in range(9):
#     ax = plt.subplot(3, 3, i + 1)
#     plt.imshow(images[i].numpy().astype("uint8"))
#     plt.title(class_names[labels[i]])
#     plt.axis("off")

# Cell 15
val_batches = tf.data.experimental.cardinality(validation_dataset)
test_dataset = validation_dataset.take(val_batches // 5)
validation_dataset = validation_dataset.skip(val_batches // 5)

# Cell 16
print('Number of validation batches: %d' % tf.data.experimental.cardinality(validation_dataset))
print('Number of test batches: %d' % tf.data.experimental.cardinality(test_dataset))

# Cell 19
AUTOTUNE = tf.data.AUTOTUNE

train_dataset = train_dataset.prefetch(buffer_size=AUTOTUNE)
validation_dataset = validation_dataset.prefetch(buffer_size=AUTOTUNE)
test_dataset = test_dataset.prefetch(buffer_size=AUTOTUNE)

# Cell 22
data_augmentation = tf.keras.Sequential([
  tf.keras.layers.RandomFlip('horizontal'),
  tf.keras.layers.RandomRotation(0.2),
])

# Cell 25
# for image, _ in train_dataset.take(1):
#   plt.figure(figsize=(10, 10))
#   first_image = image[0]
#   for i in range(9):
#     ax = plt.subplot(3, 3, i + 1)
#     augmented_image = data_augmentation(tf.expand_dims(first_image, 0))
#     plt.imshow(augmented_image[0] / 255)
#     plt.axis('off')

# Cell 27
preprocess_input = tf.keras.applications.mobilenet_v2.preprocess_input

# Cell 29
rescale = tf.keras.layers.Rescaling(1./127.5, offset=-1)

# Cell 32
# Create the base model from the pre-trained model MobileNet V2
IMG_SHAPE = IMG_SIZE + (3,)
base_model = tf.keras.applications.MobileNetV2(input_shape=IMG_SHAPE,
                                               include_top=False,
                                               weights=None)

# Cell 34
image_batch, label_batch = next(iter(train_dataset))
feature_batch = base_model(image_batch)
print(feature_batch.shape)

# Cell 38
base_model.trainable = False

# Cell 40
# Let's take a look at the base model architecture
base_model.summary()

# Cell 43
global_average_layer = tf.keras.layers.GlobalAveragePooling2D()
feature_batch_average = global_average_layer(feature_batch)
print(feature_batch_average.shape)

# Cell 45
prediction_layer = tf.keras.layers.Dense(1, activation='sigmoid')
prediction_batch = prediction_layer(feature_batch_average)
print(prediction_batch.shape)

# Cell 47
inputs = tf.keras.Input(shape=(96, 96, 3))
x = data_augmentation(inputs)
x = preprocess_input(x)
x = base_model(x, training=False)
x = global_average_layer(x)
x = tf.keras.layers.Dropout(0.2)(x)
outputs = prediction_layer(x)
model = tf.keras.Model(inputs, outputs)

# Cell 48
model.summary()

# Cell 50
len(model.trainable_variables)

# Cell 51
# tf.keras.utils.plot_model(model, show_shapes=True)

# Cell 53
base_learning_rate = 0.0001
model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate=base_learning_rate),
              loss=tf.keras.losses.BinaryCrossentropy(),
              metrics=[tf.keras.metrics.BinaryAccuracy(threshold=0.5, name='accuracy')])

# Cell 55
initial_epochs = 1

loss0, accuracy0 = model.evaluate(validation_dataset)

# Cell 56
print("initial loss: {:.2f}".format(loss0))
print("initial accuracy: {:.2f}".format(accuracy0))

# Cell 57
history = model.fit(train_dataset,
                    epochs=initial_epochs,
                    validation_data=validation_dataset)

# Cell 59
acc = history.history['accuracy']
val_acc = history.history['val_accuracy']

loss = history.history['loss']
val_loss = history.history['val_loss']

# plt.figure(figsize=(8, 8))
# plt.subplot(2, 1, 1)
# plt.plot(acc, label='Training Accuracy')
# plt.plot(val_acc, label='Validation Accuracy')
# plt.legend(loc='lower right')
# plt.ylabel('Accuracy')
# plt.ylim([min(plt.ylim()),1])
# plt.title('Training and Validation Accuracy')

# plt.subplot(2, 1, 2)
# plt.plot(loss, label='Training Loss')
# plt.plot(val_loss, label='Validation Loss')
# plt.legend(loc='upper right')
# plt.ylabel('Cross Entropy')
# plt.ylim([0,1.0])
# plt.title('Training and Validation Loss')
# plt.xlabel('epoch')
# plt.show()

# Cell 64
base_model.trainable = True

# Cell 65
# Let's take a look to see how many layers are in the base model
print("Number of layers in the base model: ", len(base_model.layers))

# Fine-tune from this layer onwards
fine_tune_at = 100

# Freeze all the layers before the `fine_tune_at` layer
for layer in base_model.layers[:fine_tune_at]:
  layer.trainable = False

# Cell 67
model.compile(loss=tf.keras.losses.BinaryCrossentropy(),
              optimizer = tf.keras.optimizers.RMSprop(learning_rate=base_learning_rate/10),
              metrics=[tf.keras.metrics.BinaryAccuracy(threshold=0.5, name='accuracy')])

# Cell 68
model.summary()

# Cell 69
len(model.trainable_variables)

# Cell 72
fine_tune_epochs = 1
total_epochs =  initial_epochs + fine_tune_epochs

history_fine = model.fit(train_dataset,
                         epochs=total_epochs,
                         initial_epoch=len(history.epoch),
                         validation_data=validation_dataset)

# Cell 75
acc += history_fine.history['accuracy']
val_acc += history_fine.history['val_accuracy']

loss += history_fine.history['loss']
val_loss += history_fine.history['val_loss']

# Cell 76
# plt.figure(figsize=(8, 8))
# plt.subplot(2, 1, 1)
# plt.plot(acc, label='Training Accuracy')
# plt.plot(val_acc, label='Validation Accuracy')
# plt.ylim([0.8, 1])
# plt.plot([initial_epochs-1,initial_epochs-1],
#           plt.ylim(), label='Start Fine Tuning')
# plt.legend(loc='lower right')
# plt.title('Training and Validation Accuracy')

# plt.subplot(2, 1, 2)
# plt.plot(loss, label='Training Loss')
# plt.plot(val_loss, label='Validation Loss')
# plt.ylim([0, 1.0])
# plt.plot([initial_epochs-1,initial_epochs-1],
#          plt.ylim(), label='Start Fine Tuning')
# plt.legend(loc='upper right')
# plt.title('Training and Validation Loss')
# plt.xlabel('epoch')
# plt.show()

# Cell 79
loss, accuracy = model.evaluate(test_dataset)
print('Test accuracy :', accuracy)

# Cell 81
# Retrieve a batch of images from the test set
image_batch, label_batch = test_dataset.as_numpy_iterator().next()
predictions = model.predict_on_batch(image_batch).flatten()
predictions = tf.where(predictions < 0.5, 0, 1)

print('Predictions:\n', predictions.numpy())
print('Labels:\n', label_batch)

# plt.figure(figsize=(10, 10))
# for i in range(9):
#   ax = plt.subplot(3, 3, i + 1)
#   plt.imshow(image_batch[i].astype("uint8"))
#   plt.title(class_names[predictions[i]])
#   plt.axis("off")
