"""Helper of tfdocs_multi_worker_with_ctl.py: mnist.py from tensorflow/docs,
site/en/tutorials/distribute/multi_worker_with_ctl.ipynb."""
