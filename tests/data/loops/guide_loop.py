"""A custom loop as Keras's "training loop from scratch" guide writes one: no strategy, a
`tf.function` step, `for ... in enumerate(train_dataset)`; saves the model when it ends. Its
map sorts each example, so the pipeline (about 7,000 samples/s here) is well under the
model's ceiling (about 23,000): clearly input-bound, never on the verdict's threshold."""

import tensorflow as tf  # isort: skip
import keras  # isort: skip
import numpy as np


def get_model():
    inputs = keras.Input(shape=(784,), name="digits")
    x = keras.layers.Dense(64, activation="relu")(inputs)
    x = keras.layers.Dense(64, activation="relu")(x)
    outputs = keras.layers.Dense(10, name="predictions")(x)
    return keras.Model(inputs=inputs, outputs=outputs)


def main():
    model = get_model()
    optimizer = keras.optimizers.Adam(learning_rate=1e-3)
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    x_train = np.random.rand(20000, 784).astype("float32")
    y_train = np.random.randint(0, 10, 20000)
    train_dataset = tf.data.Dataset.from_tensor_slices((x_train, y_train))
    train_dataset = (
        train_dataset.shuffle(buffer_size=1024).map(lambda a, b: (tf.sqrt(tf.sort(a)), b)).batch(64)
    )

    @tf.function
    def train_step(x, y):
        with tf.GradientTape() as tape:
            logits = model(x, training=True)
            loss_value = loss_fn(y, logits)
        grads = tape.gradient(loss_value, model.trainable_weights)
        optimizer.apply_gradients(zip(grads, model.trainable_weights, strict=False))
        return loss_value

    for _epoch in range(2):
        for step, (x_batch_train, y_batch_train) in enumerate(train_dataset):
            loss_value = train_step(x_batch_train, y_batch_train)
            if step % 100 == 0:
                print("step", step, float(loss_value))
    model.save("model.keras")


if __name__ == "__main__":
    main()
