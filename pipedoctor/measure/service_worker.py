"""One tf.data service worker for :mod:`pipedoctor.measure.service`.

    python -m pipedoctor.measure.service_worker DISPATCHER_ADDRESS PARENT_PID

Prints ``ready`` once registered with the dispatcher, then serves until its parent is gone.
"""

from __future__ import annotations

import os
import sys
import threading
import time


def exit_with(parent: int) -> None:
    """End this process as soon as ``parent`` is gone, whatever the main thread is doing (a
    worker whose dispatcher is gone retries forever)."""
    while os.getppid() == parent:
        time.sleep(0.5)
    os._exit(0)


def main(argv: list[str]) -> int:
    dispatcher, parent = argv[0], int(argv[1])
    threading.Thread(target=exit_with, args=(parent,), daemon=True).start()
    import tensorflow as tf

    service = tf.data.experimental.service
    worker = service.WorkerServer(service.WorkerConfig(dispatcher_address=dispatcher, port=0))
    print("ready", flush=True)
    worker.join()  # serve until the parent is gone
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
