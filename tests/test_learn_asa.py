"""ASA (Algorithm 1): p stays a distribution, Appendix A's regret bound, determinism, persistence."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.learn.asa import AsaConfig, AsaPredictor
from asad.learn.grid import PAPER_GRID_S, nearest_index
from asad.learn.losses import LossConfig, alternative_losses
from asad.learn.registry import ASA_PRESETS, make_predictor, predictor_from_state

waits = st.one_of(
    st.just(0.0),
    st.floats(min_value=0.0, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.sampled_from([10.0, 95.0, 100_000.0, 1e9]),
)


@settings(max_examples=60, deadline=None)
@given(kind=st.sampled_from(sorted(ASA_PRESETS)), sequence=st.lists(waits, min_size=1, max_size=60),
       repeat=st.integers(min_value=1, max_value=4), seed=st.integers(min_value=0, max_value=2**31))
def test_p_stays_a_distribution(kind, sequence, repeat, seed):
    predictor = make_predictor(kind, seed=seed, repetitions=20)
    for wait in sequence * repeat:
        estimate = predictor.estimate(slurm_estimate_s=wait / 2 if kind == "asa-slurm" else None)
        assert math.isfinite(estimate) and estimate >= 0
        predictor.observe(wait, slurm_estimate_s=wait * 3 if kind == "asa-slurm" else None)
        p = predictor.p
        assert np.all(np.isfinite(p)) and np.all(p >= 0)
        assert p.sum() == pytest.approx(1.0, abs=1e-9)
    qs = predictor.quantiles([0.0, 0.1, 0.5, 0.9, 1.0])
    assert qs == sorted(qs) and all(math.isfinite(q) for q in qs)


def regret_bound(t: int, rounds: int, m: int, delta: float) -> float:
    return 4 * rounds + math.log(m) + math.sqrt(2 * t * math.log(m / delta))


def best_fixed_loss(sequence: np.ndarray, config: AsaConfig) -> float:
    grid = np.asarray(config.grid)
    totals = np.zeros(len(grid))
    for wait in sequence:
        totals += alternative_losses(grid, float(wait), config.loss, grid)
    return float(totals.min())


def stationary(kind: str, t: int, seed: int) -> np.ndarray:
    rng = np.random.Generator(np.random.PCG64(seed))
    if kind == "constant":
        return np.full(t, 700.0)
    if kind == "lognormal":
        return 3000.0 * np.exp(0.5 * rng.standard_normal(t))
    return np.where(rng.random(t) < 0.7, 120.0, 20000.0)  # two modes


def run_stationary(config: AsaConfig, sequence_kind: str, seed: int, t: int = 1500) -> tuple[float, float]:
    predictor = AsaPredictor(config, seed=seed)
    sequence = stationary(sequence_kind, t, seed)
    for wait in sequence:
        predictor.estimate()
        predictor.observe(float(wait))
    regret = predictor.played_loss - best_fixed_loss(sequence, predictor.config)
    return regret, regret_bound(t, predictor.rounds_closed, len(predictor.config.grid), 0.05)


BOUND_HOLDS = {
    # the proof's steps are valid with full information and gamma = 1
    "full-information gamma 1": AsaConfig(full_information=True, gamma=1.0),
    "full-information cost loss gamma 1": AsaConfig(full_information=True, gamma=1.0, loss=LossConfig(kind="cost")),
    # our defaults (measured, not proven)
    "default policy gamma 16": AsaConfig(policy="default", gamma=16.0),
    "tuned gamma 16": AsaConfig(policy="tuned", gamma=16.0),
}


@pytest.mark.parametrize("sequence_kind", ["constant", "lognormal", "mixture"])
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("variant", [
    pytest.param(name, marks=pytest.mark.slow) if "tuned" in name else name for name in sorted(BOUND_HOLDS)])
def test_regret_bound_appendix_a(sequence_kind, seed, variant):
    """Eq. (4): cumulative loss - best fixed alternative's <= 4 eta(t) + ln m + sqrt(2 t ln(m / delta))."""
    regret, bound = run_stationary(BOUND_HOLDS[variant], sequence_kind, seed)
    assert regret <= bound


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bandit_gamma_1_breaks_the_stated_bound(seed):
    """A finding, kept as a test: Appendix A's proof replaces p[a_s] * loss(a_s) by the
    expectation sum_i p_i * loss_i (eqs. 12-14), which only holds with full information.
    With bandit feedback and gamma = 1 the learner is slow enough on a constant wait to
    exceed the bound (regret ~384 vs bound ~333-353 on seeds 0-4)."""
    regret, bound = run_stationary(AsaConfig(policy="default", gamma=1.0), "constant", seed)
    assert regret > bound


def test_regret_bound_fails_for_a_learner_that_does_not_learn():
    """The bound has teeth: with gamma ~ 0 (p stays uniform) the regret exceeds it."""
    t = 1500
    predictor = AsaPredictor(AsaConfig(policy="default", gamma=1e-12), seed=0)
    sequence = stationary("constant", t, 0)
    for wait in sequence:
        predictor.estimate()
        predictor.observe(float(wait))
    regret = predictor.played_loss - best_fixed_loss(sequence, predictor.config)
    assert regret > regret_bound(t, predictor.rounds_closed, len(PAPER_GRID_S), 0.05)


def test_learns_a_constant_wait():
    predictor = make_predictor("asa-tuned", seed=3)
    for _ in range(30):
        predictor.estimate()
        predictor.observe(700.0)
    assert predictor.quantiles([0.5]) == [700.0]
    hits = 0
    for _ in range(50):
        hits += predictor.estimate() == 700.0
        predictor.observe(700.0)
    assert hits >= 45


def test_estimate_is_stable_until_observed_and_pending_is_scored():
    predictor = make_predictor("asa", seed=5)
    first = predictor.estimate()
    assert all(predictor.estimate() == first for _ in range(5))
    assert predictor.to_state()["pending"] == PAPER_GRID_S.index(first)
    # the pending action is the one scored: observing exactly its value costs nothing
    predictor.observe(first)
    assert predictor.played_loss == 0.0
    assert predictor.to_state()["pending"] is None


def test_observe_without_estimate_samples_then():
    predictor = make_predictor("asa", seed=5)
    predictor.observe(100.0)  # no estimate before: an action is sampled and scored now
    assert predictor.n_observations == 1
    assert predictor.played_loss in (0.0, 1.0)


@pytest.mark.parametrize("kind", sorted(ASA_PRESETS))
def test_deterministic_for_a_seed(kind):
    def run(seed):
        predictor = make_predictor(kind, seed=seed)
        out = []
        for wait in [100.0, 5000.0, 5000.0, 30.0, 0.0, 1e6] * 5:
            out.append(predictor.estimate(slurm_estimate_s=400.0))
            predictor.observe(wait, slurm_estimate_s=400.0)
        return out

    assert run(11) == run(11)
    if kind not in ("asa-greedy", "asa-full", "asa-full-cost", "asa-full-fast"):  # the sampling policies depend on the seed
        assert run(11) != run(12)


@pytest.mark.parametrize("kind", sorted(ASA_PRESETS))
@pytest.mark.parametrize("with_pending", [False, True])
def test_state_round_trip_resumes_exactly(kind, with_pending):
    rng = np.random.Generator(np.random.PCG64(1))
    history = (1000.0 * np.exp(rng.standard_normal(40))).tolist()
    future = (1000.0 * np.exp(rng.standard_normal(40))).tolist()
    original = make_predictor(kind, seed=9)
    for wait in history:
        original.estimate(slurm_estimate_s=wait)
        original.observe(wait, slurm_estimate_s=wait)
    if with_pending:
        original.estimate()
    restored = predictor_from_state(json.loads(json.dumps(original.to_state())))
    assert restored.kind == kind
    for wait in future:
        assert restored.estimate() == original.estimate()
        assert restored.quantiles([0.1, 0.5, 0.9]) == original.quantiles([0.1, 0.5, 0.9])
        original.observe(wait)
        restored.observe(wait)
    assert restored.to_state() == original.to_state()


def test_tuned_moves_faster_than_default_after_a_change():
    def steps_to_follow(kind):
        predictor = make_predictor(kind, seed=0)
        for _ in range(100):
            predictor.estimate()
            predictor.observe(20000.0)
        for i in range(300):
            if predictor.quantiles([0.5])[0] == 500.0:
                return i
            predictor.estimate()
            predictor.observe(500.0)
        return 300

    assert steps_to_follow("asa-tuned") < 10 < steps_to_follow("asa")


def test_greedy_plays_least_accumulated_loss_lowest_first():
    predictor = make_predictor("asa-greedy")
    assert predictor.estimate() == 0.0  # all tied at 0: the shortest wait
    predictor.observe(20.0)  # 0 s was wrong
    assert predictor.estimate() == 10.0  # next untried alternative
    predictor.observe(10.0)  # right: no loss, it stays
    assert predictor.estimate() == 10.0


def test_full_information_scores_every_alternative():
    predictor = make_predictor("asa-full", loss="zero_one", grid="paper")
    predictor.observe(300.0)
    predictor.observe(300.0)  # a round closes: every alternative but 300 s has loss 2
    p = predictor.p
    assert int(np.argmax(p)) == PAPER_GRID_S.index(300.0)
    assert predictor.rounds_closed == 1


def test_log_weight_floor_bounds_how_unlikely_an_alternative_gets():
    predictor = make_predictor("asa-full", log_weight_floor=5.0)
    for _ in range(200):
        predictor.observe(300.0)
    p = predictor.p
    assert p.min() / p.max() >= math.exp(-5.0) - 1e-12


def test_slurm_expert_is_learned_when_it_is_right():
    predictor = make_predictor("asa-slurm", seed=2)
    for _ in range(40):
        predictor.estimate(slurm_estimate_s=1234.0)
        predictor.observe(1234.0, slurm_estimate_s=1234.0)
    assert predictor.p[-1] > 0.5  # the expert (exact) beats the nearest grid point (1000 s)
    assert predictor.estimate(slurm_estimate_s=4321.0) in (4321.0, *PAPER_GRID_S)


def test_slurm_expert_not_sampled_before_any_estimate_arrives():
    predictor = make_predictor("asa-slurm", seed=2)
    for _ in range(20):
        assert predictor.estimate() in PAPER_GRID_S
        predictor.observe(100.0)


def test_cost_loss_is_relative_weighted_and_bounded():
    grid = np.asarray(PAPER_GRID_S)
    loss = LossConfig(kind="cost", early_cost=1.0, late_cost=4.0)
    values = np.array([0.0, 500.0, 1000.0, 2000.0, 1e5])
    losses = alternative_losses(values, 1000.0, loss, grid)
    assert losses[2] == 0.0
    assert losses[1] == pytest.approx(0.5)  # late by 500 of 1000, full weight
    assert losses[3] == pytest.approx(0.25 * 0.5)  # early by 1000 of 2000, quarter weight
    assert np.all((losses >= 0) & (losses <= 1))
    zero_one = alternative_losses(grid, 1000.0, LossConfig(), grid)
    assert zero_one.sum() == len(grid) - 1 and zero_one[nearest_index(grid, 1000.0)] == 0


def test_config_validation():
    with pytest.raises(ValueError):
        AsaConfig(policy="nope")
    with pytest.raises(ValueError):
        AsaConfig(grid=(5.0, 1.0))
    with pytest.raises(ValueError):
        make_predictor("asa", gamma=-1)
    with pytest.raises(ValueError):
        make_predictor("asa").observe(float("nan"))


@settings(max_examples=30, deadline=None)
@given(sequence=st.lists(waits, min_size=1, max_size=40),
       params=st.sampled_from([{"loss": "log"}, {"discount": 0.9}, {"log_weight_floor": None, "gamma": 50.0},
                               {"grid": "log", "point": "mode"}, {"point": "sample", "loss": "zero_one"}]))
def test_p_stays_a_distribution_for_our_variants(sequence, params):
    predictor = make_predictor("asa-full", **params)
    for wait in sequence:
        assert math.isfinite(predictor.estimate())
        predictor.observe(wait)
        p = predictor.p
        assert np.all(np.isfinite(p)) and np.all(p >= 0) and p.sum() == pytest.approx(1.0, abs=1e-9)


def test_log_loss_is_scaled_log_error():
    grid = np.asarray(PAPER_GRID_S)
    losses = alternative_losses(np.array([99.0, 999.0, 9.0, 1e9]), 99.0, LossConfig(kind="log", log_decades=2.0), grid)
    assert losses.tolist() == pytest.approx([0.0, 0.5, 0.5, 1.0])


def test_discount_forgets_old_evidence():
    def median_after_switch(discount):
        predictor = make_predictor("asa-full", discount=discount, grid="paper")
        for _ in range(300):
            predictor.observe(20000.0)
        for _ in range(30):
            predictor.observe(100.0)
        return predictor.estimate()

    assert median_after_switch(0.9) == 100.0  # forgets: follows the new level
    assert median_after_switch(1.0) == 20000.0  # infinite memory: still the old level


def test_mix_round_trip_and_switching():
    mix = make_predictor("asa-mix", seed=4)
    for _ in range(300):
        mix.estimate()
        mix.observe(20000.0)
    assert mix.chosen == 0 and mix.estimate() == 20000.0  # ties stay with the long memory
    for _ in range(15):
        mix.estimate()
        mix.observe(100.0)
    assert mix.chosen == 1 and mix.estimate() == 100.0  # the short memory took over
    restored = predictor_from_state(json.loads(json.dumps(mix.to_state())))
    for wait in [100.0, 5000.0, 20000.0, 30.0] * 5:
        assert restored.estimate() == mix.estimate()
        assert restored.quantiles([0.2, 0.8]) == mix.quantiles([0.2, 0.8])
        restored.observe(wait)
        mix.observe(wait)
    assert restored.to_state() == mix.to_state()
    p = mix.p
    assert np.all(p >= 0) and p.sum() == pytest.approx(1.0)
