"""One small job written in the styles people write training scripts in, each checked end to end.

Every script in ``tests/style_matrix/`` trains the same model on the same pipeline: 2,048
examples of 16 features, a ``map`` whose ``tf.py_function`` sleeps 2 ms per example (a slow
read), batches of 32. The pipeline delivers about 400 samples/s while the model can take
thousands, so a fit on one device is input-bound by a wide margin, whatever else runs on the
host. What changes from script to script is only how it is written: the order of the imports,
where Keras comes from, a model subclass, ``main()`` and flag parsers, a helper package, TFRecord
shards, ``MirroredStrategy`` with ``fit`` or a custom loop, Keras on JAX. Each gets a real
``pipedoctor check`` in its own process, with a short budget, and each must come back measured.

Three checks run at a time (their pipelines mostly sleep: the three lanes together keep about
1.3 of the 2 cores busy), never two multi-replica ones.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest
from lanes import Lanes, once_more_if_short, selected

pytest.importorskip("tensorflow")

MATRIX = Path(__file__).parent / "style_matrix"
VERDICTS = {"input-bound", "compute-bound", "balanced"}
THROUGHPUTS = ("pipeline_samples_per_s", "ceiling_samples_per_s", "training_samples_per_s")
SLOW_JOB_VERDICT = "input-bound"
GLOBAL_BATCH = 32
"""Every variant's global batch: what one training step consumes, over all replicas."""
LANES = 3
"""One lane for the multi-replica checks, one after another; the single-device checks share
the other two."""

SCALE = float(os.environ.get("STYLE_MATRIX_TIMEOUT_SCALE", "1"))
"""Multiplies every check's budget, for a host much slower than 2 free cores."""
SINGLE_TIMEOUT = round(30 * SCALE)
"""Seconds for a check on one device: start-up (TensorFlow's import and the script up to its
``fit``, 4 to 8 s here with the other lanes busy) and the three throughputs (about 8 s more),
with the graph doctor taking what is left. At 24 s, two single-device checks in three lanes
came back inconclusive in two runs of the matrix in a row. Nothing here asserts what the graph
doctor finds, so it gets only the remainder."""
MULTI_TIMEOUT = round(40 * SCALE)
"""Seconds for a check on two replicas: also the ceiling on one replica and the parity run
(the throughputs end about 16 s after the start)."""


@dataclass(frozen=True)
class Variant:
    style: str
    replicas: int = 1
    fit: bool = True
    """Trained with ``fit`` (not a custom loop)."""
    slow_job: bool = True
    """The slow-pipeline job (not the same model fed in-memory arrays)."""
    args: tuple[str, ...] = ()
    needs: str | None = None

    @property
    def timeout(self) -> int:
        return MULTI_TIMEOUT if self.replicas > 1 else SINGLE_TIMEOUT


VARIANTS = {
    "keras_first": Variant("import keras, then import tensorflow"),
    "tf_first": Variant("import tensorflow, then import keras"),
    "from_tensorflow_import_keras": Variant("from tensorflow import keras"),
    "tf_keras_attribute": Variant("keras = tf.keras, tf.keras.Sequential"),
    "model_subclass": Variant("a tf.keras.Model subclass with its own call"),
    "imports_in_main": Variant("imports inside main(), __main__ guard"),
    "absl_app": Variant(
        "absl.app.run(main) with absl.flags", args=("--epochs", "2", "--batch_size", "32")
    ),
    "argparse_flags": Variant(
        "argparse flags, __main__ guard", args=("--epochs", "2", "--batch-size", "32")
    ),
    "helper_module": Variant("pipeline and model factory in a helper package"),
    "tfrecord_shards": Variant("TFRecord shards in a temporary folder, read with interleave"),
    "fit_in_config_loop": Variant("fit inside a function called for each config"),
    "fit_arrays": Variant("fit on in-memory NumPy arrays", slow_job=False),
    "mirrored_fit": Variant("MirroredStrategy on 2 logical CPUs, fit", replicas=2),
    "mirrored_from_function_fit": Variant(
        "MirroredStrategy, keras first, model factory, distribute_datasets_from_function to fit",
        replicas=2,
    ),
    "custom_loop_distribute": Variant(
        "custom loop: strategy.run over experimental_distribute_dataset", replicas=2, fit=False
    ),
    "custom_loop_from_function": Variant(
        "custom loop: strategy.run over distribute_datasets_from_function", replicas=2, fit=False
    ),
    "keras_jax_data_parallel": Variant(
        "Keras on JAX, DataParallel over 2 host devices, tf.data input", replicas=2, needs="jax"
    ),
}
SINGLE_DEVICE_FIT = [
    name for name, v in VARIANTS.items() if v.replicas == 1 and v.fit and v.slow_job
]


@dataclass
class Checked:
    returncode: int
    stdout: str
    stderr: str
    seconds: float
    left_behind: list[str]
    """What the check left in its working directory."""

    @property
    def report(self) -> dict:
        assert self.returncode in (0, 1), f"exit code {self.returncode}:\n{self.stderr[-3000:]}"
        return json.loads(self.stdout)

    def measured(self, variant: Variant) -> bool:
        """Whether the check came back with everything the variant's test asserts is measured:
        a verdict, the three throughputs and, for ``fit`` on several replicas, scaling and
        parity."""
        if self.returncode not in (0, 1):
            return False
        report = json.loads(self.stdout)
        m = report.get("measurements", {})
        wanted = [*THROUGHPUTS]
        if variant.replicas > 1 and variant.fit:
            wanted += ["scaling_efficiency", "parity_max_loss_delta"]
        return report.get("verdict") in VERDICTS and all(m.get(k) is not None for k in wanted)


def run_check(name: str, folder: Path, budget: int | None = None) -> Checked:
    variant = VARIANTS[name]
    budget = budget or variant.timeout
    command = [
        sys.executable, "-m", "pipedoctor", "check", str(MATRIX / f"{name}.py"),
        "--format", "json", "--timeout", str(budget), "-q",
    ]  # fmt: skip
    if variant.args:
        command += ["--", *variant.args]
    started = time.monotonic()
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        cwd=folder,
        timeout=budget + 90,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},  # no __pycache__ in the matrix
    )
    return Checked(
        done.returncode,
        done.stdout,
        done.stderr,
        time.monotonic() - started,
        sorted(p.name for p in folder.iterdir()),
    )


def keep_first_attempt(second: Checked, first: Checked) -> Checked:
    second.stderr = f"{second.stderr}\n--- first attempt ---\n{first.stderr[-2000:]}"
    return second


def run_check_once_more_if_short(name: str, folder: Path) -> Checked:
    """The check, run once more with a larger budget when it came back without the variant's
    measurements (``lanes.once_more_if_short``)."""
    return once_more_if_short(
        lambda budget: run_check(name, folder, budget),
        VARIANTS[name].timeout,
        lambda checked: checked.measured(VARIANTS[name]),
        lambda checked: f"{name} in {checked.seconds:.1f} s, exit {checked.returncode}",
        keep_first_attempt,
    )


class Checks:
    """The checks of this module, run in the background in ``LANES`` lanes: the multi-replica
    checks one after another in the first lane (never two of them side by side), the
    single-device checks wherever less is queued. Those of the selected tests start at once,
    any other when first asked for."""

    def __init__(self, folders: pytest.TempPathFactory, names: list[str]) -> None:
        self._folders = folders
        self._lanes: Lanes[Checked] = Lanes(LANES)
        for name in sorted(names, key=lambda n: -VARIANTS[n].replicas):
            self._submit(name)

    def _submit(self, name: str) -> Future[Checked]:
        variant = VARIANTS[name]
        return self._lanes.submit(
            name,
            lambda: run_check_once_more_if_short(name, self._folders.mktemp(name)),
            weight=variant.timeout,
            lane=0 if variant.replicas > 1 else None,
        )

    def __getitem__(self, name: str) -> Checked:
        return self._submit(name).result()

    def close(self) -> None:
        self._lanes.close()


def available(name: str) -> bool:
    needs = VARIANTS[name].needs
    return needs is None or importlib.util.find_spec(needs) is not None


@pytest.fixture(scope="module")
def checks(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory):
    names = selected(request, "name")
    if any(item.name == "test_single_device_fit_styles_agree" for item in request.session.items):
        names.update(SINGLE_DEVICE_FIT)
    running = Checks(tmp_path_factory, [name for name in names if available(name)])
    yield running
    running.close()


@pytest.mark.parametrize("name", list(VARIANTS))
def test_style_is_measured(checks: Checks, name: str) -> None:
    variant = VARIANTS[name]
    if not available(name):
        pytest.skip(f"needs {variant.needs}")
    checked = checks[name]
    report = checked.report
    m = report["measurements"]
    summary = {k: m.get(k) for k in (*THROUGHPUTS, "replicas", "scaling_efficiency")}
    parity = {k: m.get(k) for k in ("parity_max_loss_delta", "parity_max_weight_delta")}
    print(f"{name}: {report.get('verdict')} {summary} {parity} in {checked.seconds:.1f} s")
    context = f"{name} ({variant.style}): {summary}, notes {report.get('notes')}"
    assert report.get("verdict") in VERDICTS, context
    for key in THROUGHPUTS:
        assert m.get(key) is not None and m[key] > 0, f"{key} not measured; {context}"
    assert "Traceback" not in checked.stderr, checked.stderr[-3000:]
    assert checked.left_behind == [], f"written into the working directory: {checked.left_behind}"
    if variant.replicas > 1 and not variant.fit:
        # A custom loop's step is the script's own code: there is no copy of it to run on one
        # device, so the report says that scaling efficiency and parity were not measured.
        assert m["replicas"] == variant.replicas, context
        assert m.get("scaling_efficiency") is None, context
        assert any("scaling efficiency and parity are not measured" in n
                   for n in report.get("notes", [])), context  # fmt: skip
    elif variant.replicas > 1:
        assert m["replicas"] == variant.replicas, context
        assert m.get("scaling_efficiency") is not None and m["scaling_efficiency"] > 0, context
        for key in ("parity_max_loss_delta", "parity_max_weight_delta"):
            assert m.get(key) is not None, f"{key} not measured; {context}"
    else:
        assert m["replicas"] == 1, context
    # the job measured is the script's: a step takes the global batch, over all replicas
    assert m.get("batch_size") == GLOBAL_BATCH, f"batch {m.get('batch_size')}; {context}"


def test_single_device_fit_styles_agree(checks: Checks) -> None:
    """However the script is written, the same job on one device gets the same verdict (a
    check that gave none fails its own test above)."""
    verdicts = {}
    for name in SINGLE_DEVICE_FIT:
        checked = checks[name]
        if checked.returncode in (0, 1):
            verdicts[name] = json.loads(checked.stdout).get("verdict")
    assert len(verdicts) >= 2, verdicts
    assert set(verdicts.values()) == {SLOW_JOB_VERDICT}, verdicts
