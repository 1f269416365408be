# Shared fixture: a model built by another package's function, compiled in a strategy's scope
# and fit after it, as the Keras distributed-training guide writes it: `fit` distributes the
# dataset, and the strategy's iterator prefetches each replica's batches. A model compiled
# outside every scope trains on one device, so its pipeline still needs the prefetch.
import resnet
import tensorflow as tf
import tensorflow_datasets as tfds

strategy = tf.distribute.MirroredStrategy()
train, test = tfds.load("cifar10", split=["train", "test"], as_supervised=True)


def preprocess(image, label):
    return tf.image.per_image_standardization(image), label


train = train.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).cache().shuffle(10_000)
# ok: PD101
train = train.batch(64 * strategy.num_replicas_in_sync)

with strategy.scope():
    model = resnet.resnet_mini(classes=10)
    model.compile(loss="sparse_categorical_crossentropy", optimizer="adam")

model.fit(train, epochs=12)

test = test.map(preprocess, num_parallel_calls=tf.data.AUTOTUNE).cache().repeat()
# ruleid: PD101
test = test.batch(64)
single = resnet.resnet_mini(classes=10)
single.compile(loss="sparse_categorical_crossentropy", optimizer="adam")
single.fit(test, epochs=3, steps_per_epoch=500)
