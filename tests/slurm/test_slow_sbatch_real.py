"""Issue 36, item 1 on the real local cluster: the daemon is SIGKILLed while a slow ``sbatch`` (a
stand-in first in PATH that sleeps, then runs the real one) is on its way, and a new daemon starts
at once. Before the fix the new daemon found no job with the intent's tag, submitted attempt 2, and
the killed daemon's ``sbatch`` then landed attempt 1: the stage ran twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asad.slurm.cli import SlurmCLI
from asad.slurm.inflight import submitting

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]


def test_a_kill_during_a_slow_sbatch_runs_the_stage_once(cluster, tmp_path):
    real = shutil.which("sbatch")
    assert real
    slow = tmp_path / "slow-bin"
    slow.mkdir()
    (slow / "sbatch").write_text(f"#!/bin/bash\nsleep 30\nexec {real} \"$@\"\n")
    (slow / "sbatch").chmod(0o755)
    wf = tmp_path / "one.yaml"
    wf.write_text("name: one\nstrategy: per-stage\ndefaults: {time: 5m, mem: 100M, cpus: 1}\nstages:\n"
                  "  - {name: a, run: 'sleep 2'}\n")
    state = tmp_path / "state"
    env = cluster.env()
    for var in ("ASAD_DB_URL", "ASAD_BACKEND", "ASAD_CONFIG", "ASAD_PREDICTOR"):
        env.pop(var, None)
    env.update(ASAD_STATE_DIR=str(state), ASAD_POLL_INTERVAL="1", XDG_CONFIG_HOME=str(state / "config"))
    slow_env = {**env, "PATH": f"{slow}:{env['PATH']}"}

    def asad(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "asad", *args], env=env, capture_output=True, text=True,
                              timeout=120, cwd=REPO, check=False)

    assert asad("submit", str(wf), "--backend", "slurm").returncode == 0
    first = subprocess.Popen([sys.executable, "-m", "asad", "daemon"], env=slow_env, cwd=REPO,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    db = state / "asad.db"
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the intent is written and its (slow) sbatch runs
            with sqlite3.connect(db) as con:
                tags = [t for (t,) in con.execute("select tag from jobs where phase='SUBMITTING'")]
            if tags and submitting(tags):
                break
            time.sleep(0.2)
        else:
            pytest.fail("the daemon wrote no submission intent, or ran no sbatch for it")
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait(30)
    second = subprocess.Popen([sys.executable, "-m", "asad", "daemon"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            hist = json.loads(asad("history", "--json").stdout or "[]")
            if hist and hist[0]["state"] != "ACTIVE":
                break
            time.sleep(2)
    finally:
        second.terminate()
        _, err = second.communicate(timeout=60)
    assert hist and hist[0]["state"] == "COMPLETED", (hist, err[-2000:])
    with sqlite3.connect(db) as con:
        store_id = con.execute("select value from meta where key='store_id'").fetchone()[0]
    deadline = time.monotonic() + 120
    while submitting(tags) and time.monotonic() < deadline:  # the killed daemon's sbatch has its say
        time.sleep(1)
    time.sleep(5)
    jobs = SlurmCLI(slurm_conf=cluster.slurm_conf).find(f"asad:{store_id}:")
    assert len(jobs) == 1, {j: (s.comment, s.state) for j, s in jobs.items()}
