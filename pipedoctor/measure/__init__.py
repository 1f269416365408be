"""Measured diagnosis: what a live training run does, sampled while it runs.

Everything here is optional at import time: TensorFlow, psutil and NVML are imported only when
a measurement starts, so ``pipedoctor lint`` never pays for them.
"""
