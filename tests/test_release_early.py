"""Issue 35, third stop: under the quantile rule an allocation that arrives far ahead of its
predecessors' end is released and the stage planned again with a lead of at most the wait it just
took (asad/strategies/release.py)."""

from __future__ import annotations

import pytest

from asad.core.model import JobRecord, StageState, WorkflowRun
from asad.slurm.backend import JobState
from asad.strategies.auto import Auto
from asad.strategies.base import SubmitNow
from asad.strategies.release import MAX_RELEASES, lead_cap, release_early
from tests.pipelines import learn_runtimes, learn_waits, live_job, new_run

PIPE = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 30m, run: 'true', simulate: {runtime: 600s}}\n"
        "  - {name: b, cpus: 8, time: 10m, run: 'true', after: [a], simulate: {runtime: 60s}}\n")
NOW = 1_000_000.0


@pytest.fixture
def ctx(limits_ctx):
    return limits_ctx


def _learn(ctx, wf: WorkflowRun, waits=(300.0, 320.0, 340.0, 360.0)) -> str:
    """b's geometry (a's too) has learned waits of 300-360 s; a runs 600 s, b 60 s."""
    key = ctx.geometry_key(ctx.request_for(wf, "b"))
    learn_waits(ctx, [(key, waits * 3)], first_s=NOW - 10_000)
    learn_runtimes(ctx, wf, {"a": 600.0, "b": 60.0}, times=3)
    return key


def _wf(ctx, *, a_started_ago: float) -> WorkflowRun:
    wf = new_run(PIPE)
    a = wf.stages["a"]
    a.state, a.start_time, a.attempt = StageState.RUNNING, NOW - a_started_ago, 1
    return wf


def _b_job(ctx, wf: WorkflowRun, row: int, *, eligible: float, start: float | None,
           released: bool = False) -> JobRecord:
    return live_job(ctx, wf, "b", row=row, job_id=40 + row, attempt=row,
                    state=JobState.CANCELLED if released else JobState.RUNNING, submitted_at=eligible,
                    eligible_time=eligible, start_time=start, cancelled_by_asad=released)


def test_an_allocation_after_a_short_wait_far_ahead_of_the_end_is_released(ctx):
    wf = _wf(ctx, a_started_ago=100.0)  # a ends in ~500 s
    _learn(ctx, wf)
    job = _b_job(ctx, wf, 1, eligible=NOW - 30.0, start=NOW)
    release, why = release_early(wf, "b", job, NOW, ctx)
    assert release and "after a wait of 30 s" in why and "at most 30 s" in why
    # the same allocation close to a's end (spare under the margin) is held
    near = _wf(ctx, a_started_ago=450.0)  # a ends in ~150 s: 120 s spare after the 30-s wait
    assert not release_early(near, "b", _b_job(ctx, near, 1, eligible=NOW - 30.0, start=NOW), NOW, ctx)[0]
    # a long wait just taken: the idle saved is not worth taking such a wait again
    slow = _wf(ctx, a_started_ago=100.0)
    ctx.config.idle_price = 0.0001
    assert not release_early(slow, "b", _b_job(ctx, slow, 1, eligible=NOW - 300.0, start=NOW), NOW, ctx)[0]


def test_releases_stop_after_the_cap_and_never_touch_a_shared_job(ctx):
    wf = _wf(ctx, a_started_ago=100.0)
    _learn(ctx, wf)
    for i in range(MAX_RELEASES):
        _b_job(ctx, wf, 10 + i, eligible=NOW - 200.0 - i, start=NOW - 190.0 - i, released=True)
    job = _b_job(ctx, wf, 1, eligible=NOW - 30.0, start=NOW)
    assert not release_early(wf, "b", job, NOW, ctx)[0]
    fresh = _wf(ctx, a_started_ago=100.0)
    shared = _b_job(ctx, fresh, 1, eligible=NOW - 30.0, start=NOW)
    shared.rides = ["c"]
    assert not release_early(fresh, "b", shared, NOW, ctx)[0]


def test_a_released_allocations_wait_caps_the_next_lead(ctx):
    wf = _wf(ctx, a_started_ago=100.0)
    _learn(ctx, wf)
    plan = Auto().plan(wf, "b", NOW, ctx)
    # the learned waits (300-360 s) lead by about 300 s: submitted without dependency, at a barrier
    assert isinstance(plan, SubmitNow) and plan.barrier_on == ("a",) and plan.est_wait_s > 250
    _b_job(ctx, wf, 1, eligible=NOW - 40.0, start=NOW - 10.0, released=True)  # allocated after 30 s
    assert lead_cap(wf, "b") == pytest.approx(30.0)
    capped = Auto().plan(wf, "b", NOW, ctx)
    # a 30-s lead wins nothing: afterok, which starts b the moment a ends, idling nothing
    assert capped.dependency_on == ("a",) and capped.barrier_on == () and "released as too early" in capped.why
    wf.jobs[-1].eligible_time = NOW - 100.0  # a 90-s wait: a lead of 90 s, at the barrier
    later = Auto().plan(wf, "b", NOW, ctx)
    assert later.barrier_on == ("a",) and later.est_wait_s == pytest.approx(90.0)
    assert "lead capped at the 90-s wait" in later.why


def test_on_the_simulator_an_early_allocation_is_released_and_the_barrier_idles_less(db_url):
    """An idle cluster after a congested spell: the learned waits (300-360 s) lead b by ~300 s, the
    allocation comes at once and would idle 8 CPUs for ~300 s at a's barrier. Released, b goes
    with afterok and starts as a ends."""
    from asad.common.config import Settings
    from asad.daemon.wiring import make_runner, run_to_completion
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    store = Store(db_url)
    try:
        sim = make_simulator("small", load=0.0, seed=1, priority="multifactor", accounting_enforce_limits=True)
        runner = make_runner(Settings(), store, sim)
        spec = parse_workflow(PIPE)
        wf_row = store.add_workflow(spec, sim.now(), strategy="auto", mode="dependency")
        runner.load()
        _learn(runner.ctx, _wf(runner.ctx, a_started_ago=0.0))
        run_to_completion(runner, sim, [wf_row.id], poll_interval_s=Settings().poll_interval_s)
        wf = store.load_workflows(active_only=False)[-1]
    finally:
        store.close()
    b_jobs = [j for j in wf.jobs if j.stage == "b"]
    assert wf.stages["b"].state is StageState.COMPLETED
    released = [j for j in b_jobs if j.cancelled_by_asad]
    assert len(released) == 1 and released[0].start_time is not None
    a_end = wf.stages["a"].end_time
    final = b_jobs[-1]
    # the released allocation held its CPUs only until the daemon saw it (not the ~300 s of the lead)
    assert released[0].end_time - released[0].start_time < 60
    assert final.request.dependency is not None and final.start_time >= a_end - 1e-6
    assert final.start_time - a_end < 60  # afterok: b starts about as a ends
