"""Where the static front end sees each dataset end, and which training each strategy reaches."""

from __future__ import annotations

import textwrap
from pathlib import Path

from pins import on_old_tensorflow

from pipedoctor import lint
from pipedoctor.static import analyze_source


def ends(source: str, path: str = "train.py") -> dict[str, set[str]]:
    """The judged pipelines, named by their ops, with the ends of all of that name."""
    analysis = analyze_source(textwrap.dedent(source), path)
    found: dict[str, set[str]] = {}
    for pipeline in analysis.pipelines:
        found.setdefault(" ".join(s.op for s in pipeline.stages), set()).update(pipeline.ends)
    return found


def test_each_use_gives_its_end() -> None:
    found = ends(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()
        norm = tf.keras.layers.Normalization()

        def run(x, y):
            train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(100).batch(32)
            val = tf.data.Dataset.from_tensor_slices((x, y)).batch(64)
            model.fit(train, validation_data=val)
            model.evaluate(tf.data.Dataset.from_tensor_slices((x, y)).batch(128))
            norm.adapt(tf.data.Dataset.from_tensor_slices(x).batch(256))
            for batch in tf.data.Dataset.from_tensor_slices(x).take(2):
                print(batch)
            tf.data.Dataset.from_tensor_slices(x).batch(8).save("/tmp/saved")
        """
    )
    assert found == {
        "from_tensor_slices shuffle batch": {"training"},
        "from_tensor_slices batch": {"validation", "evaluation", "adapt", "export"},
        "from_tensor_slices take": {"inspection"},
    }


def test_custom_loops_train_and_validate() -> None:
    found = ends(
        """
        import tensorflow as tf

        def loop(x, y, train_step, test_step):
            train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(10).batch(4)
            test = tf.data.Dataset.from_tensor_slices((x, y)).repeat(2).batch(4)
            for epoch in range(3):
                for images, labels in train:
                    train_step(images, labels)
                for images, labels in test:
                    test_step(images, labels)
            for images, labels in test:
                test_step(images, labels)
            iterator = iter(train)
            while True:
                loss = step(next(iterator))
        """
    )
    assert found["from_tensor_slices shuffle batch"] == {"training"}
    assert found["from_tensor_slices repeat batch"] == {"validation", "evaluation"}


def test_a_returned_dataset_is_judged_where_the_caller_uses_it() -> None:
    found = ends(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()

        def make(x, batch_size):
            return tf.data.Dataset.from_tensor_slices(x).batch(batch_size)

        def library_factory(x):
            return tf.data.Dataset.from_tensor_slices(x).shuffle(100).batch(32)

        def main(x):
            model.fit(make(x, 32))
            print(next(iter(make(x, 8))))
        """
    )
    assert found["from_tensor_slices batch"] == {"training"}
    # Nobody in the module calls it: a library's make_dataset() is real training code.
    assert found["from_tensor_slices shuffle batch"] == {"unknown"}


def test_module_level_datasets_end_unknown_in_a_module_and_nowhere_in_a_notebook() -> None:
    source = "import tensorflow as tf\nds = tf.data.Dataset.range(10).batch(2)\n"
    assert ends(source) == {"range batch": {"unknown"}}
    assert ends(source, "explore.ipynb") == {}


def test_generators_zip_and_concatenate_carry_the_end() -> None:
    found = ends(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()
        records = tf.data.TFRecordDataset(["a.rec", "b.rec"])

        def frames():
            for record in records:
                yield record

        generated = tf.data.Dataset.from_generator(frames, output_signature=None)
        left = tf.data.Dataset.range(5)
        right = tf.data.Dataset.range(5, 10)
        both = tf.data.Dataset.zip((left, right)).concatenate(tf.data.Dataset.range(3))
        model.fit(generated.batch(4))
        model.fit(both.batch(4))
        """
    )
    assert found["TFRecordDataset"] == {"training"}
    assert found["zip concatenate batch"] == {"training"}


def test_made_up_input_is_not_judged() -> None:
    found = ends(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()

        def input_fn(files, use_fake_data):
            ds = tf.data.TFRecordDataset(files).shuffle(100)
            if use_fake_data:
                ds = ds.take(1).cache().repeat()
            return ds.batch(8)

        def null_input():
            return tf.data.Dataset.range(1).repeat().map(lambda i: (i, i))

        model.fit(input_fn(["a"], False))
        model.fit(null_input().batch(2))
        """
    )
    assert found == {"TFRecordDataset shuffle batch": {"training"}}


def test_unit_test_files_are_not_the_training_path(tmp_path: Path) -> None:
    on_old_tensorflow(tmp_path)
    code = textwrap.dedent(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()
        files = tf.io.gfile.glob("data/train-*.tfrecord")
        model.fit(tf.data.TFRecordDataset(files).map(tf.io.parse_tensor).batch(4), epochs=3)
        """
    )
    (tmp_path / "train.py").write_text(code)
    (tmp_path / "train_test.py").write_text(code)
    (tmp_path / "checks.py").write_text(
        "import unittest\n\nclass Checks(unittest.TestCase):\n    pass\n" + code
    )
    report = lint(tmp_path)
    assert {Path(f.path or "").name for f in report.findings} == {"train.py"}


def test_one_finding_per_place_from_many_call_sites() -> None:
    source = textwrap.dedent(
        """
        import tensorflow as tf
        model = tf.keras.Sequential()

        def make(x, calls):
            ds = tf.data.Dataset.from_tensor_slices(x)
            return ds.map(tf.io.parse_tensor, num_parallel_calls=calls).batch(8)

        for size in (1, 2, 3):
            model.fit(make([1.0] * 8, size))
        model.fit(make([2.0] * 8, 4))
        model.fit(make([3.0] * 8, 5))
        """
    )
    report = lint(source, confidence="low")  # the lists' origin is not seen: medium
    found = [(f.rule, f.line) for f in report.findings]
    assert ("PD103", 7) in found and len(found) == len(set(found))  # five calls, one each


def strategies(source: str) -> list[tuple[str | None, str | None, bool]]:
    analysis = analyze_source(textwrap.dedent(source), "train.py")
    return [
        (f.get("end"), f.get("strategy_kind"), f.get("data_parallel"))
        for f in analysis.training.of("training")
    ]


def test_a_strategy_reaches_what_it_trains() -> None:
    found = strategies(
        """
        import tensorflow as tf
        ds = tf.data.Dataset.range(10).batch(2)

        def build():
            return tf.keras.Sequential()

        plain = build()
        plain.fit(ds)
        strategy = tf.distribute.MirroredStrategy()
        with strategy.scope():
            mirrored = build()
        mirrored.fit(ds)
        config = tf.estimator.RunConfig(train_distribute=tf.distribute.MirroredStrategy())
        estimator = tf.estimator.Estimator(model_fn=None, config=config)
        estimator.train(input_fn=lambda: ds)
        ps = tf.distribute.ParameterServerStrategy(None)
        for batch in ps.experimental_distribute_dataset(ds):
            ps.run(train_step, args=(batch,))
        """
    )
    assert found == [
        ("training", None, False),
        ("training", "mirrored", True),
        ("training", "estimator", True),
        ("training", "parameter-server", False),
    ]


def test_only_a_model_a_strategy_trains_is_outside_its_scope() -> None:
    report = lint(
        textwrap.dedent(
            """
            import tensorflow as tf
            strategy = tf.distribute.MirroredStrategy()
            data = tf.data.Dataset.range(64).batch(8 * strategy.num_replicas_in_sync)
            helper = tf.keras.Sequential()
            helper.compile(optimizer="adam", loss="mse")
            helper.fit(tf.data.Dataset.range(8).batch(8))
            forgotten = tf.keras.Sequential()
            forgotten.compile(optimizer="adam", loss="mse")
            forgotten.fit(data)
            """
        ),
        select=["PD205"],
        confidence="medium",  # the rule's findings are capped there (rules/PD205-*.toml)
    )
    assert [f.line for f in report.findings] == [8]
