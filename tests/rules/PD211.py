# Fixture for PD211 set-distribution-after-build.
import os

os.environ["KERAS_BACKEND"] = "jax"

import keras
from keras.distribution import DataParallel, ModelParallel, set_distribution


def build():
    return keras.Sequential([keras.Input((8,)), keras.layers.Dense(1)])


encoder = keras.Sequential([keras.Input((8,)), keras.layers.Dense(4)])
# ruleid: PD211
keras.distribution.set_distribution(DataParallel())
# A model a helper builds after the distribution is set is laid out on the mesh.
model = build()
model.compile(optimizer=keras.optimizers.Adam(), loss="mse")
# Only the first call is judged: models built between two calls were built under one.
# ok: PD211
set_distribution(ModelParallel(layout_map=layout_map))
