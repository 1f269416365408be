"""The runs behind docs/compare.html and docs/compare.png: one model trained twice, each run
watched by the Monitor, for `pipedoctor compare`.

A logistic regression on two overlapping Gaussian blobs, at one learning rate, with a batch
of 32 (3 epochs) and a batch of 512 (20 epochs): the large batch runs many more samples per
second and needs several times the epochs, which is what `compare` is for. About a minute on
a 2-core CPU.

    python docs/compare_example.py OUT_DIR
    pipedoctor compare OUT_DIR/small OUT_DIR/large --target val_accuracy=0.85
    pipedoctor compare OUT_DIR/small OUT_DIR/large --target val_accuracy=0.85 \\
        --format html -o docs/compare.html
"""

from __future__ import annotations

import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from pipedoctor.keras import Monitor


def train(log_dir: Path | None, batch: int, epochs: int) -> None:
    """One run from the same seed; ``log_dir`` None is a warm-up run, not recorded."""
    keras.utils.set_random_seed(0)
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 16384)
    x = (rng.normal(size=(16384, 8)) + (2 * y[:, None] - 1) * 0.6).astype("float32")
    data = tf.data.Dataset.from_tensor_slices((x[:12288], y[:12288])).batch(batch)
    val = tf.data.Dataset.from_tensor_slices((x[12288:], y[12288:])).batch(256)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.SGD(0.01), "binary_crossentropy", metrics=["accuracy"])
    callbacks = [Monitor(log_dir=str(log_dir), verbose=0)] if log_dir else []
    model.fit(data, validation_data=val, epochs=epochs, verbose=0, callbacks=callbacks)


def main() -> None:
    out = Path(sys.argv[1])
    train(None, 512, 1)  # a process's first fit pays one-time costs that neither run should
    train(out / "small", 32, 3)
    train(out / "large", 512, 20)


if __name__ == "__main__":
    main()
