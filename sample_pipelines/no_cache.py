"""Image classifier trained from PNG-encoded images held in memory.

Pipeline: PNG bytes and labels -> ``map(decode_and_resize)`` (PNG decode, resize to 32x32,
scale to [0, 1]) -> shuffle -> batch -> prefetch.

Defect (PD106 missing-cache): the decoded images never change, yet every epoch decodes and
resizes all of them again. The decoded set is small (about 12 MB), so it belongs in a
``cache()`` right after the decode map.
"""

import keras
import numpy as np
import tensorflow as tf

NUM_IMAGES = 1024
SOURCE_SIZE = 96  # stored PNGs are 96x96, the model sees 32x32
IMAGE_SIZE = 32
NUM_CLASSES = 4
BATCH_SIZE = 64
EPOCHS = 4


def synthesize_png_images(num_images, size, seed=0):
    """Noisy blocky RGB images whose brighter quadrant is the label, PNG-encoded in memory."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=num_images)
    coarse = rng.uniform(0, 150, size=(num_images, 8, 8, 3))
    half = 4
    for i, label in enumerate(labels):
        rows, cols = divmod(int(label), 2)
        coarse[i, rows * half : (rows + 1) * half, cols * half : (cols + 1) * half] += 90
    images = np.repeat(np.repeat(coarse, size // 8, axis=1), size // 8, axis=2)
    images += rng.normal(0, 10, size=images.shape)
    images = np.clip(images, 0, 255).astype(np.uint8)
    encoded = [tf.io.encode_png(image).numpy() for image in images]
    return encoded, labels.astype(np.int32)


def decode_and_resize(png, label):
    image = tf.io.decode_png(png, channels=3)
    image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE))
    return image / 255.0, label


# Build the input pipeline at import time, the way many training scripts do.
png_bytes, png_labels = synthesize_png_images(NUM_IMAGES, SOURCE_SIZE)
train_ds = tf.data.Dataset.from_tensor_slices((png_bytes, png_labels))
# DEFECT: no cache() after this map, so all PNGs are decoded and resized again every epoch.
train_ds = train_ds.map(decode_and_resize, num_parallel_calls=tf.data.AUTOTUNE)
train_ds = train_ds.shuffle(NUM_IMAGES, seed=0)
train_ds = train_ds.batch(BATCH_SIZE)
train_ds = train_ds.prefetch(tf.data.AUTOTUNE)


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 3)),
            keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            keras.layers.Flatten(),
            keras.layers.Dense(NUM_CLASSES),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main():
    keras.utils.set_random_seed(0)
    model = build_model()
    model.fit(train_ds, epochs=EPOCHS, verbose=2)


if __name__ == "__main__":
    main()
