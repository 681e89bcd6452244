"""Issue 38, sixteenth session: a cold stratum hears each key's burst once
(``cold_once_per_key``): a key's cold jobs are told before any of their waits is known, so a
burst of thousands would otherwise set the calibration the next new key is told."""

from __future__ import annotations

import pytest

from asad.learn.calibration import is_cold_stratum
from asad.learn.experts import ExpertsPool
from asad.learn.registry import make_pool

from tests.test_learn_cold_calibration import COARSEST, KEY, warm_then_cold


def _burst(pool, t: float, size: int = 20):
    """``size`` jobs of one new key, all told before any of them starts, then all learned."""
    key = KEY.format(a=777, n=5)
    told = [pool.told(key, t + i, None) for i in range(size)]
    stratum = told[0][1]
    assert is_cold_stratum(stratum)
    window = pool.stats[COARSEST].strata[stratum]
    n_before, offsets_before = len(window), list(window.offsets)
    for i, answer in enumerate(told):
        pool.observe(key, 5000.0, at_s=t + 5000.0 + i, told=answer)
    return key, answer, window, len(window) - n_before, offsets_before


@pytest.mark.parametrize("once", [False, True])
def test_a_burst_feeds_its_cold_stratum_once(once):
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_once_per_key=once)
    t = warm_then_cold(pool)
    _, _, window, added, before = _burst(pool, t)
    assert added == (1 if once else 20)
    # every job waited past every told quantile: one ACI step per level, or twenty
    moved = window.offsets[-1] - before[-1]
    assert moved == pytest.approx((1 if once else 20) * 0.001 * 0.95)


def test_a_burst_s_early_misses_count_once_per_level_and_not_again_with_its_wait():
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_once_per_key=True)
    t = warm_then_cold(pool)
    key = KEY.format(a=778, n=6)
    told = [pool.told(key, t + i, None) for i in range(10)]
    window = pool.stats[COARSEST].strata[told[0][1]]
    before = list(window.offsets)
    for answer in told:  # ten pending jobs past their q0.05 quantile: one miss heard
        pool.aci_miss(key, answer, 0)
    assert window.offsets[0] - before[0] == pytest.approx(0.001 * 0.05)
    pool.observe(key, 5000.0, at_s=t + 5000.0, told=told[0], fed=())  # level 0 was fed by the burst
    assert window.offsets[0] - before[0] == pytest.approx(0.001 * 0.05)
    assert window.offsets[1] - before[1] == pytest.approx(0.001 * 0.1)  # the others step once now


def test_which_bursts_were_heard_survives_a_restart():
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, cold_once_per_key=True)
    t = warm_then_cold(pool)
    key, answer, window, added, _ = _burst(pool, t, size=2)
    back = ExpertsPool.from_state(pool.to_state())
    assert back.config.cold_once_per_key
    n = len(back.stats[COARSEST].strata[answer[1]])
    back.observe(key, 5000.0, at_s=t + 9000.0, told=answer)  # another job of the heard burst
    assert len(back.stats[COARSEST].strata[answer[1]]) == n
