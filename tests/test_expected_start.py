"""Issue 35: the quantile rule plans a successor from its predecessor's *expected start* while that
predecessor is still pending (asad/strategies/expected_start.py, Context.work_start_grid)."""

from __future__ import annotations

import numpy as np
import pytest

from asad.core.model import WorkflowRun
from asad.slurm.backend import JobState
from asad.strategies.auto import Auto
from asad.strategies.base import SubmitAt, SubmitNow
from asad.strategies.expected_start import eligible_instant, pending_start, remaining_wait
from tests.pipelines import learn_runtimes, learn_waits, live_job, mark_submitted, new_run

PIPE = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 10m, run: 'true'}\n"
        "  - {name: b, cpus: 8, time: 10m, run: 'true', after: [a]}\n"
        "  - {name: c, cpus: 8, time: 10m, run: 'true', after: [b]}\n")


def test_a_pending_jobs_wait_is_what_is_left_of_the_learned_one():
    grid = [10.0, 50.0, 100.0, 200.0]
    assert list(remaining_wait(grid, 0.0)) == grid
    assert list(remaining_wait(grid, 60.0)) == [100.0, 200.0]  # it has outwaited the short ones
    assert list(remaining_wait(grid, 500.0)) == [500.0]  # outwaited them all: "now"
    starts = pending_start(eligible_at=1000.0, wait_grid=grid, now=1060.0)
    assert list(starts) == [1100.0, 1200.0]
    assert list(pending_start(1000.0, grid, now=1600.0)) == [1600.0]


def test_the_instant_is_the_cost_quantile_of_start_plus_run_minus_wait():
    # one start, one run time: start + run - the wait's tau quantile (as begin_offset said)
    waits = np.linspace(0.0, 100.0, 101)
    x = eligible_instant(np.array([500.0]), [40.0], waits, tau=0.25)
    assert x == pytest.approx(540.0 - np.quantile(waits, 0.25), abs=1e-6)
    # an uncertain start moves a cautious (small tau) instant later
    spread = eligible_instant(np.array([400.0, 500.0, 600.0]), [40.0], waits, tau=0.1)
    assert spread > eligible_instant(np.array([500.0]), [40.0], waits, tau=0.1)


@pytest.fixture
def ctx(limits_ctx):
    return limits_ctx


def _pipeline(ctx, now: float, *, waited_s: float) -> WorkflowRun:
    """Stage a pending in Slurm for ``waited_s``; b and c not submitted. Every geometry has learned
    waits of about 200 s, and each stage a run time of 30 s."""
    wf = new_run(PIPE)
    key = ctx.geometry_key(ctx.request_for(wf, "a"))
    learn_waits(ctx, [(key, [180.0 + 4 * i for i in range(12)])], first_s=now - 10_000)
    learn_runtimes(ctx, wf, {"a": 30.0, "b": 30.0, "c": 30.0}, times=3)
    a = live_job(ctx, wf, "a", row=1, job_id=41, state=JobState.PENDING, submitted_at=now - waited_s,
                 eligible_time=now - waited_s)
    mark_submitted(wf, a)
    return wf


def test_a_successor_becomes_eligible_before_its_pending_predecessor_starts(ctx):
    now = 1_000_000.0
    wf = _pipeline(ctx, now, waited_s=10.0)
    starts = ctx.work_start_grid(wf, "a", now)
    assert starts is not None and starts.min() >= now + 150  # a has ~190 s of its wait to go
    plan = Auto().plan(wf, "b", now, ctx)
    # Before issue 35 the rule returned None until a was seen running; the lead (~200 s) exceeds
    # a's 30-s run, so no instant after a's start could have given it. While a waits, its expected
    # start moves: the daemon holds the plan (SubmitAt) and makes it again at the instant.
    assert plan is not None and plan.est_wait_s >= 60 and "still pending" in plan.why
    t = now
    for _ in range(20):
        if isinstance(plan, SubmitNow):
            break
        assert plan.at > t and plan.at < np.median(ctx.work_start_grid(wf, "a", t))
        t = plan.at
        plan = Auto().plan(wf, "b", t, ctx)
    assert isinstance(plan, SubmitNow) and plan.dependency_on == () and plan.barrier_on == ("a",)
    eligible = plan.begin or t
    assert eligible < np.median(ctx.work_start_grid(wf, "a", t))  # before a is expected to start
    assert eligible - now < 120  # a's remaining wait (~190 s) minus its run (30 s) and b's wait, roughly


def test_the_successor_of_a_successor_plans_through_the_barrier(ctx):
    now = 1_000_000.0
    wf = _pipeline(ctx, now, waited_s=10.0)
    # b was submitted early without a dependency and is pending too: c plans from b's work start,
    # the later of b's allocation and a's end
    mark_submitted(wf, live_job(ctx, wf, "b", row=2, job_id=42, state=JobState.PENDING, submitted_at=now,
                                eligible_time=now))
    a_end = ctx.work_end_grid(wf, "a", now)
    b_start = ctx.work_start_grid(wf, "b", now)
    assert b_start is not None and np.median(b_start) >= np.median(a_end) - 1e-6
    assert isinstance(Auto().plan(wf, "c", now, ctx), SubmitAt | SubmitNow)


def test_a_predecessor_held_by_afterok_on_an_unknown_job_or_not_in_slurm_gives_no_plan(ctx):
    """A job held by afterok on a job asad does not know has no eligible instant to plan from
    until Slurm says it became eligible (issue 35, fourth stop: then it is a pending job like any
    other; a dependency asad knows is tests/test_held_start.py's)."""
    from dataclasses import replace

    from asad.slurm.backend import Dependency, DependencyType

    now = 1_000_000.0
    wf = _pipeline(ctx, now, waited_s=10.0)
    job = wf.jobs[0]
    job.request = replace(job.request, dependency=Dependency(DependencyType.AFTEROK, (7,)))
    eligible, job.eligible_time = job.eligible_time, None
    assert ctx.work_start_grid(wf, "a", now) is None and Auto().plan(wf, "b", now, ctx) is None
    job.eligible_time = eligible  # Slurm says it is eligible: its dependency ended
    assert ctx.work_start_grid(wf, "a", now) is not None
    job.request, job.job_id = replace(job.request, dependency=None), None
    assert Auto().plan(wf, "b", now, ctx) is None


def test_an_allocation_far_ahead_of_a_pending_predecessor_is_too_early(ctx):
    """Paper 4.6's cancel-and-resubmit counts a pending predecessor's learned wait still to come
    (before, its end was taken as its run time after the epoch: never too early)."""
    from asad.strategies.asa import too_early

    now = 1_000_000.0
    wf = _pipeline(ctx, now, waited_s=10.0)
    remaining = ctx.predicted_end(wf, "a", now) - now
    assert 180 <= remaining <= 260  # ~190 s of wait to come, then 30 s of work
    ctx.config.naive_resubmit_margin_s = 60.0
    assert too_early(wf, "b", now, ctx, lead_s=10.0)
    assert not too_early(wf, "b", now, ctx, lead_s=remaining)
