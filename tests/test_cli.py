"""The CLI's output contract, through real subprocesses sharing one store."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import EXAMPLES, ROOT

BROKEN = ROOT / "tests" / "broken"


def asad(*args, env=None, check=True, timeout=300):
    # the timeout only catches a hang: a simulated run takes ~20 s alone, and a loaded 2-core
    # machine (helpers' replays beside the suite) once took it past 120 s
    proc = subprocess.run([sys.executable, "-m", "asad", *args], capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=timeout, cwd=ROOT)
    if check and proc.returncode != 0:
        raise AssertionError(f"asad {' '.join(args)} exited {proc.returncode}\n{proc.stdout}\n{proc.stderr}")
    return proc


def test_run_json_contract():
    out = json.loads(asad("run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0", "--json").stdout)
    for key in ("workflow", "strategy", "state", "makespan_s", "total_wait_s", "core_hours", "overhead_core_hours",
                "stages"):
        assert key in out
    assert out["state"] == "COMPLETED"
    for st in out["stages"]:
        for key in ("name", "job_id", "state", "cpus", "submit", "eligible", "start", "end", "wait_s",
                    "perceived_wait_s"):
            assert key in st
    # the empty cluster: nothing waits, the makespan is the sum of the two stages' true run times
    assert out["total_wait_s"] == 0
    assert out["makespan_s"] == pytest.approx(42.5 * 60 + 90)


def test_run_strategy_flag_and_history():
    asad("run", str(EXAMPLES / "statistics.yaml"), "--strategy", "big-job", "--load", "0")
    hist = json.loads(asad("history", "--json").stdout)
    assert hist[0]["strategy"] == "big-job" and hist[0]["state"] == "COMPLETED"


@pytest.mark.parametrize("broken", sorted(BROKEN.glob("*.yaml"))[:5], ids=lambda p: p.name)
def test_broken_workflow_submits_nothing(broken):
    proc = asad("submit", str(broken), check=False)
    assert proc.returncode == 3, proc.stderr
    assert "Nothing was submitted" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(asad("status", "--all", "--json").stdout)["stages"] == []


def test_stage_bigger_than_cluster_is_refused(tmp_path):
    wf = tmp_path / "big.yaml"
    wf.write_text("name: big\nstages:\n  - name: a\n    cpus: 4096\n    run: 'true'\n")
    proc = asad("run", str(wf), "--load", "0", check=False)
    assert proc.returncode == 3
    assert "big.yaml" in proc.stderr and "cpus" in proc.stderr


def test_submit_without_daemon_says_how_to_start_one():
    proc = asad("submit", str(EXAMPLES / "blast.yaml"))
    assert proc.stdout.strip().isdigit()
    assert "no daemon is running" in proc.stderr and "systemctl --user" in proc.stderr
    status = asad("status").stdout.splitlines()
    assert status.pop(0).startswith("# no daemon drives this store")  # and status says so too
    assert status[0].split()[:4] == ["WORKFLOW", "STAGE", "JOBID", "PARTITION"]
    assert len(status) == 3  # header + 2 stages
    assert "(Predecessors)" in status[2]


@pytest.mark.parametrize("backend", ["sim", "auto"])  # "slurm" refuses a submit Slurm cannot check
def test_the_daemon_suggested_runs_the_simulator_only_for_a_simulated_store(backend, monkeypatch):
    monkeypatch.setenv("ASAD_BACKEND", backend)
    proc = asad("submit", str(EXAMPLES / "blast.yaml"), check=False)
    suggested = next(line for line in proc.stderr.splitlines() if "or in a terminal:" in line)
    assert suggested.endswith("asad daemon --backend sim" if backend == "sim" else "asad daemon"), proc.stderr


def test_status_format_like_squeue():
    asad("submit", str(EXAMPLES / "blast.yaml"))
    out = [line for line in asad("status", "-o", "%S|%t|%.5C").stdout.splitlines() if not line.startswith("# ")]
    assert out[0] == "STAGE|ST| CPUS"
    assert out[1] == "blastn|WT|   28"


def test_cancel_unknown_workflow_is_a_clear_error():
    proc = asad("cancel", "999", check=False)
    assert proc.returncode == 3 and "no workflow 999" in proc.stderr


def test_corrupt_store_is_a_clear_error(tmp_path):
    db = tmp_path / "bad.db"
    db.write_text("garbage" * 100)
    proc = asad("--version")  # sanity
    proc = asad("status", "--db", f"sqlite:///{db}", check=False)
    assert proc.returncode == 4
    assert "not an SQLite database" in proc.stderr and "restore" in proc.stderr


def wait_for(predicate, timeout_s=60.0, every_s=0.5):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(every_s)
    raise AssertionError("timed out")


def test_daemon_and_cli_in_separate_processes_share_the_store(tmp_path):
    env = os.environ.copy()
    daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--speed", "2000",
                               "--load", "0", "--poll", "5"], cwd=ROOT, env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: asad("status", "--json").returncode == 0 and Path(
            os.environ["XDG_STATE_HOME"], "asad", "asad.db.lock").exists())
        again = asad("daemon", "--backend", "sim", check=False, timeout=120)
        assert again.returncode == 6 and "another asad daemon" in again.stdout
        ids = [int(asad("submit", str(EXAMPLES / f)).stdout) for f in ("blast.yaml", "statistics.yaml", "dag.yaml")]
        long_wf = tmp_path / "long.yaml"
        long_wf.write_text("name: long\nstrategy: per-stage\nstages:\n"
                           "  - {name: a, cpus: 2, time: 5d, run: sleep 1, simulate: {runtime: 100h}}\n"
                           "  - {name: b, cpus: 2, time: 1h, run: sleep 1, simulate: {runtime: 1h}}\n")
        doomed = int(asad("submit", str(long_wf)).stdout)
        wait_for(lambda: "R" in asad("status", str(doomed), "-o", "%t").stdout.split())
        asad("cancel", str(doomed))

        def done():
            hist = {h["id"]: h for h in json.loads(asad("history", "--json").stdout)}
            return all(hist[i]["state"] != "ACTIVE" for i in [*ids, doomed]) and hist

        hist = wait_for(done, timeout_s=300)
        assert [hist[i]["state"] for i in ids] == ["COMPLETED"] * 3
        assert hist[doomed]["state"] == "CANCELLED"
    finally:
        daemon.send_signal(signal.SIGTERM)
        out, err = daemon.communicate(timeout=30)
    assert daemon.returncode == 0, err


def test_sigterm_right_after_ready_stops_the_daemon(tmp_path):
    """systemd sends SIGTERM as soon as it likes after READY=1: the daemon must stop, not hang."""
    import socket

    address = str(tmp_path / "notify.sock")
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
        sock.bind(address)
        sock.settimeout(60)
        env = {**os.environ, "NOTIFY_SOCKET": address}
        daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "sim", "--load", "0"],
                                  cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            assert sock.recv(64) == b"READY=1"
            daemon.send_signal(signal.SIGTERM)
            daemon.communicate(timeout=20)
        finally:
            if daemon.poll() is None:
                daemon.kill()
                print(daemon.communicate())
    assert daemon.returncode == 0
