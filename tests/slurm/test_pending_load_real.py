"""The queue's pending load (issue 35, fourth stop) read from a real slurmctld with one all-users
``squeue``: jobs waiting for resources count, jobs held by a dependency or a future ``--begin``
and array tasks beyond the first are told apart as Slurm's own reasons say."""

from __future__ import annotations

import time

import pytest

from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState

from slurm_helpers import unique_tag, wait_until

pytestmark = [pytest.mark.slurm, pytest.mark.timeout(180)]


def _req(tag: str, cpus: int, **kw) -> JobRequest:
    return JobRequest(name=tag, comment=f"{tag}:c", command="sleep 120", cpus_per_task=cpus, time_limit_s=300,
                      mem_mb=100, output="/dev/null", **kw)


def test_pending_load_counts_only_jobs_that_compete(slurm, cluster):
    tag = unique_tag("load")
    cpn = cluster.cpus_per_node
    blockers = [slurm.submit(_req(f"{tag}-full{i}", cpn)) for i in range(cluster.nodes)]
    # Running before the rest go in: nodes an earlier test's cancelled jobs still held kept them
    # pending once (CI, 2026-11-27), and then they counted as competing load.
    wait_until(slurm, blockers, lambda st: all(j in st and st[j].state is JobState.RUNNING for j in blockers))
    waiting = [slurm.submit(_req(f"{tag}-wait{i}", cpn)) for i in range(2)]
    slurm.submit(_req(f"{tag}-dep", cpn, dependency=Dependency(DependencyType.AFTEROK, (blockers[0],))))
    slurm.submit(_req(f"{tag}-begin", cpn, begin=time.time() + 3600))
    slurm.submit(_req(f"{tag}-array", 1, array="0-2"))  # three 1-CPU tasks queued behind the full nodes
    deadline = time.time() + 60
    load = slurm.pending_load()
    while load.pressure("", 1) < 2 * cpn + 3 and time.time() < deadline:
        time.sleep(2)  # until slurmctld has given every job a reason
        load = slurm.pending_load()
    assert load.pressure("", cpn) == 2 * cpn  # the two node-wide jobs; held and future ones not
    assert load.pressure("", 1) == 2 * cpn + 3  # the array's tasks, one by one
    default = next(p.name for p in slurm.partitions() if p.default)
    assert load.pressure(default, cpn) == 2 * cpn and load.pressure("nosuchpart", 1) == 0
    assert waiting
