"""The engine's wait learner takes the pending floor the replay bench gives ``median-backoff``:
how long asad's own oldest pending job of a class has waited (docs/asa.md, "The pending floor").
Before this the daemon's default learner was the unfloored one, the bench's the floored one."""

from __future__ import annotations

import math

from asad.common.config import Settings
from asad.core.learned import FLOOR_STEP_LOG10, WAIT_KIND, Learned, _stepped
from asad.daemon.wiring import make_runner
from asad.learn.geometry import geometry_key
from asad.slurm.backend import JobState
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES

KEY = geometry_key(cluster="c", partition="p", nodes=1, cpus=4, time_limit_s=3000)
SIBLING = geometry_key(cluster="c", partition="p", nodes=1, cpus=8, time_limit_s=3000)  # same floor class
OTHER = geometry_key(cluster="c", partition="q", nodes=1, cpus=4, time_limit_s=3000)  # another partition


def _learned(kind: str = "median-backoff") -> Learned:
    learned = Learned(lambda kind, key: None, kind, predictor_params={"min_residuals": 3})
    for key in (KEY, SIBLING, OTHER):
        for t, wait in enumerate([100.0, 120.0, 150.0, 90.0, 110.0]):
            learned.observe_wait(key, wait, at_s=10_000.0 * (t + 1), told=learned.wait_told(key))
    return learned


def test_stepped_waits_round_down_to_the_floor_step():
    for waited in (0.0, 1.0, 59.0, 3600.0, 86_400.0):
        stepped = _stepped(waited)
        assert stepped <= waited + 1e-6
        assert math.log10(1 + waited) - math.log10(1 + stepped) < FLOOR_STEP_LOG10 + 1e-9
    assert _stepped(3600.0) == _stepped(3601.0)  # the clock's seconds move nothing inside a step


def test_a_pending_job_that_waited_longer_raises_its_class_and_only_its_class():
    learned = _learned()
    before = {key: learned.wait_quantiles(key, [0.5, 0.9]) for key in (KEY, SIBLING, OTHER)}
    estimate = learned.estimate_wait(KEY)
    assert before[KEY][0] < 200 and estimate < 200
    versions = dict(learned.versions)
    learned.note_pending(50_000.0, [(KEY, 50_000.0 - 7_200.0)])  # waiting two hours already
    floor = _stepped(7_200.0)
    for key in (KEY, SIBLING):
        now = learned.wait_quantiles(key, [0.5, 0.9])
        assert now[0] >= floor * 0.99 and now[1] >= now[0]
        assert learned.versions[(WAIT_KIND, key)] > versions.get((WAIT_KIND, key), 0)
    assert learned.estimate_wait(KEY) >= floor * 0.99
    assert learned.wait_quantiles(OTHER, [0.5, 0.9]) == before[OTHER]
    assert learned.versions.get((WAIT_KIND, OTHER), 0) == versions.get((WAIT_KIND, OTHER), 0)
    told = learned.wait_told(KEY)
    assert told[1].endswith(":p")  # floored answers earn quantiles of their own, as in the bench

    # the same poll again, and a later poll inside the same step: nothing to decide again
    versions = dict(learned.versions)
    learned.note_pending(50_000.0, [(KEY, 50_000.0 - 7_200.0)])
    learned.note_pending(50_010.0, [(KEY, 50_000.0 - 7_200.0)])
    assert learned.versions == versions

    # the job started: the floor goes, the learned answer is back
    learned.note_pending(51_000.0, [])
    assert learned.wait_quantiles(KEY, [0.5, 0.9]) == before[KEY]
    assert learned.versions[(WAIT_KIND, KEY)] > versions[(WAIT_KIND, KEY)]
    assert not learned.wait_told(KEY)[1].endswith(":p")


def test_a_floor_below_the_learned_wait_changes_nothing():
    learned = _learned()
    before = learned.wait_quantiles(KEY, [0.1, 0.5, 0.9])
    versions = dict(learned.versions)
    learned.note_pending(50_000.0, [(KEY, 50_000.0 - 5.0), (SIBLING, 50_000.0 - 20.0)])
    assert learned.wait_quantiles(KEY, [0.1, 0.5, 0.9]) == before
    assert learned.versions == versions
    learned.note_pending(50_000.0, [(KEY, 60_000.0)])  # eligible later (a --begin): not waiting yet
    assert learned.wait_quantiles(KEY, [0.1, 0.5, 0.9]) == before


def test_a_learner_without_a_floor_ignores_pending_jobs():
    learned = _learned("experts")  # the pool without a pending floor
    before = learned.wait_quantiles(KEY, [0.5])
    learned.note_pending(50_000.0, [(KEY, 0.0)])
    assert learned.wait_quantiles(KEY, [0.5]) == before


def test_the_runner_hands_the_learner_its_pending_jobs(tmp_path):
    # a loaded small cluster: the first stage's job waits in the queue for a while
    sim = make_simulator("small", load=1.2, seed=5)
    store = Store(f"sqlite:///{tmp_path / 's.db'}")
    runner = make_runner(Settings(seed=1), store, sim)
    spec = load_workflow(EXAMPLES / "montage.yaml")
    store.add_workflow(spec, sim.now(), strategy="per-stage", mode="dependency")
    runner.load()
    seen = []
    for _ in range(60):
        runner.tick()
        jobs = [j for wf in runner.active.values() for j in wf.jobs
                if j.state is JobState.PENDING and j.eligible_time is not None]
        if jobs:
            job = min(jobs, key=lambda j: j.eligible_time)
            floor_key = runner.ctx.learned._pool.floor_key(job.geometry_key)
            waited = runner.ctx.learned._floor_waited.get(floor_key)
            seen.append((waited, _stepped(sim.now() - job.eligible_time)))
        sim.run_until(sim.now() + 120)
    store.close()
    assert seen, "no job of the workflow was ever pending: the test's cluster is not loaded enough"
    assert all(waited == expected for waited, expected in seen)
    assert any(expected > 0 for _, expected in seen)


def test_only_jobs_in_slurms_queue_count_not_held_ones():
    from asad.core.model import JobPhase, JobRecord
    from asad.slurm.backend import JobRequest

    def job(reason: str, eligible: float | None = 100.0, state: JobState = JobState.PENDING) -> JobRecord:
        return JobRecord(row_id=None, workflow_id=1, stage="a", attempt=1, tag="t", phase=JobPhase.LIVE,
                         request=JobRequest(name="a", command="true"), geometry_key=KEY, state=state,
                         reason=reason, eligible_time=eligible)

    for reason in ("Priority", "Resources", "QOSMaxJobsPerUserLimit", "AssocGrpCpuLimit", "None"):
        assert job(reason).queued, reason
    for reason in ("JobHeldUser", "JobHeldAdmin", "Dependency", "BeginTime", "DependencyNeverSatisfied"):
        assert not job(reason).queued, reason
    assert not job("Priority", eligible=None).queued
    assert not job("None", state=JobState.RUNNING).queued


def test_predict_tells_the_floor_the_daemon_would_use(tmp_path):
    import time

    from asad.cli.commands_view import _note_own_pending
    from asad.core.model import JobPhase, JobRecord
    from asad.slurm.backend import JobRequest
    from asad.spec.load import parse_workflow

    store = Store(f"sqlite:///{tmp_path / 'p.db'}")
    spec = parse_workflow("name: one\nstages:\n  - {name: a, cpus: 4, time: 50m, run: 'true'}\n")
    wf = store.add_workflow(spec, time.time(), strategy="per-stage")
    now = time.time()
    jobs = (("real", KEY, "Priority", 7_200.0), ("simulated", "cluster=sim|" + KEY.split("|", 1)[1], "Priority", 9e4),
            ("held", KEY, "JobHeldUser", 9e4))  # a held job waits for its owner, not the queue
    for tag, key, reason, waited in jobs:
        store.insert_job(JobRecord(row_id=None, workflow_id=wf.id, stage="a", attempt=1, tag=tag, phase=JobPhase.LIVE,
                                   request=JobRequest(name="a", command="true"), geometry_key=key, job_id=tag,
                                   state=JobState.PENDING, reason=reason, eligible_time=now - waited))
    store.commit()
    learned = _learned()
    assert learned.estimate_wait(SIBLING) < 200
    waited = _note_own_pending(store, learned, SIBLING)
    assert waited is not None and 7_200.0 <= waited < 7_300.0
    assert learned.estimate_wait(SIBLING) >= _stepped(7_200.0) * 0.99
    assert _note_own_pending(store, _learned(), OTHER) is None  # another class: no floor
    store.close()


def test_explain_says_when_the_floor_raised_the_wait():
    learned = _learned()
    assert learned.wait_source(KEY) == ""  # median-backoff has no weights to name
    learned.note_pending(50_000.0, [(KEY, 50_000.0 - 7_200.0)])
    said = learned.wait_source(SIBLING)
    assert "raised by the pending floor" in said and f"{_stepped(7_200.0):.0f} s" in said
    learned.note_pending(50_000.0, [(KEY, 50_000.0 - 5.0)])  # below the learned wait: not named
    assert learned.wait_source(KEY) == ""
    fresh = Learned(lambda kind, key: None, "median-backoff")
    fresh.note_pending(50_000.0, [(KEY, 0.0)])
    assert fresh.wait_source(KEY) == ""  # nothing learned: nothing to raise


def test_learners_tells_the_floored_answer_predict_tells(tmp_path):
    import json
    import os
    import subprocess
    import sys
    import time

    from asad.core.model import JobPhase, JobRecord
    from asad.slurm.backend import JobRequest
    from asad.spec.load import parse_workflow

    db = f"sqlite:///{tmp_path / 'l.db'}"
    store = Store(db)
    learned = _learned()
    for kind, key, state, n in learned.drain_dirty():
        store.save_learner(kind, key, state, n, 1.0)
    spec = parse_workflow("name: one\nstages:\n  - {name: a, cpus: 4, time: 50m, run: 'true'}\n")
    wf = store.add_workflow(spec, time.time(), strategy="per-stage")
    store.insert_job(JobRecord(row_id=None, workflow_id=wf.id, stage="a", attempt=1, tag="t", phase=JobPhase.LIVE,
                               request=JobRequest(name="a", command="true"), geometry_key=KEY, job_id=1,
                               state=JobState.PENDING, eligible_time=time.time() - 7_200.0))
    store.commit()
    store.close()

    def asad(*args: str) -> dict | list:
        out = subprocess.run([sys.executable, "-m", "asad", *args, "--db", db, "--json"], capture_output=True,
                             text=True, check=True, env={**os.environ, "ASAD_PREDICTOR": "median-backoff"})
        return json.loads(out.stdout)

    said = asad("predict", "--cpus", "4", "--time", "50m", "--partition", "p", "--cluster", "c")
    assert said["key"] == KEY and said["pending_floor_s"] >= 7_200.0
    assert said["estimate_s"] >= _stepped(7_200.0) * 0.99
    listed = {it["key"]: it for it in asad("learners")}[KEY]
    assert listed["estimate_s"] == said["estimate_s"]
