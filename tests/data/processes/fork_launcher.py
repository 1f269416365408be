"""Training in a child made with os.fork, while the parent cleans up old checkpoints."""

import os
import shutil
from pathlib import Path

pid = os.fork()
if pid == 0:
    Path("model.keras").write_text("weights trained for real")
    os._exit(0)
os.waitpid(pid, 0)
shutil.rmtree("old_checkpoints", ignore_errors=True)
