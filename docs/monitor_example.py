"""The run behind docs/monitor-report.png: a small image classifier watched by the Monitor.

Synthetic 192x192 PNGs are decoded, resized to 32x32 and brightened at random in a ``map``
without ``num_parallel_calls`` (its random op keeps TensorFlow from parallelising it on its
own, and nothing is cached, so every epoch decodes again), a validation set is evaluated after
each epoch, and a checkpoint is written at each epoch's end. On a 2-core CPU it trains for
about a minute.

    python docs/monitor_example.py OUT_DIR
    # then: pipedoctor report OUT_DIR/logs --format html -o OUT_DIR/report.html
"""

from __future__ import annotations

import sys
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf

from pipedoctor.keras import Monitor


def pngs(count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 4, size=count)
    images = (rng.random((count, 192, 192, 3)) * 64 + labels[:, None, None, None] * 48).astype(
        "uint8"
    )
    encoded = np.array([tf.io.encode_png(image).numpy() for image in images], dtype=object)
    return encoded, labels


def decode(png: tf.Tensor) -> tf.Tensor:
    image = tf.image.resize(tf.cast(tf.io.decode_png(png, 3), tf.float32) / 255, (32, 32))
    return tf.image.random_brightness(image, 0.1)


def dataset(encoded: np.ndarray, labels: np.ndarray, shuffle: bool) -> tf.data.Dataset:
    ds = tf.data.Dataset.from_tensor_slices((encoded.astype(bytes), labels))
    if shuffle:
        ds = ds.shuffle(len(labels), seed=0)
    ds = ds.map(lambda png, label: (decode(png), label))
    return ds.batch(64).prefetch(tf.data.AUTOTUNE)


def main() -> None:
    out = Path(sys.argv[1])
    keras.utils.set_random_seed(0)
    train = dataset(*pngs(4096, 0), shuffle=True)
    validation = dataset(*pngs(1024, 1), shuffle=False)
    model = keras.Sequential(
        [
            keras.Input((32, 32, 3)),
            keras.layers.Conv2D(16, 3, activation="relu"),
            keras.layers.MaxPooling2D(),
            keras.layers.Conv2D(32, 3, activation="relu"),
            keras.layers.GlobalAveragePooling2D(),
            keras.layers.Dense(4),
        ]
    )
    model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    checkpoint = keras.callbacks.ModelCheckpoint(str(out / "model.keras"))
    model.fit(
        train,
        validation_data=validation,
        epochs=4,
        verbose=2,
        callbacks=[Monitor(out / "logs"), checkpoint],
    )


if __name__ == "__main__":
    main()
