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
