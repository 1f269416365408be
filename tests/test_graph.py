"""The graph front end and the what-if rewrites, on real tf.data pipelines (TensorFlow, CPU)."""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

import pipedoctor  # noqa: E402
from pipedoctor.capture import sites  # noqa: E402
from pipedoctor.graph import graphdef as g  # noqa: E402
from pipedoctor.graph.candidate import rebuilt, rewritten  # noqa: E402
from pipedoctor.graph.doctor import diagnose  # noqa: E402
from pipedoctor.graph.fixes import candidates  # noqa: E402
from pipedoctor.graph.fixes.cache import Limits  # noqa: E402
from pipedoctor.graph.fixes.vectorize import changed_values, verify  # noqa: E402
from pipedoctor.graph.frontend import read_dataset  # noqa: E402
from pipedoctor.graph.whatif import evaluate, without_moot  # noqa: E402
from pipedoctor.pipeline import AUTOTUNE, Analysis, Files  # noqa: E402
from pipedoctor.rules import run_rules  # noqa: E402

sites.install()


def records(tmp_path: Path, files: int = 3, per_file: int = 40) -> list[str]:
    paths = []
    for i in range(files):
        path = tmp_path / f"part-{i}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for j in range(per_file):
                writer.write(tf.io.serialize_tensor(tf.constant([float(i * 100 + j)] * 4)).numpy())
        paths.append(str(path))
    return paths


def parse(record):
    return tf.io.parse_tensor(record, tf.float32)


def first(dataset, n: int) -> list[np.ndarray]:
    return [np.asarray(x) for x in dataset.take(n)]


READINGS = np.random.default_rng(0).integers(-3000, 3000, size=(100, 6)).astype(np.int16)
MEAN, STD = READINGS.mean(axis=0).astype(np.float32), READINGS.std(axis=0).astype(np.float32)


def standardize(row):
    return (tf.cast(row, tf.float32) - MEAN) / STD


def test_reads_exact_parameters_files_functions_and_call_sites(tmp_path: Path) -> None:
    files = records(tmp_path)
    ds = tf.data.TFRecordDataset(files).map(parse).shuffle(16).batch(8)
    ds = ds.map(lambda x: x * 2.0, num_parallel_calls=2).prefetch(3)
    gp = read_dataset(ds)
    ops = [s.op for s in gp.pipeline.stages]
    assert ops == ["TFRecordDataset", "map", "shuffle", "batch", "map", "prefetch"]
    reader, decode, shuffle, batch, scale, prefetch = gp.pipeline.stages
    assert reader.params["filenames"] == Files(3, literal=True)
    assert reader.params["file_bytes"] == sum(Path(f).stat().st_size for f in files)
    assert "num_parallel_reads" not in reader.params
    assert "num_parallel_calls" not in decode.params and decode.fn.decodes
    assert scale.params["num_parallel_calls"] == 2 and scale.fn.elementwise
    assert shuffle.params["buffer_size"] == 16 and batch.params["batch_size"] == 8
    assert prefetch.params["buffer_size"] == 3
    assert decode.location.path.endswith("test_graph.py")  # the line that built it, not TF's
    assert decode.location.line == scale.location.line - 1


def test_graph_rules_see_what_the_source_hid() -> None:
    def build_elsewhere():  # as a helper library or a config-driven builder would
        def noisy(x):
            return x + tf.random.uniform(())

        base = tf.data.Dataset.range(64).map(lambda x: tf.cast(x, tf.float32))
        return base.map(noisy, num_parallel_calls=AUTOTUNE).cache().batch(8)

    gp = read_dataset(build_elsewhere())
    rules = {f.rule for f in run_rules(Analysis("x", [gp.pipeline]), "graph")}
    assert {"PD101", "PD102", "PD107"} <= rules


def test_a_cache_after_a_one_time_shuffle_is_left_alone_live_too() -> None:
    # The "load images" tutorial: a split shuffled once (the same order every epoch), then
    # cached; a shuffle drawn anew each epoch and then cached replays its first draw.
    def rules_of(reshuffle: bool) -> set[str]:
        ds = tf.data.Dataset.range(64).shuffle(64, reshuffle_each_iteration=reshuffle)
        gp = read_dataset(ds.map(lambda x: x * 2).cache().batch(8).prefetch(AUTOTUNE))
        assert gp.pipeline.stages[1].params["reshuffle_each_iteration"] is reshuffle
        return {f.rule for f in run_rules(Analysis("x", [gp.pipeline]), "graph")}

    assert "PD107" in rules_of(True)
    assert "PD107" not in rules_of(False)


@pytest.mark.parametrize(
    "build",
    [
        lambda: tf.data.Dataset.range(200).map(lambda x: x * 3).batch(7),
        lambda: tf.data.Dataset.range(200).map(lambda x: x + 1, num_parallel_calls=2).prefetch(2),
        lambda: tf.data.Dataset.range(20).interleave(
            lambda x: tf.data.Dataset.range(x, x + 5), cycle_length=3, block_length=2
        ),
        lambda: (
            tf.data.Dataset.from_tensor_slices(
                tf.io.encode_png(tf.zeros((30, 8, 8, 3), tf.uint8)[0])[None]
            )
            .repeat(30)
            .map(tf.io.decode_png)
        ),
        lambda: (
            tf.data.Dataset.from_tensor_slices(READINGS)
            .map(standardize, num_parallel_calls=AUTOTUNE)
            .shuffle(64, seed=1)
            .batch(7)
        ),
    ],
    ids=[
        "sequential-map+batch",
        "fixed-parallelism+prefetch",
        "interleave",
        "decode+cache",
        "element-wise-map-after-batch",
    ],
)
def test_every_rewrite_keeps_what_the_pipeline_yields(build) -> None:
    ds = build()
    gp = read_dataset(ds)
    expected = first(ds, 25)
    found = [c for c in candidates(gp, Limits(10**10)) if not c.bound]
    assert found
    for candidate in found:
        if candidate.verify:  # unsafe until this pipeline's values were compared
            assert not candidate.applicable and verify(gp, candidate, ds.element_spec) == ""
        if candidate.prepare is not None:  # unsafe until a first pass filled it within RAM
            assert not candidate.applicable and candidate.prepare(time.perf_counter() + 120) is None
        assert candidate.applicable, candidate.title
        got = first(rebuilt(gp, [candidate], ds.element_spec), 25)
        assert len(got) == len(expected)
        assert all(np.array_equal(a, b) for a, b in zip(expected, got, strict=True)), (
            candidate.title
        )
    together = rebuilt(gp, without_moot(found), ds.element_spec)  # as the projection applies
    assert all(np.array_equal(a, b) for a, b in zip(expected, first(together, 25), strict=True))


def test_moving_a_map_after_batch_is_made_only_where_the_values_stay_the_same() -> None:
    rows = tf.data.Dataset.from_tensor_slices(READINGS)
    per_row_mean = rows.map(
        lambda r: tf.cast(r, tf.float32) - tf.reduce_mean(tf.cast(r, tf.float32))
    )
    assert not [c for c in candidates(read_dataset(per_row_mean.batch(8))) if c.rule == "PD109"]

    widened = rows.map(lambda r: tf.cast(r, tf.float32) + tf.ones((2, 6))).batch(8)
    gp = read_dataset(widened)
    (move,) = [c for c in candidates(gp) if c.rule == "PD109"]
    assert move.verify
    assert "fails" in changed_values(gp, [move], widened.element_spec)
    outcome = evaluate(gp, widened.element_spec, time.perf_counter() + 6)
    (entry,) = [f for f in outcome.fixes if f["rule"] == "PD109"]
    assert entry["gain"] is None and "fails" in entry["unmeasured"]
    assert any(
        "after `batch`: not measured, the rewritten pipeline fails" in n for n in outcome.notes
    )


def test_parallel_reads_reorder_so_they_are_only_advised(tmp_path: Path) -> None:
    ds = tf.data.TFRecordDataset(records(tmp_path)).map(parse, num_parallel_calls=AUTOTUNE)
    gp = read_dataset(ds)
    (reads,) = [c for c in candidates(gp) if c.rule == "PD104"]
    assert not reads.applicable and reads.safety == "unsafe"
    rebuilt = g.rebuild(rewritten(gp, [reads]), ds.element_spec)
    before = sorted(float(x[0]) for x in ds)
    after = [float(x[0]) for x in rebuilt]
    assert sorted(after) == before and after != sorted(after)


def slow(x):
    def wait(v):
        time.sleep(0.003)
        return v

    y = tf.py_function(wait, [x], tf.int64)
    y.set_shape(())
    return y


def test_attribution_names_the_slow_stage_and_fixes_carry_gains() -> None:
    ds = tf.data.Dataset.range(100_000).map(lambda x: x + 1).map(slow).batch(16)
    gp = read_dataset(ds)
    outcome = evaluate(gp, ds.element_spec, time.perf_counter() + 20)
    limiting = [s for s in outcome.stages if s["limiting"]]
    assert [s["index"] for s in limiting] == [2], outcome.stages
    parallel = [f for f in outcome.fixes if f["rule"] == "PD102" and "stage 2" in f["title"]]
    assert parallel and parallel[0]["gain"] > 1.3, outcome.fixes
    assert outcome.fixed and outcome.fixed > outcome.baseline


def test_a_set_of_fixes_slower_than_its_best_fix_alone_applies_that_fix_alone() -> None:
    """All fixes together measured below one of them alone: the two are timed against each
    other, and where the others slow it down, the best fix is applied alone, with the note."""
    from pipedoctor.graph.timing import Paired
    from pipedoctor.graph.whatif import OwnCache, _set_or_best_alone

    ds = tf.data.Dataset.range(100_000).map(slow).batch(16)
    gp = read_dataset(ds)
    found = candidates(gp)
    (parallel,) = [c for c in found if c.rule == "PD102"]
    (prefetch,) = [c for c in found if c.rule == "PD101"]
    screened = [(parallel, Paired([3.0, 3.0], [])), (prefetch, Paired([1.1, 1.1], []))]

    def held(batch):  # 50 ms per batch on top of the set: slower than the parallel map alone
        out = tf.py_function(lambda b: (time.sleep(0.05), b)[1], [batch], tf.int64)
        out.set_shape(batch.shape)
        return out

    slowed = rebuilt(gp, [parallel, prefetch], ds.element_spec).map(held)
    notes: list[str] = []
    deadline = time.perf_counter() + 30
    kept, gain = _set_or_best_alone(
        gp, (ds, slowed), screened, [parallel, prefetch], 1.4, True,
        lambda: deadline - time.perf_counter(), OwnCache(gp, True), notes,
    )  # fmt: skip
    assert kept == [parallel] and gain > 1.4, notes
    assert "the other fixes slow it down here, so it is applied alone" in notes[0]


def test_a_python_stage_gets_a_measured_bound_never_a_rewrite() -> None:
    ds = tf.data.Dataset.range(100_000).map(lambda x: x * 2).map(slow).batch(16)
    gp = read_dataset(ds)
    (bound,) = [c for c in candidates(gp) if c.rule == "PD108"]
    assert bound.bound and not bound.applicable
    said: list[str] = []
    result = diagnose(ds, time.perf_counter() + 24, progress=said.append)  # the bound: 2nd
    # Each stage and what-if is named as its timing starts: the phase is never silent for long.
    stages = [m for m in said if ": stage " in m]
    assert [m.split(", ")[-1] for m in stages] == [s["op"] for s in result.measurements["stages"]]
    assert stages[0].startswith("reading the pipeline's graph: stage 1 of ")
    whatifs = [m for m in said if ": what-if " in m]
    assert len(whatifs) == len(result.measurements["whatif"]) >= 2, said
    assert any(m.endswith(bound.title) for m in whatifs), said
    (entry,) = [f for f in result.measurements["whatif"] if f["bound"]]
    assert entry["gain"] > 2, entry
    assert (
        "`map` (stage 2) with its Python work taken out" not in result.measurements["fixes_applied"]
    )
    (pd108,) = [f for f in result.findings if f.rule == "PD108"]
    assert "Measured bound: with this stage's work taken out the pipeline runs at" in pd108.message
    assert pd108.gain is None


def test_only_the_selected_rules_fixes_are_timed() -> None:
    """``check --select PD102``: the Python stage's bound (PD108) is not timed, only the
    parallel map the selected rule proposes (and fixes that no rule reports, such as a parallel
    `batch`)."""
    ds = tf.data.Dataset.range(100_000).map(lambda x: x * 2).map(slow).batch(16)
    gp = read_dataset(ds)
    assert {c.rule for c in candidates(gp)} >= {"PD102", "PD108"}
    outcome = evaluate(
        gp, ds.element_spec, time.perf_counter() + 12, enabled=lambda rule: rule == "PD102"
    )
    assert outcome.fixes and {entry["rule"] for entry in outcome.fixes} <= {"PD102", None}
    assert "PD102" in {entry["rule"] for entry in outcome.fixes}  # a rule-less batch may stay


def test_optimize_applies_safe_fixes_and_keeps_the_elements() -> None:
    ds = tf.data.Dataset.range(30_000).map(slow).batch(16)
    optimized = pipedoctor.optimize(ds, timeout=20)
    assert any("parallel `map`" in r for r in optimized.pipedoctor_rewrites)
    assert all(
        np.array_equal(a, b) for a, b in zip(first(ds, 10), first(optimized, 10), strict=True)
    )


def test_what_cannot_be_read_is_said_not_raised() -> None:
    result = diagnose(object(), time.perf_counter() + 5)
    assert result.findings == [] and result.measurements == {}
    assert "could not be read" in result.notes[0]


def test_keras_arrays_that_do_not_fill_the_last_batch_are_timed_in_samples() -> None:
    """``fit(x, y, batch_size=48)`` on 1,000 rows: Keras gathers batches from shuffled
    indices (no batch op), the last one of 40. The rebuild used to batch those batches again
    and fail; now the gathered batches are timed as batches, the index bookkeeping not at all."""
    from keras.src.trainers.data_adapters import get_data_adapter

    x = np.random.rand(1000, 20).astype("float32")
    y = np.random.randint(0, 2, size=(1000,))
    ds = get_data_adapter(x, y, batch_size=48, shuffle=True).get_tf_dataset()
    result = diagnose(ds, time.perf_counter() + 20)  # the stages are timed in the first 10 s
    assert not any("could not be rebuilt" in n for n in result.notes), result.notes
    (untimed,) = [n for n in result.notes if n.startswith("per-stage rates:")]
    assert "flat_map" in untimed
    timed = [s for s in result.measurements["stages"] if s["samples_per_s"]]
    assert timed and timed[-1]["op"] == "prefetch"
    pipeline = result.measurements["graph_pipeline_samples_per_s"]
    assert all(s["samples_per_s"] < 20 * pipeline for s in timed), (pipeline, timed)


def test_notebook_findings_point_at_the_cell_that_built_the_stage() -> None:
    pipedoctor.watch()  # already installed by this module: calling it again is harmless
    ds = tf.data.Dataset.range(64).map(lambda x: x + 1).batch(8)
    report = pipedoctor.check(ds, timeout=8)
    pd102 = [f for f in report.findings if f.rule == "PD102"]
    assert pd102 and pd102[0].path.endswith("test_graph.py")
    assert (
        pd102[0].line
        == test_notebook_findings_point_at_the_cell_that_built_the_stage.__code__.co_firstlineno + 2
    )


def test_measured_gains_move_severity_both_ways() -> None:
    from dataclasses import replace

    from pipedoctor.graph.doctor import measured
    from pipedoctor.report import Finding, Severity

    info = Finding("PD109", "unvectorized-map", Severity.INFO, "m")
    assert measured(info, 7.0, 2.0).severity is Severity.WARNING
    assert measured(info, 7.0, 1.1).severity is Severity.INFO  # the ceiling caps training
    warning = replace(info, severity=Severity.WARNING)
    quiet = measured(warning, 1.01, 1.0)
    assert quiet.severity is Severity.INFO and "the fix gains nothing" in quiet.message


def test_a_check_keeps_the_static_message_and_adds_what_the_graph_measured() -> None:
    from dataclasses import replace

    from pipedoctor.checker import merge
    from pipedoctor.report import Finding, Severity

    static = Finding(
        "PD106", "missing-cache", Severity.WARNING, "13 MB fits: cache it.", path="t.py", line=7
    )
    generic = replace(static, message="Nothing caches the result.", severity=Severity.INFO)
    (kept,) = merge([static], [generic])
    assert kept.message == static.message and kept.severity is Severity.WARNING
    bounded = replace(generic, message=generic.message + " Measured bound: up to x4.")
    assert merge([static], [bounded])[0].message == static.message + " Measured bound: up to x4."
    gained = replace(generic, gain=3.0, end_to_end_gain=2.0)
    assert merge([static], [gained])[0].gain == 3.0


def test_parallel_reads_of_an_unknown_number_of_files_say_so(tmp_path: Path) -> None:
    files = records(tmp_path)
    names = tf.data.Dataset.range(len(files)).map(
        lambda i: tf.strings.join([str(tmp_path / "part-"), tf.strings.as_string(i), ".tfrecord"])
    )
    ds = tf.data.TFRecordDataset(names).map(parse, num_parallel_calls=AUTOTUNE)
    gp = read_dataset(ds)
    (reads,) = [c for c in candidates(gp) if c.rule == "PD104"]
    assert "how many is unknown" in reads.title and "4 files" not in reads.title
    rebuilt = g.rebuild(rewritten(gp, [reads]), ds.element_spec)
    assert sorted(float(x[0]) for x in rebuilt) == sorted(float(x[0]) for x in ds)


def test_work_before_a_cache_never_limits_the_steady_state() -> None:
    from pipedoctor.graph.whatif import mark_limiting

    rates = [("source", 100_000.0), ("map", 2_000.0), ("cache", 1_500.0), ("shuffle", 90_000.0),
             ("batch", 80_000.0), ("map", 20_000.0)]  # fmt: skip
    stages = [{"op": op, "samples_per_s": rate} for op, rate in rates]
    mark_limiting(stages)
    assert [i for i, s in enumerate(stages) if s["limiting"]] == [5]
    assert stages[5]["input_samples_per_s"] == 80_000.0
    uncached = [s for s in stages if s["op"] != "cache"]
    mark_limiting(uncached)
    assert [s["samples_per_s"] for s in uncached if s["limiting"]] == [2_000.0]


def test_a_fall_within_timing_noise_names_no_slow_stage() -> None:
    """A fast pipeline whose last stages differ by a fifth (two timings on a shared machine)
    has no slowest stage; a fall past the noise floor still names one."""
    from pipedoctor.graph.whatif import LIMITING_DROP, mark_limiting

    rates = (("map", 597_508.0), ("with_options", 491_523.0), ("prefetch", 5e5))
    noisy = [{"op": op, "samples_per_s": rate} for op, rate in rates]
    mark_limiting(noisy)
    assert not any(s["limiting"] for s in noisy)
    real = [{"op": "map", "samples_per_s": 100_000.0},
            {"op": "map", "samples_per_s": 100_000.0 / (LIMITING_DROP + 0.1)}]  # fmt: skip
    mark_limiting(real)
    assert real[1]["limiting"]
