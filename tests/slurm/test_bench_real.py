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
    assert "priority/" in saved["rules"]
    assert "| auto | 0 |" in (tmp_path / "real-strategies.md").read_text()
