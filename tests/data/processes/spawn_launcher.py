"""Training in a `multiprocessing` process started with the spawn method."""

import multiprocessing
from pathlib import Path


def train(path):
    Path(path).write_text("weights trained for real")


if __name__ == "__main__":
    multiprocessing.set_start_method("spawn")
    worker = multiprocessing.Process(target=train, args=("model.keras",))
    worker.start()
    worker.join()
