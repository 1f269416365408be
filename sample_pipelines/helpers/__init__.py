"""Helper modules the sample training scripts import, as real projects keep their data code."""
