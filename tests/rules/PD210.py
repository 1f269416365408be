# Fixture for PD210 autoshard-data.
import tensorflow as tf

strategy = tf.distribute.MultiWorkerMirroredStrategy()
options = tf.data.Options()
# ruleid: PD210
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
# ok: PD210
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.FILE
# ruleid: PD210
options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
