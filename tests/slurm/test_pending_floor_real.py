"""The wait learner's pending floor on a real slurmctld (docs/asa.md, "The pending floor"): a
stage's job pending behind full nodes is seen by the runner's batched poll with Slurm's own
EligibleTime, and the learned wait of its class is floored by how long it has waited."""

from __future__ import annotations

import time

import pytest

from asad.common.config import Settings
from asad.core.learned import _stepped
from asad.daemon.wiring import make_runner
from asad.slurm.backend import JobRequest, JobState
from asad.spec.load import parse_workflow
from asad.store.repo import Store

from slurm_helpers import unique_tag, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(240)]


def test_a_pending_job_floors_the_learned_wait_of_its_class(slurm, cluster, tmp_path):
    tag = unique_tag("floor")
    cpn = cluster.cpus_per_node
    blockers = [slurm.submit(JobRequest(name=f"{tag}-full{i}", comment=f"{tag}:full", command="sleep 120",
                                        cpus_per_task=cpn, time_limit_s=300, mem_mb=100, output="/dev/null"))
                for i in range(cluster.nodes)]
    wait_until(slurm, blockers, lambda st: all(j in st and st[j].state is JobState.RUNNING for j in blockers))
    store = Store(f"sqlite:///{tmp_path / 'floor.db'}")
    runner = make_runner(Settings(db_url=f"sqlite:///{tmp_path / 'floor.db'}"), store, slurm)
    spec = parse_workflow(f"name: {tag}\nstrategy: per-stage\nstages:\n"
                          f"  - {{name: a, cpus: {cpn}, mem: 100M, time: 5m, run: 'true'}}\n")
    wf = store.add_workflow(spec, slurm.now())
    runner.load()
    runner.tick()  # submits the stage; it queues behind the full nodes
    job = runner.active[wf.id].jobs[0]
    learned = runner.ctx.learned
    for k in range(5):  # what was learned: this class's jobs start within a second
        learned.observe_wait(job.geometry_key, 1.0, at_s=slurm.now() - 600 + k)
    learned_alone = learned.estimate_wait(job.geometry_key)
    deadline = time.time() + 90
    while time.time() < deadline:
        time.sleep(2)
        runner.tick()
        if job.eligible_time is not None and slurm.now() - job.eligible_time > 15:
            break
    assert job.state is JobState.PENDING and job.eligible_time is not None, (job.state, job.reason)
    # the floor is the wait as at the last poll, rounded down to its step
    polled = learned._floor_waited[learned.floor_key(job.geometry_key)]
    assert _stepped(10.0) <= polled <= slurm.now() - job.eligible_time
    assert learned_alone < 5 <= polled * 0.99 <= learned.estimate_wait(job.geometry_key)
    assert learned.wait_quantiles(job.geometry_key, [0.5])[0] >= polled * 0.99
    store.close()
