# Shared fixture: a strategy created and never entered (the first mistake the guides warn of).
# The script builds, compiles and fits outside `strategy.scope()`: training runs on one device,
# with a batch and a learning rate not sized for the replicas it meant to use.
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
print("replicas:", strategy.num_replicas_in_sync)

(x_train, y_train), _ = tf.keras.datasets.mnist.load_data()
x_train = x_train.reshape(-1, 784).astype("float32") / 255.0
train_ds = tf.data.Dataset.from_tensor_slices((x_train, y_train))
# ruleid[medium]: PD202
train_ds = train_ds.shuffle(10000).batch(64).prefetch(tf.data.AUTOTUNE)

# ruleid[medium]: PD205
model = tf.keras.Sequential(
    [tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(10)]
)
model.compile(
    # ruleid[medium]: PD205
    # the rate is PD202's to scale, with the constant batch above
    # ok: PD203
    optimizer=tf.keras.optimizers.SGD(learning_rate=0.01),
    loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
    metrics=["accuracy"],
)
model.fit(train_ds, epochs=5)
