"""Issue 38, fourteenth round: a meta level per cluster that chooses between the cluster's top
level and the floor share's (``hedge_top_groups: floor+cluster``; asad/learn/hedge_meta.py)."""

from __future__ import annotations

import math

import pytest
from test_learn_hedge_floor import FLOOR, floored_run
from test_learn_hedge_memory import two_accounts

from asad.learn.experts_config import ExpertsConfig
from asad.learn.registry import make_pool

# both top levels as the ninth and thirteenth rounds' draws (without ``hedge_top_told``, so the
# learners' answers each pays on do not depend on which top level answered)
DRAWS = {**FLOOR, "hedge_top_combine": "draw", "hedge_top_loss": "win", "hedge_top_margin": 0.0}
META = {**DRAWS, "hedge_top_groups": "floor+cluster"}
CLUSTER_TOP, META_GROUP = "cluster=g#top", "cluster=g#meta"


def run(pool, keys, waits, gap_s=50.0):
    """As test_learn_hedge_floor's ``floored_run`` (the same floors job by job), for any pool."""
    t = 0.0
    for i, (key, wait) in enumerate(zip(keys, waits)):
        since = None if i % 3 == 0 else t - 10 ** ((i * 7919) % 41 / 10.0)
        pool.observe(key, wait, at_s=t + 1.0, told=pool.told(key, t, since))
        t += gap_s


def tops(pool):
    return {g: list(w) for g, w in pool.log_weights.items() if g.endswith("#top")}


@pytest.mark.parametrize("combine,loss", [("draw", "win"), ("leader", "win"), ("leader", "window")])
def test_both_top_levels_keep_their_own_weights_as_alone(combine, loss):
    """The cluster's top level under the meta level has the weights the per-cluster learner has
    on the same jobs, and each floor share's those of the per-floor-share learner: the meta level
    only chooses between them (whatever its combine and loss)."""
    keys, waits = two_accounts(900)
    meta = make_pool("hedge", seed=0, **META, hedge_meta_combine=combine, hedge_meta_loss=loss)
    run(meta, keys, waits)
    alone = {}
    for groups in ("cluster", "floor"):
        pool = make_pool("hedge", seed=0, **{**DRAWS, "hedge_top_groups": groups})
        run(pool, keys, waits)
        alone.update(tops(pool))
    assert CLUSTER_TOP in alone and len(alone) >= 4
    assert tops(meta) == alone
    assert META_GROUP in meta.log_weights  # and the meta level's own weights


def test_the_answer_is_the_chosen_top_levels():
    """A floored job is told what the top level the meta level follows answers: the floor
    share's (here the panel's mixture) or the cluster's (here the back-off's)."""
    pool = make_pool("hedge", seed=0, **META, hedge_meta_combine="leader")
    keys, waits = two_accounts(400)
    floored_run(pool, keys, waits)
    key = keys[0]  # the drifting account: the panel's mixture differs from the back-off
    backoff, mixture = pool.top_values(pool.panel(key))
    assert abs(backoff - mixture) > 0.01
    pool._drawn.clear()  # follow the heaviest learner of each top group
    pool.log_weights[CLUSTER_TOP] = [0.0, -20.0]  # the cluster's: the back-off
    pool.log_weights["cluster=g#floor:<0.25#top"] = [-20.0, 0.0]  # a small floor's: the panel
    now = 1e6
    pool.log_weights[META_GROUP] = [-20.0, 0.0]  # the meta level: the floor share's
    assert math.isclose(pool.told(key, now, now - 1.0)[0], mixture)
    pool.log_weights[META_GROUP] = [0.0, -20.0]  # the meta level: the cluster's
    assert math.isclose(pool.told(key, now, now - 1.0)[0], backoff)
    pool.log_weights[META_GROUP] = [0.0, 0.0]  # a tie: the cluster's
    assert math.isclose(pool.told(key, now, now - 1.0)[0], backoff)
    assert pool.dominant(key).group == CLUSTER_TOP


@pytest.mark.parametrize("loss", ["win", "window"])
def test_the_meta_level_favours_the_top_level_nearer_the_wait(loss):
    """One wait, where the cluster's top level follows the back-off and the floor share's the
    panel: the nearer one's meta weight rises against the other's."""
    pool = make_pool("hedge", seed=0, **META, hedge_meta_combine="leader", hedge_meta_loss=loss)
    keys, waits = two_accounts(400)
    floored_run(pool, keys, waits)
    key = keys[0]
    now = 2e6
    pool._drawn.clear()
    pool.log_weights[CLUSTER_TOP] = [0.0, -20.0]
    pool.log_weights["cluster=g#floor:<0.25#top"] = [-20.0, 0.0]
    pool.log_weights[META_GROUP] = [0.0, 0.0]
    backoff, mixture = pool.top_values(pool.panel(key))
    for nearer, other in ((1, 0), (0, 1)):  # the wait at the mixture's answer, then the back-off's
        pool.log_weights[META_GROUP] = [0.0, 0.0]
        pool._drawn.clear()
        pool.log_weights[CLUSTER_TOP] = [0.0, -20.0]
        pool.log_weights["cluster=g#floor:<0.25#top"] = [-20.0, 0.0]
        told = pool.told(key, now, now - 1.0)
        assert told.context == "<0.25"
        y = mixture if nearer == 1 else backoff
        wait = 10 ** y - 1.0
        pool._window.clear()  # the window loss: this wait alone
        pool.observe(key, wait, at_s=now + wait, told=told)
        w = pool.log_weights[META_GROUP]
        assert w[nearer] > w[other]
        now += 1e5


def test_the_meta_weights_are_saved_and_loaded():
    pool = make_pool("hedge", seed=0, **META)
    keys, waits = two_accounts(600)
    floored_run(pool, keys, waits)
    state = pool.to_state()
    back = type(pool).from_state(state)
    assert back.config.hedge_top_groups == "floor+cluster"
    assert back.log_weights[META_GROUP] == pool.log_weights[META_GROUP]
    assert tops(back) == tops(pool)
    # a meta group of another length (not this level's) is not loaded
    for row in state["keys"].values():
        if META_GROUP in row.get("hedge_weights", {}):
            row["hedge_weights"][META_GROUP] = [0.0, 0.0, 0.0]
    assert META_GROUP not in type(pool).from_state(state).log_weights


def test_the_meta_settings_are_checked():
    with pytest.raises(ValueError):
        ExpertsConfig(hedge_meta_combine="mean")
    with pytest.raises(ValueError):
        ExpertsConfig(hedge_meta_loss="over")
    assert ExpertsConfig(hedge_top="learners", hedge_top_groups="floor+cluster").hedge_top_groups == "floor+cluster"
