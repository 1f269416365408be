"""The write guard of a timed custom loop, on real files in this process: saves are skipped,
every other write is stopped before it happens, scratch space passes, and disarmed it is idle."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from pipedoctor.capture import writes  # noqa: E402


class Stopped(Exception):
    """Stands for the end of the script's process, which the real callback brings."""


@pytest.fixture
def guarded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    attempts: list[str] = []

    def stop(what: str) -> None:
        attempts.append(what)
        raise Stopped(what)

    writes.GUARD.skipped.clear()
    writes.arm(stop)
    yield tmp_path, attempts
    writes.disarm()


def test_a_python_write_is_stopped_before_the_file_exists(guarded) -> None:
    folder, attempts = guarded
    with pytest.raises(Stopped):
        with open("log.txt", "w") as handle:
            handle.write("epoch 1\n")
    assert not (folder / "log.txt").exists()
    assert attempts and attempts[0].startswith("write `log.txt`")


def test_a_tensorflow_file_system_write_is_stopped_too(guarded) -> None:
    folder, attempts = guarded
    with pytest.raises(Stopped):
        tf.io.gfile.makedirs(str(folder / "runs"))
    assert not (folder / "runs").exists() and "create the folder" in attempts[0]


def test_checkpoints_and_keras_saves_are_skipped_and_counted(guarded) -> None:
    folder, attempts = guarded
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    checkpoint = tf.train.Checkpoint(model=model)
    assert checkpoint.save(str(folder / "ckpt")) is None
    manager = tf.train.CheckpointManager(checkpoint, str(folder / "managed"), max_to_keep=1)
    assert manager.save() is None
    model.save(str(folder / "model.keras"))
    model.save_weights(str(folder / "w.weights.h5"))
    assert sorted(p.name for p in folder.iterdir()) == []
    assert attempts == []  # skipped, not stopped: the loop goes on being timed
    assert writes.GUARD.skipped.count("checkpoint") == 2
    assert {"Keras model", "Keras weights"} <= set(writes.GUARD.skipped)


def test_scratch_space_passes_unless_the_working_directory_is_there(guarded) -> None:
    folder, attempts = guarded
    with tempfile.NamedTemporaryFile("w", dir=tempfile.gettempdir(), delete=True) as handle:
        handle.write("scratch")  # TensorFlow and Keras write such files themselves
    if str(folder).startswith(os.path.realpath(tempfile.gettempdir())):
        with pytest.raises(Stopped):  # here the working directory is under the temp folder
            Path("inside.txt").write_text("x")
    assert not (folder / "inside.txt").exists()


def test_disarmed_the_guard_lets_everything_through(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    writes.install()  # the hook stays installed for the rest of the process: it must be idle
    writes.disarm()
    Path("free.txt").write_text("ok")
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.save(str(tmp_path / "model.keras"))
    assert (tmp_path / "free.txt").read_text() == "ok" and (tmp_path / "model.keras").is_file()
