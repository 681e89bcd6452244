"""Issue 38, twelfth round: the top level's weights per context, ``hedge_top_groups:
disagreement`` (the bucket of |back-off - mixture| and its sign; asad/learn/hedge_context.py)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from test_learn_hedge_memory import JUMPY, two_accounts

from asad.learn.hedge_context import DISAGREE_NAMES, disagreement_bucket
from asad.learn.registry import make_pool

CONTEXT = {**JUMPY, "hedge_top": "learners", "hedge_top_groups": "disagreement", "hedge_top_combine": "leader",
           "hedge_top_loss": "window", "hedge_top_margin": 0.005}


def test_the_buckets_and_the_sign():
    assert disagreement_bucket(2.0, 2.0) == "<0.01:level"
    assert disagreement_bucket(2.0, 2.004) == "<0.01:level"
    assert disagreement_bucket(2.0, 2.008) == "<0.01:b<p"
    assert disagreement_bucket(2.05, 2.0) == "0.03-0.1:b>p"
    assert disagreement_bucket(1.0, 1.3) == "0.3-1:b<p"  # an edge belongs to the bucket above it
    assert disagreement_bucket(3.5, 1.0) == ">=1:b>p"


@given(st.floats(0, 8), st.floats(0, 8))
def test_every_pair_has_one_named_context_without_a_hash(backoff, mixture):
    bucket, sign = disagreement_bucket(backoff, mixture).split(":")
    assert bucket in DISAGREE_NAMES and "#" not in bucket
    assert sign == ("level" if abs(backoff - mixture) < 0.005 else "b>p" if backoff > mixture else "b<p")
    # swapping the two answers keeps the bucket and flips the sign
    assert disagreement_bucket(mixture, backoff).split(":")[0] == bucket


def run_told(pool, keys, waits, gap_s=50.0):
    """Tell and observe each job in turn; returns the top group each job's panel named when told."""
    told_groups, t = [], 0.0
    for key, wait in zip(keys, waits):
        told = pool.told(key, t, None)
        panel = pool.panel(key)
        if panel is not None:
            told_groups.append(pool.top_group(panel))
            # the group is the context of the two learners' answers as the job is told
            backoff, mixture = pool.top_values(panel)
            assert pool.top_group(panel) == f"cluster=g#{disagreement_bucket(backoff, mixture)}#top"
        pool.observe(key, wait, at_s=t + 1.0, told=told)
        t += gap_s
    return told_groups


def test_each_context_keeps_its_own_weights_and_follows_its_own_learner():
    pool = make_pool("hedge", seed=0, **CONTEXT)
    keys, waits = two_accounts()
    groups = run_told(pool, keys, waits)
    tops = {g for g in pool.log_weights if g.endswith("#top")}
    assert "cluster=g#top" not in tops  # no weights per cluster: only per context
    assert len(tops) >= 6
    # the weights learned are the contexts' the jobs were told in (the panel is rebuilt as it
    # stood when told, so a wait lands in its job's context)
    assert tops <= set(groups)
    busy = {g for g in tops if groups.count(g) >= 100}
    followed = {pool._kept.get(g, 0) for g in busy}
    assert followed == {0, 1}  # some contexts follow the back-off, others the panel
    # the same learner per cluster keeps one group, one learner followed for every job
    one = make_pool("hedge", seed=0, **{**CONTEXT, "hedge_top_groups": "cluster"})
    t = 0.0
    for key, wait in zip(keys, waits):
        one.observe(key, wait, at_s=t + 1.0, told=one.told(key, t, None))
        t += 50.0
    assert {g for g in one.log_weights if g.endswith("#top")} == {"cluster=g#top"}


def test_the_context_weights_are_saved_and_loaded():
    pool = make_pool("hedge", seed=0, **CONTEXT)
    keys, waits = two_accounts(600)
    run_told(pool, keys, waits)
    back = type(pool).from_state(pool.to_state())
    assert back.config.hedge_top_groups == "disagreement"
    tops = {g: w for g, w in pool.log_weights.items() if g.endswith("#top")}
    assert tops and {g: back.log_weights.get(g) for g in tops} == tops


def test_an_unknown_grouping_is_refused():
    with pytest.raises(ValueError, match="hedge_top_groups"):
        make_pool("hedge", hedge_top="learners", hedge_top_groups="queue")
