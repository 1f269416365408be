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


def test_a_program_started_while_armed_is_stopped_before_it_runs(guarded) -> None:
    import subprocess

    folder, attempts = guarded
    with pytest.raises(Stopped):
        subprocess.run(["touch", "marker"], check=True)
    assert attempts == ["start `touch`"] and not (folder / "marker").exists()


def test_a_tensorflow_write_op_is_stopped_before_it_writes(guarded) -> None:
    folder, attempts = guarded
    with pytest.raises(Stopped):
        tf.io.write_file("state.txt", "step 1")
    assert attempts == ["write `state.txt`"] and not (folder / "state.txt").exists()


def test_an_hdf5_file_opened_for_writing_is_stopped_before_it_is_touched(guarded) -> None:
    h5py = pytest.importorskip("h5py")
    folder, attempts = guarded
    writes.install_h5py()
    with pytest.raises(Stopped):
        h5py.File("metrics.h5", "a")
    assert attempts == ["write `metrics.h5`"] and not (folder / "metrics.h5").exists()


def test_files_held_open_for_writing_keep_their_bytes(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    log = open("train.log", "a")  # noqa: SIM115 - opened before the loop, as trainers do
    log.write("an earlier line\n")
    log.flush()
    writes.arm(lambda what: None)
    try:
        log.write("step 1\n")
        log.flush()
    finally:
        writes.disarm()
        log.close()
    assert Path("train.log").read_text() == "an earlier line\n"
    assert str(tmp_path / "train.log") in writes.GUARD.silenced


def test_a_file_mapped_for_writing_keeps_its_bytes_and_the_script_reads_its_own_writes(
    tmp_path: Path, monkeypatch
) -> None:
    """``numpy.memmap`` writes through memory, past every audit event: armed, its mapping
    becomes copy-on-write where it stands."""
    import numpy as np

    monkeypatch.chdir(tmp_path)
    table = np.memmap("embeddings.f32", dtype="float32", mode="w+", shape=(4096,))
    table[:] = 1.0  # the script's own writes before its loop
    table.flush()
    writes.arm(lambda what: None)
    try:
        table[:10] = 7.0  # a step's update
        table.flush()
        assert float(table[0]) == 7.0 and float(table[20]) == 1.0  # it reads what it wrote
    finally:
        writes.disarm()
    del table
    on_disk = np.fromfile(tmp_path / "embeddings.f32", dtype="float32")
    assert on_disk.shape == (4096,) and set(on_disk.tolist()) == {1.0}
    assert str(tmp_path / "embeddings.f32") in writes.GUARD.silenced


def test_only_shared_writable_file_mappings_are_taken() -> None:
    from pipedoctor.capture.mappings import Mapping, shared_writable

    maps = (
        "7f0000000000-7f0000002000 rw-s 00001000 08:01 1234 /data/emb.f32\n"
        "7f0000002000-7f0000003000 r--s 00000000 08:01 1235 /data/read_only.bin\n"
        "7f0000003000-7f0000004000 rw-p 00000000 08:01 1236 /usr/lib/libc.so\n"
        "7f0000004000-7f0000005000 rw-s 00000000 00:05 0 /SYSV00000000 (deleted)\n"
        "7f0000005000-7f0000006000 rw-s 00000000 00:00 0 [anon]\n"
        "7f0000006000-7f0000007000 rw-s 00000000 08:01 99 /data/gone.bin (deleted)\n"
    )
    assert shared_writable(maps) == [
        Mapping(0x7F0000000000, 0x7F0000002000, 0x1000, "/data/emb.f32")
    ]


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
