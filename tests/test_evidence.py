"""What a static finding rests on: each fact shown by the code, assumed, or shown false (no
finding), and the confidence that follows. Real code shapes, linted as the gate lints them."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from pins import on_old_tensorflow

from pipedoctor import lint
from pipedoctor.evidence import Evidence, confidence

HEAD = (
    "import tensorflow as tf\nimport keras\nimport numpy as np\n"
    "import tensorflow_datasets as tfds\nmodel = keras.Sequential()\n"
)


def findings(source: str, rule: str) -> list:
    report = lint(source=HEAD + textwrap.dedent(source), select=[rule], confidence="low")
    return [f for f in report.findings if f.rule == rule]


def facts(source: str, rule: str) -> dict[str, bool] | None:
    """The facts of the one finding of ``rule``: fact → shown; None when there is none."""
    found = findings(source, rule)
    assert len(found) <= 1, found
    return {e.fact: e.shown for e in found[0].evidence} if found else None


def test_confidence_is_a_function_of_the_evidence() -> None:
    shown, assumed = Evidence("trains", True), Evidence("data", False)
    assert confidence([]) == "high"
    assert confidence([shown, shown]) == "high"
    assert confidence([shown, assumed]) == "medium"
    assert confidence([assumed, assumed]) == "low"
    assert confidence([shown], cap="medium") == "medium"


@pytest.mark.parametrize(
    "source, trains",
    [
        ("ds = tf.data.TextLineDataset('a.csv').map(tf.strings.split)\nmodel.fit(ds)", True),
        (  # returned to callers this file does not hold
            "def make(path):\n    return tf.data.TextLineDataset(path).map(tf.strings.split)\n",
            False,
        ),
        (  # named for training, or taking a flag that says so: still only a name, no caller
            "def train_input_fn(path):\n"
            "    return tf.data.TextLineDataset(path).map(tf.strings.split)\n",
            False,
        ),
        (
            "def input_fn(path, is_training):\n"
            "    return tf.data.TextLineDataset(path).map(tf.strings.split)\n",
            False,
        ),
        (  # a factory of input functions, and a caller that trains on what it makes
            "def make_input_fn(path, mode):\n"
            "    def input_fn():\n"
            "        return tf.data.TextLineDataset(path).map(tf.strings.split)\n"
            "    return input_fn\n"
            "estimator.train(input_fn=make_input_fn('train.csv', 'train'))\n",
            True,
        ),
    ],
)
def test_reaching_training_is_shown_or_assumed(source: str, trains: bool) -> None:
    assert facts(source, "PD102")["trains"] is trains


@pytest.mark.parametrize(
    "source",
    [
        "def eval_input_fn(path):\n    return tf.data.TextLineDataset(path).map(tf.strings.split)",
        "ds = tf.data.TextLineDataset('a.csv').map(tf.strings.split)\nmodel.evaluate(ds)",
        "ds = tf.data.TextLineDataset('a.csv').map(tf.strings.split)\nprint(next(iter(ds)))",
    ],
)
def test_a_dataset_shown_not_to_train_draws_nothing(source: str) -> None:
    assert facts(source, "PD102") is None


@pytest.mark.parametrize(
    "function, work",
    [
        ("lambda x: tf.io.decode_jpeg(tf.io.read_file(x))", True),
        ("lambda x: tf.strings.split(x, ',')", True),
        ("lambda x: tf.py_function(len, [x], tf.int64)", None),  # Python: PD108's finding
        ("keras.layers.TextVectorization(max_tokens=100)", True),
        ("lambda x: preprocess(x)", False),  # defined elsewhere: assumed
        ("lambda r: {'image': r['image'], 'label': r['label']}", None),  # restructures
        ("lambda x: tf.cast(x, tf.float32) / 255.0", None),
        ("lambda x: tf.ensure_shape(x, [28, 28])", None),
        ("lambda x: tf.strings.to_hash_bucket_fast(x, 100)", None),  # one hash: no real work
    ],
)
def test_the_cost_model_of_a_mapped_function(function: str, work: bool | None) -> None:
    source = (
        "from helpers import preprocess\n"
        f"ds = tf.data.TextLineDataset('a.csv').map({function})\nmodel.fit(ds, epochs=3)"
    )
    found = facts(source, "PD102")
    assert (None if found is None else found["work"]) is work


@pytest.mark.parametrize(
    "files, several",
    [
        ("['a.tfrecord', 'b.tfrecord']", True),
        ("tf.io.gfile.glob('data/train-*.tfrecord')", True),
        ("glob.glob(data_dir + '/shard-*')", True),
        ("[f'part-{i:05d}' for i in range(64)]", True),
        ("train_files", False),  # only the plural name says so
        ("'data/train.tfrecord'", None),  # one file
        ("data_dir + '/train.tfrecord'", None),
    ],
)
def test_several_files_are_shown_assumed_or_not_there(files: str, several: bool | None) -> None:
    source = (
        "import glob\n"
        f"ds = tf.data.TFRecordDataset({files})\n"
        "model.fit(ds.batch(32).prefetch(tf.data.AUTOTUNE), epochs=3)"
    )
    found = facts(source, "PD104")
    assert (None if found is None else found["files"]) is several


@pytest.mark.parametrize(
    "arrays, real",
    [
        ("keras.datasets.mnist.load_data()[0]", True),
        ("dict(pd.read_csv('taxi-train.csv'))", False),  # a file: its size is not seen
        ("np.load('features.npy')", False),
        ("features", False),  # a parameter: origin and size not seen
        ("np.random.uniform(size=(100_000, 8))", None),  # made up, at any size
        ("dict(pd.read_csv('iris.csv'))", None),  # a data set lessons use for its smallness
        ("sklearn.datasets.load_iris(return_X_y=True)", None),
        ("[[1.0, 2.0], [3.0, 4.0]]", None),
    ],
)
def test_the_data_is_more_than_a_toy(arrays: str, real: bool | None) -> None:
    source = (
        "import pandas as pd\nimport sklearn.datasets\n"
        "def train(features):\n"
        f"    ds = tf.data.Dataset.from_tensor_slices({arrays}).shuffle(1000).batch(32)\n"
        "    model.fit(ds, epochs=3)\n"
    )
    found = facts(source, "PD101")
    assert (None if found is None else found["data"]) is real


def test_shards_show_real_data_where_one_file_does_not() -> None:
    source = (
        "ds = tf.data.TFRecordDataset({files}, num_parallel_reads=tf.data.AUTOTUNE)\n"
        "ds = ds.map(tf.io.parse_tensor).batch(32).prefetch(tf.data.AUTOTUNE)\n"
        "model.fit(ds, epochs=3)"
    )
    sharded = facts(source.format(files="tf.io.gfile.glob('data/train-*.tfrecord')"), "PD102")
    assert sharded["data"] is True
    one = facts(source.format(files="'data/train.tfrecord'"), "PD102")
    assert one["data"] is False  # a few hundred records or millions: the code does not say


def test_epochs_decide_whether_a_cache_or_its_order_matters() -> None:
    base = (
        "ds = tf.data.TFRecordDataset('data/train.tfrecord')"
        ".map(tf.io.parse_tensor, num_parallel_calls=tf.data.AUTOTUNE).shuffle(1000).cache()\n"
    )
    assert facts(base + "model.fit(ds.batch(8), epochs=10)", "PD107") == {
        "trains": True,
        "epochs": True,
    }
    assert facts(base + "model.fit(ds.batch(8), epochs=1)", "PD107") is None  # read once
    looped = base + "for epoch in range(5):\n    for batch in ds.batch(8):\n        train_step(x)"
    assert facts(looped, "PD107") == {"trains": True, "epochs": True}
    assert facts(base + "model.fit(ds.batch(8), epochs=EPOCHS)", "PD107") == {
        "trains": True,
        "epochs": False,
    }


def test_library_defaults_are_known() -> None:
    forever = (
        "rows = tf.data.experimental.make_csv_dataset('a.csv', batch_size=32, label_name='y')\n"
        "model.fit(rows.cache(), epochs=5, steps_per_epoch=100)"
    )
    assert facts(forever, "PD107") is None  # it repeats forever: the cache never completes
    task = (
        "import keras_hub\n"
        "classifier = keras_hub.models.BertClassifier.from_preset('bert_base_en', num_classes=2)\n"
        "ds = tf.data.TextLineDataset('reviews.txt').batch(32)\n"
        "classifier.fit(ds, epochs=3)"
    )
    assert facts(task, "PD101") is None  # the task maps its preprocessor and prefetches
    one_batch = (
        "train = tf.data.TFRecordDataset('train.tfrecord').batch(32).prefetch(tf.data.AUTOTUNE)\n"
        "val = tf.data.TFRecordDataset('val.tfrecord').batch(32)\n"
        "model.fit(train, validation_data=val, validation_steps=1, epochs=5)"
    )
    assert facts(one_batch, "PD101") is None  # one validation batch an epoch: nothing to overlap


def test_a_value_set_by_branch_is_no_constant() -> None:
    strategy = (
        "strategy = tf.distribute.MirroredStrategy()\n"
        "with strategy.scope():\n"
        "    model = keras.Sequential([keras.layers.Dense(1)])\n"
        "    model.compile(optimizer='sgd', loss='mse')\n"
    )
    fit = (
        "ds = tf.data.TFRecordDataset('t.tfrecord').batch(BATCH).prefetch(tf.data.AUTOTUNE)\n"
        "model.fit(ds, epochs=3)\n"
    )
    constant = strategy + "BATCH = 64\n" + fit
    assert facts(constant, "PD202") == {"setup": True, "value": True}
    by_flag = strategy + "if large:\n    BATCH = 1024\nelse:\n    BATCH = 64\n" + fit
    assert facts(by_flag, "PD202") == {"setup": True, "value": False}
    by_devices = strategy + "if use_tpu:\n    BATCH = 1024\nelse:\n    BATCH = 64\n" + fit
    assert facts(by_devices, "PD202") is None  # sized for the devices on each branch


def test_misses_of_the_first_looks_are_found() -> None:
    fixed = (
        "files = tf.io.gfile.glob('data/*.tfrecord')\n"
        "ds = tf.data.TFRecordDataset(files, num_parallel_reads=5)\n"
        "ds = ds.apply(tf.data.experimental.map_and_batch(tf.io.parse_tensor, 32, "
        "num_parallel_batches=4))\n"
        "model.fit(ds.prefetch(tf.data.AUTOTUNE), epochs=3)"
    )
    messages = [f.message for f in findings(fixed, "PD103")]
    assert any("num_parallel_reads=5" in m for m in messages)
    assert any("num_parallel_batches=4" in m for m in messages)
    csv = (
        "rows = tf.data.experimental.make_csv_dataset('data/part-*.csv', batch_size=64, "
        "label_name='y', num_epochs=1)\nmodel.fit(rows, epochs=3)"
    )
    assert facts(csv, "PD104") == {"trains": True, "files": True}
    saved = (
        "strategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
        "with strategy.scope():\n    model = keras.Sequential([keras.layers.Dense(1)])\n"
        "model.save('/shared/model.keras')\n"
    )
    assert findings(saved, "PD207")


def test_the_gate_reports_high_and_says_what_it_left_out(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    (tmp_path / "loader.py").write_text(
        HEAD + "def make(path):\n    return tf.data.TextLineDataset(path).map(tf.strings.split)\n"
    )
    (tmp_path / "train.py").write_text(
        HEAD + "ds = tfds.load('imdb_reviews', split='train').map(tf.strings.split)\n"
        "model.fit(ds)\n"
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pipedoctor", "lint", ".", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=120,
        )

    default = run()
    assert default.returncode == 1
    assert "loader.py" not in default.stdout and "train.py:6:" in default.stdout
    # the loader's dataset is returned to callers elsewhere, from a file of unseen size: low
    assert "1 more at lower confidence (low: 1)" in default.stdout
    assert json.loads(run("--confidence", "medium", "--format", "json").stdout)["findings"]
    wide = json.loads(run("--confidence", "low", "--format", "json").stdout)
    assert {(f["path"], f["confidence"]) for f in wide["findings"]} >= {("loader.py", "low")}
    text = run("--confidence", "low").stdout
    assert "[warning, low confidence]" in text
    assert "assumed: the dataset reaches training (returned from `make`" in text
    github = run("--format", "github").stdout
    assert "::notice title=pipedoctor::1 more finding at lower confidence" in github
    (tmp_path / "pyproject.toml").write_text('[tool.pipedoctor]\nconfidence = "low"\n')
    assert len(json.loads(run("--format", "json").stdout)["findings"]) == 2
    (tmp_path / "pyproject.toml").write_text('[tool.pipedoctor]\nconfidence = "some"\n')
    bad = run()
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "confidence" in bad.stderr
    assert run("--confidence", "certain").returncode == 2


def test_cache_after_a_shuffling_factory_says_what_a_later_shuffle_does() -> None:
    # a later shuffle reorders whole cached batches: it never undoes the frozen batches
    source = (
        "import tensorflow as tf\n"
        "ds = tf.keras.utils.audio_dataset_from_directory('data/train', batch_size=64)\n"
        "ds = ds.cache().shuffle(1000).prefetch(tf.data.AUTOTUNE)\n"
        "tf.keras.Sequential().fit(ds, epochs=10)\n"
    )
    (finding,) = [f for f in lint(source=source, confidence="low").findings if f.rule == "PD107"]
    assert "the `shuffle` after it (line 3) only reorders whole cached batches" in finding.message
