"""The stage keys that go to sbatch or the batch script, on the real cluster: ``setup`` runs before
``run`` in the same shell, ``output`` names the log (its folder is created), ``mail`` and
``exclusive`` reach Slurm, and a ``constraint`` no node has is refused in Slurm's words."""

from __future__ import annotations

import json
import re

import pytest

from asad.slurm.cli import SlurmCLI
from test_workflows_real import asad, asad_env, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

WORKFLOW = """\
name: opts
strategy: chain
defaults: {time: 5m, mem: 200M, cpus: 1, mail: {type: "END,FAIL", user: nobody@localhost}}
stages:
  - name: a
    setup: |
      export GREETING=hello-from-setup
    output: logs/%x-%j.out
    run: echo "$GREETING"
  - {name: b, exclusive: true, run: "echo b"}
"""


def test_setup_output_mail_and_exclusive_reach_slurm(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "opts.yaml", WORKFLOW)
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    summary = json.loads(res.stdout)
    assert summary["state"] == "COMPLETED"
    logs = list((tmp_path / "logs").glob("asad.*.a-*.out"))
    assert len(logs) == 1 and logs[0].read_text().strip() == "hello-from-setup"
    # and asad shows that very file as the stage's log (it showed logs/a.log and an unfilled %x)
    stage_a = next(s for s in summary["stages"] if s["name"] == "a")
    assert stage_a["log"] == str(logs[0]) and "slurm_output" not in stage_a, stage_a
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    ids = [s["job_id"] for s in summary["stages"]]
    detail = {j: backend.cmd.run("scontrol", ["show", "job", str(j)]).stdout for j in ids}
    assert all("MailType=END,FAIL" in d and "MailUser=nobody@localhost" in d for d in detail.values())
    assert "OverSubscribe=NO" in detail[ids[1]]  # --exclusive: the whole node


def test_a_constraint_no_node_has_is_refused_clearly(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "c.yaml", "name: c\nstages:\n  - {name: a, time: 5m, mem: 100M, "
                                            "constraint: nosuchfeature, run: 'true'}\n")
    res = asad(env, "run", str(wf), "--backend", "slurm", timeout=120)
    assert res.returncode != 0 and "Traceback" not in res.stderr
    assert "feature" in (res.stdout + res.stderr).lower()


def test_gpus_reach_the_job(cluster, tmp_path):
    # scripts/test.sh starts the cluster with `--gpus 2` (dummy devices): Slurm schedules the GPU and
    # sets CUDA_VISIBLE_DEVICES for the job, as it would on a GPU node.
    config = SlurmCLI(slurm_conf=cluster.slurm_conf).cmd.run("scontrol", ["show", "config"]).stdout
    if not re.search(r"^GresTypes\s*=\s*gpu", config, re.M):
        pytest.skip("the local cluster declares no GPUs (local-cluster.sh up --gpus N)")
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "g.yaml", f"name: g\nstages:\n  - {{name: a, time: 5m, mem: 100M, gpus: 1, "
                                            f"run: 'echo gpus=$CUDA_VISIBLE_DEVICES > {tmp_path}/gpus.txt'}}\n")
    res = asad(env, "run", str(wf), "--backend", "slurm", "--json", timeout=240)
    assert res.returncode == 0, res.stdout + res.stderr
    assert (tmp_path / "gpus.txt").read_text().strip() == "gpus=0"
