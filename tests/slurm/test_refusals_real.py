"""Issue 36, item 6, on the real cluster (started with ``--gpus 2``, as scripts/test.sh does): a
workflow Slurm would refuse at once is refused by ``asad submit`` when the cluster's nodes say so
(GPUs), and one refused later by ``sbatch`` stays visible in the default ``asad status``."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from asad.slurm.cli import SlurmCLI
from test_workflows_real import REPO, asad, asad_env, submit, wait_for, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]


def test_more_gpus_than_any_node_has_is_refused_at_submit(cluster, tmp_path):
    parts = SlurmCLI(slurm_conf=cluster.slurm_conf).partitions()
    most = max((p.gpus_per_node or 0) for p in parts)
    assert all(p.gpus_per_node is not None for p in parts)  # sinfo %G read
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "gpus.yaml", "name: gpus\nstages:\n  - name: a\n    run: 'true'\n"
                                                f"    time: 5m\n    gpus: {most + 2}\n")
    res = asad(env, "submit", str(wf), "--backend", "slurm")
    assert res.returncode == 3, res.stdout + res.stderr
    assert "stages[0].gpus" in res.stderr and f"{most + 2} GPUs on one node" in res.stderr
    assert f"has {most or 'no'} GPU" in res.stderr and "Traceback" not in res.stderr
    assert json.loads(asad(env, "history", "--json").stdout or "[]") == []  # nothing stored


def test_a_workflow_sbatch_refuses_is_named_in_the_default_status(cluster, tmp_path):
    """A constraint no node has: sbatch refuses it at once ("Invalid feature specification"); the
    workflow fails. Before, `asad status` then showed an empty table, as if it had never been."""
    env = asad_env(cluster, tmp_path / "state")
    daemon = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "slurm"], env=env, cwd=REPO,
                              stdout=open(tmp_path / "daemon.log", "a"), stderr=subprocess.STDOUT)
    try:
        time.sleep(3)
        wf_id = submit(env, write_workflow(tmp_path / "feature.yaml", "name: feature\nstages:\n  - name: a\n"
                                           "    run: 'true'\n    time: 5m\n    constraint: nosuchfeature\n"))

        def noted():  # noqa: ANN202
            out = json.loads(asad(env, "status", "--json").stdout)
            return [n for n in out["notes"] if n.startswith(f"workflow {wf_id} (feature) FAILED")] and out

        out = wait_for(noted, 60, "the failed workflow to be named by asad status")
        assert out["stages"] == []
        (note,) = [n for n in out["notes"] if n.startswith(f"workflow {wf_id} ")]
        assert "Invalid feature specification" in note
        assert "Invalid feature specification" in asad(env, "status").stdout
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)
