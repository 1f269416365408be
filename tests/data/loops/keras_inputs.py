"""One job fed to `fit` in the ways Keras 3 takes besides a tf.data.Dataset: the first
argument says which (arrays, multi: a list of arrays for two inputs, pydataset, generator,
grain: a Grain dataset)."""

import sys

import numpy as np
from tensorflow import keras

kind = sys.argv[1]
xa = np.random.rand(4096, 16).astype("float32")
xb = np.random.rand(4096, 4).astype("float32")
y = np.random.randint(0, 10, 4096)


class Seq(keras.utils.PyDataset):
    def __len__(self):
        return 64

    def __getitem__(self, i):
        return xa[i * 64 : (i + 1) * 64], y[i * 64 : (i + 1) * 64]


def gen():
    while True:
        for i in range(64):
            yield xa[i * 64 : (i + 1) * 64], y[i * 64 : (i + 1) * 64]


if kind == "multi":
    a, b = keras.Input((16,)), keras.Input((4,))
    out = keras.layers.Dense(10)(keras.layers.Concatenate()([a, b]))
    model = keras.Model([a, b], out)
else:
    model = keras.Sequential(
        [keras.Input((16,)), keras.layers.Dense(64, activation="relu"), keras.layers.Dense(10)]
    )
model.compile("adam", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
if kind == "arrays":
    model.fit(xa, y, batch_size=64, epochs=2)
elif kind == "multi":
    model.fit([xa, xb], y, epochs=2)
elif kind == "pydataset":
    model.fit(Seq(), epochs=2)
elif kind == "grain":
    import grain

    rows = grain.MapDataset.source(list(zip(xa, y, strict=True))).shuffle(seed=0)
    model.fit(rows.batch(64).to_iter_dataset(), epochs=2)
else:
    model.fit(gen(), steps_per_epoch=64, epochs=2)
