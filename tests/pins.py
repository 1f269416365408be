"""A project pinned to TensorFlow 2.9, for tests whose code should draw PD101 and PD102 at the
tier their other facts earn: 2.9 neither runs a stateless ``map`` in parallel on its own (2.10
does) nor appends a final ``prefetch`` (2.12 does), so there the sequential map and the missing
prefetch are what the rules say. A project with no pin leaves that fact assumed."""

from __future__ import annotations

from pathlib import Path

OLD_TENSORFLOW = "tensorflow==2.9.*\n"


def on_old_tensorflow(folder: Path) -> Path:
    """``folder`` as the root of a project whose requirements pin TensorFlow 2.9."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "requirements.txt").write_text(OLD_TENSORFLOW)
    return folder
