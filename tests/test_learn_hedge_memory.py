"""Issue 38, eleventh round: the top level's long memory per account (``hedge_top_memory_s``,
``hedge_top_min_n``, the ``clip`` loss, ``hedge_top_tau_scope``; asad/learn/hedge_memory.py)."""

from __future__ import annotations

import math
import random

import pytest

from asad.learn.hedge_memory import TopMemory, follow
from asad.learn.registry import make_pool

KEY = "cluster=g|account=a{a}|partition=p|qos=|nodes=1|cpus={c}|walltime<=3h"
# a panel that jumps to its heaviest expert: better than the back-off on a drift, not on a
# stationary noisy queue
JUMPY = {"hedge_combine": "leader", "hedge_prior": 0.0, "hedge_eta": 4.0, "hedge_batch_s": -1}
TOP = {"hedge_top": "learners", "hedge_top_groups": "account"}


def two_accounts(n: int = 3000):
    """Account 0's waits drift up (the panel's short memories are nearer); account 1's are
    stationary and noisy (the back-off's long median is)."""
    rng = random.Random(3)
    keys, waits = [], []
    for i in range(n):
        a = i % 2
        keys.append(KEY.format(a=a, c=2 if a == 0 else 4))
        waits.append(max(1.0, 100.0 * 1.003**i * rng.lognormvariate(0, 0.3)) if a == 0 else rng.lognormvariate(7, 1.2))
    return keys, waits


def run(pool, keys, waits, gap_s=50.0, watch=None):
    t = 0.0
    for i, (key, wait) in enumerate(zip(keys, waits)):
        told = pool.told(key, t, None)
        pool.observe(key, wait, at_s=t + 1.0, told=told)
        if watch is not None:
            watch(i, key)
        t += gap_s
    return t


def test_a_memory_keeps_sums_over_its_span_or_every_wait():
    span = TopMemory(2, 100.0, median=False)
    span.add(0.0, (1.0, 0.0))
    span.add(50.0, (0.0, 1.0))
    assert span.n == 2 and span.statistic() == [0.5, 0.5]
    span.add(120.0, (0.0, 0.0))  # the wait at 0 s is older than 100 s: it leaves
    assert span.n == 2 and span.statistic() == [0.0, 0.5]
    median = TopMemory(2, 100.0, median=True)
    for at, values in ((0.0, (0.1, 0.5)), (10.0, (0.3, 0.2)), (20.0, (0.2, 0.4)), (115.0, (0.9, 0.9))):
        median.add(at, values)
    assert median.n == 2 and median.statistic() == [0.9, 0.9]  # of (0.2, 0.9) and (0.4, 0.9): the upper
    cumulative = TopMemory(2, 0.0, median=False)
    for at in range(500):
        cumulative.add(float(at) * 1e6, (1.0, 0.0))
    assert cumulative.n == 500 and cumulative.statistic() == [1.0, 0.0] and not cumulative.times  # sums only
    assert TopMemory(2, 0.0, median=False).statistic() == [0.0, 0.0]


def test_follow_starts_on_the_back_off_needs_a_count_and_has_hysteresis():
    assert follow([0.5, 0.1], 9, 0, 10, 0.0) == 0  # too few judged waits: the back-off
    assert follow([0.5, 0.1], 10, 0, 10, 0.0) == 1
    assert follow([0.5, 0.1], 9, 1, 10, 0.0) == 0  # back under the count: the back-off again
    assert follow([0.3, 0.3], 10, 0, 0, 0.0) == 0  # ties to the back-off
    assert follow([0.3, 0.28], 10, 0, 0, 0.05) == 0  # within the margin: kept
    assert follow([0.28, 0.3], 10, 1, 0, 0.05) == 1
    assert follow([0.2, 0.3], 10, 1, 0, 0.05) == 0  # past it: switch


@pytest.mark.parametrize("loss", ["window", "over", "clip"])
def test_each_account_follows_its_better_learner_over_the_memory_starting_on_the_back_off(loss):
    keys, waits = two_accounts()
    extra = {"hedge_top_tau": 0.3} if loss == "clip" else {}
    pool = make_pool("hedge", **JUMPY, **TOP, hedge_top_loss=loss, hedge_top_memory_s=0, hedge_top_min_n=50, **extra)
    left_at: dict[str, int] = {}

    def watch(i, key):
        group = pool.top_group(pool.panel(key))
        memory = pool._memory.get(group)
        if pool.top_followed(pool.panel(key)) != 0 and group not in left_at:
            left_at[group] = memory.n

    run(pool, keys, waits, watch=watch)
    drift, stationary = (f"cluster=g|account=a{a}#top" for a in (0, 1))
    assert set(pool._memory) == {drift, stationary}  # one memory per account, none per cluster
    assert all(n >= 50 for n in left_at.values())  # no account left the back-off before 50 judged waits
    assert pool._kept[drift] == 1 and pool._kept[stationary] == 0
    # the weights are exp(-eta * n * statistic) (eta: the panel's 4, no top rate set)
    for group in (drift, stationary):
        memory, weights = pool._memory[group], pool.top_weights(group)
        stat = memory.statistic()
        assert weights[1] - weights[0] == pytest.approx(-4.0 * memory.n * (stat[1] - stat[0]))
    # asad explain names what the account follows
    assert pool.dominant(keys[-2]).expert != "backoff" and pool.dominant(keys[-1]).expert == "backoff"
    # without the memory (the tenth round's per-account leader on the same loss): no memory and no
    # count, so an account may follow the panel after its first few waits
    if loss == "window":
        plain = make_pool("hedge", **JUMPY, **TOP, hedge_top_loss="window")
        seen: dict[str, int] = {}
        plain_left_at: dict[str, int] = {}

        def count(i, key):
            group = plain.top_group(plain.panel(key))
            seen[group] = seen.get(group, 0) + 1
            if plain.top_followed(plain.panel(key)) != 0:
                plain_left_at.setdefault(group, seen[group])

        run(plain, keys, waits, watch=count)
        assert not plain._memory and min(plain_left_at.values()) < 50


def test_a_memory_with_a_span_forgets_and_an_idle_account_returns_to_the_back_off():
    pairs = [(k, w) for k, w in zip(*two_accounts(1200)) if "account=a0" in k]
    keys, waits = [k for k, _ in pairs], [w for _, w in pairs]
    pool = make_pool("hedge", **JUMPY, **TOP, hedge_top_loss="over", hedge_top_memory_s=20_000.0, hedge_top_min_n=50)
    t = run(pool, keys, waits)
    group = "cluster=g|account=a0#top"
    memory = pool._memory[group]
    assert memory.n == 20_000 // 50 + 1 and pool._kept[group] == 1  # 20,000 s of waits 50 s apart, both ends
    # a month later one wait: the memory holds it alone, under the count, so the back-off
    told = pool.told(keys[0], t + 30 * 86400.0, None)
    pool.observe(keys[0], waits[-1], at_s=t + 30 * 86400.0 + 1.0, told=told)
    assert memory.n == 1 and pool._kept[group] == 0 and pool.dominant(keys[0]).expert == "backoff"


def test_the_clip_loss_and_the_clusters_running_threshold():
    pool = make_pool("hedge", hedge_top="learners", hedge_top_loss="clip", hedge_top_tau=0.4)
    assert pool.top_losses("c#top", (1.0, 1.2), 1.1) == pytest.approx({0: 0.25, 1: 0.25})
    assert pool.top_losses("c#top", (1.0, 2.0), 1.1) == pytest.approx({0: 0.25, 1: 1.0})  # clipped at tau
    keys, waits = two_accounts(400)
    over = make_pool("hedge", **JUMPY, **TOP, hedge_top_loss="over", hedge_top_tau_scope="cluster",
                     hedge_top_memory_s=0)
    run(over, keys, waits)
    # one running threshold for the cluster, fed by every account's waits; none per account
    assert set(over._tau_recent) == {"cluster=g#top"} and len(over._tau_recent["cluster=g#top"]) > 300
    own = make_pool("hedge", **JUMPY, **TOP, hedge_top_loss="over", hedge_top_memory_s=0)
    run(own, keys, waits)
    assert set(own._tau_recent) == {"cluster=g|account=a0#top", "cluster=g|account=a1#top"}


def test_the_settings_are_checked_and_persisted():
    for bad in ({"hedge_top_loss": "clip"},  # no tau
                {"hedge_top_memory_s": -5.0},
                {"hedge_top_memory_s": 0.0, "hedge_top_combine": "draw"},
                {"hedge_top_min_n": 10},  # a count without a memory
                {"hedge_top_tau_scope": "queue"}):
        with pytest.raises(ValueError, match="hedge_top"):
            make_pool("hedge", hedge_top="learners", **bad)
    # the margin goes with a memory and any loss now
    pool = make_pool("hedge", hedge_top="learners", hedge_top_loss="over", hedge_top_memory_s=0.0, hedge_top_margin=0.01,
                     hedge_top_min_n=20, hedge_top_tau_scope="cluster")
    back = type(pool).from_state(pool.to_state())
    cfg = back.config
    assert (cfg.hedge_top_memory_s, cfg.hedge_top_min_n, cfg.hedge_top_tau_scope, cfg.hedge_top_margin) == (
        0.0, 20, "cluster", 0.01)
    assert not math.isnan(cfg.hedge_top_memory_s)
