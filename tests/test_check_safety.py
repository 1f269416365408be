"""`check` leaves the user's files and model alone, whatever the script's control flow.

The check stops the script once it has measured; the stop must not run the script's own
``finally`` blocks or be swallowed by its handlers, so nothing the script would do after its
first training call happens.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

JOB = """\
import tensorflow as tf
import keras
import numpy as np

x = np.random.rand(2048, 8).astype("float32")
y = np.random.randint(0, 2, 2048)
ds = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(2)])
model.compile("sgd", keras.losses.SparseCategoricalCrossentropy(from_logits=True))
"""

# Both ways a script could escape the stop, in one script: a save in `finally`, and handlers
# that swallow everything (a bare `except:` catches BaseException too) around a retry loop.
ESCAPES = (
    JOB
    + """\
with open("started.txt", "w") as started:  # before training: written, as README says
    started.write("run 1")
for attempt in range(2):
    try:
        try:
            model.fit(ds, epochs=2)
        finally:
            model.save("model.keras")
            with open("train.log", "w") as log:
                log.write("finished")
    except:  # noqa: E722
        pass
with open("outputs.txt", "w") as out:
    out.write("trained")
"""
)


def test_nothing_after_the_training_call_runs(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(ESCAPES)
    saved = tmp_path / "model.keras"
    saved.write_bytes(b"the user's trained model")
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", "train.py", "--format", "json",
         "--timeout", "40", "--quiet"],
        capture_output=True, text=True, cwd=tmp_path, timeout=180,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    assert json.loads(done.stdout)["verdict"] in ("input-bound", "balanced", "compute-bound")
    assert saved.read_bytes() == b"the user's trained model"
    assert (tmp_path / "started.txt").read_text() == "run 1"  # what came before training
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.keras", "started.txt", "train.py"]
