"""The simulator through the Backend protocol: states, accounting, dependencies, errors."""

from __future__ import annotations

import pytest

from asad.slurm.backend import (
    Backend,
    Dependency,
    DependencyType,
    JobRequest,
    JobState,
    SimTruth,
    SubmitRejected,
    UnknownJob,
)
from asad.slurm.sim import DEFAULT_START_TIME, WallClockSimulator, make_simulator


def req(name="job", runtime=600.0, cpus=1, mem=1000, limit=3600, peak=None, **kw) -> JobRequest:
    truth = kw.pop("truth", None) or SimTruth(runtime_s=runtime, peak_mem_mb=peak,
                                              cpu_efficiency=kw.pop("eff", 1.0),
                                              wait_for=tuple(kw.pop("wait_for", ())))
    nodes = kw.pop("nodes", 1)  # ``cpus`` is per node: one task of ``cpus`` CPUs on each node
    return JobRequest(name=name, command="true", nodes=nodes, ntasks=nodes, cpus_per_task=cpus,
                      mem_mb=mem, time_limit_s=limit, truth=truth, **kw)


@pytest.fixture
def sim():
    return make_simulator("small", load=0.0, seed=1)


def run_all(sim, horizon=30 * 86400):
    sim.run_until(sim.now() + horizon)


def test_is_a_backend_with_monday_epoch(sim):
    assert isinstance(sim, Backend)
    assert sim.name == "sim"
    assert sim.now() == DEFAULT_START_TIME
    import datetime
    assert datetime.datetime.fromtimestamp(DEFAULT_START_TIME, datetime.UTC).weekday() == 0
    [p] = sim.partitions()
    assert (p.name, p.nodes, p.cpus_per_node, p.default) == ("main", 4, 28, True)


def test_completed_with_usage(sim):
    jid = sim.submit(req(runtime=600, cpus=4, mem=2000, peak=1500, eff=0.5))
    assert isinstance(jid, int)
    assert sim.poll([jid])[jid].state is JobState.PENDING
    t = sim.run_until(sim.now() + 3600, stop_on=[jid])
    assert t == DEFAULT_START_TIME  # stopped when it started
    st = sim.poll([jid])[jid]
    assert st.state is JobState.RUNNING and st.alloc_cpus == 4 and st.wait_s == 0
    t = sim.run_until(sim.now() + 3600, stop_on=[jid])
    assert t == DEFAULT_START_TIME + 600
    st = sim.poll([jid])[jid]
    assert st.state is JobState.COMPLETED and st.exit_code == 0 and st.end_time == t
    u = sim.usage([jid])[jid]
    assert u.elapsed_s == 600 and u.peak_rss_mb == 1500 and u.total_cpu_s == 600 * 4 * 0.5
    assert u.req_mem_mb == 2000 and u.alloc_cpus == 4


def test_timeout_at_limit(sim):
    jid = sim.submit(req(runtime=5000, limit=3600))
    run_all(sim)
    st = sim.poll([jid])[jid]
    assert st.state is JobState.TIMEOUT
    assert st.end_time - st.start_time == 3600


def test_out_of_memory_at_time_to_failure_fraction(sim):
    jid = sim.submit(req(runtime=1000, mem=1000, peak=3000))
    run_all(sim)
    st = sim.poll([jid])[jid]
    assert st.state is JobState.OUT_OF_MEMORY
    assert st.end_time - st.start_time == pytest.approx(500)
    u = sim.usage([jid])[jid]
    assert u.peak_rss_mb == 1000  # the cgroup limit, like sacct's MaxRSS after an OOM kill


def test_oom_fraction_is_configurable():
    sim = make_simulator("small", load=0.0, oom_time_fraction=0.25)
    jid = sim.submit(req(runtime=1000, mem=1000, peak=3000))
    run_all(sim)
    st = sim.poll([jid])[jid]
    assert st.end_time - st.start_time == pytest.approx(250)


def test_cancel_pending_and_running(sim):
    big = sim.submit(req(runtime=10_000, cpus=28, limit=20_000, nodes=4, mem=100))
    waiting = sim.submit(req(runtime=10, cpus=1))
    sim.run_until(sim.now() + 100)
    assert sim.poll([big])[big].state is JobState.RUNNING
    assert sim.poll([waiting])[waiting].state is JobState.PENDING
    sim.cancel([big, waiting, 999_999])
    got = sim.poll([big, waiting])
    assert got[big].state is JobState.CANCELLED and got[big].end_time == sim.now()
    assert got[waiting].state is JobState.CANCELLED and got[waiting].start_time is None
    # the freed nodes are usable again
    after = sim.submit(req(runtime=10, cpus=28, nodes=4, mem=100))
    sim.run_until(sim.now() + 1)
    assert sim.poll([after])[after].state is JobState.RUNNING


def test_untruthed_job_runs_half_its_limit(sim):
    jid = sim.submit(JobRequest(name="plain", command="true", time_limit_s=1000))
    run_all(sim)
    st = sim.poll([jid])[jid]
    assert st.state is JobState.COMPLETED and st.end_time - st.start_time == 500
    assert sim.usage([jid])[jid].peak_rss_mb is None


def test_afterok_waits_and_never_satisfied(sim):
    first = sim.submit(req(runtime=100))
    ok = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTEROK, (first,))))
    assert sim.poll([ok])[ok].reason == "Dependency"
    run_all(sim)
    a, b = sim.poll([first, ok]).values()
    assert b.state is JobState.COMPLETED and b.start_time >= a.end_time
    assert b.eligible_time == a.end_time

    failing = sim.submit(req(runtime=100, peak=5000, mem=1000))  # OOM
    dep = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTEROK, (failing,))))
    anyd = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTERANY, (failing,))))
    notok = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTERNOTOK, (failing,))))
    run_all(sim)
    got = sim.poll([dep, anyd, notok])
    assert got[dep].state is JobState.PENDING and got[dep].reason == "DependencyNeverSatisfied"
    assert got[anyd].state is JobState.COMPLETED
    assert got[notok].state is JobState.COMPLETED
    # a dependency on an already-finished job resolves at submission
    late = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTEROK, (failing,))))
    assert sim.poll([late])[late].reason == "DependencyNeverSatisfied"
    late_ok = sim.submit(req(runtime=50, dependency=Dependency(DependencyType.AFTERNOTOK, (failing,))))
    run_all(sim)
    assert sim.poll([late_ok])[late_ok].state is JobState.COMPLETED


def test_after_with_offset_and_begin(sim):
    first = sim.submit(req(runtime=3000))
    after = sim.submit(req(runtime=10, dependency=Dependency(DependencyType.AFTER, (first,), 5)))
    begin = sim.submit(req(runtime=10, begin=sim.now() + 7200))
    assert sim.poll([begin])[begin].reason == "BeginTime"
    run_all(sim)
    got = sim.poll([first, after, begin])
    assert got[after].start_time == got[first].start_time + 300
    assert got[begin].start_time == DEFAULT_START_TIME + 7200


def test_barrier_idles_then_runs_and_counts_core_hours(sim):
    stage1 = sim.submit(req(runtime=1000))
    stage2 = sim.submit(req(runtime=500, cpus=2, wait_for=[stage1], limit=7200))
    run_all(sim)
    a, b = sim.poll([stage1, stage2]).values()
    assert b.state is JobState.COMPLETED
    assert b.start_time == a.start_time  # allocated at once, idle until stage1 ended
    assert b.end_time == a.end_time + 500
    u = sim.usage([stage2])[stage2]
    assert u.elapsed_s == 1500  # idle time is part of the allocation's core-hours
    assert u.total_cpu_s == 500 * 2


def test_barrier_fails_when_awaited_job_fails(sim):
    bad = sim.submit(req(runtime=1000, limit=100))  # TIMEOUT
    waiter = sim.submit(req(runtime=500, wait_for=[bad], limit=7200))
    run_all(sim)
    a, b = sim.poll([bad, waiter]).values()
    assert a.state is JobState.TIMEOUT
    assert b.state is JobState.FAILED and b.end_time == a.end_time and b.exit_code == 1
    # already failed before the waiter starts: fails at once
    waiter2 = sim.submit(req(runtime=500, wait_for=[bad]))
    run_all(sim)
    st = sim.poll([waiter2])[waiter2]
    assert st.state is JobState.FAILED and st.end_time == st.start_time


def test_barrier_times_out_when_waiting_too_long(sim):
    slow = sim.submit(req(runtime=5000, limit=6000))
    waiter = sim.submit(req(runtime=10, wait_for=[slow], limit=1000))
    run_all(sim)
    st = sim.poll([waiter])[waiter]
    # killed at slurmctld's first 30-second time-limit check at or after start + limit
    assert st.state is JobState.TIMEOUT and 1000 <= st.end_time - st.start_time < 1030


@pytest.mark.parametrize("kwargs, message", [
    (dict(partition="nope"), "Invalid partition name specified"),
    (dict(cpus=29), "Requested node configuration is not available"),
    (dict(mem=200_000), "Requested node configuration is not available"),
    (dict(nodes=5, cpus=5), "Requested node configuration is not available"),
    (dict(limit=8 * 86400), "Requested time limit is invalid"),
])
def test_bad_requests_get_slurms_words(sim, kwargs, message):
    with pytest.raises(SubmitRejected) as err:
        sim.submit(req(**kwargs))
    assert message in err.value.slurm_message
    assert err.value.slurm_message.startswith("sbatch: error: Batch job submission failed: ")


def test_dependency_on_unknown_job(sim):
    with pytest.raises(SubmitRejected) as err:
        sim.submit(req(dependency=Dependency(DependencyType.AFTEROK, (4242,))))
    assert "Job dependency problem" in err.value.slurm_message
    assert isinstance(err.value, UnknownJob)


def test_multi_partition_starts_where_it_can_first():
    sim = make_simulator("two-speed", load=0.0)
    fast_hog = sim.submit(req(runtime=5000, cpus=28, nodes=16, mem=1000, partition="fast",
                              limit=20000))
    either = sim.submit(req(runtime=1000, partition="fast,slow"))
    too_big_for_fast = sim.submit(req(runtime=1000, nodes=20, cpus=20, partition="fast,slow"))
    sim.run_until(sim.now() + 10)
    got = sim.poll([fast_hog, either, too_big_for_fast])
    assert got[fast_hog].partition == "fast"
    assert got[either].state is JobState.RUNNING and got[either].partition == "slow"
    assert got[too_big_for_fast].partition == "slow"
    # speed factor: the fast partition halves the true run time
    jid = sim.submit(req(runtime=1000, partition="fast", limit=9000))
    run_all(sim)
    st = sim.poll([jid])[jid]
    assert st.end_time - st.start_time == 500


def test_find_returns_own_jobs_only():
    sim = make_simulator("small", seed=3)  # default background load
    mine = sim.submit(req(name="asad-wf1-s1", comment="asad:wf1"))
    other = sim.submit(req(name="x", comment="asad:wf2"))
    found = sim.find("asad:wf1")
    assert set(found) == {mine}
    assert set(sim.find("asad")) == {mine, other}
    assert sim.find("bg") == {}  # background jobs are never returned
    assert sim.stats()["background_jobs_submitted"] > 0


def test_advance_and_next_event_time(sim):
    assert sim.next_event_time() is None and sim.advance() is None
    jid = sim.submit(req(runtime=100))
    assert sim.next_event_time() == sim.now()
    assert sim.advance() == DEFAULT_START_TIME
    assert sim.next_event_time() == DEFAULT_START_TIME + 100
    assert sim.advance() == DEFAULT_START_TIME + 100
    assert sim.poll([jid])[jid].state is JobState.COMPLETED


def test_estimate_start_sees_running_jobs(sim):
    hog = sim.submit(req(runtime=1000, cpus=28, nodes=4, mem=1000, limit=5000))
    sim.run_until(sim.now() + 1)
    assert sim.poll([hog])[hog].state is JobState.RUNNING
    est = sim.estimate_start(req(runtime=10))
    assert est == DEFAULT_START_TIME + 5000  # the planner assumes jobs run to their limit
    with pytest.raises(SubmitRejected):
        sim.estimate_start(req(partition="nope"))


def test_pending_reasons(sim):
    hog = sim.submit(req(runtime=1000, cpus=28, nodes=4, mem=1000, limit=5000))
    top = sim.submit(req(runtime=10, cpus=28, nodes=4, mem=1000))
    behind = sim.submit(req(runtime=10, cpus=28, nodes=4, mem=1000))
    sim.run_until(sim.now() + 60)
    got = sim.poll([hog, top, behind])
    assert got[top].reason == "Resources"
    assert got[behind].reason == "Priority"


def test_wallclock_mode_advances_with_speed(sim):
    wall = [100.0]
    ws = WallClockSimulator(sim, speed=60.0, wall_clock=lambda: wall[0])
    assert isinstance(ws, Backend)
    jid = ws.submit(req(runtime=600))
    wall[0] += 5  # 5 wall seconds = 300 virtual seconds
    assert ws.poll([jid])[jid].state is JobState.RUNNING
    assert ws.now() == DEFAULT_START_TIME + 300
    wall[0] += 6
    assert ws.poll([jid])[jid].state is JobState.COMPLETED


def test_unknown_preset_and_setting():
    with pytest.raises(ValueError, match="small"):
        make_simulator("nope")
    with pytest.raises(ValueError, match="unknown simulator settings"):
        make_simulator("small", bogus=1)
