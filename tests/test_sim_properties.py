"""Property tests over random job streams: the invariants a Slurm must never break."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asad.slurm.backend import Dependency, DependencyType, JobRequest, JobState, SimTruth
from asad.slurm.sim import make_simulator
from asad.slurm.sim.jobs import WAIT_NEVER

DEP_TYPES = list(DependencyType)

job_spec = st.fixed_dictionaries({
    "delay": st.integers(0, 1800),
    "nodes": st.integers(1, 3),
    "cpus": st.integers(1, 28),
    "mem": st.integers(100, 128000),
    "limit": st.integers(60, 20000),
    "runtime": st.integers(0, 25000),
    "peak": st.one_of(st.none(), st.integers(50, 200000)),
    "dep": st.one_of(st.none(), st.tuples(st.sampled_from(DEP_TYPES), st.integers(0, 1000),
                                          st.integers(0, 30))),
    "begin": st.one_of(st.none(), st.integers(0, 7200)),
})

SETTINGS = settings(max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _request(spec, ids, now):
    dep = None
    if spec["dep"] is not None and ids:
        dtype, which, offset = spec["dep"]
        dep = Dependency(dtype, (ids[which % len(ids)],),
                         offset if dtype is DependencyType.AFTER else 0)
    return JobRequest(
        name="p", command="true", nodes=spec["nodes"], ntasks=spec["nodes"],
        cpus_per_task=spec["cpus"], mem_mb=spec["mem"], time_limit_s=spec["limit"],
        dependency=dep, begin=None if spec["begin"] is None else now + spec["begin"],
        truth=SimTruth(runtime_s=spec["runtime"], peak_mem_mb=spec["peak"]))


def _play(sim, specs, check_every_step=True):
    ids, reqs = [], {}
    for spec in specs:
        sim.run_until(sim.now() + spec["delay"])
        if check_every_step:
            sim.check_invariants()
        req = _request(spec, ids, sim.now())
        jid = sim.submit(req)
        ids.append(jid)
        reqs[jid] = req
    while sim.next_event_time() is not None:
        sim.advance()
        if check_every_step:
            sim.check_invariants()
    return ids, reqs


@SETTINGS
@given(st.lists(job_spec, min_size=1, max_size=25), st.sampled_from(["fifo", "multifactor"]),
       st.integers(1, 3), st.sampled_from(["slurm", "easy"]))
def test_never_overcommits_and_never_starts_early(specs, priority, k, backfill):
    sim = make_simulator("small", load=0.0, priority=priority, bf_reservations=k, backfill=backfill)
    ids, reqs = _play(sim, specs)
    got = sim.poll(ids)
    for jid, status in got.items():
        req = reqs[jid]
        if status.start_time is None:
            # only a never-satisfiable dependency may leave a job unstarted, or (as in Slurm,
            # reason "Dependency") a dependency on a job that is itself stuck that way
            if status.reason == "Dependency":
                assert got[req.dependency.job_ids[0]].start_time is None
            else:
                assert sim.jobs[jid].wait_reason == WAIT_NEVER, status
                assert status.reason == "DependencyNeverSatisfied"
            continue
        assert status.state.is_final
        assert status.start_time >= status.submit_time
        assert status.start_time >= status.eligible_time
        if req.begin is not None:
            assert status.start_time >= req.begin
        # killed at the first 30-second time-limit check at or after the limit
        assert status.end_time - status.start_time < req.time_limit_s + sim.config.time_limit_check_s
        dep = req.dependency
        if dep is not None:
            target = got[dep.job_ids[0]]
            if dep.type is DependencyType.AFTER:
                assert target.start_time is not None or target.state is JobState.CANCELLED
                if target.start_time is not None:
                    assert status.start_time >= target.start_time + dep.offset_min * 60
            else:
                assert target.end_time is not None and status.start_time >= target.end_time
                if dep.type is DependencyType.AFTEROK:
                    assert target.state is JobState.COMPLETED
                if dep.type is DependencyType.AFTERNOTOK:
                    assert target.state is not JobState.COMPLETED


@SETTINGS
@given(st.lists(job_spec, min_size=2, max_size=30))
def test_easy_backfill_never_delays_the_reserved_top_job(specs):
    # everything submitted at once, no dependencies, every job ending within its limit (a job
    # that runs into its limit is killed only at the next 30-second check): nothing of higher
    # priority arrives later, so the top job's reservation, once given, may only move earlier.
    # (In the Slurm model this holds for the top job only too: the main pass does not know the
    # backfill plans and may start a higher job on nodes a lower plan counted on, as slurmctld's
    # does; that every plan is protected from lower jobs is checked by
    # test_slurm_backfill_protects_every_planned_start_not_only_the_first.)
    sim = make_simulator("small", load=0.0, priority="fifo", backfill="easy")
    slack = 1e-6
    ids = [sim.submit(_request(dict(s, dep=None, begin=None, runtime=min(s["runtime"], s["limit"] - 1)), [],
                               sim.now())) for s in specs]
    while sim.next_event_time() is not None:
        sim.advance()
    for jid in ids:
        job = sim.jobs[jid]
        assert job.start_time is not None
        if job.res_time_min is not None:
            assert job.start_time <= job.res_time_min + slack, (jid, job.start_time, job.res_time_min)


def _schedule(seed, days=2.0):
    sim = make_simulator("small", seed=seed)  # default background load
    sim.run_until(sim.now() + days * 86400)
    return [(j.job_id, j.start_time, j.end_time, j.state.value) for j in sim.jobs.values()]


@settings(max_examples=5, deadline=None)
@given(st.integers(0, 2**31 - 1))
def test_same_seed_same_schedule(seed):
    first = _schedule(seed)
    assert first == _schedule(seed)
    # not a trivial schedule: 31 seeds gave 80-116 jobs in two days, and seed 1950 (drawn once by
    # hypothesis, and failing the old floor of 50) gave 47
    assert len(first) > 30
    assert first != _schedule(seed + 1)


def test_big_preset_under_load_keeps_books_straight():
    # hpc2n at 0.9 for two days: ~10,000 background jobs through the fast paths
    sim = make_simulator("hpc2n", load=0.9, seed=11, warmup_s=0)
    probe = sim.submit(JobRequest(name="probe", command="x", nodes=3, ntasks=3, cpus_per_task=28,
                                  time_limit_s=7200, truth=SimTruth(runtime_s=3600)))
    sim.run_until(sim.now() + 2 * 86400)
    sim.check_invariants()
    jobs = list(sim.jobs.values())
    assert len(jobs) > 8000
    for job in jobs:
        if job.start_time is not None:
            assert job.start_time >= job.eligible_time >= job.submit_time
            end = job.end_time if job.end_time is not None else sim.now()
            assert end - job.start_time <= job.time_limit_s + 1e-6
    assert sim.poll([probe])[probe].state is JobState.COMPLETED
    assert sim.stats()["backfill_starts"] > 1000
