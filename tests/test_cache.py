"""Cache placement by measurement, the fill pass and the reorders, on real tf.data pipelines."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")

from pipedoctor.graph.candidate import rebuilt  # noqa: E402
from pipedoctor.graph.doctor import diagnose  # noqa: E402
from pipedoctor.graph.fixes import cache_candidate  # noqa: E402
from pipedoctor.graph.fixes.cache import Limits, choose, positions  # noqa: E402
from pipedoctor.graph.frontend import read_dataset  # noqa: E402
from pipedoctor.graph.whatif import evaluate  # noqa: E402
from pipedoctor.rules import Selection  # noqa: E402

PLENTY = Limits(free_ram_bytes=8 * 10**9)


def rows(ds, n: int) -> list[tuple]:
    """The first ``n`` elements, each flattened to a hashable tuple of bytes."""
    return [tuple(np.asarray(t).tobytes() for t in tf.nest.flatten(x)) for x in ds.take(n)]


def spectrum(x):
    """Costly deterministic maths with no decode op in it: a feature map like many others."""
    signal = tf.sin(tf.cast(tf.range(256), tf.float32) * tf.cast(x, tf.float32) / 256.0)
    for _ in range(4):
        signal = tf.abs(tf.signal.rfft(tf.concat([signal, signal], 0)))[:256]
    return signal


def labelled(dataset) -> list[tuple]:
    """The rows of a dataset of (features, labels) batches, each as (value, label), in order."""
    return [
        (x.item() if hasattr(x, "item") else x, int(y))
        for xs, ys in dataset
        for x, y in zip(xs.numpy(), ys.numpy(), strict=True)
    ]


def prepared(ds, limits: Limits = PLENTY, rates: dict | None = None):
    gp = read_dataset(ds, None)
    candidate = cache_candidate(gp, limits, rates or {}, None)
    assert candidate is not None and candidate.skip_reason is None
    why = candidate.prepare(time.perf_counter() + 120)
    return gp, candidate, why


def test_repeat_moves_after_the_cache_and_the_order_stays_the_same() -> None:
    ds = tf.data.Dataset.range(50).repeat().map(spectrum).batch(8)
    gp, candidate, why = prepared(ds)
    assert why is None
    assert [m.op for m in positions(gp)[-1].moves] == ["repeat"]
    cache = candidate.details["cache"]
    assert cache["elements"] == 50 and cache["bytes"] == 50 * 256 * 4  # counted, not guessed
    assert "same elements in the same order" in cache["moves"][0]
    fixed = rebuilt(gp, [candidate], ds.element_spec)
    assert rows(fixed, 40) == rows(ds, 40)  # 40 batches of 8: over six passes of 50


def test_a_shuffle_moves_after_the_cache_with_its_buffer() -> None:
    images = tf.io.encode_png(tf.zeros((6, 6, 3), tf.uint8))
    labels = np.arange(40, dtype=np.int64)
    ds = (
        tf.data.Dataset.from_tensor_slices(([images.numpy()] * 40, labels))
        .shuffle(16)  # like Keras's image_dataset_from_directory, before the decode
        .map(lambda png, y: (tf.io.decode_png(png) + tf.cast(y, tf.uint8), y))
        .batch(5)
    )
    gp, candidate, why = prepared(ds)
    assert why is None
    statement = candidate.details["cache"]["moves"][0]
    assert "`shuffle(16)`" in statement and "same buffer" in statement and "MB" in statement
    fixed = rebuilt(gp, [candidate], ds.element_spec).repeat().unbatch()
    epochs = [rows(fixed, 40), rows(fixed, 80)[40:]]
    original = rows(ds.unbatch(), 40)
    assert Counter(epochs[0]) == Counter(original) == Counter(epochs[1])  # every element, once
    assert epochs[0] != epochs[1]  # and reshuffled every epoch


def records(tmp_path: Path, files: int = 4, per_file: int = 25) -> str:
    for i in range(files):
        with tf.io.TFRecordWriter(str(tmp_path / f"part-{i}.tfrecord")) as writer:
            for j in range(per_file):
                writer.write(tf.io.serialize_tensor(tf.constant([float(i * 100 + j)] * 8)).numpy())
    return str(tmp_path / "part-*.tfrecord")


def test_a_shuffle_of_file_names_goes_where_the_records_are_shuffled_later(
    tmp_path: Path,
) -> None:
    ds = (
        tf.data.Dataset.list_files(records(tmp_path), shuffle=True)
        .interleave(tf.data.TFRecordDataset, cycle_length=2)
        .map(lambda r: tf.io.parse_tensor(r, tf.float32))
        .shuffle(30)
        .batch(10)
    )
    gp, candidate, why = prepared(ds)
    assert why is None and candidate.details["cache"]["elements"] == 100  # unknown length
    assert "file names" in candidate.details["cache"]["moves"][0]
    fixed = rebuilt(gp, [candidate], ds.element_spec).repeat().unbatch()
    first, second = rows(fixed, 100), rows(fixed, 200)[100:]
    assert Counter(first) == Counter(rows(ds.unbatch(), 100)) == Counter(second)
    assert first != second

    no_later_shuffle = tf.data.Dataset.list_files(records(tmp_path), shuffle=True).interleave(
        tf.data.TFRecordDataset, cycle_length=2
    )
    position, why = choose(read_dataset(no_later_shuffle.batch(4), None), {0: 1e6, 2: 500}, 500)
    assert position is None and "no later `shuffle`" in why


def test_the_position_comes_from_the_measured_rates_not_the_op_names() -> None:
    ds = (
        tf.data.Dataset.range(400)
        .map(lambda x: x + 1)
        .map(spectrum)  # no decode, parse or resize op: costly all the same
        .map(lambda s: s * 2.0)
        .batch(16)
    )
    gp = read_dataset(ds, None)
    outcome = evaluate(gp, ds.element_spec, time.perf_counter() + 30, PLENTY)
    (entry,) = [f for f in outcome.fixes if f["rule"] == "PD106"]
    assert entry["cache"]["stage"] >= 2, outcome.stages  # after the costly map, whatever its ops
    assert entry["gain"] > 1.2 and entry["applied"], entry
    assert entry["safety"] == "unsafe" and "first pass filled it" in entry["verified"]
    assert outcome.fixed and outcome.fixed > 1.2 * outcome.baseline


def test_what_does_not_fit_in_ram_is_measured_on_disk_and_removed_after() -> None:
    ds = tf.data.Dataset.range(300).map(spectrum).batch(10)
    tight = Limits(free_ram_bytes=200_000, ram_fraction=0.5, disk_dir=None)  # 100 kB of RAM
    gp, candidate, why = prepared(ds, tight)
    assert why is None and candidate.writes_files and candidate.applicable
    cache = candidate.details["cache"]
    assert cache["kind"] == "disk" and cache["bytes"] == 300 * 256 * 4
    assert "in RAM it passed 0.1 MB" in candidate.verified
    assert cache["not_in_ram"].startswith("it passed 0.1 MB (50% of free RAM) after")
    folder = Path(candidate_folder(candidate))
    assert any(folder.iterdir())
    assert rows(rebuilt(gp, [candidate], ds.element_spec), 30) == rows(ds, 30)
    candidate.cleanup()
    assert not folder.exists()


def candidate_folder(candidate) -> str:
    return candidate.apply.__self__.folder.name


def test_neither_ram_nor_disk_says_preprocess_offline() -> None:
    ds = tf.data.Dataset.range(300).map(spectrum).batch(10)
    nowhere = Limits(free_ram_bytes=200_000, ram_fraction=0.5, disk_fraction=1e-12)
    _, candidate, why = prepared(ds, nowhere)
    assert "does not fit in RAM" in why and "preprocess the data offline" in why


def test_the_fill_pass_stops_at_its_deadline() -> None:
    long = tf.data.Dataset.range(10**7).map(spectrum).batch(8)
    gp = read_dataset(long, None)
    candidate = cache_candidate(gp, PLENTY, {}, None)
    started = time.perf_counter()
    why = candidate.prepare(time.perf_counter() + 2)
    assert time.perf_counter() - started < 6
    assert "did not end within" in why and "size is unknown" in why


def test_unknown_free_ram_fills_nothing() -> None:
    ds = tf.data.Dataset.range(50).map(spectrum).batch(8)
    _, candidate, why = prepared(ds, Limits(free_ram_bytes=None))
    assert "free RAM is unknown" in why and not candidate.applicable


def test_pd106_is_placed_and_sized_by_the_measurement() -> None:
    ds = tf.data.Dataset.range(400).repeat().map(spectrum).batch(16)
    started = time.perf_counter()
    # PD106 alone, as `check --select PD106` asks: the cache is the what-if timed, and the
    # budget is what the doctor plans with, so a host slowed by other work (its estimates
    # grow) still leaves the cache room.
    only_cache = Selection(select=("PD106",))
    result = diagnose(ds, started + 40, selection=only_cache, free_ram_bytes=8 * 10**9)
    assert time.perf_counter() - started < 41  # the fill pass counts against the budget
    (pd106,) = [f for f in result.findings if f.rule == "PD106"]
    assert "holds 0.4 MB (400 elements) in RAM" in pd106.message
    assert "`repeat`" in pd106.message and "same order" in pd106.message
    assert pd106.gain and pd106.gain > 1.2
    assert pd106.fix == "Add `.cache()` right after this stage, and move `repeat` after it."


def test_of_the_costly_positions_the_one_with_the_smallest_elements_holds_the_cache() -> None:
    def noisy(s):
        return s + tf.random.uniform(tf.shape(s))  # random: no position after it

    def build(*maps):
        ds = tf.data.Dataset.range(64).map(spectrum)  # 1 kB per element
        for fn in maps:
            ds = ds.map(fn)
        return read_dataset(ds.map(noisy).batch(8), None)

    def tile(s):
        return tf.tile(s, [4])  # 4 kB per element

    def shrink(s):
        return s[:64]  # 256 B per element

    position, _ = choose(build(tile, shrink), {0: 1e6, 1: 9000.0, 2: 8800.0, 3: 8700.0}, 8000.0)
    assert position.index == 3  # all costly: the smallest elements
    position, _ = choose(build(tile), {0: 1e6, 1: 9000.0, 2: 8800.0}, 8000.0)
    assert position.index == 1  # the tile costs nothing and quadruples the cache
    _, why = choose(build(tile), {0: 1e6, 1: 9.0e5, 2: 8.9e5}, 10.0)
    assert "takes under 10% of the pipeline's time" in why


def test_a_pipelines_own_cache_is_filled_before_a_rebuild_is_timed() -> None:
    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.whatif import OwnCache

    calls = []

    def counted(x):
        calls.append(1)
        return x

    def traced(x):
        return tf.py_function(counted, [x], tf.int64)

    ds = tf.data.Dataset.range(30).map(traced).cache().batch(4)
    gp = read_dataset(ds, None)
    warm = OwnCache(gp, batched=True)
    assert warm.items == 30 // 4 + 1  # every batch, then the end that completes the cache
    rebuild = warm(g.rebuild(gp.graph, ds.element_spec), time.perf_counter() + 120)
    assert len(calls) == 30
    assert sum(len(b) for b in rebuild) == 30  # the timed pass reads the cache ...
    assert len(calls) == 30  # ... and calls the map no more


def test_a_pipeline_that_caches_already_gets_no_cache_finding() -> None:
    png = tf.io.encode_png(tf.zeros((6, 6, 3), tf.uint8))
    shuffled = tf.data.Dataset.from_tensors(png).repeat(40).shuffle(40).map(tf.io.decode_png)
    uncached = read_dataset(shuffled.batch(4), None)
    moved = cache_candidate(uncached, PLENTY, {}, None)
    assert moved is not None and "`shuffle` moved after it" in moved.title
    cached = read_dataset(shuffled.cache().batch(4), None)  # a cache after a shuffle: PD107's
    assert cache_candidate(cached, PLENTY, {}, None) is None


def test_no_cache_is_offered_right_after_data_already_in_memory() -> None:
    rows_in_memory = tf.data.Dataset.from_tensor_slices(np.arange(400, dtype=np.float32))
    assert positions(read_dataset(rows_in_memory.shuffle(400).batch(16), None)) == []
    mapped = read_dataset(rows_in_memory.map(spectrum).batch(16), None)
    assert [p.index for p in positions(mapped)] == [1, 2]  # after the map or batch, not the source


def row_wise_spectra(batch):
    """Costly per-row maths on a whole batch: each row's result depends on that row alone."""
    return tf.map_fn(spectrum, batch, fn_output_signature=tf.float32)


def test_work_after_the_batch_is_cached_by_unbatching_it_and_batching_again() -> None:
    from pipedoctor.capture.sites import install

    install()  # call sites recorded: the chain's stages share one line, and stay the user's
    # The factory shape: shuffle, batch, then the costly map on whole batches (a vectoriser).
    ds = tf.data.Dataset.range(60).shuffle(16).batch(8).map(row_wise_spectra)
    gp, candidate, why = prepared(ds)
    assert why is None
    (position,) = [p for p in positions(gp) if p.rebatch is not None]
    assert [(m.op, m.whole) for m in position.moves] == [("shuffle", False)]
    assert position.index == 3
    cache = candidate.details["cache"]
    assert cache["elements"] == 60 and cache["bytes"] == 60 * 256 * 4  # rows, not batches
    assert [a["op"] for a in cache["added"]] == ["unbatch", "batch"]
    assert cache["added"][1]["value"] == 8
    assert "batches of 4 instead of 8" in candidate.verified  # the map compared per row
    fixed = rebuilt(gp, [candidate], ds.element_spec)
    for _ in range(2):  # each epoch: the same 60 rows, batched by 8, the last batch short
        batches = [b.numpy() for b in fixed]
        assert [len(b) for b in batches] == [8] * 7 + [4]
        got = sorted(tuple(r.round(3)) for b in batches for r in b)
        want = sorted(tuple(r.round(3)) for b in ds for r in b.numpy())
        assert got == want


def test_a_map_that_mixes_the_rows_of_a_batch_is_not_restructured() -> None:
    def centred(batch):
        rows = row_wise_spectra(batch)
        return rows - tf.reduce_mean(rows, axis=0)  # each row depends on its batch

    ds = tf.data.Dataset.range(60).shuffle(16).batch(8).map(centred)
    gp = read_dataset(ds, None)
    assert any(p.rebatch is not None for p in positions(gp))
    candidate = cache_candidate(gp, PLENTY, {}, None)
    why = candidate.prepare(time.perf_counter() + 120, ds.element_spec)
    assert why and "does not treat each row of a batch on its own" in why


def test_a_factorys_own_shuffle_is_turned_off_and_every_cached_row_shuffled(tmp_path: Path) -> None:
    import keras

    from pipedoctor.capture.sites import install

    install()
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for i in range(20):
            (tmp_path / label / f"{i}.txt").write_text(f"{label} word{i} " * (i + 1))
    raw = keras.utils.text_dataset_from_directory(tmp_path, batch_size=8, seed=1)
    lengths = raw.map(lambda text, label: (tf.strings.length(text), label))
    gp, candidate, why = prepared(lengths)
    assert why is None
    after_call, position = [p for p in positions(gp) if p.rebatch is not None]
    assert after_call.index == after_call.rebatch == position.rebatch  # the call's batch
    assert [(m.op, m.whole) for m in position.moves] == [("shuffle", True)]
    cache = candidate.details["cache"]
    assert cache["added"][1] == {"op": "shuffle", "value": 40}  # every cached row
    assert cache["moved"][0]["in_call"] and cache["moved"][0]["taken_out"]
    assert "turned off (`shuffle=False`)" in cache["moves"][0]
    fixed = rebuilt(gp, [candidate], lengths.element_spec)

    assert sorted(labelled(fixed)) == sorted(labelled(lengths))  # the same 40 rows, each once


def test_work_inside_a_factorys_call_is_cached_after_the_call_unbatched(tmp_path: Path) -> None:
    """The factory reads every file inside its own call, before its own `batch`: no source can
    put a cache there, so the cache follows the call, its batches unbatched into it, every
    row shuffled and batched again, and the call's own prefetch last, as the call ended."""
    import keras

    from pipedoctor.capture.sites import install

    install()
    for label in ("a", "b"):
        (tmp_path / label).mkdir()
        for i in range(12):
            (tmp_path / label / f"{i}.txt").write_text(f"{label}{i} " * (i + 1))
    raw = keras.utils.text_dataset_from_directory(tmp_path, batch_size=5, seed=1)
    gp, candidate, why = prepared(raw)
    assert why is None
    (position,) = positions(gp)  # none between the call's own stages
    assert position.rebatch == position.index  # right after the call's `batch`
    assert [(m.op, m.whole) for m in position.moves] == [("shuffle", True)]
    cache = candidate.details["cache"]
    assert [a["op"] for a in cache["added"]] == ["unbatch", "shuffle", "batch", "prefetch"]
    assert cache["added"][1]["value"] == 24 and cache["added"][2]["value"] == 5
    fixed = rebuilt(gp, [candidate], raw.element_spec)
    epochs = [labelled(fixed) for _ in "ab"]
    assert [len(x) for x, _ in fixed] == [5, 5, 5, 5, 4]
    assert all(sorted(epoch) == sorted(labelled(raw)) for epoch in epochs)  # each row once
    assert epochs[0] != epochs[1]  # and in a new order each epoch
