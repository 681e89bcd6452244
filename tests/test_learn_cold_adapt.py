"""Issue 38, eighth round: a cold stratum's ACI step that grows with its recent miss bias
(``aci_cold_adapt_max``, asad/learn/calibration.py AciAdapt)."""

from __future__ import annotations

import math

import pytest

from asad.learn.calibration import ACI_QS, AciAdapt, ResidualWindow
from asad.learn.experts import ExpertsPool
from asad.learn.registry import make_pool

from tests.test_learn_cold_calibration import COARSEST, KEY, warm_then_cold


def test_the_step_stays_at_the_base_rate_while_calibrated_and_grows_with_a_run_of_misses():
    adapt = AciAdapt(0.01, 20)
    i = ACI_QS.index(0.5)
    calibrated, missing = ResidualWindow(100), ResidualWindow(100)
    steps = []
    for n in range(200):  # alternately covered and not: coverage 50 %, as asked
        before = calibrated.offsets[i]
        calibrated.aci_step(i, n % 2 == 0, 0.001, adapt)
        steps.append(abs(calibrated.offsets[i] - before) / 0.5)
    assert max(steps[100:]) < 0.0015  # the bias is near 0: the step near the base 0.001
    for _ in range(200):  # never covered: every outcome off one way
        before = missing.offsets[i]
        missing.aci_step(i, False, 0.001, adapt)
    assert (missing.offsets[i] - before) / 0.5 == pytest.approx(0.01, rel=1e-3)  # the bias at its full
    # without the adaptive step the same run moves at the base rate only
    plain = ResidualWindow(100)
    for _ in range(200):
        plain.aci_step(i, False, 0.001)
    assert plain.offsets[i] == pytest.approx(200 * 0.001 * 0.5)
    assert missing.offsets[i] > 5 * plain.offsets[i]


def test_the_bias_survives_a_restart():
    window = ResidualWindow(10)
    window.add(0.1)
    window.aci_step(0, False, 0.001, AciAdapt(0.01, 20))
    back = ResidualWindow.from_state(window.to_state(), 10)
    assert back.bias == window.bias and back.bias[0] > 0
    assert "bias" not in ResidualWindow(10).to_state()  # nothing stored while unused


@pytest.mark.parametrize("adapt", [False, True])
def test_only_cold_strata_adapt_their_step(adapt):
    params = {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 5} if adapt else {}
    pool = make_pool("median-backoff", aci_gamma=0.001, min_residuals=1, **params)
    t = warm_then_cold(pool)
    stats = pool.stats[COARSEST]
    cold = [s for s, w in stats.strata.items() if s.split(":")[0] not in ("0", "all") and any(w.bias)]
    warm = [w for s, w in stats.strata.items() if s.split(":")[0] == "0"]
    assert warm and not any(any(w.bias) for w in warm)  # warm strata keep the plain step
    assert bool(cold) == adapt
    # a cold job whose wait runs far past every told quantile steps the cold stratum faster
    key = KEY.format(a=999, n=1)
    y, stratum, shifts = pool.told(key, t, None)
    window = stats.strata[stratum]
    before = list(window.offsets)
    pool.observe(key, 1e6, at_s=t + 1e6, told=(y, stratum, shifts))
    moved = window.offsets[-1] - before[-1]  # not covered at q0.95: + gamma * 0.95
    if adapt:
        assert moved > 0.001 * ACI_QS[-1] * 1.5
    else:
        assert moved == pytest.approx(0.001 * ACI_QS[-1])


def test_the_setting_is_checked_and_persisted():
    with pytest.raises(ValueError, match="aci_cold_adapt"):
        make_pool("median-backoff", aci_cold_adapt_max=1.5)
    pool = make_pool("median-backoff", aci_cold_adapt_max=0.008, aci_cold_adapt_halflife=200)
    back = ExpertsPool.from_state(pool.to_state())
    assert back.config.aci_cold_adapt_max == 0.008 and back.config.aci_cold_adapt_halflife == 200
    assert not math.isnan(back.config.aci_cold_adapt_max)
