"""The ``experts`` wait learner: keys fine to coarse, adaptation, calibrated quantiles, persistence,
and its use through asad.core.learned (the engine's interface)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.learn.experts import ExpertsPool
from asad.learn.key_levels import key_levels, parse_key
from asad.learn.geometry import GeometryKeyConfig, geometry_key
from asad.learn.registry import make_pool, make_predictor, predictor_from_state, recommended_predictor
from asad.core.learned import WAIT_KIND, Learned

KEY4 = geometry_key(cluster="c", partition="p", nodes=1, cpus=4, time_limit_s=3000)
KEY3 = geometry_key(cluster="c", partition="p", nodes=1, cpus=3, time_limit_s=3000)
QS = [0.1, 0.25, 0.5, 0.75, 0.9]


def test_key_levels_go_from_fine_to_coarse_without_duplicates():
    assert parse_key(KEY4)["walltime"] == "<=1h"
    assert key_levels(KEY4) == [KEY4, "cluster=c|partition=p|qos=|walltime<=1h", "cluster=c"]
    # cpus 3 rounds up to 4: its next level is the cpus=4 key itself (a neighbour's own node)
    assert key_levels(KEY3) == [KEY3, KEY4, "cluster=c|partition=p|qos=|walltime<=1h", "cluster=c"]
    # a key with an account: the next level is the same geometry for any account
    with_account = geometry_key(cluster="c", account="a1", partition="p", cpus=4, time_limit_s=3000,
                                config=GeometryKeyConfig(fields=("cluster", "account", "partition", "qos", "nodes",
                                                                 "cpus", "walltime")))
    assert key_levels(with_account)[1] == KEY4
    assert key_levels("") == [""]


def test_cold_geometry_borrows_from_its_neighbour():
    pool = make_pool("experts")
    for _ in range(5):
        pool.view(KEY4).observe(600.0)
    cold = pool.view(KEY3)
    assert cold.n_observations == 0
    assert cold.estimate() == pytest.approx(600.0)
    other_cluster = pool.view(geometry_key(cluster="d", partition="p", cpus=4))
    assert other_cluster.estimate() == 0.0  # nothing shared across clusters


def test_follows_a_step_change_within_a_few_waits():
    predictor = make_predictor("experts")
    for _ in range(200):
        predictor.observe(3000.0)
    estimates = []
    for _ in range(6):
        predictor.observe(20000.0)
        estimates.append(predictor.estimate())
    assert estimates[0] < 20000.0 * 0.9 or estimates[1] < 20000.0 * 0.9  # not instantaneous ...
    assert estimates[-3:] == pytest.approx([20000.0] * 3)  # ... but within a few waits


def test_noise_prefers_long_medians_over_the_last_wait():
    rng = np.random.default_rng(3)
    predictor = make_predictor("experts")
    errors_last, errors = [], []
    last = None
    for wait in 1000.0 * np.exp(0.5 * rng.standard_normal(400)):
        estimate = predictor.estimate()
        if last is not None:
            errors.append(abs(math.log10(1 + estimate) - 3.0))
            errors_last.append(abs(math.log10(1 + last) - 3.0))
        predictor.observe(float(wait))
        last = wait
    assert np.mean(errors[100:]) < 0.5 * np.mean(errors_last[100:])


def test_quantiles_are_calibrated_on_a_stationary_stream():
    rng = np.random.default_rng(11)
    predictor = make_predictor("experts")
    below = np.zeros(len(QS))
    n = 0
    for i, wait in enumerate(500.0 * np.exp(1.2 * rng.standard_normal(3000))):
        if i >= 500:
            quantiles = predictor.quantiles(QS)
            assert quantiles == sorted(quantiles)
            below += np.asarray(wait <= np.asarray(quantiles), dtype=float)
            n += 1
        predictor.observe(float(wait))
    coverage = below / n
    assert np.all(np.abs(coverage - np.asarray(QS)) <= 0.05), coverage


def test_experts_are_scored_on_what_they_said_at_submission():
    pool = ExpertsPool()
    view = pool.view("k")
    for t in range(50):  # a steady 100 s queue
        view.observe(100.0, at_s=1000.0 + 200.0 * t)
    weights_before = list(pool.log_weights[pool.weight_owner("k")])
    # A job submitted after those waited 5000 s; meanwhile nothing else arrived. At submission
    # every expert said 100 s, so all pay the same and the weights do not move.
    view.observe(5000.0, at_s=20_000.0 + 5000.0)
    assert pool.log_weights[pool.weight_owner("k")] == pytest.approx(weights_before)
    # Scored on what they say now (no start time), the last-wait expert would have been spared.
    pool2 = ExpertsPool()
    view2 = pool2.view("k")
    for _ in range(50):
        view2.observe(100.0)
    view2.observe(5000.0)
    view2.observe(5000.0)
    assert pool2.log_weights[pool2.weight_owner("k")][0] == 0.0  # 'last' said 5000 and was right
    assert min(pool2.log_weights[pool2.weight_owner("k")][1:5]) < 0.0


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6), min_size=1, max_size=40),
       st.lists(st.floats(min_value=0.01, max_value=0.99), min_size=1, max_size=6))
def test_estimates_and_quantiles_are_finite_and_ordered(waits, qs):
    predictor = make_predictor("experts")
    for t, wait in enumerate(waits):
        predictor.observe(wait, at_s=t * 10.0 + wait)
    estimate = predictor.estimate()
    assert 0.0 <= estimate <= 1e6 * 1.0001
    quantiles = predictor.quantiles(sorted(qs))
    assert all(math.isfinite(v) and v >= 0 for v in quantiles)
    assert quantiles == sorted(quantiles)


def test_state_round_trip_resumes_exactly():
    predictor = make_predictor("experts")
    for t, wait in enumerate([100, 2000, 50, 700, 700, 30000, 12]):
        predictor.observe(wait, at_s=1000.0 * t)
    state = json.loads(json.dumps(predictor.to_state()))
    restored = predictor_from_state(state)
    assert restored.estimate() == predictor.estimate()
    assert restored.quantiles(QS) == predictor.quantiles(QS)
    for p in (predictor, restored):
        p.observe(400.0, at_s=9000.0)
    assert restored.estimate() == predictor.estimate()


def test_median_backoff_is_the_recommended_default():
    assert recommended_predictor()[0] == "median-backoff"


class FakeStore:
    def __init__(self):
        self.rows = {}

    def load(self, kind, key):
        return self.rows.get((kind, key))

    def save(self, learned):
        for kind, key, state, _ in learned.drain_dirty():
            self.rows[(kind, key)] = json.loads(json.dumps(state))


@pytest.mark.parametrize("kind", ["median-backoff", "experts"])
def test_learned_wait_quantiles_persist_and_share_coarse_keys(kind):
    store = FakeStore()
    learned = Learned(store.load, kind)
    assert learned.wait_quantiles(KEY4, QS) == [0.0] * 5  # nothing learned yet
    for t, wait in enumerate(np.geomspace(100, 10000, 60)):
        learned.observe_wait(KEY4, float(wait), at_s=10_000.0 * (t + 1))
    quantiles = learned.wait_quantiles(KEY4, QS)
    assert quantiles == sorted(quantiles) and quantiles[0] < quantiles[-1]
    assert learned.estimate_wait(KEY3) > 0  # the neighbour borrows
    store.save(learned)
    assert (WAIT_KIND, "cluster=c") in store.rows  # coarse keys are rows of their own
    again = Learned(store.load, kind)
    assert again.wait_quantiles(KEY4, QS) == quantiles
    assert again.estimate_wait(KEY3) == learned.estimate_wait(KEY3)


def test_learned_bumps_the_version_of_a_neighbour_whose_estimate_moved():
    learned = Learned(FakeStore().load, "experts")
    learned.observe_wait(KEY4, 100.0, at_s=1000.0)
    learned.estimate_wait(KEY3)
    learned.wait_quantiles(KEY3, QS)
    before = learned.versions.get((WAIT_KIND, KEY3), 0)
    learned.observe_wait(KEY4, 9000.0, at_s=20000.0)
    assert learned.versions.get((WAIT_KIND, KEY3), 0) > before


def test_median_backoff_cuts_its_history_after_a_run_of_far_waits():
    predictor = make_predictor("median-backoff")
    for _ in range(300):
        predictor.observe(1000.0)
    for i in range(5):
        assert predictor.estimate() == pytest.approx(1000.0), i  # 4 far waits are not a change yet
        predictor.observe(50_000.0)
    assert predictor.estimate() == pytest.approx(50_000.0)  # the 5th is: only the new waits count
    # waits within a factor 3 of the median never cut it
    steady = make_predictor("median-backoff")
    for i in range(300):
        steady.observe(1000.0 * (2.9 if i % 2 else 1 / 2.9))
    assert steady.pool.stats[""].n == len(steady.pool.stats[""].recent) == 300


def test_median_backoff_uses_the_finest_key_that_has_seen_a_wait():
    pool = make_pool("median-backoff")
    for wait in (100.0, 200.0, 300.0):
        pool.view(KEY4).observe(wait)
    pool.view(KEY3).observe(5000.0)
    assert pool.view(KEY3).estimate() == pytest.approx(5000.0)  # its own wait, not the neighbours'
    assert pool.view(geometry_key(cluster="c", partition="p", cpus=2, time_limit_s=3000)).estimate() == \
        pytest.approx(math.sqrt(201 * 301) - 1)  # cold: partition + walltime level (100, 200, 300, 5000),
    # median taken in log10(1 + s)


def test_one_stored_key_restores_as_a_predictor_for_asad_predict():
    pool = make_pool("median-backoff")
    for t, wait in enumerate([100.0, 400.0, 900.0]):
        pool.view(KEY4).observe(wait, at_s=10_000.0 * (t + 1))
    state = json.loads(json.dumps(pool.key_state(KEY4)))
    restored = predictor_from_state(state)
    assert restored.kind == "median-backoff"
    assert restored.estimate() == pytest.approx(pool.view(KEY4).estimate())
    assert restored.n_observations == 3


def test_aci_moves_the_level_until_the_quantile_is_covered_as_asked():
    from asad.learn.calibration import ACI_QS, ResidualWindow

    window = ResidualWindow(200)
    for i in range(200):  # residuals of a calm period: uniform on [-1, 1]
        window.add(-1.0 + 2.0 * (i * 37 % 200) / 199)
    q90 = ACI_QS.index(0.9)
    rng = np.random.default_rng(5)
    covered = []
    for r in 3.0 * rng.uniform(-1.0, 1.0, 4000):  # the spread tripled: plain conformal is too narrow
        covered.append(r <= window.quantiles([0.9])[0])
        window.add(float(r), aci_gamma=0.01, told_shifts=window.told_shifts())
    assert window.offsets[q90] != 0.0
    assert abs(np.mean(covered[-2000:]) - 0.9) <= 0.03
    levels = [window.level(q) for q in np.linspace(0.0, 1.0, 41)]
    assert levels == sorted(levels) and levels[0] == 0.0 and levels[-1] == 1.0


def test_prior_n_shrinks_a_young_key_towards_its_coarser_key():
    pool = make_pool("median-backoff", prior_n=2.0)
    for _ in range(50):
        pool.view(KEY4).observe(10_000.0)
    pool.view(KEY3).observe(100.0)
    young = math.log10(1 + pool.view(KEY3).estimate())
    # one own wait against two pseudo-waits at the coarser key's median (10,000 s), in log10
    assert young == pytest.approx((1 * math.log10(101) + 2 * math.log10(10_001)) / 3)
    for _ in range(200):
        pool.view(KEY3).observe(100.0)
    assert pool.view(KEY3).estimate() < 110.0  # an old key is its own median


def test_stratum_residuals_make_cold_answers_wider_than_warm_ones():
    rng = np.random.default_rng(2)
    pool = make_pool("median-backoff", residuals_from="stratum", min_residuals=50, strata="level")
    for i in range(3000):
        warm = i % 2 == 0
        key = KEY4 if warm else geometry_key(cluster="c", partition="p", nodes=1, cpus=100 + i, time_limit_s=3000)
        # a warm key's waits sit tight around 1000 s; each new geometry waits anywhere
        pool.view(key).observe(1000.0 * float(np.exp((0.1 if warm else 2.0) * rng.standard_normal())), at_s=10.0 * i)
    warm_q = pool.view(KEY4).quantiles([0.1, 0.9])
    cold_q = pool.view(geometry_key(cluster="c", partition="p", nodes=1, cpus=99_999, time_limit_s=3000)).quantiles(
        [0.1, 0.9])
    assert cold_q[1] / cold_q[0] > 10 * (warm_q[1] / warm_q[0])


def test_median_backoff_asks_the_same_account_before_other_accounts():
    config = GeometryKeyConfig(fields=("cluster", "account", "partition", "qos", "nodes", "cpus", "walltime"))

    def key(account, cpus):
        return geometry_key(cluster="c", account=account, partition="p", cpus=cpus, time_limit_s=3000, config=config)

    pool = make_pool("median-backoff")
    for _ in range(5):
        pool.view(key("a1", 8)).observe(30_000.0)  # a1's own jobs of another size wait long
        pool.view(key("a2", 4)).observe(60.0)  # another account's jobs of this very geometry do not
    assert pool.view(key("a1", 4)).estimate() == pytest.approx(30_000.0)
    assert pool.view(key("a3", 4)).estimate() == pytest.approx(60.0)  # a new account: the geometry


def test_calibrated_cold_point_raises_only_borrowed_answers_that_ran_low():
    pools = {point: make_pool("median-backoff", point=point, min_residuals=20, change_run=0)
             for point in ("median", "calibrated-cold")}
    cold_key = geometry_key(cluster="c", partition="p", nodes=99_999, cpus=4, time_limit_s=3000)
    for pool in pools.values():
        for i in range(1000):
            pool.view(KEY4).observe(100.0, at_s=1000.0 * i)
        for i in range(200):  # every new geometry waits 10x the neighbours' median: borrowed answers run low
            pool.view(geometry_key(cluster="c", partition="p", nodes=2 + i, cpus=4, time_limit_s=3000)).observe(
                1000.0, at_s=1e6 + 2000.0 * i)
        assert pool.view(KEY4).estimate() == pytest.approx(100.0)  # its own waits: never shifted
        assert pool.borrowed(cold_key) and not pool.borrowed(KEY4)
    assert pools["calibrated-cold"].view(cold_key).estimate() > 1.5 * pools["median"].view(cold_key).estimate()


def _account_key(account, cpus, partition="p"):
    config = GeometryKeyConfig(fields=("cluster", "account", "partition", "qos", "nodes", "cpus", "walltime"))
    return geometry_key(cluster="c", account=account, partition=partition, cpus=cpus, time_limit_s=3000,
                        config=config)


def test_change_point_only_at_the_key_itself_keeps_coarse_histories():
    pool = make_pool("median-backoff", pending_floor=())
    assert pool.config.change_scope == "key"
    for _ in range(200):
        pool.view(_account_key("a1", 4)).observe(100.0)
    for _ in range(5):  # five far waits of another geometry: a batch, not a change of a1's queue
        pool.view(_account_key("a1", 64)).observe(50_000.0)
    account_level = pool.levels(_account_key("a1", 4))[-4]  # (cluster, account)
    assert account_level == "cluster=c|account=a1"
    assert pool.stats[account_level].n == len(pool.stats[account_level].recent) == 205  # not cut
    assert pool.view(_account_key("a1", 4)).estimate() == pytest.approx(100.0)
    everywhere = make_pool("median-backoff", pending_floor=(), change_scope="all")
    for _ in range(200):
        everywhere.view(_account_key("a1", 4)).observe(100.0)
    for _ in range(5):
        everywhere.view(_account_key("a1", 64)).observe(50_000.0)
    assert len(everywhere.stats[account_level].recent) == 5  # the old rule cut the account's history


def test_pending_floor_raises_the_answer_to_what_a_pending_job_has_waited():
    pool = make_pool("median-backoff")
    key = _account_key("a1", 4)
    assert pool.floor_key(key) == "cluster=c|account=a1|partition=p|qos=|walltime<=1h"
    assert pool.floor_key(_account_key("a1", 64)) == pool.floor_key(key)  # same class: partition, walltime
    for i in range(10):
        pool.view(key).observe(100.0, at_s=1000.0 * i)
    view = pool.view(key)
    assert view.estimate() == pytest.approx(100.0)
    # the oldest pending job of the class has waited 5,000 s already: the answer is at least that
    assert view.estimate(now_s=20_000.0, pending_since_s=15_000.0) == pytest.approx(5000.0)
    told = pool.told(key, 20_000.0, 15_000.0)
    assert told[1].endswith(":p") and told[0] == pytest.approx(math.log10(5001.0))
    # a floor below the estimate changes nothing, and no floor without the caller's pending time
    assert pool.told(key, 20_000.0, 19_990.0) == pool.told(key) == pool.told(key, 20_000.0, None)
    assert pool.told(key)[1] == "0"
    quantiles = view.quantiles(QS, now_s=20_000.0, pending_since_s=15_000.0)
    assert quantiles == sorted(quantiles)
    # the residual of an answer as told lands in its own stratum
    pool.observe(key, 7000.0, at_s=27_000.0, told=told)
    assert len(pool.stats[pool.levels(key)[-1]].strata[told[1]]) == 1
    off = make_pool("median-backoff", pending_floor=())
    off.view(key).observe(100.0)
    assert off.floor_key(key) is None
    assert off.view(key).estimate(now_s=20_000.0, pending_since_s=0.0) == pytest.approx(100.0)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.0, 1e6), min_size=1, max_size=30), st.floats(0.0, 1e6), st.floats(0.0, 1e6))
def test_a_floored_answer_is_never_below_the_unfloored_one_nor_below_the_floor(waits, now, since):
    pool = make_pool("median-backoff")
    key = _account_key("a1", 4)
    for wait in waits:
        pool.view(key).observe(wait)
    plain = pool.view(key).estimate()
    floored = pool.view(key).estimate(now_s=now, pending_since_s=since)
    assert floored >= plain - 1e-6 * max(1.0, plain)
    assert floored >= max(0.0, now - since) - 1e-6 * max(1.0, now - since)


def test_aci_on_what_was_told_reaches_the_nominal_coverage_where_the_residuals_drift():
    """The offsets' steps telescope when each wait is checked against the shift its job was
    told: over a stream whose residuals run above the window's (a queue filling up), the told
    quantiles end up covered as often as asked, at every tracked level."""
    from asad.learn.calibration import ACI_QS, ResidualWindow

    window = ResidualWindow(500)
    rng = np.random.default_rng(11)
    for r in rng.normal(0.0, 1.0, 500):
        window.add(float(r))
    covered = []
    for i in range(8000):
        told = window.told_shifts()
        r = float(rng.normal(0.8 + i / 8000, 1.0))  # the residuals drift upwards all the time
        covered.append([r <= shift for shift in told])
        window.add(r, aci_gamma=0.02, told_shifts=told)
    rate = np.mean(covered, axis=0)
    assert np.all(np.abs(rate - np.asarray(ACI_QS)) <= 0.02), rate
    plain = ResidualWindow(500)  # without ACI the same stream covers the low quantiles far too rarely
    for r in rng.normal(0.0, 1.0, 500):
        plain.add(float(r))
    told = plain.told_shifts()
    assert np.mean(rng.normal(0.8, 1.0, 4000) <= told[ACI_QS.index(0.5)]) < 0.3


def _batched_stream_coverage(space: str) -> np.ndarray:
    """Coverage at every tracked level over a stream where every 1,000th job opens a batch of
    150 told at once whose waits fall far below anything in the window (a new account's jobs
    that all start at once), and single jobs otherwise."""
    from asad.learn.calibration import ResidualWindow

    window = ResidualWindow(500, space=space)
    rng = np.random.default_rng(3)
    for r in rng.normal(0.0, 1.0, 500):
        window.add(float(r))
    covered = []
    for _ in range(10):
        told = window.told_shifts()
        stream = [(told, float(rng.normal(-6.0, 0.3))) for _ in range(150)]
        stream += [(None, float(rng.normal(0.0, 1.0))) for _ in range(850)]
        for batch_told, r in stream:
            told = batch_told or window.told_shifts()
            covered.append([r <= shift for shift in told])
            window.add(r, aci_gamma=0.01, told_shifts=told)
    return np.mean(covered, axis=0)


def test_open_aci_reads_past_the_window_and_covers_batches_beyond_it():
    """A level clipped to the window's ends cannot answer lower than the lowest residual, so a
    batch far below it keeps the low quantiles over-covered for good; an "open" level reads
    past the window and ACI's steps telescope again."""
    from asad.learn.calibration import ACI_QS

    assert np.all(np.abs(_batched_stream_coverage("open") - np.asarray(ACI_QS)) <= 0.01)
    clipped = _batched_stream_coverage("level")
    assert clipped[ACI_QS.index(0.05)] > 0.12 and clipped[ACI_QS.index(0.1)] > 0.12


def test_an_open_level_reads_past_the_window_by_its_range_and_no_further_than_the_cap():
    from asad.learn.calibration import ACI_QS, MAX_TOLD_WAIT_S, OPEN_LEVEL_REACH, ResidualWindow, wait_at

    window = ResidualWindow(100, space="open")
    for i in range(11):
        window.add(float(i))  # residuals 0 .. 10: range 10
    top = ACI_QS.index(0.95)
    window.offsets[top] = 0.55  # level 1.5: half a range past the highest residual
    assert window.told_shifts()[top] == pytest.approx(15.0)
    window.offsets[top] = 4.0  # far past: read at most OPEN_LEVEL_REACH ranges beyond
    assert window.told_shifts()[top] == pytest.approx(10.0 + 10.0 * OPEN_LEVEL_REACH)
    window.offsets[0] = -0.55  # level -0.5: half a range below the lowest
    assert window.told_shifts()[0] == pytest.approx(-5.0)
    shifts = window.told_shifts()
    assert list(shifts) == sorted(shifts)
    assert wait_at(3.0, 15.0) == MAX_TOLD_WAIT_S and wait_at(3.0, -5.0) == 0.0
    qs = [0.01, 0.05, 0.5, 0.95, 0.99]
    assert window.quantiles(qs) == sorted(window.quantiles(qs))


def test_aci_in_the_shift_space_moves_the_shift_by_its_step():
    from asad.learn.calibration import ACI_QS, ResidualWindow

    window = ResidualWindow(100, space="shift")
    for i in range(100):
        window.add(i / 100.0)
    before = window.quantiles([0.5])[0]
    told = window.told_shifts()
    window.add(5.0, aci_gamma=0.1, told_shifts=told)  # a miss at every level: every shift goes up
    assert window.offsets[ACI_QS.index(0.5)] == pytest.approx(0.05)
    assert window.quantiles([0.5])[0] > before
    qs = [0.01, 0.1, 0.3, 0.5, 0.7, 0.9, 0.99]
    assert window.quantiles(qs) == sorted(window.quantiles(qs))


def test_an_early_miss_is_not_counted_again_when_the_wait_arrives():
    pool = make_pool("median-backoff", aci_gamma=0.01, min_residuals=5)
    key = geometry_key(cluster="c", partition="p", account="a", nodes=1, cpus=4, time_limit_s=3000)
    for t in range(20):
        pool.observe(key, 100.0 * (1 + t % 5), at_s=1000.0 * (t + 1), told=pool.told(key))
    told = pool.told(key)
    assert told[2] is not None and len(told[2]) == 7
    twin = make_pool("median-backoff", aci_gamma=0.01, min_residuals=5)
    twin.load_key_state(pool.levels(key)[-1], json.loads(json.dumps(pool.key_state(pool.levels(key)[-1]))))
    for level_key in pool.levels(key)[:-1]:
        twin.load_key_state(level_key, pool.key_state(level_key))
    window = pool.stats[pool.levels(key)[-1]].strata[told[1]]
    before = list(window.offsets)
    late = list(range(7))  # a wait of a day misses every told quantile
    for level in late:
        pool.aci_miss(key, told, level)
    pool.observe(key, 86_400.0, at_s=200_000.0, told=told, fed=late)
    twin.observe(key, 86_400.0, at_s=200_000.0, told=told)  # the same wait, every miss heard at the start
    twin_window = twin.stats[twin.levels(key)[-1]].strata[told[1]]
    assert window.offsets == pytest.approx(twin_window.offsets)
    assert all(after > was for after, was in zip(window.offsets, before))  # each level stepped up once


def test_a_recalibration_map_reads_the_level_whose_counted_coverage_is_asked():
    from asad.learn.calibration import MAP_LEVELS, ResidualWindow

    window = ResidualWindow(1000, space="map")
    rng = np.random.default_rng(4)
    for r in rng.normal(0.0, 1.0, 1000):
        window.add(float(r))
    assert window.level(0.1) == 0.1  # nothing counted yet: the nominal level
    for r in rng.normal(1.0, 1.0, 3000):  # the waits run one unit above the window's residuals
        window.count(float(r), window.told_shifts(), halflife=1e9)
    assert window.level(0.5) > 0.75 and window.level(0.1) > 0.2
    assert len(window.told_shifts()) == len(MAP_LEVELS)


def test_the_engine_feeds_a_miss_once_a_pending_job_has_waited_past_its_quantile():
    from types import SimpleNamespace

    from asad.core.engine import Decisions, Engine
    from asad.core.learned import Learned
    from asad.core.model import JobPhase, JobRecord, JobState
    from asad.slurm.backend import JobRequest

    learned = Learned(lambda kind, key: None, "median-backoff", predictor_params={"min_residuals": 3})
    key = geometry_key(cluster="c", partition="p", nodes=1, cpus=4, time_limit_s=3000)
    for t, wait in enumerate([100.0, 120.0, 150.0, 90.0, 110.0]):
        learned.observe_wait(key, wait, at_s=10_000.0 * (t + 1), told=learned.wait_told(key))
    told = learned.wait_told(key)
    assert told is not None and told[2] is not None  # the stratum holds enough residuals to be read
    stratum = learned._pool.stats[learned._pool.levels(key)[-1]].strata[told[1]]
    before = list(stratum.offsets)
    job = JobRecord(row_id=1, workflow_id=1, stage="s", attempt=1, tag="t", phase=JobPhase.LIVE,
                    request=JobRequest(name="s", command="c"), geometry_key=key, state=JobState.PENDING,
                    eligible_time=100_000.0, wait_told=told)
    engine = Engine(SimpleNamespace(learned=learned))
    out = Decisions()
    engine._learn_wait(job, 100_010.0, out)  # 10 s: below every told quantile, nothing heard
    assert stratum.offsets == before and len(job.wait_told) == 3
    engine._learn_wait(job, 200_000.0, out)  # a day later it has missed them all
    assert job.wait_told[3] == list(range(7)) and job in out.dirty_jobs
    missed = list(stratum.offsets)
    assert all(after > was for after, was in zip(missed, before))
    engine._learn_wait(job, 200_100.0, out)  # heard once only
    job.state, job.start_time = JobState.RUNNING, 200_200.0
    engine._learn_wait(job, 200_300.0, out)  # its start adds the residual, not the misses again
    assert job.wait_learned and stratum.offsets == missed
