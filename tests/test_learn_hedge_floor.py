"""Issue 38, thirteenth round: the top level's weights per bucket of the pending floor's share of
the back-off's answer (``hedge_top_groups: floor``; asad/learn/hedge_context.py), the bucket
recorded when a job is told and carried back with its wait."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from test_hedge_contexts import _load
from test_learn_hedge_memory import JUMPY, KEY, two_accounts

from asad.learn.hedge_context import FLOOR_NAMES, NO_FLOOR, ToldIn, floor_share_bucket, told_context
from asad.learn.registry import make_pool

FLOOR = {**JUMPY, "hedge_top": "learners", "hedge_top_groups": "floor", "hedge_top_combine": "leader",
         "hedge_top_loss": "window", "hedge_top_margin": 0.005}
ALL = (NO_FLOOR, *FLOOR_NAMES)


def test_the_buckets():
    assert floor_share_bucket(None, 2.0) == "none"
    assert floor_share_bucket(0.4, 2.0) == "<0.25"
    assert floor_share_bucket(0.5, 2.0) == "0.25-0.5"  # an edge belongs to the bucket above it
    assert floor_share_bucket(1.9, 2.0) == "0.75-1"
    assert floor_share_bucket(2.0, 2.0) == "binds"
    assert floor_share_bucket(3.0, 0.0) == "<0.25"  # the analysis's share 0 for a back-off of 0


@given(st.one_of(st.none(), st.floats(0, 8)), st.floats(0, 8))
def test_the_bucket_is_the_analysis_floor_share(floor, backoff):
    """The learner's context is scripts/hedge_contexts.py's ``floor share`` (the context the
    twelfth round found adding to the per-cluster choice on both clusters)."""
    mod = _load()
    from hedge_hindsight import Told
    told = [Told(backoff, backoff, (backoff,) * 5, "g#0", ("g#0:3", "s", "acct"), 0,
                 -1.0 if floor is None else floor)]
    ctx = mod.contexts(told, np.ones(1, dtype=int), np.zeros(1), np.zeros(1, dtype=int))
    assert floor_share_bucket(floor, backoff) == ctx["floor share"][0]
    assert "#" not in floor_share_bucket(floor, backoff)


def test_a_told_job_carries_its_context_and_reads_as_a_told():
    told = ToldIn((1.5, "0:2", None), "0.5-0.75")
    y, stratum, shifts = told  # still a Told
    assert (y, stratum, shifts) == (1.5, "0:2", None) and told_context(told) == "0.5-0.75"
    # without a carried context (the daemon's JSON; rebuilt): the floor bound or not
    assert told_context((1.5, "0:2:p", None)) == "binds" and told_context((1.5, "0:2", None)) == "none"
    assert told_context(None) == "none"


def floored_run(pool, keys, waits, gap_s=50.0):
    """Tell and observe each job in turn, with a pending floor that varies from job to job (the
    oldest pending job of its class became eligible 0 .. 10^4 s before); returns per job the
    context it was told in, for the jobs whose wait is judged (a panel stood when it was told)."""
    contexts = []
    t = 0.0
    for i, (key, wait) in enumerate(zip(keys, waits)):
        since = None if i % 3 == 0 else t - 10 ** ((i * 7919) % 41 / 10.0)
        told = pool.told(key, t, since)
        if told is not None and pool.panel(key, t + 1.0 - wait) is not None:
            contexts.append(told.context)
        pool.observe(key, wait, at_s=t + 1.0, told=told)
        t += gap_s
    return contexts


def tops(pool):
    return {g: list(w) for g, w in pool.log_weights.items() if g.endswith("#top")}


def test_each_floor_share_keeps_its_own_weights():
    pool = make_pool("hedge", seed=0, **FLOOR)
    keys, waits = two_accounts(1500)
    contexts = floored_run(pool, keys, waits)
    assert len(set(contexts)) >= 4  # the run meets several shares
    groups = set(tops(pool))
    assert "cluster=g#top" not in groups  # no weights per cluster: only per floor share
    assert groups == {f"cluster=g#floor:{c}#top" for c in set(contexts)}
    # each context judged as many waits as jobs were told in it (the window loss counts them)
    for context in set(contexts):
        window = pool._window[(f"cluster=g#floor:{context}#top", 0)]
        assert len(window.recent) == min(contexts.count(context), window.size)


def test_a_wait_moves_the_weights_of_the_context_it_was_told_in():
    """The floor is not known when the wait arrives: only the context carried with what the job
    was told says whose weights it moves (recomputed at the wait, it would be "none")."""
    pool = make_pool("hedge", seed=0, **FLOOR)
    key = KEY.format(a=0, c=2)
    for i in range(30):  # learn some waits without a floor
        pool.observe(key, 100.0 + 10 * i, at_s=100.0 * i + 200.0, told=pool.told(key, 100.0 * i, None))
    now = 5000.0
    backoff = pool.panel(key).backoff
    since = now - (10 ** (0.6 * backoff) - 1.0)  # a floor of 0.6 of the back-off's answer
    told = pool.told(key, now, since)
    assert told.context == "0.5-0.75"
    before = tops(pool)
    pool.observe(key, 5000.0, at_s=now + 5000.0, told=told)
    after = tops(pool)
    moved = {g for g in after if after[g] != before.get(g)}
    assert moved == {"cluster=g#floor:0.5-0.75#top"}


def test_the_told_answer_is_the_contexts_leaders():
    """Two contexts that follow different learners tell a job of the same key different answers."""
    pool = make_pool("hedge", seed=0, **{**FLOOR, "hedge_top_margin": 0.0})
    keys, waits = two_accounts(400)
    floored_run(pool, keys, waits)
    key = keys[0]  # the drifting account: the panel's mixture differs from the back-off
    panel = pool.panel(key)
    backoff, mixture = pool.top_values(panel)
    assert abs(backoff - mixture) > 0.01
    pool.log_weights["cluster=g#floor:none#top"] = [0.0, -20.0]  # no floor: the back-off
    pool.log_weights["cluster=g#floor:<0.25#top"] = [-20.0, 0.0]  # a small floor: the panel
    now = 1e6
    assert math.isclose(pool.told(key, now, None)[0], backoff)
    cached = (pool._estimates.get(key), pool._strata.get(key))
    assert math.isclose(pool.told(key, now, now - 1.0)[0], mixture)  # log10(2): under both answers
    assert (pool._estimates.get(key), pool._strata.get(key)) == cached  # the cache put back as it was
    assert math.isclose(pool.told(key, now, None)[0], backoff)  # the cache keeps the "none" answer
    view = pool.view(key)
    assert math.isclose(math.log10(1.0 + view.estimate(now_s=now, pending_since_s=now - 1.0)), mixture)


def test_the_floor_weights_are_saved_and_loaded():
    pool = make_pool("hedge", seed=0, **FLOOR)
    keys, waits = two_accounts(600)
    floored_run(pool, keys, waits)
    back = type(pool).from_state(pool.to_state())
    assert back.config.hedge_top_groups == "floor"
    saved = tops(pool)
    assert len(saved) >= 3 and {g: back.log_weights.get(g) for g in saved} == saved
