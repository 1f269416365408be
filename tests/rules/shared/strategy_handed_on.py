# Shared fixture: a strategy handed to code that uses it (here a trainer of the user's own):
# the module does not show where the model is placed, so nothing is said about its scope.
import tensorflow as tf

from trainer import Trainer

strategy = tf.distribute.MirroredStrategy()
train_ds = tf.data.Dataset.range(100).map(lambda i: (tf.cast(i, "float32"), i))
# ok: PD202
train_ds = train_ds.batch(64 * strategy.num_replicas_in_sync).prefetch(tf.data.AUTOTUNE)
# ok: PD205
model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
# ok: PD203, PD205
model.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.01), loss="mse")
Trainer(strategy).fit(model, train_ds)
