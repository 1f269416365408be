# Fixture for PD207 non-chief-writes.
import keras
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
with strategy.scope():
    model = keras.Sequential([keras.layers.Dense(1)])
    model.compile(optimizer=keras.optimizers.Adam(), loss="mse")

# Keras's callback writes the chief's file and sends other workers' writes to temporary ones.
# ok: PD207
checkpoint = keras.callbacks.ModelCheckpoint("/shared/ckpt.keras")
# ruleid: PD207
model.save("/shared/model.keras")


def is_chief(resolver):
    return resolver.task_type == "chief"


if strategy.cluster_resolver.task_id == 0:
    # ok: PD207
    model.save_weights("/shared/final.weights.h5")


def write_path(task_id):
    return f"/tmp/worker-{task_id}/model.keras"


# ok: PD207
model.save(write_path(strategy.cluster_resolver.task_id))
