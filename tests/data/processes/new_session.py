"""A helper started in a session of its own (it outlives a process-group kill), then a wait
longer than the check's budget."""

import subprocess
import time
from pathlib import Path

helper = subprocess.Popen(["sleep", "600"], start_new_session=True)
Path("helper.pid").write_text(str(helper.pid))
time.sleep(600)
