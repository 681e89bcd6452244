"""Issue 36, item 1: a submission intent is abandoned only when no sbatch of an earlier daemon can
still land it, and a job that lands after all is adopted or cancelled, never left to run twice."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import Counter

import pytest

from asad.daemon.wiring import make_runner, run_to_completion
from asad.common.config import Settings
from asad.daemon.intents import WATCH_EVERY_S, Intents
from asad.core.model import JobPhase, JobRecord, StageRun, StageState, WorkflowRun
from asad.slurm.backend import JobRequest, JobState, JobStatus
from asad.slurm.inflight import submitting
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES
from tests.test_crash import Crash, CrashingBackend


class SlurmLike:
    """The simulator as a real cluster is seen after a crash: a lost sbatch's request may still be
    processed, so an intent with no job is given ``submit_settle_s`` before it is abandoned."""

    def __init__(self, sim, settle_s: float):
        self._sim, self.submit_settle_s, self.name = sim, settle_s, sim.name

    def __getattr__(self, item):
        return getattr(self._sim, item)


def _sbatch_stand_in(tag: str) -> subprocess.Popen:
    """A process whose command line carries ``--comment=<tag>``, as the killed daemon's sbatch does."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", f"--comment={tag}"])


def _crash_before_sbatch(db_url: str):  # noqa: ANN202
    """A workflow whose daemon died at its first submission, after the intent, before sbatch."""
    spec = load_workflow(EXAMPLES / "statistics.yaml")
    sim = make_simulator("small", load=0.0, seed=4)
    store = Store(db_url)
    backend = CrashingBackend(sim, 1, after_submit=False)
    runner = make_runner(Settings(), store, backend)
    wf = store.add_workflow(spec, sim.now(), strategy="per-stage")
    runner.load()
    with pytest.raises(Crash):
        run_to_completion(runner, backend, [wf.id])
    store.session.rollback()
    store.close()
    store = Store(db_url)
    (loaded,) = store.load_workflows([wf.id])
    (intent,) = [j for j in loaded.jobs if j.phase is JobPhase.SUBMITTING]
    store.close()
    return sim, spec, wf.id, intent


def _jobs_per_stage(sim, store_id: str) -> Counter:  # noqa: ANN001
    return Counter(st.comment.split(":")[3] for st in sim.find(f"asad:{store_id}:").values())


def test_inflight_finds_a_process_by_its_comment_tag():
    proc = _sbatch_stand_in("asad:s1:7:a:1")
    try:
        time.sleep(0.2)
        assert submitting(["asad:s1:7:a:1", "asad:s1:7:a:2"]) == {"asad:s1:7:a:1"}
    finally:
        proc.kill()
        proc.wait()
    assert submitting(["asad:s1:7:a:1"]) == set()


def test_a_slow_sbatch_of_a_killed_daemon_is_waited_for_not_doubled(db_url):
    sim, spec, wf_id, intent = _crash_before_sbatch(db_url)
    sbatch = _sbatch_stand_in(intent.tag)  # the killed daemon's sbatch, still waiting on slurmctld
    try:
        time.sleep(0.2)
        store = Store(db_url)
        backend = SlurmLike(sim, settle_s=10.0)
        runner = make_runner(Settings(), store, backend)
        report = runner.tick()
        assert report.submitted == 0
        (job,) = [j for j in runner.active[wf_id].jobs if j.tag == intent.tag]
        assert job.phase is JobPhase.SUBMITTING, "abandoned while its sbatch could still land"
        assert report.wake_at <= sim.now() + 5
        sim.run_until(sim.now() + 60)
        assert runner.tick().submitted == 0  # still running: still waiting
        # now it lands, and its process ends
        sim.submit(intent.request)
    finally:
        sbatch.kill()
        sbatch.wait()
    run_to_completion(runner, backend, [wf_id])
    assert store.workflow_rows([wf_id])[0].state == "COMPLETED"
    assert _jobs_per_stage(sim, store.store_id) == {s.name: 1 for s in spec.stages}
    store.close()


def test_an_intent_with_no_sbatch_left_is_abandoned_after_the_settle_time(db_url):
    sim, _spec, wf_id, intent = _crash_before_sbatch(db_url)
    store = Store(db_url)
    backend = SlurmLike(sim, settle_s=10.0)
    runner = make_runner(Settings(), store, backend)
    runner.tick()
    (job,) = [j for j in runner.active[wf_id].jobs if j.tag == intent.tag]
    assert job.phase is JobPhase.SUBMITTING  # within the settle time
    sim.run_until(sim.now() + 11)
    report = runner.tick()
    assert job.phase is JobPhase.ABANDONED
    assert report.submitted >= 1  # the stage's attempt 2
    store.close()


def test_a_job_that_lands_after_a_later_attempt_is_cancelled(db_url):
    sim, spec, wf_id, intent = _crash_before_sbatch(db_url)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    assert runner.tick().submitted >= 1  # no sbatch left, no settle on the simulator: attempt 2 now
    late = sim.submit(intent.request)  # ... and then the lost sbatch's job lands after all
    sim.run_until(sim.now() + WATCH_EVERY_S + 1)
    run_to_completion(runner, sim, [wf_id], max_virtual_s=3 * 86400)
    assert store.workflow_rows([wf_id])[0].state == "COMPLETED"
    assert sim.poll([late])[late].state is JobState.CANCELLED
    (done,) = store.load_workflows([wf_id])
    stray = next(j for j in done.jobs if j.tag == intent.tag)
    assert stray.job_id == late and stray.cancelled_by_asad
    ran = Counter(st.comment.split(":")[3] for st in sim.find(f"asad:{store.store_id}:").values()
                  if st.state is JobState.COMPLETED)
    assert ran == {s.name: 1 for s in spec.stages}
    store.close()


class _Recorder:
    def __init__(self):
        self.saved = 0

    def save_job(self, job):  # noqa: ANN001
        self.saved += 1

    def save_stage(self, run):  # noqa: ANN001
        self.saved += 1

    def commit(self):
        pass


class _Found:
    def __init__(self, found):  # noqa: ANN001
        self.found, self.cancelled = found, []

    def find(self, prefix):  # noqa: ANN001
        return self.found

    def cancel(self, ids):  # noqa: ANN001
        self.cancelled += ids


def test_a_job_that_lands_before_any_later_attempt_is_adopted():
    spec = load_workflow(EXAMPLES / "statistics.yaml")
    first = spec.stages[0].name
    wf = WorkflowRun(id=1, spec=spec, strategy="asa", mode="auto")
    wf.stages = {s.name: StageRun(workflow_id=1, name=s.name) for s in spec.stages}
    tag = "asad:s:1:%s:1" % first
    job = JobRecord(row_id=5, workflow_id=1, stage=first, attempt=1, tag=tag, phase=JobPhase.ABANDONED,
                    request=JobRequest(name="x", command="true", comment=tag), geometry_key="g",
                    reason="asad:unconfirmed", intent_at=100.0)
    wf.jobs = [job]
    wf.stages[first].attempt = 1  # planned again (PLANNED), not yet submitted again
    wf.stages[first].state = StageState.PLANNED
    backend = _Found({42: JobStatus(job_id=42, state=JobState.PENDING, comment=tag, submit_time=150.0)})
    intents = Intents(_Recorder(), backend, "s")
    intents.track(wf, now=200.0)
    intents.reconcile([wf], 200.0, set())
    assert job.phase is JobPhase.LIVE and job.job_id == 42
    assert wf.stages[first].state is StageState.SUBMITTED and wf.stages[first].job_row == 5
    assert backend.cancelled == []


# -- issue 36, item 4: asad cancel during a submission burst ------------------------------------
class CancelDuringBurst:
    """The simulator; at the n-th sbatch another process (``asad cancel``) requests the cancel."""

    def __init__(self, sim, db_url: str, wf_id: int, at: int):  # noqa: ANN001
        self._sim, self.name, self.db_url, self.wf_id, self.at, self.submits = sim, sim.name, db_url, wf_id, at, 0

    def submit(self, req):  # noqa: ANN001, ANN201
        self.submits += 1
        if self.submits == self.at:
            other = Store(self.db_url)
            assert other.request_cancel(self.wf_id)
            other.close()
        return self._sim.submit(req)

    def __getattr__(self, item):  # noqa: ANN001, ANN204
        return getattr(self._sim, item)


def test_cancel_during_a_submission_burst_stops_it(db_url, tmp_path, monkeypatch):
    import asad.daemon.runner

    stages = "\n".join(f"  - {{name: s{i}, after: [], cpus: 1, mem: 100M, run: 'true', simulate: {{runtime: 60s}}}}"
                       for i in range(400))
    path = tmp_path / "burst.yaml"
    path.write_text(f"name: burst\ndefaults: {{time: 10m}}\nstages:\n{stages}\n")
    spec = load_workflow(path)
    monkeypatch.setattr(asad.daemon.runner, "CANCEL_LOOK_S", 0.0)  # look before every sbatch: a count, not a timing
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    wf = store.add_workflow(spec, sim.now(), strategy="per-stage")
    backend = CancelDuringBurst(sim, db_url, wf.id, at=20)
    runner = make_runner(Settings(), store, backend)
    runner.tick()
    assert backend.submits == 20, "submissions went on after the cancel"
    run_to_completion(runner, backend, [wf.id])
    assert store.workflow_rows([wf.id])[0].state == "CANCELLED"
    jobs = sim.find(f"asad:{store.store_id}:")
    assert len(jobs) == 20
    assert all(st.state is JobState.CANCELLED for st in jobs.values())
    (done,) = store.load_workflows([wf.id])
    assert sum(1 for j in done.jobs) == 20  # no record of a submission that never happened
    store.close()
