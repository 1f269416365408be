"""`pipedoctor compare`: time to a target across two real monitored runs of one model."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
keras = pytest.importorskip("keras")

from pipedoctor.compare import CompareError, Target, compare, time_to  # noqa: E402
from pipedoctor.keras import Monitor  # noqa: E402


def problem() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 16384)
    return (rng.normal(size=(16384, 8)) + (2 * y[:, None] - 1) * 0.6).astype("float32"), y


def train(log_dir: Path | None, batch: int, epochs: int) -> None:
    """Logistic regression on two overlapping Gaussian blobs: a real problem that a small
    batch solves in one epoch and a large batch, at the same learning rate, in several."""
    keras.utils.set_random_seed(0)
    x, y = problem()
    data = tf.data.Dataset.from_tensor_slices((x[:12288], y[:12288])).batch(batch)
    val = tf.data.Dataset.from_tensor_slices((x[12288:], y[12288:])).batch(256)
    model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, activation="sigmoid")])
    model.compile(keras.optimizers.SGD(0.01), "binary_crossentropy", metrics=["accuracy"])
    callbacks = [Monitor(log_dir=str(log_dir), verbose=0)] if log_dir else []
    model.fit(data, validation_data=val, epochs=epochs, verbose=0, callbacks=callbacks)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, Path]:
    train(None, 512, 1)  # Keras's first fit in a process pays one-time costs: not either run's
    small, large = tmp_path_factory.mktemp("batch32"), tmp_path_factory.mktemp("batch512")
    train(small, 32, 2)
    train(large, 512, 16)
    return small, large


def test_the_large_batch_run_is_faster_per_sample_but_needs_more_epochs(runs) -> None:
    small, large = runs
    result = compare([small, large], Target.parse("val_accuracy=0.85"))
    by_name = {run["name"]: run for run in result["runs"]}
    a, b = by_name[small.name], by_name[large.name]
    assert a["global_batch"] == 32 and b["global_batch"] == 512
    assert a["reached"] and b["reached"]
    assert b["reached"]["epochs"] > a["reached"]["epochs"]  # more epochs to the target
    assert b["reached"]["samples"] > a["reached"]["samples"]
    assert b["steady_samples_per_s"] > a["steady_samples_per_s"]  # yet faster per sample
    # which one gets there first in wall time depends on the machine (start-up is in it):
    # the verdict names that one first and measures the other against it
    first, second = sorted((a, b), key=lambda r: r["reached"]["seconds"])
    opening, against = result["verdict"][:2]
    assert opening.startswith(f"run {first['name']} reaches val_accuracy >= 0.85 first")
    assert against.startswith(f"run {second['name']} trains ")
    assert against.endswith(f"later than run {first['name']}")
    # every figure is in the JSON, the curve with it
    assert len(b["curve"]) == 16 and all("wall_s" in p and "samples" in p for p in b["curve"])


def test_the_verdict_says_what_the_seed_asks_in_plain_words() -> None:
    from pipedoctor.compare import Run, verdict

    target = Target.parse("val_accuracy=0.9")
    a = Run("A", 1, 32, 1000.0, [{}], reached={"epochs": 2.0, "samples": 2000, "seconds": 20})
    b = Run("B", 1, 512, 2000.0, [{}], reached={"epochs": 6.2, "samples": 6200, "seconds": 30})
    assert verdict([a, b], target) == [
        "run A reaches val_accuracy >= 0.9 first: after 2.0 epochs, 2,000 samples, 20 s",
        "run B trains 2.0x faster per sample but needs 3.1x the epochs: it reaches "
        "val_accuracy 0.9 1.5x later than run A",
    ]


def test_a_target_no_run_reaches_says_so(runs) -> None:
    result = compare(list(runs), Target.parse("val_accuracy>=0.999"))
    assert all(run["reached"] is None for run in result["runs"])
    assert all("does not reach val_accuracy >= 0.999 in" in s for s in result["verdict"])


def test_interpolation_between_epoch_ends() -> None:
    epochs = [{"epoch": 1, "wall_s": 10.0, "samples_seen": 1000, "value": 0.5},
              {"epoch": 2, "wall_s": 20.0, "samples_seen": 2000, "value": 0.9}]  # fmt: skip
    assert time_to(epochs, Target.parse("acc=0.8")) == {
        "epochs": 1.75, "seconds": 17.5, "samples": 1750.0
    }  # fmt: skip
    assert time_to(epochs, Target.parse("loss<=0.4")) is None
    assert Target.parse("val_loss=0.3").higher_is_better is False


def test_bad_input_is_one_line_and_exit_2(runs, tmp_path: Path) -> None:
    small, _ = runs
    with pytest.raises(CompareError, match="no run logged val_auc"):
        compare([small], Target.parse("val_auc=0.9"))
    with pytest.raises(CompareError, match="expected METRIC=VALUE"):
        Target.parse("accuracy 0.9")
    empty = tmp_path / "empty"
    empty.mkdir()
    for args in (["--target", "val_auc=0.9", str(small)], ["--target", "x=1", str(empty)],
                 ["--target", "nonsense", str(small)]):  # fmt: skip
        done = subprocess.run([sys.executable, "-m", "pipedoctor", "compare", *args],
                              capture_output=True, text=True, timeout=60)  # fmt: skip
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr


def test_text_json_and_html(runs, tmp_path: Path) -> None:
    small, large = runs
    base = [sys.executable, "-m", "pipedoctor", "compare", str(small), str(large),
            "--target", "val_accuracy=0.85"]  # fmt: skip
    text = subprocess.run(base, capture_output=True, text=True, timeout=60).stdout
    assert text.startswith("Time to val_accuracy >= 0.85\n  run ")
    data = json.loads(subprocess.run([*base, "--format", "json"], capture_output=True,
                                     text=True, timeout=60).stdout)  # fmt: skip
    assert data["target"] == {"metric": "val_accuracy", "value": 0.85, "higher_is_better": True}
    page = tmp_path / "compare.html"
    subprocess.run([*base, "--format", "html", "-o", str(page)], check=True, timeout=60)
    html = page.read_text()
    assert html.count("<polyline") >= 4  # two runs, against wall time and against samples
    assert "against wall time" in html and "against samples seen" in html


def test_runs_of_different_models_are_compared_with_a_note(runs, tmp_path: Path) -> None:
    small, _ = runs
    other = tmp_path / "wider"
    keras.utils.set_random_seed(0)
    x, y = problem()
    model = keras.Sequential(
        [keras.Input((8,)), keras.layers.Dense(4, activation="relu"),
         keras.layers.Dense(1, activation="sigmoid")]
    )  # fmt: skip
    model.compile(keras.optimizers.SGD(0.01), "binary_crossentropy", metrics=["accuracy"])
    data = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
    monitor = Monitor(log_dir=str(other), verbose=0)
    model.fit(data, validation_data=data.take(4), epochs=2, verbose=0, callbacks=[monitor])
    result = compare([small, other], Target.parse("val_accuracy=0.6"))
    (note,) = result["notes"]
    assert "the runs trained different models" in note and "9 parameters" in note
