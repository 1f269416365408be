"""The project pass: a finding on the dataset a function returns rests on ``trains`` shown when
another file of the same lint trains on what that function returns, and only then."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pins import on_old_tensorflow

from pipedoctor.config import Config
from pipedoctor.lint import lint_paths
from pipedoctor.static.project import Modules

RECORDS = """
import tensorflow as tf


def decode(record):
    features = tf.io.parse_single_example(record, {"image": tf.io.FixedLenFeature([], tf.string)})
    return tf.io.decode_jpeg(features["image"])


def make_dataset(files, batch_size):
    ds = tf.data.TFRecordDataset(files)
    ds = ds.map(decode)
    return ds.batch(batch_size)


def make_splits(files):
    train = tf.data.TFRecordDataset(files).map(decode).batch(64)
    test = tf.data.TFRecordDataset(files).map(decode).batch(256)
    return train, test


class Loader:
    def __init__(self, files):
        self.files = files

    def build(self):
        return tf.data.TFRecordDataset(self.files).map(decode).batch(32)
"""


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")


def trains(root: Path, files: dict[str, str]) -> dict[tuple[str, int], tuple[str, str]]:
    """Lint ``root`` at every tier: (file, line) of each PD102 → (confidence, the trains fact)."""
    write(on_old_tensorflow(root), files)
    cwd = os.getcwd()
    os.chdir(root)
    try:
        report = lint_paths([Path(".")], Config(confidence="low"))
    finally:
        os.chdir(cwd)
    found = {}
    for finding in report.findings:
        if finding.rule != "PD102":
            continue
        fact = next(e for e in finding.evidence if e.fact == "trains")
        state = f"shown: {fact.detail}" if fact.shown else "assumed"
        found[(finding.path, finding.line)] = (finding.confidence, state)
    return found


TRAINER = """
import glob
import keras
from data import records


files = glob.glob("/data/train-*.tfrecord")
model = keras.Sequential([keras.layers.Dense(1)])
model.compile("adam", "mse")
{use}
"""


def test_a_fit_in_another_file_shows_the_returned_dataset_trains(tmp_path: Path) -> None:
    use = "model.fit(records.make_dataset(files, 64), epochs=10)"
    found = trains(tmp_path, {"data/records.py": RECORDS, "train.py": TRAINER.format(use=use)})
    confidence, fact = found[("data/records.py", 12)]
    assert fact == "shown: `train.py` hands it to `fit` (line 10)"
    assert confidence == "medium"  # the map's function is shown to work: one fact is left
    alone = trains(tmp_path / "alone", {"data/records.py": RECORDS})
    assert alone[("data/records.py", 12)] == ("low", "assumed")


@pytest.mark.parametrize(
    "use",
    [
        "model.fit(records.make_dataset(files, 64).prefetch(2), epochs=10)",  # changed first
        "model.evaluate(records.make_dataset(files, 64))",  # only evaluated
        "print(records.make_dataset(files, 64))",  # only looked at
        "records.make_dataset(files, 64)",  # called, thrown away
    ],
)
def test_only_training_on_the_dataset_as_returned_shows_it(tmp_path: Path, use: str) -> None:
    found = trains(tmp_path, {"data/records.py": RECORDS, "train.py": TRAINER.format(use=use)})
    assert found[("data/records.py", 12)] == ("low", "assumed")


def test_a_strategy_distributing_it_is_another_pipeline(tmp_path: Path) -> None:
    use = """
import tensorflow as tf
strategy = tf.distribute.MirroredStrategy()
for batch in strategy.experimental_distribute_dataset(records.make_dataset(files, 64)):
    strategy.run(train_step, args=(batch,))
"""
    found = trains(tmp_path, {"data/records.py": RECORDS, "train.py": TRAINER.format(use=use)})
    assert found[("data/records.py", 12)] == ("low", "assumed")


def test_each_item_of_what_a_function_returns_is_its_own(tmp_path: Path) -> None:
    use = """
train_ds, test_ds = records.make_splits(files)
model.fit(train_ds, epochs=5)
model.evaluate(test_ds)
"""
    found = trains(tmp_path, {"data/records.py": RECORDS, "train.py": TRAINER.format(use=use)})
    assert found[("data/records.py", 17)][1].startswith("shown: `train.py` hands it to `fit`")
    assert found[("data/records.py", 18)] == ("low", "assumed")  # the test split


def test_methods_relative_imports_and_loops(tmp_path: Path) -> None:
    trainer = """
    import tensorflow as tf
    from .records import Loader


    def train(files, model, optimizer):
        for x, y in Loader(files).build():
            with tf.GradientTape() as tape:
                loss = model(x)
            optimizer.apply_gradients(zip(tape.gradient(loss, model.weights), model.weights))
    """
    found = trains(
        tmp_path, {"pkg/__init__.py": "", "pkg/records.py": RECORDS, "pkg/train.py": trainer}
    )
    confidence, fact = found[("pkg/records.py", 27)]
    assert fact.startswith("shown: `pkg/train.py` hands it to a loop that reads as training")


def test_a_chain_of_functions_and_a_package_that_re_exports(tmp_path: Path) -> None:
    package = """
    from .records import make_dataset


    def get_train(files):
        return make_dataset(files, 128)
    """
    use = "model.fit(data.get_train(files), epochs=3)"
    found = trains(
        tmp_path,
        {
            "data/__init__.py": package,
            "data/records.py": RECORDS,
            "train.py": TRAINER.format(use=use).replace("from data import records", "import data"),
        },
    )
    fact = found[("data/records.py", 12)][1]
    assert fact == (
        "shown: `train.py` hands it to `fit` (line 10), through `get_train` in `data/__init__.py`"
    )


def test_two_modules_as_near_are_not_guessed_between(tmp_path: Path) -> None:
    use = "model.fit(records.make_dataset(files, 64), epochs=10)"
    found = trains(
        tmp_path,
        {
            "a/data/records.py": RECORDS,
            "b/data/records.py": RECORDS,
            "train.py": TRAINER.format(use=use),
        },
    )
    assert found[("a/data/records.py", 12)] == ("low", "assumed")
    assert found[("b/data/records.py", 12)] == ("low", "assumed")


names = st.text(alphabet="abc._", min_size=0, max_size=12)


@given(
    modules=st.lists(st.lists(st.sampled_from(["a", "b", "c", "__init__"]), max_size=4)),
    caller=st.lists(st.sampled_from(["a", "b", "c"]), min_size=1, max_size=4),
    origin=names,
    index=st.none() | st.sampled_from(["0", "1", "train"]),
)
def test_any_layout_and_import_resolve_without_error(
    modules: list[list[str]], caller: list[str], origin: str, index: str | None
) -> None:
    root = Path("/project")
    files = [
        root.joinpath(*parts, "m.py")
        if not parts
        else root.joinpath(*parts[:-1], f"{parts[-1]}.py")
        for parts in modules
    ]
    caller_path = root.joinpath(*caller, "train.py")
    for target in Modules(files).resolve(caller_path, origin, index):
        assert target.key.split("[")[0] in origin
        assert target.where in files or any(f.parent == target.where for f in files)
