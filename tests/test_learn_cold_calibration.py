"""Issue 38, seventh round: cold answers' own calibration (``aci_gamma_cold``, ``cold_pool``) and
the hysteresis of hedge's window leader (``hedge_top_margin``)."""

from __future__ import annotations

import math

import pytest

from asad.learn.calibration import ACI_QS, COLD_POOL, is_cold_stratum
from asad.learn.hedge import Panel
from asad.learn.registry import make_pool

KEY = "cluster=g|account=a{a}|partition=p|qos=|nodes={n}|cpus=2|walltime<=3h"
COARSEST = "cluster=g"


def warm_then_cold(pool, n_cold: int = 30):
    """Waits of one account (warm), then single jobs of new accounts of the same geometry (cold:
    answered by a coarser level), each told and then learned."""
    t = 0.0
    for i in range(40):
        told = pool.told(KEY.format(a=0, n=1), t, None)
        pool.observe(KEY.format(a=0, n=1), 100.0 + 10 * (i % 7), at_s=t + 5.0, told=told)
        t += 50.0
    for i in range(n_cold):
        key = KEY.format(a=100 + i, n=1 if i % 2 else 2 + i)  # a new node count: a coarser level
        told = pool.told(key, t, None)
        pool.observe(key, 30.0 * (1 + i % 5), at_s=t + 5.0, told=told)
        t += 50.0
    return t


def test_a_stratum_is_cold_when_a_coarser_level_answered():
    assert not is_cold_stratum("0") and not is_cold_stratum("0:p") and not is_cold_stratum("0:3")
    assert is_cold_stratum("4") and is_cold_stratum("5:p") and is_cold_stratum("2:1")
    assert not is_cold_stratum(None) and not is_cold_stratum("all")


@pytest.mark.parametrize("cold", [False, True])
def test_cold_strata_step_aci_at_their_own_rate_and_warm_ones_at_the_pools(cold):
    pool = make_pool("median-backoff", aci_gamma=0.001, aci_gamma_cold=0.02, min_residuals=1)
    t = warm_then_cold(pool)
    key = KEY.format(a=0 if not cold else 999, n=1)
    told = pool.told(key, t, None)
    y, stratum, shifts = told
    assert is_cold_stratum(stratum) == cold and shifts is not None
    window = pool.stats[COARSEST].strata[stratum]
    before = list(window.offsets)
    wait = 60.0
    pool.observe(key, wait, at_s=t + 5.0, told=told)
    r = math.log10(1.0 + wait) - y
    gamma = 0.02 if cold else 0.001
    expected = [o + gamma * (q - (1.0 if r <= s else 0.0)) for o, q, s in zip(before, ACI_QS, shifts)]
    assert window.offsets == pytest.approx(expected)
    # an early miss (a job still pending past its told quantile) steps at the same rate
    key = KEY.format(a=0 if not cold else 998, n=1)  # a cold key still cold
    told = pool.told(key, t + 100.0, None)
    assert told[1] == stratum
    before = list(window.offsets)
    pool.aci_miss(key, told, 0)
    assert window.offsets[0] == pytest.approx(before[0] + gamma * ACI_QS[0])  # not covered: + gamma q


def test_a_cold_stratum_short_of_residuals_reads_the_cold_answers_pool():
    def quantile(cold_pool: bool) -> tuple[float, int]:
        pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=20, cold_pool=cold_pool)
        warm_then_cold(pool, n_cold=30)
        stats = pool.stats[COARSEST]
        cold_strata = [s for s in stats.strata if is_cold_stratum(s)]
        assert len(cold_strata) >= 2 and all(len(stats.strata[s]) < 20 for s in cold_strata if s != COLD_POOL)
        key = KEY.format(a=999, n=1)
        _, stratum, _ = pool.told(key, 1e6, None)
        assert is_cold_stratum(stratum)
        pooled = stats.strata.get(COLD_POOL)
        return pool.residual_quantiles(key, (0.5,), stratum)[0], (0 if pooled is None else len(pooled))

    plain, none_pooled = quantile(False)
    with_pool, pooled = quantile(True)
    assert none_pooled == 0 and pooled == 30  # every cold answer's residual, whatever its stratum
    # the cold answers ran low (waits 30-150 s told ~130 s), the warm ones near 0: the pooled
    # cold median is lower than the cluster's pooled median, which the warm residuals dominate
    assert with_pool < plain - 0.05


def test_the_window_leader_switches_only_past_the_margin():
    pool = make_pool("hedge", hedge_batch_s=-1, hedge_top="learners", hedge_top_loss="window", hedge_top_window=1,
                     hedge_top_eta=1, hedge_top_margin=0.1)
    plain = make_pool("hedge", hedge_batch_s=-1, hedge_top="learners", hedge_top_loss="window", hedge_top_window=1,
                      hedge_top_eta=1)
    panel = Panel(1.0, "0", "cluster=g#0", (1.0, 1.0, 1.0, None, 1.0, 1.0))
    group = pool.top_group(panel)
    for p in (pool, plain):
        p._update_top(panel, (1.0, 1.05), 1.05, None)  # the panel nearer by 0.05: less than the margin
    assert plain.top_followed(panel) == 1 and pool.top_followed(panel) == 0
    assert pool.dominant  # the back-off stays followed until the panel is better by 0.1
    pool._update_top(panel, (1.0, 1.3), 1.3, None)  # now by 0.3
    assert pool.top_followed(panel) == 1 and pool._kept[group] == 1
    pool._update_top(panel, (1.25, 1.3), 1.28, None)  # the back-off nearer by 0.01 only: kept
    assert pool.top_followed(panel) == 1
    pool._update_top(panel, (1.3, 1.0), 1.28, None)  # by 0.26: back
    assert pool.top_followed(panel) == 0
    with pytest.raises(ValueError, match="hedge_top_margin"):
        make_pool("hedge", hedge_top="learners", hedge_top_loss="win", hedge_top_margin=0.1)


def test_top_level_strata_keep_each_followed_learners_residuals_apart():
    pool = make_pool("hedge", hedge_batch_s=-1, hedge_top="learners", hedge_top_loss="window", hedge_top_window=1,
                     hedge_top_eta=1, hedge_top_margin=0.1, hedge_top_strata=True)
    t = warm_then_cold(pool, n_cold=4)
    key = KEY.format(a=0, n=1)
    panel = pool.panel(key)
    group = pool.top_group(panel)
    strata = pool.stats[COARSEST].strata
    before = {i: len(strata.get(f"{panel.stratum}:L{i}", ())) for i in (0, 1)}
    for followed in (0, 1):
        pool._kept[group] = followed
        told = pool.told(key, t, None)
        assert told[1] == f"{panel.stratum}:L{followed}"
        pool.observe(key, 100.0, at_s=t + 5.0, told=told)
        t += 50.0
    assert [len(strata[f"{panel.stratum}:L{i}"]) - before[i] for i in (0, 1)] == [1, 1]
    plain = make_pool("hedge", hedge_top="learners", hedge_top_loss="window", hedge_top_eta=1)
    warm_then_cold(plain, n_cold=4)
    assert plain.told(key, t, None)[1] == panel.stratum  # off: the answering level alone
