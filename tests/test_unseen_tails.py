"""Issue 35, third stop: a wait learned from few samples carries the mass those samples leave unseen
when the quantile rule prices a barrier (asad/strategies/expected_start.py, with_unseen_tails;
Learned.wait_quantile_basis). On the real Slurm with limits every pending predecessor ended 48-81 s
later than planned: its start rested on 1-4 waits, a distribution with no tail."""

from __future__ import annotations

import numpy as np
import pytest

from asad.core.model import WorkflowRun
from asad.slurm.backend import JobState
from asad.strategies.auto import Auto, quantile_level
from asad.strategies.base import SubmitAt, SubmitNow
from asad.strategies.expected_start import GRID, UNSEEN, remaining_wait, unseen_share, with_unseen_tails
from tests.pipelines import learn_runtimes, learn_waits, live_job, mark_submitted, new_run


def test_a_further_wait_passes_every_one_of_n_seen_with_chance_one_in_n_plus_one():
    assert unseen_share(0) == 1.0 and unseen_share(1) == 0.5 and unseen_share(9) == pytest.approx(0.1)


def test_one_wait_seen_leaves_half_the_remaining_wait_unseen():
    grid = [100.0] * len(GRID)  # a point: what the learner says after one wait
    rest = remaining_wait(grid, 10.0, basis=1)
    assert np.mean(rest == UNSEEN) == pytest.approx(0.5, abs=0.02)
    assert np.all(rest[rest < UNSEEN] == 100.0)
    # without a basis (a median, not a price) the learner's grid as before
    assert list(remaining_wait(grid, 10.0)) == grid


def test_a_job_that_outwaited_every_wait_seen_has_an_unseen_start():
    grid = list(np.linspace(40.0, 60.0, len(GRID)))
    assert np.all(remaining_wait(grid, 136.0, basis=4) == UNSEEN)  # before: taken to start "now"
    assert list(remaining_wait(grid, 136.0)) == [136.0]


def test_many_waits_seen_leave_the_grid_nearly_as_it_was():
    grid = np.linspace(40.0, 400.0, len(GRID))
    rest = remaining_wait(grid, 0.0, basis=1000)
    assert np.all(rest < UNSEEN) and np.allclose(rest, grid, rtol=0.01)


def test_the_bottom_gap_is_spread_from_zero_to_the_shortest_wait_seen():
    waits = with_unseen_tails([100.0] * len(GRID), 1, top=False, bottom=True)
    low = waits[np.asarray(GRID) < 0.5]
    assert low.min() < 5.0 and np.all(np.diff(low) > 0) and low.max() < 100.0
    assert np.all(waits[np.asarray(GRID) > 0.5] == 100.0)


PIPE = ("name: pipe\nstages:\n  - {name: a, cpus: 8, time: 10m, run: 'true'}\n"
        "  - {name: b, cpus: CPUS, time: 10m, run: 'true', after: [a]}\n")


@pytest.fixture
def ctx(limits_ctx):
    return limits_ctx


def _pipeline(ctx, now: float, *, b_cpus: int, a_waits: list[float], b_waits: list[float],
              waited_s: float = 10.0) -> WorkflowRun:
    """Stage a (8 CPUs) pending in Slurm for ``waited_s``, b not submitted; each geometry has learned
    the waits given (the default learner, median-backoff), each stage a run time of 30 s."""
    wf = new_run(PIPE.replace("CPUS", str(b_cpus)))
    akey, bkey = (ctx.geometry_key(ctx.request_for(wf, n)) for n in ("a", "b"))
    assert akey != bkey
    learn_waits(ctx, [(akey, a_waits), (bkey, b_waits)], first_s=now - 50_000, step_s=1000)
    learn_runtimes(ctx, wf, {"a": 30.0, "b": 30.0})
    a = live_job(ctx, wf, "a", row=1, job_id=41, state=JobState.PENDING, submitted_at=now - waited_s,
                 eligible_time=now - waited_s)
    mark_submitted(wf, a)
    return wf


def test_the_learner_says_how_many_samples_its_spread_rests_on(ctx):
    now = 1_000_000.0
    wf = _pipeline(ctx, now, b_cpus=28, a_waits=[120.0], b_waits=[110.0])
    akey = wf.jobs[0].geometry_key
    # one wait per key, two in the pool: the spread is read from the two at the coarser level
    assert ctx.learned.wait_quantile_basis(akey) == 2
    wf = _pipeline(ctx, now, b_cpus=28, a_waits=[130.0, 140.0, 150.0], b_waits=[100.0, 105.0, 110.0])
    assert ctx.learned.wait_quantile_basis(akey) == 4  # a's own waits, 1 + 3


def test_a_wait_of_another_key_that_changes_this_keys_basis_makes_its_decisions_stale(ctx):
    """In the pool a key's spread may be read at a level it shares with its neighbours, so a
    neighbour's wait can change the basis a decision priced without moving anything else it asked:
    the runner redoes a decision only when a version of what it consulted grew."""
    from asad.core.learned import WAIT_COUNT, WAIT_KIND

    now = 1_000_000.0
    wf = _pipeline(ctx, now, b_cpus=28, a_waits=[120.0], b_waits=[110.0])
    akey, bkey = wf.jobs[0].geometry_key, ctx.geometry_key(ctx.request_for(wf, "b"))
    learned = ctx.learned
    learned.consulted = set()
    before = learned.wait_quantile_basis(akey)
    consulted, learned.consulted = learned.consulted, None
    seen = {key: learned.versions.get(key, 0) for key in consulted}
    assert (WAIT_KIND, akey) in seen and (WAIT_COUNT, akey) in seen
    learned.estimate_wait(akey)  # a's own answer, which b's waits do not move
    est = learned.estimate_wait(akey)
    learned.observe_wait(bkey, 112.0, at_s=now - 10)
    assert learned.estimate_wait(akey) == est
    assert learned.wait_quantile_basis(akey) != before  # read from the level a shares with b
    assert any(learned.versions.get(key, 0) != version for key, version in seen.items())


def test_a_large_stage_waits_for_a_pending_predecessor_learned_from_few_waits(ctx):
    """A 28-core b (tau 0.11) behind a pending a whose geometry has 2 waits: a further wait beyond
    both has chance 1/3 > 0.11, so the rule cannot price the barrier and waits for a to start
    (before: a SubmitAt ~100 s ahead, from a start that was a point)."""
    now = 1_000_000.0
    assert quantile_level(0.3, 28) < unseen_share(2)
    wf = _pipeline(ctx, now, b_cpus=28, a_waits=[200.0, 205.0], b_waits=[200.0, 205.0])
    assert Auto().plan(wf, "b", now, ctx) is None
    # the learner's median is unchanged: a is still expected to end ~220 s from now
    assert 180 <= ctx.predicted_end(wf, "a", now) - now <= 260


def test_a_large_stage_leads_a_pending_predecessor_once_enough_waits_are_seen(ctx):
    now = 1_000_000.0
    waits = [196.0 + i for i in range(12)]
    wf = _pipeline(ctx, now, b_cpus=28, a_waits=waits, b_waits=waits)
    plan = Auto().plan(wf, "b", now, ctx)
    assert isinstance(plan, SubmitAt | SubmitNow) and plan.est_wait_s >= 60 and "still pending" in plan.why


def test_a_small_stage_leads_a_pending_predecessor_after_few_waits(ctx):
    """A 2-core b (tau 0.63): two waits seen leave 1/3 unseen, under 0.63: it may lead."""
    now = 1_000_000.0
    assert unseen_share(2) < quantile_level(0.3, 2)
    wf = _pipeline(ctx, now, b_cpus=2, a_waits=[200.0, 205.0], b_waits=[200.0, 205.0])
    plan = Auto().plan(wf, "b", now, ctx)
    assert isinstance(plan, SubmitAt | SubmitNow) and plan.est_wait_s >= 60


def test_a_predecessor_that_outwaited_every_wait_seen_stops_the_lead(ctx):
    """Run 2 of the second stop: s0 waited 136 s against 41 s learned; its successor was planned as
    if s0 started "now". With every seen wait outwaited its start is unseen: no lead, even for a
    2-core stage that led the moment before."""
    now = 1_000_000.0
    wf = _pipeline(ctx, now, b_cpus=2, a_waits=[40.0, 41.0, 42.0], b_waits=[100.0, 101.0, 102.0],
                   waited_s=136.0)
    assert Auto().plan(wf, "b", now, ctx) is None
    wf = _pipeline(ctx, now, b_cpus=2, a_waits=[140.0, 141.0, 142.0], b_waits=[100.0, 101.0, 102.0],
                   waited_s=10.0)
    assert isinstance(Auto().plan(wf, "b", now, ctx), SubmitAt | SubmitNow)
