"""``asad bench real-strategies`` on the real cluster, in small: two strategies, one short run each,
with a background load. Keeps the bench that docs/results/slurm.md quotes working."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]


def test_real_strategies_bench_runs_and_measures(cluster, tmp_path):
    env = cluster.env()
    for var in ("ASAD_DB_URL", "ASAD_BACKEND", "ASAD_CONFIG"):
        env.pop(var, None)
    res = subprocess.run([sys.executable, "-m", "asad", "bench", "real-strategies", "--stages", "2", "--stage-s", "5",
                          "--runs", "1", "--strategies", "auto,chain", "--poll", "5", "--out", str(tmp_path),
                          "--json"], env=env, capture_output=True, text=True, timeout=540)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    saved = json.loads((tmp_path / "real-strategies.json").read_text())
    rows = saved["rows"]
    assert [(r["strategy"], r["run"]) for r in rows] == [("auto", 0), ("chain", 0)]
    for r in rows:
        assert r["state"] == "COMPLETED" and r["jobs"] == 2
        # the clock covers the work: two 5 s stages in a row
        assert r["makespan_s"] >= r["critical_path_work_s"] == 10
        assert 0 < r["core_hours"] < 0.1
        assert 0 <= r["interstage_wait_s"] <= r["perceived_wait_s"]
    assert "priority/" in saved["rules"]
    assert "| auto | 0 |" in (tmp_path / "real-strategies.md").read_text()


def test_backfill_cost_bench_reads_slurmctlds_cycles_and_cleans_up(cluster):
    """``asad bench backfill-cost`` in small: sdiag's backfill statistics from the real slurmctld,
    the same queue in the simulator, and no job of its queue left behind."""
    env = cluster.env()
    res = subprocess.run([sys.executable, "-m", "asad", "bench", "backfill-cost", "--jobs", "120", "--cycles", "2",
                          "--sim-passes", "1", "--json"], env=env, capture_output=True, text=True, timeout=400)
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-3000:]
    out = json.loads(res.stdout)
    slurm, sim = out["slurm"], out["simulator"]
    assert out["nodes"] == cluster.nodes and out["cores_per_node"] == cluster.cpus_per_node
    assert slurm["cycles"] >= 2 and slurm["mean_cycle_ms"] > 0 and slurm["depth_mean"] > 0
    assert slurm["running"] >= 1 and slurm["queue_length"] >= 1
    for mode in ("default", "plan_all"):
        assert sim[mode]["running"] >= 1 and sim[mode]["pending"] >= 1 and sim[mode]["cpu_per_pass_ms"] > 0
    left = subprocess.run(["squeue", "-h", "-t", "PD,R", "--name=bfcost", "-o", "%i"], env=env, capture_output=True,
                          text=True, check=True).stdout.split()
    assert left == []
