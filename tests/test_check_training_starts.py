"""Where training starts: at `fit` or at a loop that applies gradients, never at the datasets
Keras distributes for its own `evaluate` or `predict` before it (real processes, real files)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("tensorflow")

LOOPS = Path(__file__).resolve().parent / "data" / "loops"


def test_evaluate_and_predict_before_fit_are_no_training(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", str(LOOPS / "evaluate_before_fit.py"),
         "--format", "json", "--timeout", "60", "--select", "PD2,PD3"],  # no fixes timed
        capture_output=True, text=True, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    data = json.loads(done.stdout)
    m = data["measurements"]
    assert m.get("incomplete") is None
    assert "training starts (fit)" in done.stderr  # not experimental_distribute_dataset
    for name in ("pipeline", "ceiling", "training"):
        assert m[f"{name}_samples_per_s"] > 0, name
    assert m["replicas"] == 2 and m["strategy"] == "MirroredStrategy"
    assert data["verdict"] in ("input-bound", "balanced", "compute-bound")
    assert "stages" not in m and any("no input-pipeline rule" in n for n in data["notes"])
    assert list(tmp_path.iterdir()) == []


def test_a_loop_over_a_distributed_evaluation_set_before_training_is_no_training(
    tmp_path: Path,
) -> None:
    # The test set is distributed first and evaluated in a loop of its own: the measurement
    # starts at the training loop, whose batches are 128 (the evaluation loop's are 32).
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check",
         str(LOOPS / "evaluate_loop_before_training.py"),
         "--format", "json", "--timeout", "60", "--select", "PD2,PD3"],
        capture_output=True, text=True, cwd=tmp_path, timeout=240,
    )  # fmt: skip
    assert done.returncode in (0, 1), done.stderr[-2000:]
    data = json.loads(done.stdout)
    m = data["measurements"]
    assert m.get("incomplete") is None, data["notes"]
    assert "training starts (experimental_distribute_dataset)" in done.stderr
    for name in ("pipeline", "ceiling", "training"):
        assert m[f"{name}_samples_per_s"] > 0, name
    assert m["batch_size"] == 128, m["batch_size"]
    assert m["replicas"] == 2
    assert list(tmp_path.iterdir()) == []
