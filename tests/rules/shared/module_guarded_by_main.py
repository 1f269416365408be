# Shared fixture: a module whose training runs only under `if __name__ == "__main__":`. Other
# modules may import it, so a top-level dataset it does not use may train elsewhere: assumed.
import tensorflow as tf

files = tf.io.gfile.glob("gs://bucket/cifar/test-*.tfrecord")
# ruleid[low]: PD104
test = tf.data.TFRecordDataset(files).batch(256).prefetch(tf.data.AUTOTUNE)
train = tf.data.TFRecordDataset(files, num_parallel_reads=tf.data.AUTOTUNE)
train = train.batch(256).prefetch(tf.data.AUTOTUNE)

if __name__ == "__main__":
    model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(train, epochs=30)
