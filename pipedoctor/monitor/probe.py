"""Each worker's own input pipeline, timed alone once training is over.

Under ``MultiWorkerMirroredStrategy`` every distributed dequeue all-reduces whether each worker
has a batch, and every step all-reduces the gradients, so from inside ``fit`` all workers show
the same step time and the same input wait: a worker whose own pipeline is slow cannot be told
from the others. So after the last epoch each worker reads the dataset TensorFlow built for it
(its shard of the input, rebatched to its replicas) through a fresh iterator, alone, for a few
seconds, and reports the samples per second it gave. The workers probe at the same moment (the
last step ended together), so they run under the same conditions; the chief compares them.

The probe runs in a thread of its own, so a pipeline that stops giving batches cannot hang the
end of ``fit``: after its time and a grace period the probe is abandoned with a note.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

GRACE_S = 10.0
"""How long past its reading time a probe may take to start (a shuffle buffer to fill, files to
open) and to hand back its last batch."""


@dataclass
class Probed:
    """What the probe of one worker's pipeline found: a rate, or why there is none."""

    samples_per_s: float | None = None
    ci: float | None = None
    startup_s: float = 0.0
    """Until the first batch: not part of the rate."""
    seconds: float = 0.0
    """Reading after the first batch."""
    note: str | None = None

    def figures(self) -> dict[str, Any]:
        return {
            "samples_per_s": None if self.samples_per_s is None else round(self.samples_per_s, 1),
            "ci": None if self.ci is None else round(self.ci, 4),
            "startup_s": round(self.startup_s, 2),
            "seconds": round(self.seconds, 2),
        }


def local_dataset(iterator: Any) -> Any | None:
    """The dataset this process takes its batches from: for a ``tf.distribute`` iterator, the
    one its single input worker reads (as auto-sharded and rebatched by TensorFlow); for a
    plain ``tf.data`` iterator, its dataset. ``None`` where neither can be reached."""
    workers = getattr(iterator, "_iterators", None)
    if workers is not None:
        if len(workers) != 1:  # several input workers in one process: no single pipeline
            return None
        return getattr(workers[0], "_dataset", None)
    return getattr(iterator, "_dataset", None)


def probe(dataset: Any, seconds: float) -> Probed:
    """Samples per second of ``dataset`` read alone for about ``seconds`` once its first batch
    is in (a fresh iterator fills its shuffle buffers and opens its files first)."""
    outcome = Probed()

    def run() -> None:
        from pipedoctor.measure.protocol import brief, endless, measure_pipeline

        began = time.perf_counter()
        try:
            batches = iter(endless(dataset, []))
            if next(batches, None) is None:
                outcome.note = "its pipeline gave no batch at all"
                return
            started = time.perf_counter()
            outcome.startup_s = started - began
            end = started + seconds  # every worker reads for as long, at the same time
            rate = measure_pipeline(batches, end, end, settle=False)
            outcome.seconds = time.perf_counter() - started
        except Exception as exc:  # noqa: BLE001 - the user's pipeline raised: a note
            outcome.note = f"its pipeline could not be read alone ({brief(exc)})"
            return
        if rate is None:
            outcome.note = f"its pipeline gave too few batches in {seconds:g} s to time"
            return
        outcome.samples_per_s, outcome.ci = rate.samples_per_s, rate.ci

    thread = threading.Thread(target=run, name="pipedoctor-probe", daemon=True)
    thread.start()
    thread.join(seconds + GRACE_S)
    if thread.is_alive():  # it stops at its next batch, if one ever comes
        return Probed(
            note=f"its pipeline gave no batch within {seconds + GRACE_S:g} s of the probe"
        )
    return outcome
