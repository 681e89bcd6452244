"""A daemon that polls Slurm rarely still acts within seconds: ``asad submit`` and ``asad cancel``
wake it, and a stage's end marker brings its next poll forward (real slurmctld).

The daemon runs with ``--poll 600``: without a wake it would not look at Slurm again for minutes,
so each bound below (a few tens of seconds) fails if the wake-up it checks does not work.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from asad.slurm.backend import JobState
from asad.slurm.cli import SlurmCLI
from test_workflows_real import REPO, asad, asad_env, stage_rows, submit, wait_for, workflow_state, write_workflow

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(300)]

CHAIN = """\
name: {name}
strategy: chain
defaults: {{time: 5m, mem: 200M, cpus: 1}}
stages:
  - {{name: a, run: "sleep {t}"}}
  - {{name: b, run: "sleep {t}"}}
"""


@pytest.fixture
def slow_daemon(cluster, tmp_path):
    env = asad_env(cluster, tmp_path / "state")
    proc = subprocess.Popen([sys.executable, "-m", "asad", "daemon", "--backend", "slurm", "--poll", "600"],
                            env=env, cwd=REPO, stdout=open(tmp_path / "daemon.log", "a"), stderr=subprocess.STDOUT)
    time.sleep(5)  # its first tick has run: from now on it would sleep for minutes
    yield env
    proc.terminate()
    proc.wait(timeout=30)


def test_submit_wakes_the_daemon_and_end_markers_finish_the_workflow(cluster, tmp_path, slow_daemon):
    env = slow_daemon
    wf_id = submit(env, write_workflow(tmp_path / "quick.yaml", CHAIN.format(name="quick", t=5)))
    wait_for(lambda: all(r["job_id"] for r in stage_rows(env, wf_id)), 30, "both stages submitted")
    wait_for(lambda: workflow_state(env, wf_id) == "COMPLETED", 90, "the workflow to complete")


def test_cancel_wakes_the_daemon(cluster, tmp_path, slow_daemon):
    env = slow_daemon
    wf_id = submit(env, write_workflow(tmp_path / "long.yaml", CHAIN.format(name="long", t=200)))
    rows = wait_for(lambda: (lambda rs: rs if rs and all(r["job_id"] for r in rs) else None)(stage_rows(env, wf_id)),
                    30, "both stages submitted")
    assert asad(env, "cancel", str(wf_id)).returncode == 0
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    ids = [r["job_id"] for r in rows]
    statuses = wait_for(lambda: (lambda st: st if st and all(s.state.is_final for s in st.values()) else None)(
        backend.poll(ids)), 30, "Slurm jobs cancelled")
    assert {s.state for s in statuses.values()} == {JobState.CANCELLED}


def test_a_stage_that_fails_before_its_wrapper_shows_failed_within_seconds(cluster, tmp_path, slow_daemon):
    """Issue 36, item 6: stage b's job fails in its `setup:` line the moment its dependency on a is
    met: no wrapper ran, so no marker wakes the daemon. It showed "PD (Dependency)" for a whole poll
    interval after sacct said FAILED (~25 s at --poll 30; here --poll 600). The daemon now polls every
    few seconds for a while after a job's dependency is met."""
    env = slow_daemon
    text = CHAIN.format(name="setupfails", t=3).replace('{name: b, run: "sleep 3"}',
                                                          '{name: b, after: [a], run: "true", setup: ["exit 7"]}')
    wf_id = submit(env, write_workflow(tmp_path / "setupfails.yaml", text))
    rows = wait_for(lambda: (lambda rs: rs if rs and all(r["job_id"] for r in rs) else None)(stage_rows(env, wf_id)),
                    30, "both stages submitted")
    backend = SlurmCLI(slurm_conf=cluster.slurm_conf)
    b_job = rows[1]["job_id"]
    ended = wait_for(lambda: (lambda st: st if st.state.is_final else None)(backend.poll([b_job])[b_job]),
                     60, "Slurm to end stage b's job")
    assert ended.state is JobState.FAILED
    # the daemon's verdict, not only the row: `st` turns F from the job's end marker a tick before the
    # daemon records the stage FAILED with Slurm's reason (seen under load in the full suite)
    seen = wait_for(lambda: (lambda rs: rs[1] if rs and rs[1]["st"] == "F" and rs[1]["state"] == "FAILED" else None)(
        stage_rows(env, wf_id)), 40, "asad status to show stage b failed")
    assert "exit code 7" in seen["reason"]
    assert workflow_state(env, wf_id) == "FAILED"
