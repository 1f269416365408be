"""Image classifier trained from a folder of PNG files, one sub-folder per class.

At start-up the script writes a synthetic image set as PNG files into ``<tmp>/flowers/<class>/``,
the layout ``tf.keras.utils.image_dataset_from_directory`` reads (as in the Keras image
classification tutorial). Training reads the folder through that factory.

Pipeline: ``image_dataset_from_directory`` (lists the files, shuffles them, loads, decodes and
resizes each image, batches, prefetches) -> ``fit``.

Defect (PD106 missing-cache): the factory decodes and resizes every PNG again on every epoch.
Its own shuffle comes before the decode, so a ``cache()`` on the factory's output would replay
the first epoch's order (PD107). The fix creates the dataset unshuffled and unbatched, then
caches, shuffles with the same buffer the factory used (eight batches) and batches.
"""

import os
import tempfile

import numpy as np
import tensorflow as tf

CLASSES = ("daisy", "rose", "tulip", "sunflower")
IMAGES_PER_CLASS = 500
SOURCE_SIZE = 96
IMAGE_SIZE = (64, 64)
BATCH_SIZE = 32
EPOCHS = 3


def write_image_folder(root, seed=0):
    """PNG files in one folder per class; each class has its own dominant colour channel."""
    rng = np.random.default_rng(seed)
    for index, name in enumerate(CLASSES):
        folder = os.path.join(root, name)
        os.makedirs(folder)
        for i in range(IMAGES_PER_CLASS):
            image = rng.integers(0, 120, size=(SOURCE_SIZE, SOURCE_SIZE, 3))
            image[..., index % 3] += 100 + 20 * (index // 3)
            png = tf.io.encode_png(np.clip(image, 0, 255).astype(np.uint8))
            tf.io.write_file(os.path.join(folder, f"{i:04d}.png"), png)


def build_model():
    model = tf.keras.Sequential(
        [
            tf.keras.Input(shape=(*IMAGE_SIZE, 3)),
            tf.keras.layers.Rescaling(1.0 / 255),
            tf.keras.layers.Conv2D(16, 3, strides=2, activation="relu"),
            tf.keras.layers.Conv2D(32, 3, strides=2, activation="relu"),
            tf.keras.layers.GlobalAveragePooling2D(),
            tf.keras.layers.Dense(len(CLASSES)),
        ]
    )
    model.compile(
        optimizer="adam",
        loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
        metrics=["accuracy"],
    )
    return model


def main():
    tf.keras.utils.set_random_seed(0)
    with tempfile.TemporaryDirectory(prefix="image_folder_") as data_dir:
        root = os.path.join(data_dir, "flowers")
        write_image_folder(root)
        # DEFECT: the factory decodes every PNG on every epoch, and nothing caches the result.
        train_ds = tf.keras.utils.image_dataset_from_directory(
            root, image_size=IMAGE_SIZE, batch_size=BATCH_SIZE, seed=123
        )
        model = build_model()
        model.fit(train_ds, epochs=EPOCHS, verbose=2)


if __name__ == "__main__":
    main()
