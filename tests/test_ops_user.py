"""Issue 13, "a real user's first hour": what tripped a new user, each with a test that failed
before its fix (the store creation race is in test_ops_store.py)."""

from __future__ import annotations

import json
import subprocess

import pytest

from asad import app, cli
from asad.model import JobPhase
from asad.slurm.backend import JobState
from asad.store.repo import Store
from tests.conftest import EXAMPLES
from tests.test_cli import asad


# -- defect 8: read-only store, unknown workflow, unknown format letter, Ctrl-C on run ---------------
@pytest.fixture
def read_only_dir(tmp_path):
    """A read-only file system (a read-only bind mount): the errno 30 a user sees, which root's
    permission checks would not give."""
    src, mnt = tmp_path / "src", tmp_path / "ro"
    (src / "asad").mkdir(parents=True)
    mnt.mkdir()
    proc = subprocess.run(["mount", "--bind", "-o", "ro", str(src), str(mnt)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot make a read-only bind mount here: {proc.stderr.strip()}")
    try:
        yield src, mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=False)


def test_read_only_store_is_a_clear_message_and_exit_4(read_only_dir, monkeypatch):
    src, mnt = read_only_dir
    monkeypatch.setenv("ASAD_STATE_DIR", str(mnt / "fresh"))  # no store yet: the folder cannot be made
    for args in (["status"], ["submit", str(EXAMPLES / "blast.yaml")], ["daemon", "--backend", "sim"]):
        proc = asad(*args, check=False)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr
        assert "Read-only file system" in proc.stderr and "ASAD_STATE_DIR" in proc.stderr, proc.stderr
    # an existing store on a file system that became read-only
    Store(f"sqlite:///{src / 'asad' / 'asad.db'}").close()
    monkeypatch.setenv("ASAD_STATE_DIR", str(mnt / "asad"))
    for args in (["status"], ["daemon", "--backend", "sim"]):
        proc = asad(*args, check=False)
        assert proc.returncode == 4, (args, proc.stderr)
        assert "Traceback" not in proc.stderr and "read-only file system" in proc.stderr.lower(), proc.stderr


def test_status_of_an_unknown_workflow_exits_non_zero():
    proc = asad("status", "999", check=False)
    assert proc.returncode == 3 and "no workflow 999" in proc.stderr


def test_status_refuses_an_unknown_format_letter_and_lists_the_valid_ones():
    proc = asad("status", "-o", "%i %Z", check=False)
    assert proc.returncode == 3
    assert "%Z" in proc.stderr and "%i JOBID" in proc.stderr and "%t ST" in proc.stderr
    assert proc.stdout == ""


class _InterruptedSim:
    """The simulator, with a Ctrl-C arriving once the workflow has a job in the queue."""

    def __init__(self, sim):
        self._sim = sim

    def __getattr__(self, name):
        return getattr(self._sim, name)

    def run_until(self, t, stop_on=()):
        if list(stop_on):
            raise KeyboardInterrupt
        return self._sim.run_until(t, stop_on)


def test_ctrl_c_on_run_cancels_the_jobs_it_submitted_and_says_so(monkeypatch, capsys):
    real = app.make_backend
    made = []

    def make_backend(*args, **kwargs):
        made.append(_InterruptedSim(real(*args, **kwargs)))
        return made[-1]

    monkeypatch.setattr(app, "make_backend", make_backend)
    code = cli.main(["run", str(EXAMPLES / "blast.yaml"), "--backend", "sim", "--load", "0"])
    err = capsys.readouterr().err
    assert code == 130
    store = Store(app.Settings().database_url)
    try:
        wf = store.load_workflows()[0]
        jobs = [j for j in wf.jobs if j.job_id is not None]
        assert wf.state.value == "CANCELLED" and jobs
        statuses = made[0].poll([j.job_id for j in jobs])
        assert all(s.state is JobState.CANCELLED for s in statuses.values()), statuses
        assert all(j.phase is not JobPhase.LIVE or j.state.is_final for j in wf.jobs)
    finally:
        store.close()
    assert f"workflow {wf.id} cancelled" in err and str(jobs[0].job_id) in err
