# Origin: tensorflow/docs, commit 7c3650212740204359d4ceae481abc79345541be,
#   site/en/tutorials/audio/simple_audio.ipynb, written out as a script from its code cells
#   (each under a "# Cell N" line; cell 6, "!pip install ...", is left out)
# Licence: Apache License 2.0 (the notebook's first cell).
# Changes from the published cells (line numbers are this file's):
#   lines 23 and 25: matplotlib and seaborn (not installed) commented out, and so are the
#     lines that only draw plots (97-107, 150-159, 177-189, 242-256, 271-279 and 282-296)
#   line 21: import tempfile (added)
#   lines 38-47 (added): write_generated_commands() writes generated 16 kHz mono WAV
#     files of up to one second into one folder per command (48 per command instead of
#     1,000), and a README.md, in the layout of mini_speech_commands
#   line 49: DATASET_PATH 'data/mini_speech_commands' -> the same path under a new
#     temporary directory
#   line 53: tf.keras.utils.get_file(... mini_speech_commands.zip ...) (5 lines) ->
#     write_generated_commands(data_dir)
#   line 233: EPOCHS = 10 -> 1
#   lines 334-336: the SavedModel directory "saved" -> "saved" in a new temporary directory
# Cell 7
import os
import pathlib
import tempfile

# import matplotlib.pyplot as plt
import numpy as np
# import seaborn as sns
import tensorflow as tf

from tensorflow.keras import layers
from tensorflow.keras import models
from IPython import display

# Set the seed value for experiment reproducibility.
seed = 42
tf.random.set_seed(seed)
np.random.seed(seed)

# Cell 9
def write_generated_commands(data_dir, per_command=48):
  """Generated stand-in for mini_speech_commands: a folder per command of 16 kHz mono
  16-bit WAV files of up to one second, and a README.md."""
  for command in ['down', 'go', 'left', 'no', 'right', 'stop', 'up', 'yes']:
    os.makedirs(data_dir / command)
    for i in range(per_command):
      audio = tf.random.uniform([np.random.randint(12000, 16001), 1], -0.5, 0.5)
      name = '%08x_nohash_%d.wav' % (0x01bb6a2a + i, i % 3)
      tf.io.write_file(str(data_dir / command / name), tf.audio.encode_wav(audio, 16000))
  (data_dir / 'README.md').write_text('generated\n')

DATASET_PATH = os.path.join(tempfile.mkdtemp(), 'data/mini_speech_commands')

data_dir = pathlib.Path(DATASET_PATH)
if not data_dir.exists():
  write_generated_commands(data_dir)

# Cell 11
commands = np.array(tf.io.gfile.listdir(str(data_dir)))
commands = commands[(commands != 'README.md') & (commands != '.DS_Store')]
print('Commands:', commands)

# Cell 13
train_ds, val_ds = tf.keras.utils.audio_dataset_from_directory(
    directory=data_dir,
    batch_size=64,
    validation_split=0.2,
    seed=0,
    output_sequence_length=16000,
    subset='both')

label_names = np.array(train_ds.class_names)
print()
print("label names:", label_names)

# Cell 15
train_ds.element_spec

# Cell 17
def squeeze(audio, labels):
  audio = tf.squeeze(audio, axis=-1)
  return audio, labels

train_ds = train_ds.map(squeeze, tf.data.AUTOTUNE)
val_ds = val_ds.map(squeeze, tf.data.AUTOTUNE)

# Cell 19
test_ds = val_ds.shard(num_shards=2, index=0)
val_ds = val_ds.shard(num_shards=2, index=1)

# Cell 20
for example_audio, example_labels in train_ds.take(1):  
  print(example_audio.shape)
  print(example_labels.shape)

# Cell 22
label_names[[1,1,3,0]]

# Cell 23
# plt.figure(figsize=(16, 10))
# rows = 3
# cols = 3
# n = rows * cols
# for i in range(n):
#   plt.subplot(rows, cols, i+1)
#   audio_signal = example_audio[i]
#   plt.plot(audio_signal)
#   plt.title(label_names[example_labels[i]])
#   plt.yticks(np.arange(-1.2, 1.2, 0.2))
#   plt.ylim([-1.1, 1.1])

# Cell 25
def get_spectrogram(waveform):
  # Convert the waveform to a spectrogram via a STFT.
  spectrogram = tf.signal.stft(
      waveform, frame_length=255, frame_step=128)
  # Obtain the magnitude of the STFT.
  spectrogram = tf.abs(spectrogram)
  # Add a `channels` dimension, so that the spectrogram can be used
  # as image-like input data with convolution layers (which expect
  # shape (`batch_size`, `height`, `width`, `channels`).
  spectrogram = spectrogram[..., tf.newaxis]
  return spectrogram

# Cell 27
for i in range(3):
  label = label_names[example_labels[i]]
  waveform = example_audio[i]
  spectrogram = get_spectrogram(waveform)

  print('Label:', label)
  print('Waveform shape:', waveform.shape)
  print('Spectrogram shape:', spectrogram.shape)
  print('Audio playback')
  display.display(display.Audio(waveform, rate=16000))

# Cell 29
def plot_spectrogram(spectrogram, ax):
  if len(spectrogram.shape) > 2:
    assert len(spectrogram.shape) == 3
    spectrogram = np.squeeze(spectrogram, axis=-1)
  # Convert the frequencies to log scale and transpose, so that the time is
  # represented on the x-axis (columns).
  # Add an epsilon to avoid taking a log of zero.
  log_spec = np.log(spectrogram.T + np.finfo(float).eps)
  height = log_spec.shape[0]
  width = log_spec.shape[1]
  X = np.linspace(0, np.size(spectrogram), num=width, dtype=int)
  Y = range(height)
  ax.pcolormesh(X, Y, log_spec)

# Cell 31
# fig, axes = plt.subplots(2, figsize=(12, 8))
# timescale = np.arange(waveform.shape[0])
# axes[0].plot(timescale, waveform.numpy())
# axes[0].set_title('Waveform')
# axes[0].set_xlim([0, 16000])

# plot_spectrogram(spectrogram.numpy(), axes[1])
# axes[1].set_title('Spectrogram')
# plt.suptitle(label.title())
# plt.show()

# Cell 33
def make_spec_ds(ds):
  return ds.map(
      map_func=lambda audio,label: (get_spectrogram(audio), label),
      num_parallel_calls=tf.data.AUTOTUNE)

# Cell 34
train_spectrogram_ds = make_spec_ds(train_ds)
val_spectrogram_ds = make_spec_ds(val_ds)
test_spectrogram_ds = make_spec_ds(test_ds)

# Cell 36
for example_spectrograms, example_spect_labels in train_spectrogram_ds.take(1):
  break

# Cell 37
# rows = 3
# cols = 3
# n = rows*cols
# fig, axes = plt.subplots(rows, cols, figsize=(16, 9))

# for i in range(n):
#     r = i // cols
#     c = i % cols
#     ax = axes[r][c]
#     plot_spectrogram(example_spectrograms[i].numpy(), ax)
#     ax.set_title(label_names[example_spect_labels[i].numpy()])

# plt.show()

# Cell 40
train_spectrogram_ds = train_spectrogram_ds.cache().shuffle(10000).prefetch(tf.data.AUTOTUNE)
val_spectrogram_ds = val_spectrogram_ds.cache().prefetch(tf.data.AUTOTUNE)
test_spectrogram_ds = test_spectrogram_ds.cache().prefetch(tf.data.AUTOTUNE)

# Cell 42
input_shape = example_spectrograms.shape[1:]
print('Input shape:', input_shape)
num_labels = len(label_names)

# Instantiate the `tf.keras.layers.Normalization` layer.
norm_layer = layers.Normalization()
# Fit the state of the layer to the spectrograms
# with `Normalization.adapt`.
norm_layer.adapt(data=train_spectrogram_ds.map(map_func=lambda spec, label: spec))

model = models.Sequential([
    layers.Input(shape=input_shape),
    # Downsample the input.
    layers.Resizing(32, 32),
    # Normalize.
    norm_layer,
    layers.Conv2D(32, 3, activation='relu'),
    layers.Conv2D(64, 3, activation='relu'),
    layers.MaxPooling2D(),
    layers.Dropout(0.25),
    layers.Flatten(),
    layers.Dense(128, activation='relu'),
    layers.Dropout(0.5),
    layers.Dense(num_labels),
])

model.summary()

# Cell 44
model.compile(
    optimizer=tf.keras.optimizers.Adam(),
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=['accuracy'],
)

# Cell 46
EPOCHS = 1
history = model.fit(
    train_spectrogram_ds,
    validation_data=val_spectrogram_ds,
    epochs=EPOCHS,
    callbacks=tf.keras.callbacks.EarlyStopping(verbose=1, patience=2),
)

# Cell 48
# metrics = history.history
# plt.figure(figsize=(16,6))
# plt.subplot(1,2,1)
# plt.plot(history.epoch, metrics['loss'], metrics['val_loss'])
# plt.legend(['loss', 'val_loss'])
# plt.ylim([0, max(plt.ylim())])
# plt.xlabel('Epoch')
# plt.ylabel('Loss [CrossEntropy]')

# plt.subplot(1,2,2)
# plt.plot(history.epoch, 100*np.array(metrics['accuracy']), 100*np.array(metrics['val_accuracy']))
# plt.legend(['accuracy', 'val_accuracy'])
# plt.ylim([0, 100])
# plt.xlabel('Epoch')
# plt.ylabel('Accuracy [%]')

# Cell 50
model.evaluate(test_spectrogram_ds, return_dict=True)

# Cell 52
y_pred = model.predict(test_spectrogram_ds)

# Cell 53
y_pred = tf.argmax(y_pred, axis=1)

# Cell 54
y_true = tf.concat(list(test_spectrogram_ds.map(lambda s,lab: lab)), axis=0)

# Cell 55
confusion_mtx = tf.math.confusion_matrix(y_true, y_pred)
# plt.figure(figsize=(10, 8))
# sns.heatmap(confusion_mtx,
#             xticklabels=label_names,
#             yticklabels=label_names,
#             annot=True, fmt='g')
# plt.xlabel('Prediction')
# plt.ylabel('Label')
# plt.show()

# Cell 57
x = data_dir/'no/01bb6a2a_nohash_0.wav'
x = tf.io.read_file(str(x))
x, sample_rate = tf.audio.decode_wav(x, desired_channels=1, desired_samples=16000,)
x = tf.squeeze(x, axis=-1)
waveform = x
x = get_spectrogram(x)
x = x[tf.newaxis,...]

prediction = model(x)
x_labels = ['no', 'yes', 'down', 'go', 'left', 'up', 'right', 'stop']
# plt.bar(x_labels, tf.nn.softmax(prediction[0]))
# plt.title('No')
# plt.show()

display.display(display.Audio(waveform, rate=16000))

# Cell 61
class ExportModel(tf.Module):
  def __init__(self, model):
    self.model = model

    # Accept either a string-filename or a batch of waveforms.
    # You could add additional signatures for a single wave, or a ragged-batch. 
    self.__call__.get_concrete_function(
        x=tf.TensorSpec(shape=(), dtype=tf.string))
    self.__call__.get_concrete_function(
       x=tf.TensorSpec(shape=[None, 16000], dtype=tf.float32))


  @tf.function
  def __call__(self, x):
    # If they pass a string, load the file and decode it. 
    if x.dtype == tf.string:
      x = tf.io.read_file(x)
      x, _ = tf.audio.decode_wav(x, desired_channels=1, desired_samples=16000,)
      x = tf.squeeze(x, axis=-1)
      x = x[tf.newaxis, :]
    
    x = get_spectrogram(x)  
    result = self.model(x, training=False)
    
    class_ids = tf.argmax(result, axis=-1)
    class_names = tf.gather(label_names, class_ids)
    return {'predictions':result,
            'class_ids': class_ids,
            'class_names': class_names}

# Cell 63
export = ExportModel(model)
export(tf.constant(str(data_dir/'no/01bb6a2a_nohash_0.wav')))

# Cell 65
saved = os.path.join(tempfile.mkdtemp(), "saved")
tf.saved_model.save(export, saved)
imported = tf.saved_model.load(saved)
imported(waveform[tf.newaxis, :])
