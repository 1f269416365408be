"""Multi-worker jobs (TF_CONFIG): what each worker will read, and a clear word when a check is
started on one worker alone."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from pipedoctor.measure.setup import cluster
from pipedoctor.pipeline import Analysis, TrainingSetup
from pipedoctor.rules import run_rules

TF_CONFIG = {
    "cluster": {"worker": ["localhost:12345", "localhost:23456", "localhost:34567"]},
    "task": {"type": "worker", "index": 1},
}


def test_cluster_reads_tf_config(monkeypatch) -> None:
    monkeypatch.setenv("TF_CONFIG", json.dumps(TF_CONFIG))
    assert cluster() == {"workers": 3, "task": "worker:1"}
    monkeypatch.setenv("TF_CONFIG", "not json")
    assert cluster() is None
    monkeypatch.delenv("TF_CONFIG")
    assert cluster() is None


def test_fewer_files_than_workers_is_pd210() -> None:
    setup = TrainingSetup()
    setup.add("workers", None, count=3)
    setup.add("input_files", None, count=2)
    findings = list(run_rules(Analysis("<job>", training=setup), "runtime"))
    assert [f.rule for f in findings] == ["PD210"]
    assert "2 files for 3 workers" in findings[0].message
    tried = {"sharding": {"applied": "fails"}}
    (measured,) = run_rules(Analysis("<job>", training=setup), "runtime", measurements=tried)
    assert "auto-shard rewrite, tried here for each worker, fails at the first step" in (
        measured.message
    )
    setup.facts[1].data["count"] = 12
    assert list(run_rules(Analysis("<job>", training=setup), "runtime")) == []


def test_a_worker_checked_alone_is_told_why_it_never_starts(tmp_path: Path) -> None:
    (tmp_path / "stuck.py").write_text("import time\ntime.sleep(300)\n")
    done = subprocess.run(
        [sys.executable, "-m", "pipedoctor", "check", "stuck.py", "--timeout", "8", "-q"],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
        env={**os.environ, "TF_CONFIG": json.dumps(TF_CONFIG)},
    )  # fmt: skip
    assert done.returncode == 2
    assert "did not start training within 8 s (TF_CONFIG names 3 workers" in done.stderr


def shards(tmp_path: Path, count: int) -> list[str]:
    import tensorflow as tf

    paths = []
    for i in range(count):
        path = tmp_path / f"part-{i}.tfrecord"
        with tf.io.TFRecordWriter(str(path)) as writer:
            for j in range(4 + i):
                writer.write(f"{i}-{j}".encode())
        paths.append(str(path))
    return paths


def test_sharding_lists_each_workers_files_from_tensorflows_own_rewrite(tmp_path: Path) -> None:
    import tensorflow as tf

    from pipedoctor.graph.sharding import explain_sharding

    files = shards(tmp_path, 5)
    direct = tf.data.TFRecordDataset(files).map(lambda r: r).batch(2)
    listed = (
        tf.data.Dataset.list_files(str(tmp_path / "*.tfrecord"), shuffle=False)
        .interleave(tf.data.TFRecordDataset, num_parallel_calls=2)
        .batch(2)
    )
    for dataset in (direct, listed):
        result = explain_sharding(dataset, 2)
        assert result["policy"] == "AUTO" and result["applied"] == "FILE"
        shares = {s["worker"]: s for s in result["shares"]}
        assert [s["files"] for s in shares.values()] == [3, 2]
        assert shares[0]["first"] == ["part-0.tfrecord", "part-2.tfrecord", "part-4.tfrecord"]
        assert shares[1]["bytes"] == sum(Path(f).stat().st_size for f in files[1::2])
        assert "Shares are uneven (3 against 2 files)" in result["summary"]

    too_many = explain_sharding(direct, 8)
    assert too_many["applied"] == "fails"
    assert "Could not apply FILE based sharding" in too_many["error"]


def test_sharding_says_when_every_worker_reads_everything() -> None:
    import tensorflow as tf

    from pipedoctor.graph.sharding import explain_sharding

    in_memory = tf.data.Dataset.range(100).batch(10)
    assert explain_sharding(in_memory, 4)["applied"] == "DATA"
    prefetched = in_memory.prefetch(tf.data.AUTOTUNE)  # the shard goes before the prefetch
    assert explain_sharding(prefetched, 4)["applied"] == "DATA"
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.OFF
    off = explain_sharding(in_memory.with_options(options), 4)
    assert off["policy"] == "OFF" and off["applied"] == "OFF"
    assert "each example is seen 4 times per epoch" in off["summary"]


def test_a_check_explains_sharding_for_the_workers_asked_for(tmp_path: Path) -> None:
    import tensorflow as tf

    import pipedoctor
    from pipedoctor.render import render

    dataset = tf.data.TFRecordDataset(shards(tmp_path, 4)).batch(2)
    report = pipedoctor.check(dataset, timeout=6, workers=2)
    sharding = report.measurements["sharding"]
    assert sharding["workers"] == 2 and [s["files"] for s in sharding["shares"]] == [2, 2]
    assert "Sharding: With auto-shard policy AUTO on 2 workers" in render(report, "text")
    too_many = pipedoctor.check(dataset, timeout=6, workers=8)
    assert too_many.measurements["sharding"]["applied"] == "fails"
    (pd210,) = [f for f in too_many.findings if f.rule == "PD210"]
    assert "4 files for 8 workers" in pd210.message


def test_validation_examples_and_batch_are_read_from_fit_arguments() -> None:
    import numpy as np
    import tensorflow as tf

    from pipedoctor.measure.setup import evaluation_fact

    dropped = tf.data.Dataset.range(1003).map(lambda x: x * 2).batch(64, drop_remainder=True)
    assert evaluation_fact(dropped, None) == {
        "examples": 1003, "global_batch": 64, "drop_remainder": True,
    }  # fmt: skip
    arrays = (np.zeros((500, 3)), np.zeros(500))
    assert evaluation_fact(arrays, 48) == {"examples": 500, "global_batch": 48}
    assert evaluation_fact(tf.data.Dataset.range(10).repeat().batch(4), None) is None
    assert evaluation_fact(None, 32) is None

    setup = TrainingSetup()
    setup.add("strategy", None, name="MirroredStrategy", multi=True)
    setup.add("replicas", None, count=2)
    setup.add("evaluation", None, examples=1003, global_batch=64, drop_remainder=True)
    (finding,) = [f for f in run_rules(Analysis("<job>", training=setup), "runtime")
                  if f.rule == "PD208"]  # fmt: skip
    assert "the last 43 are never evaluated" in finding.message


def test_replica_divergence_judges_losses_and_weights() -> None:
    measured = {"replicas": 2, "parity_steps": 4, "parity_max_loss_delta": 2e-4}
    assert not list(run_rules(Analysis("<job>"), "runtime", measurements=measured))
    measured["parity_max_weight_delta"] = 0.02
    (finding,) = run_rules(Analysis("<job>"), "runtime", measurements=measured)
    assert finding.rule == "PD306"
    assert "the losses agree, and the trained weights by 2.0%" in finding.message
