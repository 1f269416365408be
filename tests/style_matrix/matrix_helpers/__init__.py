"""Helpers next to the style matrix's scripts: a data module and a model factory."""
