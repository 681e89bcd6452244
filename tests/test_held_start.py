"""Issue 35, fourth stop: a job held by ``afterok`` has an expected start too. It becomes eligible
when the jobs it depends on end (known once they did, else their expected end) and is allocated its
learned wait later (asad/strategies/expected_start.py, held_start; Context.work_start_grid). Before,
the quantile rule saw no start for it, so on the real Slurm with limits the 4-core s2 behind the
afterok-held 28-core s1 led only once s1 ran, by less than the waits that came."""

from __future__ import annotations

import numpy as np
import pytest

from asad.core.model import StageState, WorkflowRun
from asad.slurm.backend import Dependency, DependencyType, JobState
from asad.strategies.auto import Auto, quantile_level
from asad.strategies.base import SubmitAt, SubmitNow
from asad.strategies.expected_start import GRID, UNSEEN, held_start, pending_start, unseen_share
from tests.pipelines import learn_runtimes, learn_waits, live_job, mark_submitted, new_run

PIPE = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 10m, run: 'true'}\n"
        "  - {name: b, cpus: 28, time: 10m, run: 'true', after: [a]}\n"
        "  - {name: c, cpus: CPUS, time: 20m, run: 'true', after: [b]}\n")


def test_a_held_job_is_allocated_its_whole_wait_after_its_dependencies_end():
    waits = list(np.linspace(100.0, 200.0, len(GRID)))
    now = 1000.0
    starts = held_start(np.array([now + 30.0]), waits, now)
    assert np.allclose(starts, now + 30.0 + np.asarray(waits), atol=3.0)  # re-read at GRID
    # a spread end and a spread wait add up (independent): the median of the sum
    starts = held_start(np.array([now + 20.0, now + 40.0]), waits, now)
    assert float(np.median(starts)) == pytest.approx(now + 30.0 + 150.0, abs=12.0)
    # with few waits seen, the mass beyond the largest is unseen, as for a pending job
    starts = held_start(np.array([now + 30.0]), waits, now, basis=1)
    assert np.mean(starts >= UNSEEN / 2) == pytest.approx(unseen_share(1), abs=0.02)


def test_once_its_dependencies_ended_a_held_job_is_a_pending_one_eligible_at_their_end():
    waits = list(np.linspace(100.0, 200.0, len(GRID)))
    now = 1000.0
    ended = np.array([now - 40.0])
    assert np.array_equal(held_start(ended, waits, now, basis=5), pending_start(now - 40.0, waits, now, basis=5))


@pytest.fixture
def ctx(limits_ctx):
    return limits_ctx


def _pipeline(ctx, now: float, *, c_cpus: int, b_waits: list[float], c_waits: list[float],
              a_state: StageState) -> WorkflowRun:
    """a (8 CPUs) ended 10 s ago or runs since 10 s ago; b (28 CPUs) pending in Slurm, submitted
    100 s ago with afterok on a; c not submitted. b's and c's geometries have learned the waits
    given, each stage a run time of 30 s."""
    wf = new_run(PIPE.replace("CPUS", str(c_cpus)))
    bkey, ckey = (ctx.geometry_key(ctx.request_for(wf, n)) for n in ("b", "c"))
    assert bkey != ckey
    learn_waits(ctx, [(bkey, b_waits), (ckey, c_waits)], first_s=now - 50_000, step_s=1000)
    learn_runtimes(ctx, wf, {"a": 30.0, "b": 30.0, "c": 30.0})
    ended = a_state is StageState.COMPLETED
    a = live_job(ctx, wf, "a", row=1, job_id=41, state=JobState.COMPLETED if ended else JobState.RUNNING,
                 submitted_at=now - 300, eligible_time=now - 300, start_time=now - 40 if ended else now - 10,
                 end_time=now - 10 if ended else None)
    b = live_job(ctx, wf, "b", row=2, job_id=42, state=JobState.PENDING, dep_ids=(41,), submitted_at=now - 100)
    assert b.request.dependency == Dependency(DependencyType.AFTEROK, (41,)) and b.eligible_time is None
    mark_submitted(wf, a, a_state)
    mark_submitted(wf, b)
    return wf


def test_a_successor_leads_an_afterok_held_job_whose_dependency_ended(ctx):
    """s1/s2 of the real-Slurm bench: b (28 cores) held by afterok on a, a ended 10 s ago; b's
    geometry has 4 waits (share 1/5 < c's tau 0.45), so c (4 cores) gets a lead from b's
    expected start (before: no plan until b ran)."""
    now = 1_000_000.0
    waits = [200.0, 205.0, 210.0, 215.0]
    wf = _pipeline(ctx, now, c_cpus=4, b_waits=waits, c_waits=waits, a_state=StageState.COMPLETED)
    assert unseen_share(ctx.learned.wait_quantile_basis(wf.jobs[1].geometry_key)) < quantile_level(0.3, 4)
    starts = ctx.work_start_grid(wf, "b", now)
    assert starts is not None and 180 <= float(np.median(starts)) - now <= 220  # 10 s waited of ~205
    plan = Auto().plan(wf, "c", now, ctx)
    assert isinstance(plan, SubmitAt | SubmitNow) and plan.est_wait_s >= 60 and "still pending" in plan.why
    assert 200 <= ctx.predicted_end(wf, "b", now) - now <= 260  # its median end: its wait included


def test_a_successor_leads_an_afterok_held_job_whose_dependency_still_runs(ctx):
    """a runs (30 s, 10 s in): b is eligible at a's expected end, ~20 s from now."""
    now = 1_000_000.0
    waits = [200.0, 205.0, 210.0, 215.0]
    wf = _pipeline(ctx, now, c_cpus=4, b_waits=waits, c_waits=waits, a_state=StageState.RUNNING)
    starts = ctx.work_start_grid(wf, "b", now)
    assert starts is not None and 210 <= float(np.median(starts)) - now <= 240
    plan = Auto().plan(wf, "c", now, ctx)
    assert isinstance(plan, SubmitAt | SubmitNow) and plan.est_wait_s >= 60


def test_a_large_successor_of_an_uncertain_held_job_still_waits(ctx):
    """c of 28 cores (tau 0.11) behind b whose geometry rests on few waits: a further wait beyond
    all of them has a chance above tau, so the rule still cannot price the barrier."""
    now = 1_000_000.0
    waits = [200.0, 205.0]
    wf = _pipeline(ctx, now, c_cpus=28, b_waits=waits, c_waits=waits, a_state=StageState.COMPLETED)
    assert unseen_share(ctx.learned.wait_quantile_basis(wf.jobs[1].geometry_key)) > quantile_level(0.3, 28)
    assert Auto().plan(wf, "c", now, ctx) is None


def test_a_held_job_whose_dependency_failed_has_no_expected_start(ctx):
    now = 1_000_000.0
    waits = [200.0, 205.0, 210.0, 215.0]
    wf = _pipeline(ctx, now, c_cpus=4, b_waits=waits, c_waits=waits, a_state=StageState.COMPLETED)
    wf.jobs[0].state = JobState.FAILED  # afterok never comes
    assert ctx.work_start_grid(wf, "b", now) is None
    assert Auto().plan(wf, "c", now, ctx) is None
