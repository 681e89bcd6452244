"""The script ``asad submit --dry-run`` prints is exact: run by bash on the real cluster, it submits
the chain, and the jobs run in order."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from asad.slurm.cli import SlurmCLI
from slurm_helpers import all_final, wait_until
from test_workflows_real import REPO, asad_env, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

WORKFLOW = """\
name: dry
strategy: chain
defaults: {time: 5m, mem: 200M, cpus: 1}
stages:
  - {name: a, run: "echo a > dry-a.txt"}
  - {name: b, run: "test -s dry-a.txt && echo b > dry-b.txt && printf %s \\"$GREETING\\" > dry-env.txt",
     env: {GREETING: "a,b=c 'q' two words"}}
"""


def test_the_dry_run_script_runs_as_printed(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    wf = write_workflow(tmp_path / "dry.yaml", WORKFLOW)
    res = subprocess.run([sys.executable, "-m", "asad", "submit", str(wf), "--dry-run", "--backend", "slurm"],
                         cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert not (tmp_path / "state" / "asad" / "asad.db").exists()
    script = res.stdout + 'echo "$JOBID_a $JOBID_b"\n'
    ran = subprocess.run(["bash", "-c", script], env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 0, ran.stderr
    ids = [int(x) for x in ran.stdout.split()[-2:]]
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    statuses = wait_until(backend, ids, all_final(ids), timeout_s=120)
    assert [statuses[i].state.value for i in ids] == ["COMPLETED", "COMPLETED"]
    assert statuses[ids[1]].start_time >= statuses[ids[0]].end_time
    assert (tmp_path / "dry-b.txt").read_text() == "b\n"
    # env: travels in front of sbatch (its environment, --export=ALL,GREETING), never in the script
    # (each here-document ends at its own word, ASAD_SCRIPT_<hash of the script>: asad/cli/dryrun.py)
    here_docs = re.findall(r"<<'(ASAD_SCRIPT_\w+)'\n(.*?)\n\1\n", res.stdout, flags=re.S)
    assert len(here_docs) == 2 and all("two words" not in body for _, body in here_docs)
    assert (tmp_path / "dry-env.txt").read_text() == "a,b=c 'q' two words"
    # the scratch workflow's markers and logs went to a scratch run folder, not to the user's
    # (where a real workflow of the same id may be running: the audit of 2026-11-26 saw its
    # markers overwritten)
    from asad.cli.dryrun import dry_run_dir

    assert not (tmp_path / "state" / "runs").exists()
    assert str(dry_run_dir()) in res.stdout
