"""``hedge``: exponential weights with fixed share over median-backoff's panel (issue 38)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from asad.bench.rolling import data_end_s, parse_span, score_windows, summarise, windows
from asad.learn.hedge import PANEL, TOP_TAU_WINDOW, HedgePool, Panel
from asad.learn.registry import make_pool, predictor_from_state
from asad.core.learned import Learned

KEY = "cluster=g|account=a{a}|partition=p|qos=|nodes=1|cpus={c}|walltime<=3h"


def stream(pool, waits, keys, gap_s=50.0):
    """Feed waits in order (each told, then learned when it starts); returns |log10 errors|."""
    errors, t = [], 0.0
    for wait, key in zip(waits, keys):
        told = pool.told(key, t, None)
        if told is not None:
            errors.append(abs(math.log10(1 + pool.view(key).estimate(now_s=t)) - math.log10(1 + wait)))
        pool.observe(key, wait, at_s=t + 1.0, told=told)  # known at once: a clean test of the weights
        t += gap_s
    return np.array(errors)


def test_update_is_hedge_with_fixed_share():
    pool = make_pool("hedge", hedge_eta=2.0, hedge_share=0.1, hedge_prior=0.0, hedge_cap=0.0)
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, None, 1.5, 1.0))
    pool._update(panel, 3.0)
    shares = dict(pool.shares(panel))
    assert set(shares) == {0, 1, 2, 4, 5}  # the silent expert neither pays nor shares
    assert sum(shares.values()) == pytest.approx(1.0)
    # w_i ∝ exp(-eta |v_i - y|), then (1 - alpha) w + alpha / N
    raw = {i: math.exp(-2.0 * abs(v - 3.0)) for i, v in enumerate(panel.values) if v is not None}
    total = sum(raw.values())
    for i, share in shares.items():
        assert share == pytest.approx(0.9 * raw[i] / total + 0.1 / 5)
    assert max(shares, key=shares.get) == 1  # the exact expert ("last") leads
    assert min(shares.values()) >= 0.1 / 5


def test_weights_follow_the_expert_that_predicts_and_explain_names_it():
    # one key's waits double every step: the last wait is always closest, the long median lags
    pool = make_pool("hedge")
    key = KEY.format(a=1, c=4)
    waits = [10.0 * 1.05**i for i in range(200)]
    stream(pool, waits, [key] * len(waits))
    dominant = pool.dominant(key)
    assert dominant.expert == "last" and dominant.weight > 0.5
    assert dominant.group == "cluster=g#0"


def test_on_a_drift_hedge_beats_the_back_off_it_contains():
    rng = random.Random(3)
    keys = [KEY.format(a=i % 3, c=1 + i % 2) for i in range(3000)]
    waits = [max(1.0, 100.0 * 1.002**i * rng.lognormvariate(0, 0.3)) for i in range(3000)]
    hedge = stream(make_pool("hedge"), waits, keys)
    backoff = stream(make_pool("median-backoff"), waits, keys)
    assert np.median(hedge) < 0.7 * np.median(backoff)


def test_on_a_stationary_queue_hedge_is_about_as_good_as_the_back_off():
    rng = random.Random(5)
    keys = [KEY.format(a=rng.randrange(20), c=rng.choice((1, 2, 4, 8))) for _ in range(4000)]
    waits = [rng.lognormvariate(8, 1.5) for _ in keys]
    hedge = stream(make_pool("hedge"), waits, keys)
    backoff = stream(make_pool("median-backoff"), waits, keys)
    assert np.median(hedge) <= 1.05 * np.median(backoff)


def test_before_any_weight_the_leader_is_the_back_off():
    # hedge_combine "leader" with every weight equal answers with the back-off (ties go to it)
    pool = make_pool("hedge", hedge_combine="leader")
    key = KEY.format(a=1, c=4)
    for i, wait in enumerate((100.0, 1000.0, 5000.0)):
        pool.observe(key, wait, at_s=None)  # no instant: nothing to score the panel on yet...
        pool.log_weights.clear()  # ...and whatever was scored, forgotten
    assert PANEL[0] == "backoff"
    assert pool.estimate_log(key) == pytest.approx(pool.panel(key).backoff)
    assert pool.estimate_log(key) != pytest.approx(pool.panel(key).values[1])  # not the last wait


def test_state_round_trips_standalone_and_key_by_key():
    pool = make_pool("hedge")
    rng = random.Random(1)
    keys = [KEY.format(a=i % 4, c=2) for i in range(300)]
    stream(pool, [rng.lognormvariate(7, 1) for _ in keys], keys)
    key = keys[-1]
    restored = predictor_from_state(pool.view(key).to_state())
    assert isinstance(restored.pool, HedgePool)
    assert restored.estimate() == pytest.approx(pool.view(key).estimate())
    assert restored.pool.log_weights == pool.log_weights
    # the engine's rows: one per key, the groups' weights in the coarsest key's row
    rows = {k: pool.key_state(k) for k in pool.stats}
    assert "hedge_weights" in rows["cluster=g"]
    learned = Learned(lambda kind, k: rows.get(k), "hedge")
    assert learned.estimate_wait(key) == pytest.approx(learned._seen(pool.view(key).estimate()))
    assert learned._pool.log_weights == pool.log_weights


def test_learned_tells_and_learns_with_hedge():
    learned = Learned(lambda kind, key: None, "hedge")
    key = KEY.format(a=1, c=4)
    assert learned.wait_told(key) is None
    learned.observe_wait(key, 600.0, at_s=1000.0)
    told = learned.wait_told(key)
    assert told[0] == pytest.approx(math.log10(601.0))
    learned.observe_wait(key, 700.0, at_s=3000.0, told=told)
    assert learned.wait_observations(key) == 2
    # asad explain's words: which expert dominated and its weight (equal losses: the back-off first)
    source = learned.wait_source(key)
    assert source.startswith("hedge: expert 'backoff' weighs ") and "weights of cluster=g#0" in source
    plain = Learned(lambda kind, key: None, "median-backoff")
    plain.observe_wait(key, 600.0, at_s=1000.0)
    assert plain.wait_source(key) == ""  # no weights, nothing to name


def test_windows_end_where_the_data_does_not_at_its_stragglers():
    day = 86400.0
    eligible = np.concatenate([np.linspace(0.0, 40 * day - 1, 10_000), [90 * day]])  # one job weeks later
    assert data_end_s(eligible) == 40 * day


def test_rolling_spans_and_windows():
    assert parse_span("4w") == 28 * 86400 and parse_span("10d") == 10 * 86400
    for bad in ("", "4", "0w", "4m", "w4"):
        with pytest.raises(ValueError, match="whole days or weeks"):
            parse_span(bad)
    day = 86400.0
    assert windows(0.0, 28 * day, 7 * day, 49 * day) == [(0.0, 28 * day), (7 * day, 35 * day),
                                                         (14 * day, 42 * day), (21 * day, 49 * day)]
    assert windows(0.0, 28 * day, 7 * day, 27 * day) == []


class _Jobs:
    def __init__(self, n):
        self.cluster = np.array(["c"] * n)
        self.eligible_s = np.arange(n, dtype=float) * 86400.0
        self.wait_s = np.full(n, 99.0)


def test_rolling_targets_count_windows():
    n = 8
    jobs = _Jobs(n)
    est = {"good": np.full(n, 99.0), "ref": np.full(n, 999.0), "median-all": np.full(n, 99.0)}
    est["good"][6:] = 9999.0  # the last two days the judged is far off
    quantiles = {lb: np.tile([[9.0, 999.0]], (n, 1)) for lb in est}
    replayed = {"estimates": est, "quantiles": quantiles, "warm": np.ones(n, dtype=bool)}
    predictors = [("good", "hedge", {}), ("ref", "median-backoff", {}), ("median-all", "median-all", {})]
    spans = [(i * 2 * 86400.0, (i + 1) * 2 * 86400.0) for i in range(4)]  # 4 windows of 2 days
    scored = score_windows(jobs, replayed, predictors, spans, (0.1, 0.9), {"good", "ref"})
    assert [b["jobs"] for b in scored["c"]] == [2, 2, 2, 2]
    summary = summarise(scored, "good", "ref", {lb: kind for lb, kind, _ in predictors})["c"]
    assert summary["median_error_le_reference"] == {"windows": 4, "met": 3, "share": 0.75, "holds": True}
    assert summary["x3_ge_best_running_median"]["met"] == 3
    # 10 % quantile (9 s) never covers the 99 s waits: 0 % against 10 %, a 10-point gap
    assert summary["coverage_within_5_points"]["met"] == 0
    assert scored["c"][0]["rows"]["good"].worst_gap == pytest.approx(0.1)


def test_explain_names_the_dominant_expert_of_a_planned_stage(db_url):
    from asad.daemon.wiring import run_in_process
    from asad.common.config import Settings
    from asad.slurm.sim import make_simulator
    from asad.spec.load import load_workflow
    from asad.view.explain import render_explain
    from asad.store.repo import Store
    from tests.conftest import EXAMPLES

    spec = load_workflow(EXAMPLES / "montage.yaml")
    store = Store(db_url)
    sim = make_simulator("small", load=0.9, seed=4, priority="fifo")
    try:
        for i in range(2):  # the second run plans with the waits the first taught
            run_in_process(store, sim, [spec], settings=Settings(predictor="hedge"), strategy="asa",
                           warmup_s=0 if i else 6 * 3600)
        wf = store.load_workflows(active_only=False)[-1]
    finally:
        store.close()
    planned = [name for name, run in wf.stages.items() if "minus the learned wait" in run.plan_why]
    assert planned, [run.plan_why for run in wf.stages.values()]
    assert "hedge: expert '" in render_explain(wf, planned[0]) and " weighs " in render_explain(wf, planned[0])


def test_miss_loss_counts_waits_missed_by_more_than_the_cap():
    pool = make_pool("hedge", hedge_eta=1.0, hedge_share=0.0, hedge_loss="miss", hedge_cap=0.3, hedge_prior=0.0)
    assert pool.loss(2.0, 2.29) == 0.0 and pool.loss(2.0, 2.31) == 1.0 and pool.loss(2.0, 9.0) == 1.0
    capped = make_pool("hedge", hedge_loss="abs", hedge_cap=0.5)
    assert capped.loss(2.0, 2.2) == pytest.approx(0.2) and capped.loss(2.0, 5.0) == pytest.approx(0.5)
    assert make_pool("hedge", hedge_cap=0.0).loss(2.0, 9.0) == pytest.approx(3.0)  # no cap: max_loss
    assert make_pool("hedge").loss(2.0, 9.0) == pytest.approx(0.2)  # the preset's cap
    # one update: the experts within the cap keep their weight, the others lose eta
    panel = Panel(2.0, "0", "c#0", (2.0, 2.5, 2.1, None, 1.0, 2.0))
    pool._update(panel, 2.05)
    weights = pool.log_weights["c#0"]
    assert weights[0] == pytest.approx(weights[2]) == pytest.approx(weights[5])
    assert weights[0] - weights[1] == pytest.approx(1.0) and weights[0] - weights[4] == pytest.approx(1.0)


def test_prior_starts_on_the_back_off_and_fixed_share_returns_to_it():
    pool = make_pool("hedge", hedge_eta=1.0, hedge_share=0.2, hedge_prior=0.5, hedge_cap=0.0)
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, None, 1.5, 1.0))
    shares = dict(pool.shares(panel))
    assert shares[0] == pytest.approx(0.5 / (0.5 + 4 * 0.1))  # the silent expert's prior share drops out
    for _ in range(50):  # the back-off keeps missing by 2 decades: it pays, but fixed share hands
        pool._update(panel, 3.0)  # back alpha * prior = 0.2 * 0.5 to it each round, not 0.2 / 5
    share = dict(pool.shares(panel))[0]
    assert 0.1 <= share < 0.12  # alpha * prior plus what little survives exp(-2) per round
    uniform = make_pool("hedge", hedge_eta=1.0, hedge_share=0.2, hedge_prior=0.0, hedge_cap=0.0)
    for _ in range(50):
        uniform._update(panel, 3.0)
    assert dict(uniform.shares(panel))[0] < 0.06  # 0.2 / 5 plus the same remainder
    with pytest.raises(ValueError, match="hedge_prior"):
        make_pool("hedge", hedge_prior=1.0)


def test_weighted_median_combine():
    pool = make_pool("hedge", hedge_combine="median")
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, None, 1.5, 1.0))
    pool.log_weights["c#0"] = [math.log(w) for w in (0.1, 0.45, 0.2, 1.0, 0.05, 0.2)]
    # sorted answers: 1.0 (0.1 + 0.2), 1.5 (0.05), 2.0 (0.2), 3.0 (0.45); half of 1.0 is reached at 2.0
    assert pool.mix(panel) == pytest.approx(2.0)


def test_the_preset_stays_within_its_regret_of_the_back_off_in_mean_error():
    # batches of one key's jobs (a shared level per batch, lognormal noise): a stationary queue
    # where the back-off's long median is as good as any expert. Hedge bounds the *mean* loss it
    # is charged: the frozen preset (capped loss) and eta 0.25 uncapped are no worse than the
    # back-off they contain, while last round's eta 4 (regret term eta / 8 per wait, larger than
    # the loss) was worse than it
    waits, keys = batched_stationary(5)
    backoff = stream(make_pool("median-backoff"), waits, keys)
    preset = stream(make_pool("hedge"), waits, keys)
    # charged min(|error|, 0.25): its mean is what the bound covers; the median follows it
    assert np.mean(np.minimum(preset, 0.25)) <= np.mean(np.minimum(backoff, 0.25))
    assert np.median(preset) <= np.median(backoff) and np.mean(preset) <= np.mean(backoff)
    uncapped = stream(make_pool("hedge", hedge_eta=0.25, hedge_cap=0.0), waits, keys)
    assert np.mean(uncapped) <= np.mean(backoff)
    last_round = stream(make_pool("hedge", hedge_eta=4.0, hedge_share=0.01, hedge_prior=0.0, hedge_cap=0.0), waits, keys)
    assert np.mean(last_round) > np.mean(backoff)


def test_a_batch_starting_together_is_one_round_of_mean_losses():
    # five waits of one group start at the same instant: with batched feedback they move the
    # weights once, by each expert's mean loss, from where the weights stood before the batch
    batched = make_pool("hedge", hedge_eta=2.0, hedge_share=0.0, hedge_prior=0.0, hedge_cap=0.0, hedge_batch_s=0.0)
    single = make_pool("hedge", hedge_eta=2.0, hedge_share=0.0, hedge_prior=0.0, hedge_cap=0.0, hedge_batch_s=-1.0)
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, 2.5, 1.5, 1.0))
    waits = [3.0, 3.0, 3.0, 3.0, 1.0]
    for y in waits:
        batched._update(panel, y, at_s=100.0)
        single._update(panel, y, at_s=100.0)
    mean_loss = {i: sum(abs(v - y) for y in waits) / len(waits) for i, v in enumerate(panel.values)}
    raw = {i: math.exp(-2.0 * loss) for i, loss in mean_loss.items()}
    total = sum(raw.values())
    for i, share in batched.shares(panel):
        assert share == pytest.approx(raw[i] / total)
    # unbatched, every wait is a round: the losses add up, five times the batch's step
    summed = {i: math.exp(-2.0 * len(waits) * loss) for i, loss in mean_loss.items()}
    for i, share in single.shares(panel):
        assert share == pytest.approx(summed[i] / sum(summed.values()))
    assert dict(single.shares(panel))[1] > dict(batched.shares(panel))[1] + 0.1
    # a wait starting later opens a new round from the batch's result
    before = dict(batched.shares(panel))
    batched._update(panel, 1.0, at_s=101.0)
    assert dict(batched.shares(panel))[0] > before[0]


def test_batch_window_in_seconds_and_the_config_check():
    pool = make_pool("hedge", hedge_eta=1.0, hedge_share=0.0, hedge_prior=0.0, hedge_cap=0.0, hedge_batch_s=60.0)
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, None, None, None, None))
    pool._update(panel, 3.0, at_s=0.0)
    pool._update(panel, 3.0, at_s=59.0)  # same round: the mean loss is still 2 for the back-off
    assert dict(pool.shares(panel))[0] == pytest.approx(math.exp(-2.0) / (math.exp(-2.0) + 1.0))
    pool._update(panel, 3.0, at_s=61.0)  # a new round
    assert dict(pool.shares(panel))[0] == pytest.approx(math.exp(-4.0) / (math.exp(-4.0) + 1.0))
    with pytest.raises(ValueError, match="hedge_batch_s"):
        make_pool("hedge", hedge_batch_s=-2.0)


# -- the top level over whole learners (hedge_top: learners; issue 38, fourth round) -----------
def batched_stationary(seed):
    """Batches of one key's jobs on a stationary queue with heavy noise: the back-off's long
    median is the best learner, short memories chase the noise."""
    rng = random.Random(seed)
    keys, waits = [], []
    for _ in range(300):
        key, level = KEY.format(a=rng.randrange(20), c=rng.choice((1, 2, 4, 8))), rng.gauss(8, 0.3)
        for _ in range(rng.randrange(1, 30)):
            keys.append(key)
            waits.append(rng.lognormvariate(level, 1.5))
    return waits, keys


# a panel that leans on its short memories (last round's eta 4, uniform prior): worse than the
# back-off on a stationary queue, better on a drift
NOISY_PANEL = {"hedge_eta": 4.0, "hedge_share": 0.01, "hedge_prior": 0.0, "hedge_cap": 0.0}


def test_the_top_level_converges_to_the_back_off_where_it_is_best():
    # a panel that answers with its single heaviest expert, uniform prior: on a noisy stationary
    # queue it jumps to short memories and is worse than the back-off it contains
    waits, keys = batched_stationary(5)
    jumpy = {"hedge_combine": "leader", "hedge_prior": 0.0, "hedge_eta": 4.0}
    backoff = stream(make_pool("median-backoff"), waits, keys)
    panel_only = stream(make_pool("hedge", **jumpy), waits, keys)
    top = make_pool("hedge", **jumpy, hedge_top="learners")
    learners = stream(top, waits, keys)
    assert np.mean(panel_only) > np.mean(backoff) + 0.005  # without the top level: the panel's loss
    assert np.mean(learners) < np.mean(panel_only) - 0.005
    assert np.median(learners) < np.median(panel_only)
    # with it: the back-off's, up to a regret term; Hedge bounds the charged (capped) loss by
    # the best learner's plus ln 2 / eta over the stream and eta cap^2 / 8 (0.02) a round
    capped = lambda errors: np.mean(np.minimum(errors, 0.2))  # noqa: E731
    assert capped(learners) <= capped(backoff) + 0.02
    assert np.mean(learners) <= np.mean(backoff) + 0.005
    dominant = top.dominant(keys[-1])  # the back-off leads the top level at the end
    assert dominant.expert == "backoff" and dominant.group == "cluster=g#top" and dominant.weight > 0.9


def test_the_top_level_follows_the_panel_where_it_is_best():
    rng = random.Random(3)
    keys = [KEY.format(a=i % 3, c=1 + i % 2) for i in range(3000)]
    waits = [max(1.0, 100.0 * 1.002**i * rng.lognormvariate(0, 0.3)) for i in range(3000)]
    backoff = stream(make_pool("median-backoff"), waits, keys)
    panel_only = stream(make_pool("hedge", **NOISY_PANEL), waits, keys)
    for combine in ("leader", "mean"):
        top = make_pool("hedge", **NOISY_PANEL, hedge_top="learners", hedge_top_combine=combine)
        learners = stream(top, waits, keys)
        assert np.median(learners) < 0.7 * np.median(backoff)
        assert np.mean(learners) <= np.mean(panel_only) + 0.01
        weights = top.log_weights["cluster=g#top"]
        assert weights[1] > weights[0]  # the panel leads


def test_top_level_update_prior_combine_state_and_config():
    pool = make_pool("hedge", hedge_eta=2.0, hedge_share=0.1, hedge_prior=0.5, hedge_cap=0.0,
                     hedge_batch_s=-1, hedge_top="learners", hedge_top_combine="mean")
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, None, 1.5, 1.0))
    # before any wait: equal weights (prior 0.5 on the back-off of two learners), the mean of the two
    assert pool.top_mix(panel) == pytest.approx(0.5 * 1.0 + 0.5 * pool.mix(panel))
    learners = pool.top_values(panel)
    pool._update_top(panel, learners, 3.0, None)
    shares = dict(pool.top_shares(panel))
    raw = [math.exp(-2.0 * abs(v - 3.0)) for v in learners]
    for i in (0, 1):
        assert shares[i] == pytest.approx(0.9 * raw[i] / sum(raw) + 0.1 * 0.5)
    leader = make_pool("hedge", hedge_top="learners")  # leader combine, ties to the back-off
    assert leader.top_mix(panel) == pytest.approx(1.0)
    # the top weights are saved in the coarsest key's row and restored
    rng = random.Random(1)
    keys = [KEY.format(a=i % 4, c=2) for i in range(300)]
    top = make_pool("hedge", hedge_top="learners")
    stream(top, [rng.lognormvariate(7, 1) for _ in keys], keys)
    restored = predictor_from_state(top.view(keys[-1]).to_state())
    assert restored.pool.log_weights["cluster=g#top"] == top.log_weights["cluster=g#top"]
    assert restored.estimate() == pytest.approx(top.view(keys[-1]).estimate())
    with pytest.raises(ValueError, match="hedge_top"):
        make_pool("hedge", hedge_top="all")
    with pytest.raises(ValueError, match="hedge_top"):
        make_pool("hedge", hedge_top="learners", hedge_top_combine="median")


def test_top_level_own_losses_rate_and_share():
    # "win": the learner farther from the wait pays 1, a tie pays nothing; the top level's own
    # eta and share, not the panel's
    pool = make_pool("hedge", hedge_eta=2.0, hedge_share=0.1, hedge_batch_s=-1, hedge_top="learners",
                     hedge_top_loss="win", hedge_top_eta=0.5, hedge_top_share=0.2)
    assert pool.top_losses("c#top", (1.0, 2.2), 2.0) == {0: 1.0, 1: 0.0}
    assert pool.top_losses("c#top", (1.0, 3.0), 2.0) == {0: 0.0, 1: 0.0}
    panel = Panel(1.0, "0", "c#0", (1.0, 3.0, 2.0, None, 1.5, 1.0))
    learners = pool.top_values(panel)
    pool._update_top(panel, learners, 3.0, None)  # the mixture is nearer 3 than the back-off's 1
    shares = dict(pool.top_shares(panel))
    raw = [math.exp(-0.5), 1.0]
    for i in (0, 1):
        assert shares[i] == pytest.approx(0.8 * raw[i] / sum(raw) + 0.2 * 0.5)
    # "over" with a fixed threshold: 1 past it
    fixed = make_pool("hedge", hedge_top="learners", hedge_top_loss="over", hedge_top_tau=0.477)
    assert fixed.top_losses("c#top", (1.0, 1.8), 1.2) == {0: 0.0, 1: 1.0}
    # "over" with tau 0: the running median of the back-off's errors before this wait (log10 3
    # before any), over the last TOP_TAU_WINDOW waits
    running = make_pool("hedge", hedge_top="learners", hedge_top_loss="over")
    assert running.top_losses("c#top", (1.0, 1.4), 1.0) == {0: 0.0, 1: 0.0}  # tau log10 3
    for error in (0.1, 0.2, 0.3, 0.4):
        running.top_losses("c#top", (1.0 + error, 1.0), 1.0)
    assert running.running_tau("c#other", 0.0) == pytest.approx(math.log10(3.0))
    assert running.running_tau("c#top", 0.0) == pytest.approx(0.2)  # median of 0, .1 .. .4 so far: ordered[2]
    for _ in range(TOP_TAU_WINDOW):
        running.running_tau("c#top", 0.05)
    assert running.running_tau("c#top", 0.05) == pytest.approx(0.05)
    assert len(running._tau_sorted["c#top"]) == TOP_TAU_WINDOW
    for bad in ({"hedge_top_loss": "mean"}, {"hedge_top_tau": -1}, {"hedge_top_eta": -1}, {"hedge_top_share": 1}):
        with pytest.raises(ValueError, match="hedge_top"):
            make_pool("hedge", hedge_top="learners", **bad)


def test_top_level_draw_follows_a_seeded_draw_from_the_weights():
    rng = random.Random(2)
    keys = [KEY.format(a=i % 4, c=2) for i in range(400)]
    waits = [rng.lognormvariate(7, 1) for _ in keys]
    runs = []
    for _ in range(2):
        pool = make_pool("hedge", hedge_top="learners", hedge_top_combine="draw", hedge_top_loss="win",
                         hedge_top_eta=0.5, hedge_top_share=0.1)
        followed = []
        for key, wait in zip(keys, waits):
            view = pool.view(key)
            view.estimate()
            panel = pool.panel(key)
            if panel is not None:
                followed.append(pool.top_followed(panel))
                assert pool.top_mix(panel) == pool.top_values(panel)[followed[-1]]
            view.observe(wait)
        runs.append(followed)
    assert runs[0] == runs[1]  # seeded: the same stream draws the same learners
    # both are drawn, and the drawn one is not always the leader (share 0.1 keeps both in play)
    assert 0 < sum(runs[0]) < len(runs[0])
    # asad explain names the learner the draw follows: the back-off, or the panel's heaviest expert
    key = keys[-1]
    group = pool.top_group(pool.panel(key))
    pool._drawn[group] = 0
    assert pool.dominant(key).expert == "backoff" and pool.dominant(key).group == group
    pool._drawn[group] = 1
    assert pool.dominant(key).group != group and pool.dominant(key).expert in PANEL


def test_top_level_window_loss_is_each_learners_running_median_error():
    # "window": each learner pays its own median |error| over the group's last hedge_top_window
    # waits, this one included (the score itself)
    pool = make_pool("hedge", hedge_batch_s=-1, hedge_top="learners", hedge_top_loss="window", hedge_top_window=3)
    assert pool.top_losses("c#top", (1.0, 1.5), 1.0) == {0: 0.0, 1: 0.5}
    assert pool.top_losses("c#top", (1.2, 1.1), 1.0) == pytest.approx({0: 0.2, 1: 0.5})  # medians of 2: upper
    assert pool.top_losses("c#top", (1.3, 1.1), 1.0) == pytest.approx({0: 0.2, 1: 0.1})
    # the window holds 3: the back-off's 0.0 drops out, the panel's 0.5 too
    assert pool.top_losses("c#top", (1.4, 1.1), 1.0) == pytest.approx({0: 0.3, 1: 0.1})
    assert pool.top_losses("c#other", (1.0, 1.5), 1.0) == {0: 0.0, 1: 0.5}  # per group
    with pytest.raises(ValueError, match="hedge_top_window"):
        make_pool("hedge", hedge_top="learners", hedge_top_window=0)


def test_top_level_window_leader_converges_to_the_learner_with_the_lower_median_error():
    # a panel that is nearer more often (its short medians chase the last waits) but worse in
    # median error: the window loss follows the back-off where "win" may not
    rng = random.Random(5)
    keys = [KEY.format(a=i % 3, c=2) for i in range(3000)]
    waits = [rng.lognormvariate(7, 1.2) for _ in keys]
    backoff = stream(make_pool("median-backoff"), waits, keys)
    top = make_pool("hedge", **NOISY_PANEL, hedge_top="learners", hedge_top_loss="window", hedge_top_window=200)
    learners = stream(top, waits, keys)
    weights = top.log_weights["cluster=g#top"]
    assert weights[0] > weights[1]  # the back-off leads
    assert np.median(learners[1000:]) <= np.median(backoff[1000:]) + 0.005


def test_top_level_weights_per_account_and_a_third_learner():
    rng = random.Random(3)
    keys = [KEY.format(a=i % 2, c=2) for i in range(200)]
    pool = make_pool("hedge", hedge_top="learners-median20", hedge_top_groups="account", hedge_top_loss="win",
                     hedge_top_combine="draw", hedge_top_share=0.2)
    stream(pool, [rng.lognormvariate(7, 1) for _ in keys], keys)
    groups = sorted(g for g in pool.log_weights if g.endswith("#top"))
    assert groups == ["cluster=g|account=a0#top", "cluster=g|account=a1#top"]
    assert all(len(pool.log_weights[g]) == 3 for g in groups)
    panel = pool.panel(keys[-1])
    assert pool.top_group(panel) == "cluster=g|account=a1#top"
    assert pool.top_values(panel)[2] == panel.values[PANEL.index("median20")]
    # the draw picks any of the three; asad explain names the third by its name
    pool._drawn[pool.top_group(panel)] = 2
    assert pool.top_mix(panel) == pool.top_values(panel)[2]
    assert pool.dominant(keys[-1]).expert == "median20"
    # saved in the account level's row and restored
    restored = predictor_from_state(pool.view(keys[-1]).to_state())
    assert restored.pool.log_weights["cluster=g|account=a1#top"] == pool.log_weights["cluster=g|account=a1#top"]
    # a key without an account (real use) keeps its cluster's group
    plain = make_pool("hedge", hedge_top="learners", hedge_top_groups="account")
    plain.observe("cluster=g|nodes=1", 100.0, at_s=200.0)
    assert plain.top_group(plain.panel("cluster=g|nodes=1")) == "cluster=g#top"
    with pytest.raises(ValueError, match="hedge_top_groups"):
        make_pool("hedge", hedge_top="learners", hedge_top_groups="queue")


def test_top_level_told_judges_the_learners_after_the_pending_floor():
    # a job told the pending floor (its stratum ends ":p") that waited exactly that long: after
    # the floor both learners were right, so neither pays; judged before it, the nearer one wins
    rng = random.Random(4)
    keys = [KEY.format(a=0, c=2) for _ in range(60)]
    waits = [rng.lognormvariate(5, 1.5) for _ in keys]
    moved = {}
    for told_floor in (True, False):
        pool = make_pool("hedge", hedge_batch_s=-1, hedge_top="learners", hedge_top_loss="win", hedge_top_eta=1.0,
                         hedge_top_share=0.0, hedge_top_told=told_floor)
        stream(pool, waits, keys)
        panel = pool.panel(keys[0])
        backoff, mixed = pool.top_values(panel)
        assert abs(backoff - mixed) > 1e-6  # the learners disagree
        before = list(pool.log_weights["cluster=g#top"])
        wait = 10 ** (max(backoff, mixed) + 1.0) - 1.0  # ten times past both
        pool.observe(keys[0], wait, at_s=1e9, told=(math.log10(1.0 + wait), f"{panel.stratum}:p", None))
        moved[told_floor] = not np.allclose(pool.log_weights["cluster=g#top"], before)
    assert moved == {True: False, False: True}
