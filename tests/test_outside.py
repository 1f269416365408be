"""`pipedoctor check` on training scripts written by others.

Each script in ``tests/outside/`` is a published training script (tutorials, guides, examples,
trainers from several public repositories), kept as published apart from what it needs to run
here: generated data instead of downloads, fewer epochs and steps, smaller sizes. Their
origins, changes and the results of a check on each are in ``tests/outside/README.md``. Their
styles differ on purpose: how they import TensorFlow and Keras, their entry points (module
level, ``main()``, ``absl.app.run``, ``argparse``), strategies (none, ``MirroredStrategy`` on
one or two devices, ``MultiWorkerMirroredStrategy``, ``OneDeviceStrategy``), inputs (NumPy
arrays, ``tf.data`` from tensors, TFRecord files, image, text and WAV folders, time-series
windows, Python data sources: a ``keras.utils.Sequence`` and ``ImageDataGenerator``) and loops
(``fit``, ``evaluate`` before ``fit``, a ``train_step`` override, custom loops over distributed
datasets, plain ``GradientTape`` loops and a GAN loop at batch size 1).

Every check runs as a real subprocess, from an empty working directory, on the script's
absolute path, with a short budget. Two run at a time (``LANES``), with budgets a quarter
larger for it (the budgets grow, up to three times more, on a host busy with other work).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from lanes import Lanes, once_more_if_short, selected

pytest.importorskip("tensorflow")

OUTSIDE = Path(__file__).resolve().parent / "outside"
SCRIPTS = sorted(path.name for path in OUTSIDE.glob("*.py"))
VERDICTS = {"input-bound", "compute-bound", "balanced"}
THROUGHPUTS = ("pipeline_samples_per_s", "ceiling_samples_per_s", "training_samples_per_s")

BUDGET = 22
"""Seconds of ``--timeout`` for one check: start-up, the script up to its training, and the
three measurements fit in it on 2 CPU cores; what is left goes to what-if fixes."""
BUDGETS = {
    "kerasio_image_classification_from_scratch.py": 45,  # a small Xception, ~0.3 s a step
    "kerasio_oxford_pets_image_segmentation.py": 50,  # a U-Net, ~2 s a step of 16: ~44 s
    "kerasio_speaker_recognition_using_cnn.py": 45,  # 494 WAV files written before training,
    # then a 3M-parameter Conv1D at ~30 samples/s: 35 s ran out before the what-ifs
    "kerasio_timeseries_traffic_forecasting.py": 40,  # training/ceiling undecided in 22-30 s
    "kerasio_tfrecord.py": 40,  # a frozen Xception on 72 x 72 images
    "tfdocs_segmentation.py": 40,  # MobileNetV2 U-Net, ~0.8 s a step of 16: 30 s ran out
    "tfdocs_simple_audio.py": 30,  # training/ceiling at times undecided in 22 s
    "tfdocs_transfer_learning.py": 30,  # evaluates a MobileNetV2 before its first fit: ~27 s
    "tfexamples_densenet_distributed_train.py": 30,  # 2 replicas, run eagerly
    "tfexamples_dogs_vs_cats_with_augmentation.py": 40,  # ImageDataGenerator, ~1.4 s a step
    # of 32, after 20 augmented batches drawn for plots: ~30 s
    "tfexamples_pix2pix.py": 40,  # batch-1 steps of ~1.5 s: with 22 s training is not timed
}

HELPERS = {
    "tfdocs_multi_worker_with_ctl.py": "tfdocs_ctl_helpers",
    "tfdocs_segmentation.py": "tfdocs_segmentation_helpers",
    "tfexamples_densenet_distributed_train.py": "tfexamples_densenet",
    "vertexai_text_classification_task.py": "vertexai_text_trainer",
}
"""The package of modules a script imports from beside it: findings may point there too."""

DEFECTS = {
    "kerasio_speaker_recognition_using_cnn.py",  # `map(path_to_audio)` without parallel calls
    "kerasio_timeseries_traffic_forecasting.py",  # `prefetch(16).cache()`, shuffles whole batches
    "kerasio_tfrecord.py",  # `prefetch` before `batch`
    "tfdocs_segmentation.py",  # `map(Augment())` without parallel calls
    "tfdocs_simple_audio.py",  # `cache().shuffle()` of batches: the same examples train together
    "vertexai_text_classification_task.py",  # `map(vectorize_text)` without parallel calls
}
"""Scripts whose input pipeline has a defect a reviewer would fix: the check must say so at a
line of the script (or of its helpers). Six scripts whose arrays in memory are shuffled and
batched with no final ``prefetch`` are not among them: the TensorFlow they run on (2.16 or
later, this repository's pin) appends that prefetch itself."""

KNOWN_GAPS: dict[str, str] = {}
"""Scripts on which the check does not measure everything yet, with what it reports."""


def params() -> list[object]:
    marks = {
        name: pytest.mark.xfail(reason=reason, strict=True) for name, reason in KNOWN_GAPS.items()
    }
    return [pytest.param(name, marks=marks.get(name, ())) for name in SCRIPTS]


def test_the_collection_is_what_the_readme_lists() -> None:
    readme = (OUTSIDE / "README.md").read_text(encoding="utf-8")
    assert len(SCRIPTS) >= 12
    for name in SCRIPTS:
        assert f"`{name}`" in readme, name
        head = (OUTSIDE / name).read_text(encoding="utf-8").splitlines()[:3]
        assert head[0].startswith("# Origin: "), name  # where it comes from, then the changes
    for name in {*BUDGETS, *HELPERS, *DEFECTS, *KNOWN_GAPS}:
        assert name in SCRIPTS, name
    for package in HELPERS.values():
        assert (OUTSIDE / package / "__init__.py").is_file(), package


def own_files(name: str) -> list[Path]:
    files = [OUTSIDE / name]
    if name in HELPERS:
        files.append(OUTSIDE / HELPERS[name])
    return files


def is_own(path: Path, name: str) -> bool:
    return any(path == own or own in path.parents for own in own_files(name))


LANES = 2
"""Checks side by side: much of a check is one thread (TensorFlow's import, the script's own
set-up, a pipeline that sleeps), so two of them on 2 cores take about a third less wall time
than one after the other."""
SIDE_BY_SIDE = 1.25
"""How much larger each budget is for sharing the host with the other lane."""
IDLE_IMPORT_S = 5.0
"""About how long ``python -c "import tensorflow"`` takes on an idle 2-core machine."""


@pytest.fixture(scope="module")
def slowness() -> float:
    """How much slower than idle this host is now (1 to 3): the budgets are scaled by it, since
    on a host busy with other work every phase of a check, start-up first, takes longer."""
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "import tensorflow"], capture_output=True, check=True)
    return min(3.0, max(1.0, (time.monotonic() - started) / IDLE_IMPORT_S))


def check(name: str, budget: int, cwd: Path) -> subprocess.CompletedProcess[str]:
    """The check of a published script. One with a defect in DEFECTS gets every rule, so the
    graph doctor reads its pipeline and locates what it finds; the others select no
    input-pipeline rule (PD1xx): they time no stage and no what-if, and end once the three
    throughputs are measured, which is what is asserted of them."""
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}  # no __pycache__ beside the helpers
    rules = [] if name in DEFECTS else ["--select", "PD2,PD3"]
    return subprocess.run(
        [
            sys.executable, "-m", "pipedoctor", "check", str(OUTSIDE / name),
            "--format", "json", "--timeout", str(budget), *rules,
        ],
        capture_output=True, text=True, cwd=cwd, env=env, timeout=budget + 90,
    )  # fmt: skip


@dataclass
class Checked:
    done: subprocess.CompletedProcess[str]
    folder: Path
    """The empty folder it ran in."""
    seconds: float


def came_back_measured(checked: Checked) -> bool:
    """A verdict and the three throughputs: what the test asserts is measured."""
    if checked.done.returncode not in (0, 1):
        return False
    report = json.loads(checked.done.stdout)
    m = report.get("measurements", {})
    return report.get("verdict") in VERDICTS and all(m.get(k) for k in THROUGHPUTS)


def check_once_more_if_short(name: str, budget: int, folder: Path) -> Checked:
    def run(seconds: int) -> Checked:
        started = time.monotonic()
        return Checked(check(name, seconds, folder), folder, time.monotonic() - started)

    return once_more_if_short(
        run,
        budget,
        came_back_measured,
        lambda c: f"{name} in {c.seconds:.1f} s, exit {c.done.returncode}",
    )


@pytest.fixture(scope="module")
def checks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
           slowness: float):  # fmt: skip
    """Every selected script's check, queued at once in ``LANES`` lanes, longest first."""
    lanes: Lanes[Checked] = Lanes(LANES)
    for name in sorted(selected(request, "name"), key=lambda n: -BUDGETS.get(n, BUDGET)):
        budget = round(BUDGETS.get(name, BUDGET) * SIDE_BY_SIDE * slowness)
        folder = tmp_path_factory.mktemp(name.removesuffix(".py"))
        lanes.submit(name, lambda n=name, b=budget, f=folder: check_once_more_if_short(n, b, f),
                     weight=budget)  # fmt: skip
    yield lanes
    lanes.close()


@pytest.mark.parametrize("name", params())
def test_check_measures_a_published_script(name: str, checks: Lanes[Checked]) -> None:
    checked = checks.result(name)
    done, tmp_path = checked.done, checked.folder
    assert "Traceback" not in done.stderr, done.stderr[-4000:]
    assert done.returncode in (0, 1), done.stderr[-4000:]
    data = json.loads(done.stdout)  # stdout is the report alone

    assert data["verdict"] in VERDICTS
    measured = data["measurements"]
    for key in THROUGHPUTS:
        assert measured[key] is not None and measured[key] > 0, (key, data["notes"])

    located = [f for f in data["findings"] if f.get("path")]
    for finding in located:
        path = (tmp_path / finding["path"]).resolve()  # absolute paths stay as they are
        assert is_own(path, name), (finding["rule"], finding["path"], finding["line"])
    if name in DEFECTS:
        assert located, [f["rule"] for f in data["findings"]]

    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing written where it ran
