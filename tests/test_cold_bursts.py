"""scripts/cold_bursts.py: which jobs are cold, the intra-burst correlation and the calibrated
learner's pass share, on toy inputs whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from tests.script_module import load_script


def _load():  # noqa: ANN202
    return load_script("cold_bursts")


def test_a_job_is_cold_until_an_earlier_job_of_its_key_has_started_as_the_replay_pops_it():
    cb = _load()
    key = np.array(["a", "b", "a", "b", "a", "b"])
    eligible = np.array([0.0, 1.0, 5.0, 6.0, 10.0, 12.0])
    # a's first job starts at 10: a's job eligible at 10 is warm (a start at <= now is known).
    # b's job eligible at 6 started at 3, before it was eligible (not in the file, but the rule
    # must not lean on that): the replay learns of a job only after its turn, so b's job at 6 is
    # cold (b's key's earliest start, 3, would call it warm) and b's job at 12 is warm
    start = np.array([10.0, 20.0, 30.0, 3.0, 40.0, 50.0])
    assert cb.cold_mask(key, eligible, start).tolist() == [True, True, True, True, False, False]


def test_the_intra_burst_correlation_is_one_for_burst_constant_values_and_near_zero_for_noise():
    cb = _load()
    groups = np.repeat(np.arange(50), 20)
    rng = np.random.default_rng(1)
    assert cb.icc(np.repeat(rng.standard_normal(50), 20), groups) > 0.999
    assert cb.icc(rng.standard_normal(1000), groups) < 0.05
    assert cb.icc(np.ones(10), np.zeros(10)) == 0.0  # one group: not told


def test_a_calibrated_learner_passes_with_independent_jobs_and_fails_with_one_shared_coin():
    cb = _load()
    rng = np.random.default_rng(2)
    qs = (0.1, 0.25, 0.5, 0.75, 0.9)
    # 2,000 independent jobs: each level's sd ~1.1 points, so nearly always within 5
    share, gap = cb.calibrated_pass_share(np.ones(2000, dtype=int), 0.0, qs, 200, rng)
    assert share > 0.95 and gap < 3.0
    # the same jobs in 4 bursts moving as one: the coverage is one of a handful of values
    share, gap = cb.calibrated_pass_share(np.full(4, 500), 1.0, qs, 200, rng)
    assert share < 0.2 and gap > 10.0


def test_counting_each_burst_once_turns_a_few_big_bursts_back_into_many_units():
    cb = _load()
    rng = np.random.default_rng(3)
    qs = (0.1, 0.25, 0.5, 0.75, 0.9)
    # 1,000 bursts of one job and one of 5,000 moving as one: by job the big burst decides
    # (83 % of the jobs), by burst it is one unit of 1,001
    sizes = np.array([5000] + [1] * 1000)
    by_job, _ = cb.calibrated_pass_share(sizes, 1.0, qs, 200, rng)
    by_burst, gap = cb.calibrated_pass_share(sizes, 1.0, qs, 200, rng, by_burst=True)
    assert by_job < 0.1 and by_burst > 0.9 and gap < 4.0


def test_tracking_moves_a_class_s_shift_only_from_outcomes_heard_before_the_tell():
    cb = _load()
    qs = (0.5,)
    # three cold jobs of three new keys, each told 100 s and each waiting 1,000 s; the first
    # starts before the third is told, the second after: only the first outcome moves the
    # shift the third is told with
    key = np.array(["a", "b", "c"])
    eligible = np.array([0.0, 1.0, 2000.0])
    start = np.array([1000.0, 5000.0, 3000.0])
    wait = start - eligible
    quant = np.full((3, 1), 100.0)
    out = cb.tracked_cold_quantiles(key, eligible, start, wait, quant, np.ones(3, dtype=bool), qs, (), 0.1)
    assert out[0, 0] == pytest.approx(100.0) and out[1, 0] == pytest.approx(100.0)
    # one miss at q = 0.5: + 0.1 * (1 - 0.5) decades
    assert np.log10(1 + out[2, 0]) == pytest.approx(np.log10(101.0) + 0.05)
    # by class: the third job's key has nothing pending (class 0 of edges (1,)), the first's
    # outcome was class 0 too; a job told while its key has one pending is class 1, unmoved
    key2 = np.array(["a", "a", "c"])
    out2 = cb.tracked_cold_quantiles(key2, eligible, start, wait, quant, np.ones(3, dtype=bool), qs, (1,), 0.1)
    assert out2[1, 0] == pytest.approx(100.0)
