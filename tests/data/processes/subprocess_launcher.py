"""A launcher that trains in a child Python process, as multi-worker helpers do."""

import subprocess
import sys
from pathlib import Path

subprocess.run(["git", "--version"], capture_output=True)  # no Python: let through
subprocess.run([sys.executable, str(Path(__file__).with_name("trainer.py")), "model.keras"])
