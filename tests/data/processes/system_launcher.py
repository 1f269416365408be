"""A launcher that trains through ``os.system``, as older scripts do."""

import os
import shlex
import sys

os.system(f"nohup {shlex.quote(sys.executable)} trainer.py model.keras")
