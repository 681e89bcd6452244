"""Witt's percentile and regression agents, and the time-limit learner, on hand-checked sequences."""

import numpy as np
import pytest

from asad.sizing.base import Caps, Outcome, Request
from asad.sizing.feedback import PercentileAgent, RegressionAgent, fit_line, lr_offset
from asad.sizing.timelimit import TimeLimitLearner

DEFAULT = Request(cpus=4, mem_mb=8000, time_s=7200)


def done(peak: float, x: float | None = None, req: Request = DEFAULT, elapsed: float = 100.0,
         cpu_s: float = 200.0) -> Outcome:
    return Outcome(request=req, peak_mem_mb=peak, cpu_s=cpu_s, elapsed_s=elapsed, input_bytes=x, state="COMPLETED")


def test_percentile_uses_user_values_until_one_run_then_the_percentile():
    agent = PercentileAgent(percentile=50)
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 8000 and d.n_observations == 0 and "user" in d.why
    for peak in (100, 300, 200):
        agent.observe(done(peak))
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 200 and d.request.cpus == 4 and d.n_observations == 3
    assert PercentileAgent(percentile=95).__class__ is PercentileAgent


def test_kills_are_not_samples():
    agent = PercentileAgent(percentile=95, confident_runs=1)
    agent.observe(done(1000))
    agent.observe(Outcome(Request(4, 500, 60), 500.0, None, 10.0, None, "OUT_OF_MEMORY"))
    assert agent.history.n == 1 and agent.history.oom_floor_mb == 500
    assert agent.propose(DEFAULT).request.mem_mb == 1000


def test_lr_offsets_match_witt_equations_by_hand():
    # y = 100 + 2x exactly except one point 10 above and one 10 below the line
    x = np.array([0.0, 10.0, 20.0, 30.0])
    y = np.array([100.0, 130.0, 130.0, 160.0])
    intercept, slope = fit_line(x, y)
    assert slope == pytest.approx(1.8) and intercept == pytest.approx(103.0)
    res = y - (intercept + slope * x)  # [-3, 9, -9, 3]
    assert res == pytest.approx([-3.0, 9.0, -9.0, 3.0])
    assert lr_offset(res, "mean±") == pytest.approx(np.sqrt((9 + 81 + 81 + 9) / 3))
    assert lr_offset(res, "mean-") == pytest.approx(np.sqrt((81 + 9) / 1))
    assert lr_offset(res, "max-") == pytest.approx(9.0)


def test_regression_ready_after_two_and_follows_input_size():
    agent = RegressionAgent(offset="max-")
    agent.observe(done(1000, x=1e9))
    assert agent.propose(DEFAULT, 2e9).request.mem_mb == 8000  # one run: still the user's
    agent.observe(done(2000, x=2e9))
    agent.observe(done(3000, x=3e9))
    assert agent.propose(DEFAULT, 4e9).request.mem_mb == 4000  # exact line, no offset
    assert agent.propose(DEFAULT, 1.5e9).request.mem_mb == 1500


def test_sizes_never_exceed_the_partition():
    agent = PercentileAgent(percentile=95, caps=Caps(max_cpus=2, max_mem_mb=500, max_time_s=3600))
    agent.observe(done(900))
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 500 and d.request.cpus == 2 and d.request.time_s <= 3600
    assert "capped" in d.why


def test_time_limit_learns_longest_run_with_margin_and_stretch():
    tl = TimeLimitLearner(margin=1.5, slack_s=60, min_samples=2)
    assert tl.limit(7200, 4, None, None)[0] == 7200
    agent = PercentileAgent(percentile=50)
    for elapsed in (100.0, 400.0):
        agent.observe(done(10, elapsed=elapsed, cpu_s=2 * elapsed))  # 2 busy cores on 4 CPUs
    for sample in agent.history.samples:
        tl.observe(sample)
    # 1.5 × 400 + 60 = 660 s → 11 min
    assert tl.limit(7200, 4, None, None)[0] == 660
    # on 1 CPU, 2 busy cores take twice as long: 1.5 × 800 + 60 = 1260 → 21 min
    assert tl.limit(7200, 1, None, None)[0] == 1260
    assert tl.limit(7200, 4, None, Caps(4, 1000, 600))[0] == 600


def test_the_memory_floor_is_explained():
    # audit 5: explain said "largest peak 8 MB x 1.1 = 8 MB" beside a 64 MB request
    agent = PercentileAgent(percentile=50)
    for peak in (8, 8, 8):
        agent.observe(done(peak))
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 64 and "raised to asad's floor of 64 MB" in d.why
    for peak in (300, 300, 300):
        agent.observe(done(peak))
    assert "floor" not in agent.propose(DEFAULT).why
