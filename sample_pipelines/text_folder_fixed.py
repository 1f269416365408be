"""Review classifier trained from a folder of text files (fixed twin of text_folder.py).

Pipeline: ``keras.utils.text_dataset_from_directory(shuffle=False)`` (read, batch of 32) ->
parallel ``map(vectorize_text)`` -> unbatch -> cache -> shuffle of every review -> batch of 32 ->
prefetch.

Fixed (PD106 missing-cache): the tokenised reviews are cached, so only the first epoch reads
the files and runs the vectoriser. The vectoriser still runs on the same batches once (it
treats each row on its own); its rows are unbatched into the cache and batched again after a
shuffle of all of them every epoch, in place of the factory's own shuffle, which would sit
before the cache and freeze one epoch's order.
"""

import os
import random
import tempfile

import keras
import tensorflow as tf

VOCABULARY = 5000
SEQUENCE_LENGTH = 250
REVIEWS_PER_CLASS = 1500
BATCH_SIZE = 32
EPOCHS = 4


def write_reviews(root, per_class=REVIEWS_PER_CLASS, seed=0):
    """Two folders of made-up reviews of 80 to 300 words over a fixed vocabulary."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(VOCABULARY)]
    for label in ("negative", "positive"):
        os.makedirs(os.path.join(root, label))
        for i in range(per_class):
            text = " ".join(rng.choice(words) for _ in range(rng.randint(80, 300)))
            with open(os.path.join(root, label, f"{i}.txt"), "w") as f:
                f.write(text)


def build_model():
    model = keras.Sequential([
        keras.Input((SEQUENCE_LENGTH,), dtype="int64"),
        keras.layers.Embedding(VOCABULARY + 1, 16),
        keras.layers.GlobalAveragePooling1D(),
        keras.layers.Dense(1),
    ])  # fmt: skip
    model.compile(optimizer="adam", loss=keras.losses.BinaryCrossentropy(from_logits=True))
    return model


def main():
    with tempfile.TemporaryDirectory() as root:
        write_reviews(root)
        raw_train = keras.utils.text_dataset_from_directory(
            root, batch_size=BATCH_SIZE, shuffle=False
        )
        vectorize = keras.layers.TextVectorization(
            max_tokens=VOCABULARY, output_sequence_length=SEQUENCE_LENGTH
        )
        vectorize.adapt(raw_train.map(lambda text, label: text))

        def vectorize_text(text, label):
            return vectorize(tf.expand_dims(text, -1)), label

        reviews = (
            raw_train.map(vectorize_text, num_parallel_calls=tf.data.AUTOTUNE).unbatch().cache()
        )
        train = reviews.shuffle(2 * REVIEWS_PER_CLASS).batch(BATCH_SIZE).prefetch(tf.data.AUTOTUNE)
        build_model().fit(train, epochs=EPOCHS)


if __name__ == "__main__":
    main()
