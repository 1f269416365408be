"""Helper of tfdocs_segmentation.py: pix2pix.py from tensorflow/examples,
tensorflow_examples/models/pix2pix/pix2pix.py (the tutorial imports it from the
tensorflow_examples package)."""
