"""The static front end sees pipelines the way real code writes them, and only tf.data ones."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pins import on_old_tensorflow

from pipedoctor import lint
from pipedoctor.pipeline import AUTOTUNE, Files
from pipedoctor.static import analyze_source


def pipelines(source: str):
    return analyze_source(textwrap.dedent(source)).pipelines


def chain(pipeline) -> list[str]:
    return [s.op for s in pipeline.stages]


def rules_of(source: str) -> set[str]:
    return {f.rule for f in lint(textwrap.dedent(source)).findings}


@pytest.mark.parametrize(
    "imports, source",
    [
        ("import tensorflow as tf", "tf.data.Dataset.range(8)"),
        ("from tensorflow import data as tfd", "tfd.Dataset.range(8)"),
        ("from tensorflow.data import Dataset", "Dataset.range(8)"),
        ("import tensorflow.compat.v2 as tf", "tf.data.Dataset.range(8)"),
        ("import tensorflow.compat.v1 as tf", "tf.data.Dataset.range(8)"),
        ("import tensorflow as tf", "tf.compat.v2.data.Dataset.range(8)"),
    ],
)
def test_import_spellings_resolve_to_one_dataset(imports: str, source: str) -> None:
    (pipeline,) = pipelines(f"{imports}\nds = {source}.map(lambda x: x, num_parallel_calls=3)\n")
    assert chain(pipeline) == ["range", "map"]
    assert pipeline.stages[1].params["num_parallel_calls"] == 3


@pytest.mark.parametrize(
    "definition, use",
    [
        ("AUTO = tf.data.AUTOTUNE", "AUTO"),
        ("AUTO = tf.data.experimental.AUTOTUNE", "AUTO"),
        ("from tensorflow.data.experimental import AUTOTUNE as AUTO", "AUTO"),
        ("", "tf.data.experimental.AUTOTUNE"),
        ("", "-1"),
    ],
)
def test_every_autotune_spelling_is_autotune(definition: str, use: str) -> None:
    source = (
        f"import tensorflow as tf\n{definition}\nds = tf.data.Dataset.range(8).prefetch({use})\n"
    )
    (pipeline,) = pipelines(source)
    assert pipeline.last.params["buffer_size"] == AUTOTUNE


def test_reassigned_variable_builds_one_chain() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow as tf
        ds = tf.data.TFRecordDataset(["a.rec", "b.rec"])
        ds = ds.shuffle(100)
        ds = ds.batch(32)
        """
    )
    assert chain(pipeline) == ["TFRecordDataset", "shuffle", "batch"]
    assert pipeline.source.params["filenames"] == Files(2, literal=True)
    assert pipeline.ends == {"unknown"}  # module-level in a .py file: importable


def test_helper_returns_dataset_that_caller_extends_and_fits() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow as tf

        def load(path):
            return tf.data.TFRecordDataset(path)

        def train(model):
            ds = load("one.rec").batch(8)
            model.fit(ds)
        """
    )
    assert chain(pipeline) == ["TFRecordDataset", "batch"]
    assert pipeline.ends == {"training"}
    # The argument seen at the call site, not an unknown parameter:
    assert pipeline.source.params["filenames"] == Files(1, literal=True)


def test_self_attributes_carry_datasets_between_methods() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow as tf

        class Data:
            def __init__(self):
                self.raw = tf.data.Dataset.range(10)

            def batched(self):
                return self.raw.batch(2)
        """
    )
    assert chain(pipeline) == ["range", "batch"]
    assert pipeline.ends == {"unknown"}


def test_module_constants_are_resolved() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow as tf
        PER_REPLICA = 8
        REPLICAS = 4
        BATCH = PER_REPLICA * REPLICAS
        ds = tf.data.Dataset.range(100).batch(BATCH)
        """
    )
    assert pipeline.last.params["batch_size"] == 32


def test_annotated_parameter_is_a_dataset() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow as tf

        def finish(ds: tf.data.Dataset) -> tf.data.Dataset:
            return ds.map(lambda x: x).batch(4)
        """
    )
    assert chain(pipeline) == ["external", "map", "batch"]


@pytest.mark.parametrize(
    "call, op",
    [
        ("keras.utils.image_dataset_from_directory('d')", "image_dataset_from_directory"),
        ("tf.keras.utils.text_dataset_from_directory('d')", "text_dataset_from_directory"),
        (
            "tf.keras.preprocessing.image_dataset_from_directory('d')",
            "image_dataset_from_directory",
        ),
        ("keras.utils.timeseries_dataset_from_array(x, None, 10)", "timeseries_dataset_from_array"),
        ("tfds.load('mnist', split='train')", "tfds.load"),
        ("tf.data.TextLineDataset(files)", "TextLineDataset"),
        ("tf.data.FixedLengthRecordDataset(files, 8)", "FixedLengthRecordDataset"),
        ("tf.data.Dataset.list_files('*.rec')", "list_files"),
        ("tf.data.Dataset.from_generator(gen)", "from_generator"),
    ],
)
def test_sources_beyond_dataset(call: str, op: str) -> None:
    imports = "import keras\nimport tensorflow as tf\nimport tensorflow_datasets as tfds\n"
    source = f"{imports}ds = {call}.batch(2)\n"
    (pipeline,) = pipelines(source)
    assert chain(pipeline) == [op, "batch"]


@pytest.mark.parametrize(
    "source, expected",
    [
        (
            """
            import tensorflow as tf
            rows = tf.data.experimental.make_csv_dataset("a.csv", batch_size=32, label_name="y")
            rows = rows.map(lambda r, y: (tf.py_function(str, [r["note"]], tf.string), y))
            tf.keras.Sequential().fit(rows)
            """,
            {"PD101", "PD108"},  # a Python map is PD108's: parallel calls barely help it
        ),
        (
            """
            import keras
            keras.distribution.set_distribution(keras.distribution.DataParallel())
            model = keras.Sequential([keras.layers.Dense(10)])
            model.compile(optimizer="sgd", loss="mse")
            model.fit(images, labels, batch_size=64)
            """,
            {"PD202"},  # the rate is PD203's only once the batch grows with the devices
        ),
    ],
)
def test_modules_without_the_word_dataset_are_analysed(source: str, expected: set[str]) -> None:
    """The cheap text check before the analysis knows every source and strategy spelling."""
    found = lint(textwrap.dedent(source), confidence="low").findings  # every tier: analysed?
    assert {f.rule for f in found} == expected


def test_tfds_with_info_unpacks() -> None:
    (pipeline,) = pipelines(
        """
        import tensorflow_datasets as tfds
        train, info = tfds.load("mnist", split="train", with_info=True, as_supervised=True)
        train = train.batch(32)
        """
    )
    assert chain(pipeline) == ["tfds.load", "batch"]


LOOKALIKES = """
import pandas as pd
import torch
from datasets import load_dataset
import tensorflow as tf

frame = pd.read_csv("x.csv")
frame = frame.map(str)
loader = torch.utils.data.DataLoader(range(10), batch_size=4)
hf = load_dataset("imdb")["train"].map(str).shuffle(seed=1)

class Mine:
    def map(self, f):
        return self
    def batch(self, n):
        return self
    def cache(self):
        return self

stuff = Mine().map(str).batch(4).cache()
"""


def test_lookalike_objects_stay_silent() -> None:
    assert pipelines(LOOKALIKES) == []
    assert lint(LOOKALIKES).findings == []


CANONICAL = """
import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE
FEATURES = {
    "image": tf.io.FixedLenFeature([], tf.string),
    "label": tf.io.FixedLenFeature([], tf.int64),
}


def parse(record):
    example = tf.io.parse_single_example(record, FEATURES)
    image = tf.io.decode_jpeg(example["image"], channels=3)
    return tf.image.resize(image, (224, 224)), example["label"]


def make_dataset(pattern, batch_size):
    files = tf.data.Dataset.list_files(pattern, shuffle=True)
    ds = files.interleave(
        tf.data.TFRecordDataset, num_parallel_calls=AUTOTUNE, deterministic=False
    )
    ds = ds.map(parse, num_parallel_calls=AUTOTUNE)
    ds = ds.cache()
    ds = ds.shuffle(10_000)
    ds = ds.batch(batch_size, drop_remainder=True)
    return ds.prefetch(AUTOTUNE)


def main(model):
    model.fit(make_dataset("/data/train-*.tfrecord", 64), epochs=10)
"""


def test_canonical_guide_pipeline_has_no_findings() -> None:
    report = lint(CANONICAL)
    assert report.findings == [], [f"{f.rule}: {f.message}" for f in report.findings]
    (pipeline,) = pipelines(CANONICAL)
    assert chain(pipeline) == [
        "list_files",
        "interleave",
        "map",
        "cache",
        "shuffle",
        "batch",
        "prefetch",
    ]
    assert pipeline.ends == {"training"}


def test_never_imports_or_runs_the_checked_code(tmp_path: Path) -> None:
    marker = tmp_path / "was_imported"
    script = on_old_tensorflow(tmp_path) / "train.py"
    script.write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('ran')\n"
        "import tensorflow as tf\n"
        "ds = tf.data.Dataset.list_files('*.png').map(tf.io.read_file).map(tf.io.decode_png)\n"
        "tf.keras.Sequential().fit(ds.batch(32), epochs=5)\n"
    )
    report = lint(script)
    assert {f.rule for f in report.findings} >= {"PD102"}
    assert not marker.exists()


def test_static_gate_never_imports_tensorflow(tmp_path: Path) -> None:
    script = on_old_tensorflow(tmp_path) / "train.py"
    script.write_text(
        "import tensorflow as tf\n"
        "ds = tf.data.Dataset.list_files('*.png').map(tf.io.read_file).map(tf.io.decode_png)\n"
        "tf.keras.Sequential().fit(ds.batch(32), epochs=5)\n"
    )
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pipedoctor", "lint", str(script)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "|" in line}
    assert "pipedoctor.lint" in imported
    assert not {m for m in imported if m.split(".")[0] in ("tensorflow", "keras", "numpy")}


def test_lints_real_tensorflow_and_keras_sources_without_a_crash() -> None:
    """A slice of the installed TF + Keras sources: every file yields findings or nothing."""
    import importlib.util

    from pipedoctor.config import Config
    from pipedoctor.lint import lint_paths

    roots = []
    for package, sub in (("tensorflow", "python/data/ops"), ("keras", "src/trainers")):
        spec = importlib.util.find_spec(package)
        if spec is None or not spec.submodule_search_locations:
            pytest.skip(f"{package} is not installed")
        roots.append(Path(spec.submodule_search_locations[0]) / sub)
    report = lint_paths(roots, Config())
    assert report.files_checked > 40
    assert report.notes == []
    assert all(f.rule != "PD000" for f in report.findings)
