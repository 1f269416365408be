# Fixture for PD102 sequential-map.
import functools

import pandas as pd
import tensorflow as tf
from tensorflow.data import Dataset

AUTOTUNE = tf.data.AUTOTUNE


def scale(x, factor):
    return x * factor


def double(x):
    return x * 2


ds = Dataset.range(10)
# ruleid: PD102
ds = ds.map(double)
# ruleid: PD102
ds = ds.map(functools.partial(scale, factor=3), num_parallel_calls=None)
# ok: PD102
ds = ds.map(double, num_parallel_calls=AUTOTUNE)
# ok: PD102
ds = ds.map(double, AUTOTUNE)
ds = ds.prefetch(AUTOTUNE)

# Not tf.data: pandas has .map too.
frame = pd.DataFrame({"a": [1, 2]})
# ok: PD102
frame["a"] = frame["a"].map(double)


class Pipeline:
    """A user class with a map method: not a dataset."""

    def map(self, fn):
        return self


# ok: PD102
Pipeline().map(double)


def chained():
    return (
        tf.data.Dataset.from_tensor_slices([1, 2, 3])
        # ruleid: PD102
        .map(double)
        .batch(2)
        .prefetch(AUTOTUNE)
    )


def from_hf(hf_dataset):
    # Hugging Face datasets: unknown object, stays silent.
    # ok: PD102
    return hf_dataset.map(double).shuffle(3)
