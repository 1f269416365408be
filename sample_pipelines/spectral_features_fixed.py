"""Vibration-sensor classifier on log-mel features of raw signals.

The features come from a helper module (``helpers/spectra.py``), as in projects that keep their
data code apart: this script only calls ``make_cached_dataset``.

Pipeline (in the helper): signals and labels in memory -> ``map(log_mel_features)`` -> cache ->
shuffle -> repeat -> batch -> prefetch.

Fixed (PD106 missing-cache): the features are computed once, cached (4,096 examples of 29x40
float32: about 19 MB), then shuffled and repeated, so later epochs read them from memory.
"""

import numpy as np

NUM_SIGNALS = 4096
SIGNAL_LENGTH = 2048
NUM_CLASSES = 3
BATCH_SIZE = 128
STEPS_PER_EPOCH = NUM_SIGNALS // BATCH_SIZE
EPOCHS = 3


def synthetic_signals(count, seed=0):
    """Noisy tones whose pitch band is the label."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=count)
    t = np.arange(SIGNAL_LENGTH) / 8000.0
    pitch = 300.0 + 900.0 * labels[:, None] + rng.uniform(-100, 100, size=(count, 1))
    signals = np.sin(2 * np.pi * pitch * t) + rng.normal(0, 0.5, size=(count, SIGNAL_LENGTH))
    return signals.astype(np.float32), labels.astype(np.int32)


def main():
    # TensorFlow and Keras load only once training starts; the helper brings TensorFlow in first.
    from helpers.spectra import make_cached_dataset  # isort: skip
    import keras  # isort: skip

    keras.utils.set_random_seed(0)
    signals, labels = synthetic_signals(NUM_SIGNALS)
    train_ds = make_cached_dataset(signals, labels, BATCH_SIZE)
    features, _ = train_ds.element_spec
    model = keras.Sequential(
        [
            keras.Input(shape=features.shape[1:]),
            keras.layers.Conv1D(32, 5, activation="relu"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    model.fit(train_ds, epochs=EPOCHS, steps_per_epoch=STEPS_PER_EPOCH, verbose=2)


if __name__ == "__main__":
    main()
