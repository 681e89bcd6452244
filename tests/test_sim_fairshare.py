"""Fair-share (Fair Tree) in the simulator, against values worked out by hand from Slurm 22.05's
``fair_tree.c`` and ``priority_multifactor.c``."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.backend import JobRequest, SimTruth
from asad.slurm.priority_rules import rules_of
from asad.slurm.sim import make_simulator, simulator_config
from asad.slurm.sim.fairshare import FairTree, fair_tree_factors


def _factors(tree: dict[str, dict[str, float]], shares: dict[str, float] | None = None) -> dict[str, float]:
    """Fair Tree factors of {account: {user: usage}} (root usage = the sum)."""
    shares = shares or {}
    accounts = list(tree)
    users, acct_of, usage = [], [], []
    for a, members in enumerate(tree.values()):
        for user, u in members.items():
            users.append(user)
            acct_of.append(a)
            usage.append(u)
    acct_of_arr = np.array(acct_of)
    user_usage = np.array(usage, dtype=float)
    acct_usage = np.bincount(acct_of_arr, weights=user_usage, minlength=len(accounts))
    f = fair_tree_factors(acct_of_arr, user_usage, acct_usage, float(user_usage.sum()),
                          np.array([float(shares.get(u, 1)) for u in users]),
                          np.array([float(shares.get(a, 1)) for a in accounts]))
    return dict(zip(users, f.tolist()))


def test_fair_tree_ranks_by_level_fs():
    # A: a1 30, a2 10; B: b1 60. Root 100. Accounts: S = 1/2, U_A = 0.4 -> LF 1.25, U_B = 0.6 -> 0.83:
    # A first. In A: S = 1/2, U_a1 = 0.75 -> 0.67, U_a2 = 0.25 -> 2: a2, a1. N = 3 users:
    # a2 = 3/3, a1 = 2/3, b1 = 1/3.
    f = _factors({"A": {"a1": 30, "a2": 10}, "B": {"b1": 60}})
    assert f == pytest.approx({"a2": 1.0, "a1": 2 / 3, "b1": 1 / 3})


def test_fair_tree_no_usage_is_infinite_level_fs_and_ties_share_a_rank():
    # A has no usage: U = 0 -> LF = inf, ranked first; its users' parent has no usage -> U = 0,
    # LF = inf, tied -> both keep rank 3 (3/3); b1 gets rnt = 1 -> 1/3 (rnt counts every user).
    f = _factors({"A": {"a1": 0, "a2": 0}, "B": {"b1": 10}})
    assert f == pytest.approx({"a1": 1.0, "a2": 1.0, "b1": 1 / 3})
    assert _factors({"A": {"a1": 0}, "B": {"b1": 0}}) == pytest.approx({"a1": 1.0, "b1": 1.0})


def test_tied_accounts_are_walked_one_after_the_other_as_in_22_05():
    # A and B both 40 of 80: LF 1.0 each, tied. _count_tied_accounts stops at the next account,
    # so A is walked first: a1 (LF 2) rank 4, a2 (LF 0.67) rank 3; B starts tied: b1 keeps
    # rank 3, b2 (same LF as b1) too. (Merging the tied accounts would have put a2 last: 1/4.)
    f = _factors({"A": {"a1": 10, "a2": 30}, "B": {"b1": 20, "b2": 20}})
    assert f == pytest.approx({"a1": 1.0, "a2": 0.75, "b1": 0.75, "b2": 0.75})


def test_shares_weigh_the_level_fs():
    # A has 3 shares, B 1: S_A = 0.75, S_B = 0.25. Usage A 60, B 40: LF_A = 0.75/0.6 = 1.25,
    # LF_B = 0.25/0.4 = 0.625: A first although it used more. Zero shares -> LF 0, last.
    assert _factors({"A": {"a1": 60}, "B": {"b1": 40}}, {"A": 3}) == pytest.approx({"a1": 1.0, "b1": 0.5})
    assert _factors({"A": {"a1": 60}, "B": {"b1": 40}}) == pytest.approx({"a1": 0.5, "b1": 1.0})
    assert _factors({"A": {"a1": 0}, "B": {"b1": 40}}, {"A": 0}) == pytest.approx({"a1": 0.5, "b1": 1.0})


class _Job:
    def __init__(self, assoc: int, start: float):
        self.assoc, self.start_time, self.end_time = assoc, start, None


def test_usage_decay_and_accrual_follow_the_decay_thread():
    hl = 1000.0
    ft = FairTree(hl, start=0.0)
    a = ft.assoc("u1", "acct")
    df = 1 - 0.693 / hl  # Slurm's decay_factor per second
    assert ft.decay_factor == pytest.approx(df)
    job = _Job(a, 100.0)
    ft.job_started(job, 4)
    ft.run(300.0)  # first run: no usage yet to decay; the job ran 200 s since its start
    u1 = 200 * df ** 200 * 4
    assert ft.user_usage[a] == pytest.approx(u1)
    ft.run(600.0)  # decay 300 s, then 300 s more of the job (since the last run)
    u2 = u1 * df ** 300 + 300 * df ** 300 * 4
    assert ft.user_usage[a] == pytest.approx(u2)
    assert ft.acct_usage[0] == pytest.approx(u2) and ft.root_usage == pytest.approx(u2)
    job.end_time = 700.0
    ft.job_ended(job, 4, 700.0)  # priority_p_job_end: last run to the end, at once
    u3 = u2 + 100 * df ** 100 * 4
    assert ft.user_usage[a] == pytest.approx(u3)
    ft.run(900.0)  # only decay now
    assert ft.user_usage[a] == pytest.approx(u3 * df ** 300)
    # half-life: with Slurm's approximation, usage halves in (about) one half-life
    assert df ** hl == pytest.approx(0.5, rel=2e-3)



def test_the_decay_thread_counts_whole_seconds_as_slurmctlds_time_t():
    """_decay_thread runs at start_time = time(NULL) and keeps g_last_ran; _apply_new_usage takes
    difftime of time_t instants and a job's start_time is the second it started: a job started at
    40.6 s, charged by a run woken at 100.7 s, has run 60 s (100 - 40), not 60.1 s; the next run,
    woken at 160.2 s, decays the usage by 60 s (160 - 100) and adds 60 s more."""
    hl = 1000.0
    df = 1 - 0.693 / hl
    ft = FairTree(hl, start=0.0)
    a = ft.assoc("u1", "acct")
    job = _Job(a, 40.6)
    ft.job_started(job, 2)
    ft.run(100.7)
    u1 = 60 * df ** 60 * 2
    assert ft.user_usage[a] == pytest.approx(u1, rel=1e-12)
    ft.run(160.2)
    assert ft.user_usage[a] == pytest.approx(u1 * df ** 60 + 60 * df ** 60 * 2, rel=1e-12)
    job.end_time = 170.9
    ft.job_ended(job, 2, 170.9)  # priority_p_job_end: time(NULL) = 170, g_last_ran = 160
    assert ft.user_usage[a] == pytest.approx(u1 * df ** 60 + 60 * df ** 60 * 2 + 10 * df ** 10 * 2, rel=1e-12)


def test_whole_seconds_can_reorder_two_close_accounts():
    """Two accounts of equal shares: "late" started 0.8 s after "early" but in the same second.
    On exact instants "early" has used more and ranks below "late"; on slurmctld's whole seconds
    both have used the same and tie."""
    ft = FairTree(1000.0, start=0.0)
    early, late = ft.assoc("u", "early"), ft.assoc("u", "late")
    ft.job_started(_Job(early, 10.1), 4)
    ft.job_started(_Job(late, 10.9), 4)
    ft.run(70.5)
    assert ft.user_usage[early] == ft.user_usage[late]
    assert ft.factor[early] == ft.factor[late]


def test_a_job_end_charges_usage_only_where_limits_are_enforced():
    """priority_p_job_end runs from _adjust_limit_usage (acct_policy.c), which returns first unless
    AccountingStorageEnforce includes limits: without it the time a job ran after the decay
    thread's last run is never charged (the decay thread skips finished jobs)."""
    hl = 1000.0
    df = 1 - 0.693 / hl
    for charge in (True, False):
        ft = FairTree(hl, start=0.0, charge_at_end=charge)
        a = ft.assoc("u1", "acct")
        job = _Job(a, 100.0)
        ft.job_started(job, 4)
        ft.run(300.0)
        u1 = 200 * df ** 200 * 4
        job.end_time = 350.0
        ft.job_ended(job, 4, 350.0)
        assert ft.user_usage[a] == pytest.approx(u1 + (50 * df ** 50 * 4 if charge else 0.0))
        ft.run(600.0)  # nothing runs: only decay, either way
        assert ft.user_usage[a] == pytest.approx((u1 + (50 * df ** 50 * 4 if charge else 0.0)) * df ** 300)
        assert ft.run_cpus[a] == 0


def test_without_enforced_limits_a_job_ended_between_decay_runs_costs_its_account_nothing():
    """End to end: account "wide" runs 16 cores that end a second before the decay run, "thin" one
    core still running at it. With limits enforced "wide" has used 16 times more and ranks last;
    without (Slurm's default, the recorded scenarios' setting) its usage is never charged."""
    factors = {}
    for limits in (True, False):
        sim = make_simulator("small", load=0, seed=1, priority="fairshare", weight_size=0, weight_age=0,
                             priority_calc_period_s=60.0, decay_half_life_s=300.0, prio_origin_s=None,
                             accounting_enforce_limits=limits)
        t0 = sim.now()
        sim.submit(JobRequest(name="w", command="x", cpus_per_task=16, time_limit_s=600, account="wide",
                              truth=SimTruth(runtime_s=30)))
        sim.submit(JobRequest(name="t", command="x", cpus_per_task=1, time_limit_s=600, account="thin",
                              truth=SimTruth(runtime_s=500)))
        sim.run_until(t0 + 200)
        ft = sim.fairtree
        factors[limits] = (float(ft.factor[ft.assoc("asad", "wide")]), float(ft.factor[ft.assoc("asad", "thin")]))
        assert ft.runs >= 2
    wide, thin = factors[True]
    assert wide < thin  # charged at its end: 16 x 30 core-s against thin's 1 x ~200
    wide, thin = factors[False]
    assert wide > thin  # never charged: no usage at all


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.floats(0, 1e6), min_size=1, max_size=5), min_size=1, max_size=6),
       st.data())
def test_more_usage_never_a_higher_factor_among_siblings(tree, data):
    """Same shares, same account: a user with more decayed usage never ranks above one with less;
    and between single-user accounts the same holds across accounts."""
    spec = {f"A{i}": {f"u{i}_{j}": u for j, u in enumerate(users)} for i, users in enumerate(tree)}
    f = _factors(spec)
    for members in spec.values():
        for x, ux in members.items():
            for y, uy in members.items():
                if ux > uy:
                    assert f[x] <= f[y]
    singles = [next(iter(m.items())) for m in spec.values() if len(m) == 1]
    for x, ux in singles:
        for y, uy in singles:
            if ux > uy:
                assert f[x] <= f[y]
    for v in f.values():
        assert 0 < v <= 1


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.floats(0, 5000), st.floats(1, 5000), st.integers(1, 16)),
                min_size=1, max_size=25))
def test_decayed_usage_order_gives_factor_order_through_the_decay_thread(jobs):
    """Jobs of four one-user accounts run through FairTree's decay runs; after the last run, a
    user with more usage never has a higher factor, and usage matches a direct recomputation."""
    hl = 3600.0
    ft = FairTree(hl, start=0.0)
    assocs = [ft.assoc(f"u{i}", f"a{i}") for i in range(4)]
    events = []
    for who, start, run, cpus in jobs:
        events.append((start, 0, who, run, cpus))
    events.sort()
    ticks = np.arange(300.0, 12000.0, 300.0)
    live: list[tuple[_Job, int, float]] = []
    expected = np.zeros(4)
    df = ft.decay_factor
    ei = 0
    last = 0.0
    for tick in ticks:
        # ends and starts before this tick, in time order
        while True:
            nxt_start = events[ei][0] if ei < len(events) else math.inf
            ending = min(live, key=lambda x: x[2], default=None)
            nxt_end = ending[2] if ending else math.inf
            t = min(nxt_start, nxt_end)
            if t >= tick:
                break
            if nxt_end <= nxt_start:
                job, cpus, end = ending
                live.remove(ending)
                job.end_time = end
                ft.job_ended(job, cpus, end)
                d = math.floor(end) - max(last, math.floor(job.start_time))  # time_t instants
                expected[job.assoc] += d * df ** d * cpus
            else:
                start, _, who, run, cpus = events[ei]
                ei += 1
                job = _Job(assocs[who], start)
                ft.job_started(job, cpus)
                live.append((job, cpus, start + run))
        expected *= df ** (tick - last)
        for job, cpus, _ in live:
            d = tick - max(last, math.floor(job.start_time))
            expected[job.assoc] += d * df ** d * cpus
        ft.run(float(tick))
        last = float(tick)
    np.testing.assert_allclose(ft.user_usage, expected, rtol=1e-9, atol=1e-6)
    for i in range(4):
        for j in range(4):
            if ft.user_usage[i] > ft.user_usage[j] * (1 + 1e-12):
                assert ft.factor[i] <= ft.factor[j]


def test_fairshare_policy_orders_the_queue_by_usage():
    """End to end: an account that has used the cluster waits behind one that has not, although
    its job was submitted first and is as old (the light account's job needs the whole cluster)."""
    sim = make_simulator("small", load=0, seed=3, priority="fairshare", weight_size=0)
    t0 = sim.now()
    # account "heavy" fills the 4 x 28-core cluster for 2 hours
    for _ in range(4):
        sim.submit(JobRequest(name="fill", command="x", cpus_per_task=28, time_limit_s=7200,
                              account="heavy", truth=SimTruth(runtime_s=7000)))
    sim.run_until(t0 + 3600)
    heavy = sim.submit(JobRequest(name="h", command="x", cpus_per_task=28, time_limit_s=3600,
                                  account="heavy", truth=SimTruth(runtime_s=600)))
    light = sim.submit(JobRequest(name="l", command="x", nodes=4, ntasks=4, cpus_per_task=28, time_limit_s=3600,
                                  account="light", truth=SimTruth(runtime_s=600)))
    sim.run_until(t0 + 4 * 3600)
    st_ = sim.poll([heavy, light])
    assert st_[light].start_time < st_[heavy].start_time
    ft = sim.fairtree
    heavy_assoc = ft.assoc("asad", "heavy")
    light_assoc = ft.assoc("asad", "light")
    assert ft.factor[light_assoc] > ft.factor[heavy_assoc]
    # and the same stream under plain multifactor (job size off in both): the heavy job,
    # submitted first and as old, goes first
    sim2 = make_simulator("small", load=0, seed=3, priority="multifactor", weight_size=0)
    for _ in range(4):
        sim2.submit(JobRequest(name="fill", command="x", cpus_per_task=28, time_limit_s=7200,
                               account="heavy", truth=SimTruth(runtime_s=7000)))
    sim2.run_until(t0 + 3600)
    h2 = sim2.submit(JobRequest(name="h", command="x", cpus_per_task=28, time_limit_s=3600,
                                account="heavy", truth=SimTruth(runtime_s=600)))
    l2 = sim2.submit(JobRequest(name="l", command="x", nodes=4, ntasks=4, cpus_per_task=28, time_limit_s=3600,
                                account="light", truth=SimTruth(runtime_s=600)))
    sim2.run_until(t0 + 4 * 3600)
    s2 = sim2.poll([h2, l2])
    assert s2[h2].start_time <= s2[l2].start_time


def test_fairshare_preset_and_rules():
    cfg = simulator_config("small", priority="fairshare")
    assert cfg.priority == "multifactor" and cfg.weight_fairshare > 0 and cfg.fairshare
    assert not simulator_config("small", priority="multifactor").fairshare
    sim = make_simulator("small", load=0, priority="fairshare", weight_fairshare=5000)
    rules = rules_of(sim)
    assert rules.type == "multifactor" and rules.weight_fairshare == 5000 and rules.source == "simulator"
    assert "Fairshare=5000" in rules.describe()
    assert rules_of(make_simulator("small", load=0, priority="fifo")).weight_fairshare == 0
    with pytest.raises(ValueError, match="fairshare"):
        simulator_config("small", priority="fair")


def test_background_users_are_associations_and_load_runs_with_fairshare():
    sim = make_simulator("small", seed=2, priority="fairshare", warmup_s=86400)
    ft = sim.fairtree
    pop = sim.workload.users
    assert len(ft.users) == len(pop) + 1  # + the asad user
    assert set(pop.accounts) <= set(ft.accounts)
    sim.run_until(sim.now() + 86400)
    sim.check_invariants()
    assert ft.root_usage > 0
    assert ft.user_usage.sum() == pytest.approx(ft.root_usage) == pytest.approx(ft.acct_usage.sum())
    assert 0 < ft.factor.min() <= ft.factor.max() == 1.0


def test_bench_sim_fairshare_runs_both_policies(capsys):
    from asad.bench.sim_fairshare import run_policy

    rows = [run_policy("small", 2.0, 1, p, "easy", 1) for p in ("multifactor", "fairshare")]
    assert [r["priority"] for r in rows] == ["multifactor", "fairshare"]
    for r in rows:
        assert r["top_jobs"] > 0 and r["other_jobs"] > 0 and r["top_wait_mean_h"] >= 0
