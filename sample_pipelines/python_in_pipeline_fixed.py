"""Image classifier with an extra edge-magnitude channel (fixed twin of python_in_pipeline.py).

Pipeline: uint8 images and labels in memory -> shuffle -> ``map(edge_features)`` (per-image
standardisation plus a Sobel edge-magnitude channel) -> batch -> prefetch.
``--epochs`` and ``--batch-size`` are read with ``argparse``.

Fixed (PD108 python-in-pipeline): the same maths is written with TensorFlow ops
(``tf.image.per_image_standardization``, ``tf.image.sobel_edges``), so the map runs as a graph
function inside tf.data's C++ runtime, never touches the GIL, and ``num_parallel_calls``
really runs it on all cores.
"""

import argparse

import numpy as np

import tensorflow as tf  # isort: skip
import keras  # isort: skip

NUM_IMAGES = 4096
IMAGE_SIZE = 32
NUM_CLASSES = 4


def synthesize_images(num_images, seed=0):
    """Noisy uint8 images: the label decides whether a bright bar is horizontal or vertical,
    and whether it sits in the top/left or bottom/right half."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, NUM_CLASSES, size=num_images)
    images = rng.normal(100, 25, size=(num_images, IMAGE_SIZE, IMAGE_SIZE, 3))
    for i, label in enumerate(labels):
        offset = rng.integers(4, 12) + (16 if label % 2 else 0)
        if label < 2:
            images[i, offset : offset + 3, :, :] += 90
        else:
            images[i, :, offset : offset + 3, :] += 90
    return np.clip(images, 0, 255).astype(np.uint8), labels.astype(np.int32)


def edge_features(image, label):
    """Per-image standardisation plus Sobel edge magnitude of the grey image, in TF ops."""
    x = tf.image.per_image_standardization(image)
    gray = tf.reduce_mean(x, axis=-1, keepdims=True)
    # sobel_edges wants a batch: (1, H, W, 1) -> (1, H, W, 1, 2) holding (dy, dx).
    gradients = tf.image.sobel_edges(gray[tf.newaxis])[0]
    edges = tf.norm(gradients, axis=-1)
    return tf.concat([x, edges], axis=-1), label


def make_dataset(images, labels, batch_size):
    ds = tf.data.Dataset.from_tensor_slices((images, labels))
    ds = ds.shuffle(len(images), seed=0)
    ds = ds.map(edge_features, num_parallel_calls=tf.data.AUTOTUNE)
    ds = ds.batch(batch_size)
    return ds.prefetch(tf.data.AUTOTUNE)


def build_model():
    model = keras.Sequential(
        [
            keras.Input(shape=(IMAGE_SIZE, IMAGE_SIZE, 4)),
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


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2, help="passes over the training images")
    parser.add_argument("--batch-size", type=int, default=64, help="images per training step")
    return parser.parse_args(argv)


def main(args):
    keras.utils.set_random_seed(0)
    images, labels = synthesize_images(NUM_IMAGES)
    train_ds = make_dataset(images, labels, args.batch_size)
    model = build_model()
    model.fit(train_ds, epochs=args.epochs, verbose=2)


if __name__ == "__main__":
    main(parse_args())
