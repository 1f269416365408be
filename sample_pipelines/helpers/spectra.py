"""Input pipelines for the vibration-sensor classifier: log-mel features of raw signals.

Kept apart from the training script, the way projects keep their ``data.py``: the scripts call
``make_dataset`` (or its cached variant) and never see the stages inside.
"""

import tensorflow as tf

SAMPLE_RATE = 8000
FRAME_LENGTH = 256
FRAME_STEP = 64
NUM_MEL_BINS = 40

MEL_MATRIX = tf.signal.linear_to_mel_weight_matrix(
    num_mel_bins=NUM_MEL_BINS,
    num_spectrogram_bins=FRAME_LENGTH // 2 + 1,
    sample_rate=SAMPLE_RATE,
    lower_edge_hertz=20.0,
    upper_edge_hertz=SAMPLE_RATE / 2,
)


def log_mel_features(signal, label):
    """Framed FFT, mel filter bank, log: the same numbers for the same signal, every time."""
    spectrogram = tf.abs(tf.signal.stft(signal, frame_length=FRAME_LENGTH, frame_step=FRAME_STEP))
    mel = tf.tensordot(spectrogram, MEL_MATRIX, 1)
    log_mel = tf.math.log(mel + 1e-6)
    normalized = (log_mel - tf.reduce_mean(log_mel)) / (tf.math.reduce_std(log_mel) + 1e-6)
    return normalized, label


def make_dataset(signals, labels, batch_size):
    """An endless, shuffled stream of feature batches for ``fit(..., steps_per_epoch=...)``."""
    ds = tf.data.Dataset.from_tensor_slices((signals, labels))
    ds = ds.shuffle(len(signals)).repeat()
    ds = ds.map(log_mel_features, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE)


def make_cached_dataset(signals, labels, batch_size):
    """As ``make_dataset``, with the features computed once and cached before the shuffle and
    the repeat, so later epochs read them from memory."""
    ds = tf.data.Dataset.from_tensor_slices((signals, labels))
    ds = ds.map(log_mel_features, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.cache()
    ds = ds.shuffle(len(signals)).repeat()
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(tf.data.AUTOTUNE)
