"""Does pipedoctor's projection match the hand-fixed pipeline?

For each defective script in sample_pipelines/ and its hand-fixed twin, all in this one
process: run each script until it starts training and take the dataset and model it hands to
``fit`` (as ``pipedoctor check`` does); measure the compute ceiling on a copy of the model; let
the graph doctor diagnose the defective pipeline as a check does (what-ifs, the projection with
every fix that may be applied, and the findings ranked as the report ranks them); then time
pipedoctor's rewrite and the hand-fixed twin in turns against the as-is pipeline, each rebuilt
from its graph as the check times it. Gains are over the as-is pipeline in the same turn (ABBA
order); each is the median over the turns.

The goal: the projected rate within 10% of the hand-fixed twin's, both capped at the compute
ceiling (what training could reach), and the first code finding the one the twin fixes, with a
gain above 1.2. A row also says when the rewritten graph has exactly the hand-fixed twin's
stages, op for op: then any gap between the two is timing noise, which the quartiles of the
twin's per-turn gains show. A sample may come with a configuration (``<name>.toml``), read as
``--config`` would be.

With ``--outside``, the scripts written by others in ``tests/outside/`` instead, against the
fixes an expert would make to each by hand (``OUTSIDE_FIXES``: text edits of the published
script, its twin written to a temporary folder and run from an empty one, as the check runs it).

    python benchmarks/whatif.py [--turns 8] [--seconds 1.0] [NAME ...]
    python benchmarks/whatif.py --outside [NAME ...]
"""

import argparse
import os
import platform
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).resolve().parent.parent / "sample_pipelines"
OUTSIDE = SAMPLES.parent / "tests" / "outside"
OUTSIDE_FIXES: dict[str, tuple[tuple[str, str], ...]] = {
    # Decoding every WAV file every epoch, one file at a time: decode in parallel, and keep
    # the decoded clips (64 KB each) in memory; the noise and the FFT stay per epoch.
    "kerasio_speaker_recognition_using_cnn": (
        ("path_ds.map(lambda x: path_to_audio(x))",
         "path_ds.map(lambda x: path_to_audio(x), num_parallel_calls=tf.data.AUTOTUNE)"),
        ("return tf.data.Dataset.zip((audio_ds, label_ds))",
         "return tf.data.Dataset.zip((audio_ds, label_ds)).cache()"),
    ),
    # Ten shards read one after another, the parsed and decoded images made again every
    # epoch, and the prefetch before the batch: read the shards in parallel, keep the decoded
    # images (320 of 72 x 72, 20 MB), prefetch whole batches.
    "kerasio_tfrecord": (
        ("TFRecordDataset(\n        filenames\n    )",
         "TFRecordDataset(\n        filenames, num_parallel_reads=AUTOTUNE\n    )"),
        ("    # returns a dataset of (image, label) pairs",
         "    dataset = dataset.cache()\n    # returns a dataset of (image, label) pairs"),
        ("dataset.prefetch(buffer_size=AUTOTUNE)\n    dataset = dataset.batch(BATCH_SIZE)",
         "dataset.batch(BATCH_SIZE)\n    dataset = dataset.prefetch(buffer_size=AUTOTUNE)"),
    ),
    # The factory decodes and resizes every JPEG every epoch; the augmentation is random.
    # Keep the decoded images (256 of 32 x 32), shuffled anew each epoch, then augment.
    "kerasio_image_classification_from_scratch": (
        ("train_ds = train_ds.prefetch(buffer_size=32)",
         "train_ds = train_ds.unbatch().cache().shuffle(1000).batch(batch_size)"
         ".prefetch(buffer_size=32)"),
    ),
    # The same factory, no augmentation in the pipeline: its own shuffle off, the decoded
    # images (160 of 160 x 160) kept, then shuffled each epoch and batched.
    "tfdocs_transfer_learning": (
        ("(train_dir,\n" + " " * 60 + "shuffle=True,",
         "(train_dir,\n" + " " * 60 + "shuffle=False,"),
        ("train_dataset = train_dataset.prefetch(buffer_size=AUTOTUNE)",
         "train_dataset = train_dataset.unbatch().cache().shuffle(1000).batch(BATCH_SIZE)"
         ".prefetch(buffer_size=AUTOTUNE)"),
    ),
}  # fmt: skip
"""Each script's hand fix: ``(old, new)`` edits, each matching the published text once."""
WHATIF_BUDGET_S = 60.0
"""The graph doctor's budget per script (a default ``check`` leaves it about this much)."""
FILL_S = 20.0
"""Longest the warm-up pass (which fills any cache) may take per pipeline."""


def with_dataset(capture: Any, script: Path, use: Callable[[Any], Any]) -> Any:
    """Run ``script`` up to its ``fit`` and return ``use(dataset)``, called right there: the
    script's own state (temporary files, open contexts) is still alive, as during a check."""
    capture.done, capture.use, capture.result = False, use, None
    argv, path = sys.argv, list(sys.path)
    sys.argv, sys.path[:0] = [str(script)], [str(script.parent)]
    try:
        runpy.run_path(str(script), run_name="__main__")
    except Stopped:
        pass
    finally:
        sys.argv, sys.path[:] = argv, path
    if not capture.done:
        raise SystemExit(f"{script.name} never started training")
    return capture.result


class Stopped(BaseException):
    """The script stopped at its ``fit``, in this process (a check ends its own process)."""


def make_capture() -> Any:
    from pipedoctor.capture.child import Capture, Events

    class User(Capture):
        def measure(
            self, dataset: Any, model: Any, capture_info: dict[str, Any], built_by: Any = None
        ) -> None:
            self.result = self.use((dataset, model))

        def stop(self) -> None:
            raise Stopped

    capture = User(Events(os.open(os.devnull, os.O_WRONLY)), time.time() + 3600, False)
    capture.install()
    return capture


def warm(dataset: Any, batched: bool) -> None:
    """One full pass (or ``FILL_S``), so that caches are filled before any turn is timed."""
    from pipedoctor.graph.timing import time_dataset

    items = int(dataset.cardinality())
    time_dataset(dataset, batched, FILL_S, skip=max(items, 0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="sample names (default: every defective one)")
    parser.add_argument("--turns", type=int, default=8, help="turns per comparison")
    parser.add_argument("--seconds", type=float, default=1.0, help="per pipeline per turn")
    parser.add_argument("--outside", action="store_true", help="the scripts of tests/outside/")
    parser.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    options = parser.parse_args()
    if options.one:  # one sample pair, in a fresh process (some set up devices before TF runs)
        return compare(options.names[0], options.turns, options.seconds, options.outside)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if options.outside:
        names = options.names or sorted(OUTSIDE_FIXES)
    else:
        names = options.names or sorted(
            p.stem
            for p in SAMPLES.glob("*.py")
            if not p.stem.endswith("_fixed") and (SAMPLES / f"{p.stem}_fixed.py").exists()
        )
    print(
        f"machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {options.turns} turns of {options.seconds:g} s per "
        "pipeline; gains over the as-is pipeline"
    )
    print(
        f"{'script':<18} {'as-is/s':>8} {'ceiling':>8} {'projected':>9} {'rewritten':>9} "
        f"{'hand-fix':>9} {'(quartiles)':>11} {'p/hand':>6} {'capped':>7}  {'top finding':<12} "
        "fixes applied"
    )
    for name in names:
        done = subprocess.run(
            [sys.executable, __file__, "--one", name, "--turns", str(options.turns),
             "--seconds", str(options.seconds), *(["--outside"] if options.outside else [])],
            capture_output=True, text=True,
        )  # fmt: skip
        rows = done.stdout.strip().splitlines()
        line = rows[-1] if rows else f"{name:<20} (failed: {done.stderr.strip().splitlines()[-1]})"
        print(line, flush=True)


def compare(name: str, turns: int, seconds: float, outside: bool = False) -> None:
    """One table row: the defective script's projection against its hand-fixed twin, measured
    while both scripts are stopped inside their ``fit``."""
    capture = make_capture()
    if outside:
        script = OUTSIDE / f"{name}.py"
        twin = hand_fixed(script, OUTSIDE_FIXES[name], Path(tempfile.mkdtemp()))
        sys.path.insert(0, str(OUTSIDE))  # the twin's helper modules, beside the original
        os.chdir(tempfile.mkdtemp())
    else:
        script, twin = SAMPLES / f"{name}.py", SAMPLES / f"{name}_fixed.py"
        os.chdir(SAMPLES)
    with_dataset(
        capture,
        script,
        lambda defect: with_dataset(
            capture, twin, lambda fixed: print(row(name, defect, fixed, turns, seconds))
        ),
    )


def hand_fixed(script: Path, edits: tuple[tuple[str, str], ...], folder: Path) -> Path:
    """``script`` with ``edits`` made, written into ``folder``; an edit that does not match
    exactly once stops the benchmark (the published text moved on)."""
    text = script.read_text()
    for old, new in edits:
        if text.count(old) != 1:
            raise SystemExit(f"{script.name}: the hand fix expects {old!r} once")
        text = text.replace(old, new)
    twin = folder / f"{script.stem}_fixed.py"
    twin.write_text(text)
    return twin


def ceiling_of(model: Any, dataset: Any) -> float | None:
    """The compute ceiling, measured as a check measures it: a copy of the model trained on
    one real batch repeated."""
    import tensorflow as tf

    from pipedoctor.measure.protocol import copy_model, measure_fit, samples_in

    batch = next(iter(dataset))
    synthetic = tf.data.Dataset.from_tensors(batch).repeat()
    rate = measure_fit(copy_model(model), synthetic, time.perf_counter() + 10, samples_in(batch))
    return rate.samples_per_s if rate else None


def row(name: str, defect: Any, twin: Any, turns: int, seconds: float) -> str:
    """The defective pipeline's projection, its rewrite and the hand-fixed twin, timed."""
    from check_samples import config_of

    from pipedoctor.config import load_config
    from pipedoctor.graph import doctor
    from pipedoctor.graph import graphdef as g
    from pipedoctor.graph.candidate import rebuilt, rewritten
    from pipedoctor.graph.doctor import diagnose, free_ram
    from pipedoctor.graph.frontend import read_dataset
    from pipedoctor.graph.timing import paired_gain
    from pipedoctor.report import ranked

    (defect, model), (twin, _) = defect, twin
    selection = load_config(SAMPLES, explicit=config_of(name)).selection
    ceiling = ceiling_of(model, defect)
    gp, twin_gp = read_dataset(defect, None), read_dataset(twin, None)
    result = diagnose(
        defect, time.perf_counter() + WHATIF_BUDGET_S, selection=selection,
        free_ram_bytes=free_ram(), ceiling=ceiling, sink=None, keep_files=True,
    )  # fmt: skip
    outcome = result.outcome
    findings = ranked(result.findings)
    top = next((f for f in findings if f.path), None)
    projected = outcome.fixed / outcome.baseline if outcome.fixed else 1.0
    as_is = g.rebuild(gp.graph, defect.element_spec)
    fixed_graph = rewritten(gp, outcome.chosen)
    same = [n.op for n in g.chain(fixed_graph)] == [n.op for n in g.chain(twin_gp.graph)]
    pipelines = [
        rebuilt(gp, outcome.chosen, defect.element_spec),
        g.rebuild(twin_gp.graph, twin.element_spec),
    ]
    batched = gp.stages[-1].batched
    for dataset in (as_is, *pipelines):
        warm(dataset, batched)
    rewrite, hand = (paired_gain(as_is, p, batched, turns, seconds=seconds) for p in pipelines)
    for candidate in outcome.chosen:
        candidate.cleanup()
    rate = statistics.median(rewrite.base_rates + hand.base_rates)
    cap = ceiling or float("inf")
    capped_projected, capped_hand = min(rate * projected, cap), min(rate * hand.gain, cap)
    fixes = "; ".join(outcome.applied) or "none" + "".join(f" ({n})" for n in outcome.notes[-1:])
    fixes += "".join(
        f"; bound: {f['title']} x{f['gain']:.1f}" for f in outcome.fixes if f.get("bound")
    )
    if same and outcome.chosen:
        fixes += " [the rewrite has the hand fix's stages, op for op]"
    first = "-" if top is None else top.rule
    if top is not None and top.gain:
        first += f" x{top.gain:.1f}"
    elif top is not None and doctor.BOUND in top.message:
        first += " (bound)"
    low, high = hand.spread
    return (
        f"{name:<18} {rate:>8,.0f} {ceiling or 0:>8,.0f} {projected:>8.2f}x {rewrite.gain:>8.2f}x "
        f"{hand.gain:>8.2f}x {f'{low:.2f}-{high:.2f}':>11} {projected / hand.gain:>6.2f} "
        f"{capped_projected / capped_hand:>7.2f}  {first:<12} {fixes}"
    )


if __name__ == "__main__":
    main()
