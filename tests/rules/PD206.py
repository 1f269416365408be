# Fixture for PD206 python-state-metric.
import keras
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()


class CountingAccuracy(keras.metrics.Metric):
    def __init__(self, name="counting_accuracy"):
        super().__init__(name=name)
        self.correct = 0
        self.total = self.add_weight(name="total", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        # ruleid: PD206
        self.correct += 1
        # ok: PD206
        self.total.assign_add(1.0)

    def result(self):
        return self.correct / self.total


class GoodMean(keras.metrics.Metric):
    def __init__(self, name="good_mean"):
        super().__init__(name=name)
        self.total = self.add_weight(name="total", initializer="zeros")

    def update_state(self, y_true, y_pred, sample_weight=None):
        # ok: PD206
        self.total.assign_add(tf.reduce_sum(y_pred))

    def result(self):
        return self.total
