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
