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


TOPS = {  # the ninth round's two top levels (scripts/tune_hedge_cold.py)
    "win-told": {"hedge_top": "learners", "hedge_top_combine": "draw", "hedge_top_loss": "win",
                 "hedge_top_eta": 1, "hedge_top_told": True},
    "wmed-m5": {"hedge_top": "learners", "hedge_top_combine": "leader", "hedge_top_loss": "window",
                "hedge_top_eta": 1, "hedge_top_told": True, "hedge_top_margin": 0.005},
    # the eleventh round's long memory (asad/learn/hedge_memory.py): the 28-day median leader
    "wmed28-memory": {"hedge_top": "learners", "hedge_top_combine": "leader", "hedge_top_loss": "window",
                      "hedge_top_eta": 1, "hedge_top_told": True, "hedge_top_margin": 0.005,
                      "hedge_top_memory_s": 28 * 86400.0, "hedge_top_min_n": 5},
}


@pytest.mark.parametrize("groups", ["cluster", "account"])
@pytest.mark.parametrize("top", sorted(TOPS))
def test_the_cold_step_and_hedges_top_level_are_both_in_effect(top, groups):
    """The ninth round's candidates combine a top level with the cold step: both must act, the
    step on the cold strata of what the top level told, the top level as without the step. The
    tenth round's keep the top weights per account (``hedge_top_groups: account``): those must
    be per account with the step too."""
    def run(adapt: bool):
        params = {"aci_cold_adapt_max": 0.02, "aci_cold_adapt_halflife": 5} if adapt else {}
        pool = make_pool("hedge", aci_gamma=0.001, min_residuals=1, hedge_batch_s=-1, hedge_top_groups=groups,
                         **TOPS[top], **params)
        told_ys = []
        told = pool.told

        def recording_told(key, t, floor):
            out = told(key, t, floor)
            told_ys.append(None if out is None else out[0])
            return out
        pool.told = recording_told  # type: ignore[method-assign]
        t = warm_then_cold(pool)
        del pool.told  # back to the method
        return pool, t, told_ys

    plain, _, plain_ys = run(False)
    pool, t, ys = run(True)
    # the top level is in effect: its weights moved off the prior and it chose whom to follow
    group = next(g for g in pool.log_weights if g.endswith("#top"))
    n = len(pool.top_names)
    assert pool.top_weights(group) != [math.log(pool.prior(range(n))[i] * n) for i in range(n)]
    if TOPS[top]["hedge_top_combine"] == "draw":
        assert group in pool._drawn
    if "hedge_top_memory_s" in TOPS[top]:  # the memory is in effect: each top group's judged waits
        assert set(pool._memory) == {g for g in pool.log_weights if g.endswith("#top")}
        if groups == "account":
            assert pool._memory[group].n == 37  # the warm account's 40 waits but 3 told before any wait was known
        assert plain._memory[group].statistic() == pool._memory[group].statistic()  # as without the step
    tops = {g for g in pool.log_weights if g.endswith("#top")}
    if groups == "account":  # one top group per account (the warm one and each cold one), none per cluster
        assert group == "cluster=g|account=a0#top" and len(tops) == 31 and f"{COARSEST}#top" not in tops
    else:
        assert tops == {f"{COARSEST}#top"}
    # the step touches only the quantiles: every told answer, and the top weights, as without it
    assert ys == plain_ys and pool.top_weights(group) == plain.top_weights(group)
    # and the cold step is in effect on the cold strata of the hedge pool, not the warm ones
    stats, plain_stats = pool.stats[COARSEST], plain.stats[COARSEST]
    assert any(any(w.bias) for s, w in stats.strata.items() if s.split(":")[0] not in ("0", "all"))
    assert not any(any(w.bias) for s, w in stats.strata.items() if s.split(":")[0] == "0")
    assert not any(any(w.bias) for w in plain_stats.strata.values())
    key = KEY.format(a=999, n=1)
    moved = {}
    for label, p in (("adapt", pool), ("plain", plain)):
        y, stratum, shifts = p.told(key, t, None)
        window = p.stats[COARSEST].strata[stratum]
        before = window.offsets[-1]
        p.observe(key, 1e6, at_s=t + 1e6, told=(y, stratum, shifts))
        moved[label] = window.offsets[-1] - before
    assert moved["plain"] == pytest.approx(0.001 * ACI_QS[-1])
    assert moved["adapt"] > 1.5 * moved["plain"]
