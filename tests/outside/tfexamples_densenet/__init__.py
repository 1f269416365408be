"""Helpers of tfexamples_densenet_distributed_train.py: utils.py and densenet.py from
tensorflow/examples, tensorflow_examples/models/densenet/."""
