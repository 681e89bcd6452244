"""Issue 13 on the real local cluster: what a new user tripped over, each checked against slurmctld.

Run alone: ``slurm-scripts/local-cluster.sh up --accounting`` (as root), then
``.venv/bin/pytest -m slurm tests/slurm/test_user_real.py``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from asad.slurm.backend import JobState
from asad.slurm.cli import SlurmCLI

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]


def user_env(cluster, state_dir: Path) -> dict[str, str]:
    """A user's shell: SLURM_CONF exported, no asad settings (the default backend, auto)."""
    env = cluster.env()
    for var in ("ASAD_DB_URL", "ASAD_BACKEND", "ASAD_CONFIG", "ASAD_PREDICTOR"):
        env.pop(var, None)
    env.update(ASAD_STATE_DIR=str(state_dir), ASAD_POLL_INTERVAL="1", XDG_CONFIG_HOME=str(state_dir / "config"))
    return env


def asad(env: dict[str, str], *args: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asad", *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=REPO, check=False)


def test_submit_checks_the_real_cluster_by_default(cluster, tmp_path):
    """Defect 3: a stage bigger than the real nodes is refused (it was accepted against the simulator)."""
    too_big = cluster.mem_per_node_mb * 2
    wf = tmp_path / "big.yaml"
    wf.write_text(f"name: big\nstages:\n  - {{name: a, cpus: 1, mem: {too_big}M, time: 5m, run: 'true'}}\n")
    env = user_env(cluster, tmp_path / "state")
    res = asad(env, "submit", str(wf))
    assert res.returncode == 3, res.stdout + res.stderr
    assert "bigger than every partition" in res.stderr and "Nothing was submitted" in res.stderr
    res = asad(env, "predict", "--cpus", "4", "--json")
    assert res.returncode == 0, res.stderr
    assert not json.loads(res.stdout)["key"].startswith("cluster=sim|")


def test_failed_stage_log_is_printed_and_holds_the_output(cluster, tmp_path):
    """Defect 5: the log path asad prints for a failed stage exists and holds the command's output."""
    wf = tmp_path / "fails.yaml"
    wf.write_text("name: fails\nstages:\n"
                  "  - {name: boom, cpus: 1, mem: 100M, time: 5m, run: 'echo the-needle; exit 3'}\n")
    env = user_env(cluster, tmp_path / "state")
    res = asad(env, "run", str(wf), "--backend", "slurm", timeout=300)
    assert res.returncode == 1, res.stdout + res.stderr
    assert "SIMULATED" not in res.stdout
    log_line = next(line for line in res.stdout.splitlines() if line.strip().startswith("log "))
    log_path = Path(log_line.split()[1])
    assert "the-needle" in log_path.read_text()
    status = asad(env, "status", "--all").stdout
    assert f"stage boom failed: its output is in {log_path}" in status, status
    # the account and QOS Slurm charged, although the stage named neither (squeue shows the same)
    charged = asad(env, "status", "--all", "-o", "%a %q").stdout.splitlines()
    assert charged[-2:] == ["ACCOUNT QOS", "root normal"], charged


def chain_job_ids(env: dict[str, str], n: int = 2) -> list[int]:
    """The job ids of the chain's ``n`` stages, once all are submitted (asad status --json)."""
    deadline = time.monotonic() + 120
    job_ids: list[int] = []
    while time.monotonic() < deadline and len(job_ids) < n:
        res = asad(env, "status", "--json")
        if res.returncode == 0:
            job_ids = [r["job_id"] for r in json.loads(res.stdout)["stages"] if r["job_id"]]
        time.sleep(1)
    assert len(job_ids) == n, "the chain's jobs were not submitted"
    return job_ids


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_ctrl_c_on_run_cancels_its_slurm_jobs(cluster, tmp_path, sig):
    """Defect 8: SIGINT on asad run --backend slurm cancels the jobs it submitted and says so.
    Issue 36: SIGTERM (kill, timeout, a closing tmux) does the same (it left the jobs running)."""
    wf = tmp_path / "long.yaml"
    wf.write_text("name: long\nstrategy: chain\ndefaults: {time: 5m, mem: 100M, cpus: 1}\nstages:\n"
                  "  - {name: a, run: 'sleep 300'}\n  - {name: b, run: 'sleep 300'}\n")
    env = user_env(cluster, tmp_path / "state")
    # Ctrl-C reaches a foreground process whose SIGINT is not ignored. A suite started as a
    # background job (`cmd &` in a script) inherits SIGINT ignored, and Python then keeps it
    # ignored: give the child the terminal's default back.
    proc = subprocess.Popen([sys.executable, "-m", "asad", "run", str(wf), "--backend", "slurm"], env=env,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        job_ids = chain_job_ids(env)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 128 + sig, err
    assert "cancelled" in err and all(str(j) in err for j in job_ids), err
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = {s.state for s in backend.poll(job_ids).values()}
        if states and all(s.is_final for s in states):
            break
        time.sleep(1)
    assert states == {JobState.CANCELLED}, states
    hist = json.loads(asad(env, "history", "--json").stdout)
    assert hist[0]["state"] == "CANCELLED" and hist[0]["backend"] == "slurm" and not hist[0]["simulated"]


def test_cancel_with_no_daemon_cancels_the_slurm_jobs_itself(cluster, tmp_path):
    """The driver is gone (SIGKILL): ``asad cancel`` scancels the workflow's queued and running jobs
    at once rather than leaving them to burn core-hours until a daemon starts, and records the
    workflow as CANCELLED as the daemon would (audit 5: status showed the running stage F and the
    queued one PD until a daemon started); the next daemon agrees."""
    wf = tmp_path / "long.yaml"
    wf.write_text("name: long\nstrategy: chain\ndefaults: {time: 5m, mem: 100M, cpus: 1}\nstages:\n"
                  "  - {name: a, run: 'sleep 300'}\n  - {name: b, run: 'sleep 300'}\n")
    env = user_env(cluster, tmp_path / "state")
    proc = subprocess.Popen([sys.executable, "-m", "asad", "run", str(wf), "--backend", "slurm"], env=env,
                            cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        job_ids = chain_job_ids(env)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    res = asad(env, "cancel", "1")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no daemon is running" in res.stdout and all(str(j) in res.stdout for j in job_ids), res.stdout
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        states = {s.state for s in backend.poll(job_ids).values()}
        if states == {JobState.CANCELLED}:
            break
        time.sleep(1)
    assert states == {JobState.CANCELLED}, states
    assert json.loads(asad(env, "history", "--json").stdout)[0]["state"] == "CANCELLED"  # no daemon yet
    assert [r["st"] for r in json.loads(asad(env, "status", "1", "--json").stdout)["stages"]] == ["CA", "CA"]
    daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon"], env=env, cwd=REPO,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            hist = json.loads(asad(env, "history", "--json").stdout)
            if hist[0]["state"] != "ACTIVE":
                break
            time.sleep(1)
    finally:
        daemon.terminate()
        daemon.wait(timeout=60)
    assert hist[0]["state"] == "CANCELLED", hist
