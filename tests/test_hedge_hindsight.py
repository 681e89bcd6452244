"""scripts/hedge_hindsight.py: the hindsight optimum of a fixed choice per stratum, and the
draw's deterministic equivalent, on toy tables whose optimum is known."""

from __future__ import annotations

import itertools

import numpy as np

from tests.script_module import load_script


def _load():  # noqa: ANN202
    return load_script("hedge_hindsight")


def test_per_stratum_optimum_is_not_the_per_stratum_medians_best():
    """Stratum a: column 0 has the lower median within a (1 < 2) but column 1 puts more errors
    under the pooled median; the optimum is a mixed choice no stratum-by-stratum median finds."""
    mod = _load()
    errors = np.array([[0.1, 0.5], [0.9, 0.5], [0.9, 0.5],  # stratum a: col 1 under 0.5 on all three
                       [0.2, 0.8], [0.3, 0.8], [0.9, 0.8]])  # stratum b: col 0 under 0.3 on two
    strata = np.array(["a", "a", "a", "b", "b", "b"])
    best, choice = mod.best_per_stratum(errors, strata)
    assert list(choice) == [1, 1, 1, 0, 0, 0]
    assert best == np.median([0.5, 0.5, 0.5, 0.2, 0.3, 0.9])


def test_per_stratum_optimum_equals_brute_force_on_random_tables():
    mod = _load()
    rng = np.random.default_rng(3)
    for _ in range(30):
        n, c = int(rng.integers(5, 40)), int(rng.integers(2, 4))
        errors = rng.random((n, c)).round(2)
        strata = rng.integers(0, 3, n)
        best, choice = mod.best_per_stratum(errors, strata)
        labels = np.unique(strata)
        k = n // 2 + 1
        brute_kth = min(np.sort(errors[np.arange(n), np.array([dict(zip(labels, combo))[s] for s in strata])])[k - 1]
                        for combo in itertools.product(range(c), repeat=len(labels)))
        chosen = np.sort(errors[np.arange(n), choice])
        assert chosen[k - 1] == brute_kth  # the k-th smallest error is the least any choice reaches
        assert best == np.median(errors[np.arange(n), choice])


def test_one_stratum_is_the_best_single_column():
    mod = _load()
    errors = np.array([[0.3, 0.2, 0.9], [0.4, 0.1, 0.9], [0.1, 0.6, 0.0]])
    best, choice = mod.best_per_stratum(errors, np.zeros(3))
    assert list(choice) == [1, 1, 1] and best == 0.2


def test_mixture_median_ends_are_the_two_learners_and_draws_agree():
    mod = _load()
    rng = np.random.default_rng(0)
    e_b, e_p = rng.random(4001), rng.random(4001) * 0.5
    assert mod.mixture_median(e_b, e_p, 0.0) == np.median(e_b)
    assert mod.mixture_median(e_b, e_p, 1.0) == np.median(e_p)
    half = mod.mixture_median(e_b, e_p, 0.5)
    assert np.median(e_p) < half < np.median(e_b)
    assert abs(mod.drawn_median(e_b, e_p, 0.5, draws=50) - half) < 0.02


def test_a_choice_fitted_earlier_is_carried_and_unseen_strata_take_the_back_off():
    mod = _load()
    fit = np.array([[0.5, 0.1], [0.5, 0.1], [0.1, 0.5]])  # a: the panel, b: the back-off
    fit_strata = np.array(["a", "a", "b"])
    later = np.array([[0.2, 0.9], [0.3, 0.4], [0.6, 0.0]])  # a's panel now worse; c unseen
    strata = np.array(["a", "b", "c"])
    median, share = mod.carried(fit, fit_strata, later, strata)
    assert median == np.median([0.9, 0.3, 0.6]) and share == 1 / 3
