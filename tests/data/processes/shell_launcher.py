"""A launcher that trains through a shell command line, as job scripts and notebooks do."""

import shlex
import subprocess
import sys

subprocess.run("nvidia-smi -L || true", shell=True, capture_output=True)  # no Python: let through
python = shlex.quote(sys.executable)
subprocess.run(f"cd . && TF_CPP_MIN_LOG_LEVEL=2 {python} trainer.py model.keras", shell=True)
