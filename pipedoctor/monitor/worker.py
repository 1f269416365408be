"""Which worker of a multi-worker job this process is, so every line and file can name it.

``TF_CONFIG`` (``MultiWorkerMirroredStrategy``) names the task: its type and index, and the
cluster's other tasks. The tasks that train are the chief and the workers; without a ``chief``
entry, worker 0 is the chief, as TensorFlow has it. On JAX, a multi-process run is named by
``jax.process_index()``, process 0 being the chief.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass

TRAINING_TASKS = ("chief", "worker")


@dataclass(frozen=True)
class Worker:
    """This process's place in the job; a single-process job is ``worker-0``, its own chief."""

    name: str
    peers: tuple[str, ...]
    """Every training task's name, this one included, chief first."""
    is_chief: bool
    note: str | None = None

    @property
    def multi(self) -> bool:
        return len(self.peers) > 1

    @property
    def others(self) -> tuple[str, ...]:
        return tuple(peer for peer in self.peers if peer != self.name)


SINGLE = Worker("worker-0", ("worker-0",), True)


def from_tf_config(environ: Mapping[str, str] | None = None) -> Worker | None:
    """This task from ``TF_CONFIG``; ``None`` without one. A malformed one is noted, not raised."""
    text = (environ if environ is not None else os.environ).get("TF_CONFIG", "").strip()
    if not text:
        return None
    try:
        config = json.loads(text)
        cluster = config.get("cluster") or {}
        task = config.get("task") or {}
        kind, index = str(task.get("type", "worker")), int(task.get("index", 0))
        peers = tuple(
            f"{role}-{i}" for role in TRAINING_TASKS for i in range(len(cluster.get(role) or []))
        )
    except (ValueError, TypeError, AttributeError) as exc:
        return Worker(SINGLE.name, SINGLE.peers, True, f"TF_CONFIG could not be read ({exc})")
    name = f"{kind}-{index}"
    if name not in peers:  # an evaluator or parameter server: it does not train with the others
        return Worker(name, (name,), True)
    chief = "chief-0" if "chief-0" in peers else "worker-0"
    return Worker(name, peers, name == chief)


def from_jax() -> Worker | None:
    """This process in a multi-process JAX run; ``None`` for one process or without JAX."""
    try:
        import jax

        count, index = jax.process_count(), jax.process_index()
    except Exception:  # noqa: BLE001 - no JAX, or no backend: a single process
        return None
    if count <= 1:
        return None
    peers = tuple(f"process-{i}" for i in range(count))
    return Worker(f"process-{index}", peers, index == 0)


def identify(backend: str) -> Worker:
    """This process's worker: from ``TF_CONFIG``, else JAX's process index, else a single one."""
    found = from_tf_config()
    if found is None and backend == "jax":
        found = from_jax()
    return found or SINGLE
