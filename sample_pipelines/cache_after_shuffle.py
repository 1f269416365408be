"""Image classifier trained from PNG-encoded images held in memory, decoded once and cached.

Pipeline: PNG bytes and labels -> shuffle -> ``map(decode_and_resize)`` -> cache -> batch ->
prefetch. Everything, the imports included, happens inside ``main()``.

Defect (PD107 cache-after-random): the ``shuffle`` sits *before* the ``cache()``. The cache is
filled during the first epoch and replayed verbatim afterwards, so the order the shuffle drew
in epoch 1 is frozen: every later epoch sees exactly the same sequence of batches, and the
model trains on the same batch compositions over and over. (Shuffling the cheap PNG bytes
before decoding looks like a saving, but the cache makes it a one-off.)
"""

NUM_IMAGES = 2048
SOURCE_SIZE = 64
IMAGE_SIZE = 32
NUM_CLASSES = 4
BATCH_SIZE = 64


def main():
    import numpy as np
    import tensorflow as tf  # isort: skip
    import keras  # isort: skip

    def synthesize_png_images(num_images, size, seed=0):
        """Noisy blocky RGB images whose brighter quadrant is the label, PNG-encoded in memory."""
        rng = np.random.default_rng(seed)
        labels = rng.integers(0, NUM_CLASSES, size=num_images)
        coarse = rng.uniform(0, 150, size=(num_images, 8, 8, 3))
        for i, label in enumerate(labels):
            rows, cols = divmod(int(label), 2)
            coarse[i, rows * 4 : (rows + 1) * 4, cols * 4 : (cols + 1) * 4] += 90
        images = np.repeat(np.repeat(coarse, size // 8, axis=1), size // 8, axis=2)
        images += rng.normal(0, 10, size=images.shape)
        images = np.clip(images, 0, 255).astype(np.uint8)
        encoded = [tf.io.encode_png(image).numpy() for image in images]
        return encoded, labels.astype(np.int32)

    def decode_and_resize(png, label):
        image = tf.io.decode_png(png, channels=3)
        image = tf.image.resize(image, (IMAGE_SIZE, IMAGE_SIZE))
        return image / 255.0, label

    keras.utils.set_random_seed(0)
    pngs, labels = synthesize_png_images(NUM_IMAGES, SOURCE_SIZE)

    train_ds = tf.data.Dataset.from_tensor_slices((pngs, labels))
    # DEFECT: shuffled before the cache, so the first epoch's order is replayed every epoch.
    train_ds = train_ds.shuffle(len(pngs), seed=0)
    train_ds = train_ds.map(decode_and_resize, num_parallel_calls=tf.data.AUTOTUNE)
    train_ds = train_ds.cache()
    train_ds = train_ds.batch(BATCH_SIZE)
    train_ds = train_ds.prefetch(tf.data.AUTOTUNE)

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
    model.fit(train_ds, epochs=3, verbose=2)


if __name__ == "__main__":
    main()
