"""``asad resume`` on the real cluster: a workflow whose second stage fails until the user fixes
something (a flag file) is resumed; its first stage is not run again and the rest completes."""

from __future__ import annotations

import json

import pytest

from asad.slurm.cli import SlurmCLI
from test_workflows_real import asad, asad_env, jobs_by_stage, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def test_failed_stage_fixed_and_resumed(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    flag, runs = tmp_path / "fixed", tmp_path / "a.runs"
    wf = write_workflow(tmp_path / "r.yaml", f"""\
name: resumable
strategy: chain
defaults: {{time: 5m, mem: 100M, cpus: 1}}
stages:
  - {{name: a, run: "echo ran >> {runs}"}}
  - {{name: b, after: [a], run: "test -f {flag} || {{ echo 'not fixed yet' >&2; exit 3; }}"}}
  - {{name: c, after: [b], run: "echo c > {tmp_path}/c.out"}}
""")
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 1, res.stdout + res.stderr
    first = json.loads(res.stdout)
    assert first["state"] == "FAILED"
    wf_id = first["id"] if "id" in first else 1

    res = asad(env, "resume", "999")
    assert res.returncode == 3 and "no workflow 999" in res.stderr and "Traceback" not in res.stderr

    flag.touch()  # the fix
    res = asad(env, "resume", str(wf_id), "--run", "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"workflow {wf_id} resumed (was FAILED): running again b, c; kept completed a" in res.stdout
    summary = json.loads(res.stdout[res.stdout.index("{"):])
    assert summary["state"] == "COMPLETED"
    assert runs.read_text().splitlines() == ["ran"]  # stage a ran once
    assert (tmp_path / "c.out").read_text().strip() == "c"
    counts = jobs_by_stage(SlurmCLI(slurm_conf=cluster.slurm_conf), tmp_path / "state", wf_id)
    # chain submits c with afterok on b at once: its first job was cancelled when b failed
    assert counts == {"a": 1, "b": 2, "c": 2}

    res = asad(env, "resume", str(wf_id))
    assert res.returncode == 1 and "completed; nothing to resume" in res.stderr


def test_resume_wakes_a_running_daemon(cluster, tmp_path):
    """A daemon polling only every 600 s: ``asad resume`` wakes it, as ``asad submit`` does, and it
    drives the resumed workflow (an old id) to the end."""
    import subprocess
    import sys
    import time

    from test_workflows_real import REPO, submit, wait_for, workflow_state

    env = asad_env(cluster, tmp_path / "state")
    flag = tmp_path / "fixed"
    proc = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "slurm", "--poll", "600"],
                            env=env, cwd=REPO, stdout=open(tmp_path / "daemon.log", "a"), stderr=subprocess.STDOUT)
    try:
        time.sleep(5)
        wf_id = submit(env, write_workflow(tmp_path / "d.yaml", f"""\
name: daemon-resume
strategy: per-stage
defaults: {{time: 5m, mem: 100M, cpus: 1}}
stages:
  - {{name: a, run: "true"}}
  - {{name: b, run: "test -f {flag}"}}
"""))
        wait_for(lambda: workflow_state(env, wf_id) == "FAILED", 90, "the workflow to fail")
        flag.touch()
        res = asad(env, "resume", str(wf_id))
        assert res.returncode == 0, res.stderr
        assert "no daemon is running" not in res.stderr
        wait_for(lambda: workflow_state(env, wf_id) == "COMPLETED", 60, "the resumed workflow to complete")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
