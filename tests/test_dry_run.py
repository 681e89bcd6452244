"""``asad submit --dry-run`` prints what would be submitted, submits and stores nothing."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import EXAMPLES, ROOT


def asad(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "asad", *args], cwd=ROOT, capture_output=True, text=True,
                          env=env or os.environ.copy(), timeout=120)


def test_dry_run_prints_every_chain_job_and_stores_nothing():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "chain")
    assert res.returncode == 0, res.stderr
    out = res.stdout
    assert out.count("sbatch --parsable") == 9
    assert '"--dependency=afterok:${JOBID_mProjectPP}"' in out
    assert "simulated cluster" in out
    state = Path(os.environ["XDG_STATE_HOME"]) / "asad"
    assert not (state / "asad.db").exists() and not (state / "runs").exists()


def test_dry_run_of_a_per_stage_workflow_shows_only_what_goes_now():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "per-stage")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("sbatch --parsable") == 1 and "The other 8 stage(s)" in res.stdout


def test_dry_run_refuses_a_broken_file_like_submit(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\nstages:\n  - {name: a, cpus: 100000, run: 'true'}\n")
    res = asad("submit", str(bad), "--dry-run", "--backend", "sim")
    assert res.returncode == 3 and "Traceback" not in res.stderr and "sbatch" not in res.stdout


def test_dry_run_of_big_job_says_every_stage_runs_in_the_one_allocation():
    res = asad("submit", str(EXAMPLES / "montage.yaml"), "--dry-run", "--backend", "sim", "--strategy", "big-job")
    assert res.returncode == 0, res.stderr
    assert res.stdout.count("sbatch --parsable") == 1 and "9 of 9 stages would be submitted now" in res.stdout
    assert "# big-job: one allocation; stages mProjectPP" in res.stdout and "The other" not in res.stdout
