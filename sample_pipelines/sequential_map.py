"""Keyword-spotting classifier trained on log-mel spectrograms of synthetic speech-like audio.

Pipeline: int16 waveforms and their word labels in memory -> shuffle -> ``map(to_features)``
(STFT, mel filter bank, log, vocabulary lookup of the label) -> batch -> prefetch.

An ``absl.app`` program: ``--epochs`` and ``--batch_size`` are ``absl.flags``.

Defect (PD102 sequential-map): ``map(to_features)`` has no ``num_parallel_calls``, so the
spectrograms are computed one waveform at a time on a single core while the others sit idle.
The label lookup goes through a ``tf.lookup.StaticHashTable``, a stateful op, so tf.data's
automatic ``map_parallelization`` rewrite cannot step in and parallelise the map for us.
"""

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_integer("epochs", 2, "Passes over the training clips.")
flags.DEFINE_integer("batch_size", 64, "Clips per training step.")

SAMPLE_RATE = 16_000
WORDS = ("yes", "no", "up", "down")
NUM_CLIPS = 2048
NUM_MEL_BINS = 40


def synthesize_clips(num_clips, seed=0):
    """One-second int16 clips: a word-specific pair of tones buried in noise, plus the word."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, len(WORDS), size=num_clips)
    t = np.arange(SAMPLE_RATE, dtype=np.float32) / SAMPLE_RATE
    base_hz = np.array([300.0, 550.0, 800.0, 1100.0], dtype=np.float32)[labels]
    jitter = rng.uniform(0.9, 1.1, size=(num_clips, 1)).astype(np.float32)
    freq = base_hz[:, None] * jitter
    clean = np.sin(2 * np.pi * freq * t) + 0.5 * np.sin(2 * np.pi * 2.7 * freq * t)
    noisy = clean + rng.normal(0.0, 0.8, size=clean.shape).astype(np.float32)
    waves = np.clip(noisy * 6000.0, -32768, 32767).astype(np.int16)
    words = np.array(WORDS)[labels]
    return waves, words


# Vocabulary of the label strings, and the mel filter bank applied to each spectrogram.
WORD_TABLE = tf.lookup.StaticHashTable(
    tf.lookup.KeyValueTensorInitializer(tf.constant(WORDS), tf.range(len(WORDS), dtype=tf.int64)),
    default_value=-1,
)
MEL_MATRIX = tf.signal.linear_to_mel_weight_matrix(
    num_mel_bins=NUM_MEL_BINS,
    num_spectrogram_bins=257,
    sample_rate=SAMPLE_RATE,
    lower_edge_hertz=20.0,
    upper_edge_hertz=4000.0,
)


def to_features(wave, word):
    """int16 waveform -> (frames, mel bins, 1) log-mel spectrogram; word -> class id."""
    audio = tf.cast(wave, tf.float32) / 32768.0
    stft = tf.signal.stft(audio, frame_length=512, frame_step=160, fft_length=512)
    mel = tf.tensordot(tf.abs(stft), MEL_MATRIX, axes=1)
    log_mel = tf.math.log(mel + 1e-6)
    return log_mel[..., tf.newaxis], WORD_TABLE.lookup(word)


def make_dataset(waves, words, batch_size):
    ds = tf.data.Dataset.from_tensor_slices((waves, words))
    ds = ds.shuffle(len(waves), seed=0)
    ds = ds.map(to_features)  # DEFECT: runs sequentially, one clip at a time
    ds = ds.batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


def build_model(input_shape):
    model = keras.Sequential(
        [
            keras.Input(shape=input_shape),
            keras.layers.Conv2D(8, (5, 3), strides=(4, 2), activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(len(WORDS)),
        ]
    )
    model.compile(
        optimizer=keras.optimizers.Adam(1e-3),
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main(argv):
    if len(argv) > 1:
        raise app.UsageError("Too many command-line arguments.")
    keras.utils.set_random_seed(0)
    waves, words = synthesize_clips(NUM_CLIPS)
    train_ds = make_dataset(waves, words, FLAGS.batch_size)
    model = build_model(train_ds.element_spec[0].shape[1:])
    model.fit(train_ds, epochs=FLAGS.epochs, verbose=2)


if __name__ == "__main__":
    app.run(main)
