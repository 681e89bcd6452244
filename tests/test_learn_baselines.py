"""Baseline predictors on hand-computed sequences, and their persistence."""

from __future__ import annotations

import json
import math

import pytest

from asad.learn.baselines import QbetsPredictor, binomial_upper_index
from asad.learn.registry import BASELINES, make_predictor, predictor_from_state


def feed(predictor, waits, **kwargs):
    for wait in waits:
        predictor.observe(wait, **kwargs)
    return predictor


def test_cold_start_predicts_zero():
    for kind in BASELINES:
        predictor = make_predictor(kind)
        assert predictor.estimate() == 0.0
        assert predictor.n_observations == 0


def test_last_wait():
    predictor = feed(make_predictor("last"), [100, 300, 50])
    assert predictor.estimate() == 50.0
    assert predictor.quantiles([0.1, 0.9]) == [50.0, 50.0]
    predictor.observe(-5)  # clock skew: a negative wait counts as 0
    assert predictor.estimate() == 0.0


def test_moving_median_of_last_k():
    predictor = feed(make_predictor("median-k", k=3), [1000, 10, 20, 30])
    assert predictor.estimate() == 20.0  # median of 10, 20, 30 (1000 dropped out)
    predictor.observe(500)
    assert predictor.estimate() == 30.0  # 20, 30, 500
    even = feed(make_predictor("median-k", k=4), [10, 20, 30, 40])
    assert even.estimate() == 25.0


def test_median_of_all():
    predictor = feed(make_predictor("median-all"), [5, 1000, 7, 3])
    assert predictor.estimate() == 6.0  # 3, 5, 7, 1000
    assert predictor.quantiles([0.0, 1.0]) == [3.0, 1000.0]
    assert predictor.n_observations == 4


def brute_force_upper_index(n, q, c):
    for k in range(1, n + 1):
        cdf = sum(math.comb(n, j) * q**j * (1 - q) ** (n - j) for j in range(k))
        if cdf >= c:
            return k
    return None


@pytest.mark.parametrize("n", [1, 5, 20, 58, 59, 60, 100, 300])
@pytest.mark.parametrize("q,c", [(0.95, 0.95), (0.5, 0.95), (0.9, 0.8)])
def test_binomial_upper_index_matches_brute_force(n, q, c):
    assert binomial_upper_index(n, q, c) == brute_force_upper_index(n, q, c)


def test_qbets_bound():
    # 1 - 0.95^n >= 0.95 first at n = 59: before that no order statistic is a 95/95 bound
    # decreasing, so no wait exceeds the bound (no change point)
    predictor = feed(make_predictor("qbets"), range(58, 0, -1))
    assert predictor.estimate() == 58.0  # too few waits: the largest seen
    predictor = feed(make_predictor("qbets"), range(100, 0, -1))
    k = brute_force_upper_index(100, 0.95, 0.95)
    assert k == 99
    assert predictor.estimate() == float(k)  # the k-th smallest of 1..100
    assert predictor.quantiles([0.5])[0] == float(brute_force_upper_index(100, 0.5, 0.95))


def test_qbets_trims_history_after_a_change():
    predictor = QbetsPredictor(history=1000)
    feed(predictor, [100.0] * 200)
    assert predictor.estimate() == 100.0
    feed(predictor, [5000.0] * 3)  # 3 misses in a row: (1 - 0.95)^2 < 0.05 already at 2
    assert predictor.estimate() == 5000.0


def test_qbets_history_window():
    predictor = QbetsPredictor(history=60)
    feed(predictor, [10_000.0] + [1.0] * 60)
    assert predictor.estimate() == 1.0  # the old large wait left the window


def test_slurm_estimate_uses_the_latest_estimate():
    predictor = make_predictor("slurm-estimate")
    predictor.observe(400)
    assert predictor.estimate() == 400.0  # no Slurm estimate yet: the last wait
    assert predictor.estimate(slurm_estimate_s=1234) == 1234.0
    predictor.observe(50, slurm_estimate_s=99)
    assert predictor.estimate() == 99.0


@pytest.mark.parametrize("kind", sorted(BASELINES))
def test_state_round_trip(kind):
    predictor = feed(make_predictor(kind), [5, 50, 500, 5000, 3, 70] * 15, slurm_estimate_s=77)
    restored = predictor_from_state(json.loads(json.dumps(predictor.to_state())))
    assert restored.kind == kind
    for wait in [1, 10, 100, 1000, 10_000]:
        assert restored.estimate() == predictor.estimate()
        assert restored.quantiles([0.2, 0.8]) == predictor.quantiles([0.2, 0.8])
        restored.observe(wait)
        predictor.observe(wait)
    assert restored.to_state() == predictor.to_state()
