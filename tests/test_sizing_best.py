"""The sizey-like agent on synthetic stages: it follows input size, learns its offset, and stays safe."""

import numpy as np
import pytest

from asad.sizing.base import Outcome, Request
from asad.sizing.best import BestAgent
from asad.sizing.feedback import PercentileAgent

DEFAULT = Request(cpus=8, mem_mb=20_000, time_s=7200)


def replay(agent, xs, peaks, busy=2.0):
    """Allocated and used MB·s (100 s per task; a kill at half time, then the true peak × 1.25)."""
    alloc = used = kills = 0.0
    for x, peak in zip(xs, peaks):
        req = agent.propose(DEFAULT, x).request
        if req.mem_mb < peak:
            kills += 1
            alloc += req.mem_mb * 50
            agent.observe(Outcome(req, float(req.mem_mb), busy * 50, 50.0, x, "OUT_OF_MEMORY"))
            req = Request(req.cpus, int(peak * 1.25), req.time_s)
        alloc += req.mem_mb * 100
        used += peak * 100
        agent.observe(Outcome(req, float(peak), busy * 100, 100.0, x, "COMPLETED"))
    return used / alloc, kills / len(xs)


def test_follows_input_size_where_the_maximum_cannot():
    rng = np.random.default_rng(0)
    xs = rng.uniform(1e9, 1e10, 300)
    peaks = 500 + 1e-6 * xs + rng.normal(0, 50, 300)  # 1.5–10.5 GB, tightly linear in input
    maq_best, kills_best = replay(BestAgent(seed=1), xs, peaks)
    maq_pc, _ = replay(PercentileAgent(percentile=95), xs, peaks)
    assert maq_best > 0.85 > maq_pc
    assert kills_best < 0.05
    agent = BestAgent(seed=1)
    replay(agent, xs, peaks)
    d = agent.propose(DEFAULT, 2e9)
    assert d.request.mem_mb < 3500 and ("lr" in d.why or "knn" in d.why)
    # two busy cores: 2 CPUs, or 3 when runs that saturated 2 CPUs count as needing one more
    assert d.request.cpus in (2, 3)


def test_constant_stage_gets_a_tight_offset():
    rng = np.random.default_rng(1)
    peaks = 4000 + rng.normal(0, 5, 200)
    maq, kills = replay(BestAgent(seed=1, confident_runs=1), [None] * 200, peaks)
    assert maq > 0.95 and kills < 0.05
    agent = BestAgent(seed=1)
    replay(agent, [None] * 200, peaks)
    assert agent.propose(DEFAULT).request.mem_mb < 4000 * 1.02


def test_cold_start_uses_user_then_largest_peak_with_margin():
    agent = BestAgent(seed=0, confident_runs=1)
    assert agent.propose(DEFAULT).request.mem_mb == 20_000
    agent.observe(Outcome(DEFAULT, 1000.0, 100.0, 100.0, None, "COMPLETED"))
    d = agent.propose(DEFAULT)
    assert d.request.mem_mb == 1100 and "too few" in d.why


def test_no_cut_below_the_request_before_enough_runs():
    # issue 39: one `sleep` run that peaked at 1 MB made the next run of a `mem: 1G` stage ask 64M.
    # With the rule's first form (unconfident_depth 1) the request holds until confident_runs.
    agent = BestAgent(seed=0, confident_runs=3, unconfident_depth=1)
    user = Request(cpus=1, mem_mb=1024, time_s=600)
    for n in range(3):
        d = agent.propose(user)
        assert d.request.mem_mb == 1024, (n, d.why)
        if n:
            assert f"kept at the user's 1024 MB: a cut below the request waits for 3 completed runs ({n} so far)" in d.why
        agent.observe(Outcome(d.request, 1.0, 0.1, 5.0, None, "COMPLETED"))
    assert agent.propose(user).request.mem_mb == 64  # three runs: the cut, to asad's floor
    # more than the request is never held back: a stage that needs more gets it at once
    agent = BestAgent(seed=0)
    agent.observe(Outcome(user, 1000.0, 0.1, 5.0, None, "COMPLETED"))
    assert agent.propose(Request(cpus=1, mem_mb=512, time_s=600)).request.mem_mb == 1100


def test_a_cut_from_too_few_runs_is_graduated_never_deep():
    # issue 39, second round: with fewer runs than confident_runs, a cut goes at most to the
    # request / unconfident_depth (4) and never below unconfident_margin (2) × the largest peak,
    # scaled up to a larger input; a full cut only once confident
    user = Request(cpus=1, mem_mb=1024, time_s=600)
    agent = BestAgent(seed=0)
    assert agent.propose(user).request.mem_mb == 1024  # no run: the file
    agent.observe(Outcome(user, 1.0, 0.1, 5.0, None, "COMPLETED"))
    d = agent.propose(user)
    assert d.request.mem_mb == 256, d.why  # the sleep of the issue: 1024 / 4, not 64
    assert "held at 256 MB: with 1 completed run(s) of the 2 a deeper cut waits for" in d.why, d.why
    agent.observe(Outcome(d.request, 1.0, 0.1, 5.0, None, "COMPLETED"))
    assert agent.propose(user).request.mem_mb == 64  # two runs: confident, the cut to asad's floor
    # one run with a peak of 300 MB: twice it, not the request / 4
    agent = BestAgent(seed=0)
    agent.observe(Outcome(user, 300.0, 0.1, 5.0, 100e6, "COMPLETED"))
    assert agent.propose(user, 100e6).request.mem_mb == 600
    # a task with twice the input: the peak scaled to it first, then the margin (capped at the request)
    assert agent.propose(user, 150e6).request.mem_mb == 900
    assert agent.propose(user, 200e6).request.mem_mb == 1024
    # the input-growth stage of the real-Slurm test: 116 MB at 100 MB of input, the next at 300 MB
    agent = BestAgent(seed=0)
    agent.observe(Outcome(Request(1, 2048, 300), 116.0, 0.1, 5.0, 100e6, "COMPLETED"))
    assert agent.propose(Request(1, 2048, 300), 300e6).request.mem_mb == 696  # its peak was 316 MB
    with pytest.raises(ValueError, match="must be ≥ 1"):
        BestAgent(unconfident_depth=0.5)


def test_quantile_predictor_is_off_by_default_and_a_recent_quantile_when_on():
    ys = np.array([100.0, 300.0, 200.0, 900.0, 400.0])
    assert BestAgent()._predict("quantile", ys, ys, None) is None
    on = BestAgent(quantile_q=0.5, quantile_n=4)
    assert on._predict("quantile", ys, ys, None) == 400.0  # median ("higher") of 300, 200, 900, 400
    # a stage whose peaks vary widely at the same input: it trades kills for MAQ, within bounds
    rng = np.random.default_rng(2)
    peaks = rng.choice([3000.0, 4500.0, 9000.0], size=300, p=[0.5, 0.4, 0.1])
    maq_off, kills_off = replay(BestAgent(seed=1, fail_penalty=5.0), [None] * 300, peaks)
    maq_on, kills_on = replay(BestAgent(seed=1, fail_penalty=5.0, quantile_q=0.5), [None] * 300, peaks)
    assert maq_on > maq_off + 0.05 and kills_off < kills_on < 0.15


def test_explain_names_the_sizing_agent_once(tmp_path):
    """The audit read 'sizey-like: sizey-like: 1 run(s) ...' in asad explain."""
    from tests.test_cli import asad

    wf = tmp_path / "sized.yaml"
    wf.write_text("name: sized\nsizing: sizey-like\nstages:\n"
                  "  - {name: a, cpus: 1, mem: 1G, time: 10m, run: 'true', simulate: {runtime: 1m, peak_mem: 300M}}\n")
    for _ in range(2):
        asad("run", str(wf), "--backend", "sim", "--load", "0")
    why = asad("explain", "2", "a").stdout
    assert "sizey-like: " in why and "sizey-like: sizey-like" not in why, why


def test_a_larger_input_scales_the_peaks_only_where_they_grow_with_input():
    # issue 39: a stage whose memory grows with its input, two runs at 100 and 300 MB of input
    user = Request(cpus=1, mem_mb=2048, time_s=600)
    agent = BestAgent(seed=0)
    for mb, peak in ((100, 116.0), (300, 316.0)):
        agent.observe(Outcome(user, peak, 1.0, 5.0, mb * 2.0**20, "COMPLETED"))
    d = agent.propose(user, 600 * 2.0**20)  # twice the largest input seen
    assert d.request.mem_mb == 766 and "scaled to this input" in d.why  # 316 × 600/300 = 632 … 116 × 6 = 696, × 1.1
    assert BestAgent(seed=0, scaled=False, confident_runs=2)._scaled(agent.history.inputs(), agent.history.peaks(), 6e8) is None
    # peaks that do not follow the input (a stand-in that says little): the largest peak × 1.1
    flat = BestAgent(seed=0)
    for mb, peak in ((100, 316.0), (300, 116.0)):
        flat.observe(Outcome(user, peak, 1.0, 5.0, mb * 2.0**20, "COMPLETED"))
    assert flat.propose(user, 600 * 2.0**20).request.mem_mb == 348


def test_a_fixed_cost_per_kill_makes_a_long_stage_bolder_than_a_short_one():
    # fail_cost_gbh (tried for issue 39, off by default): a kill costs the same GB·h in every stage,
    # so a stage of long runs can afford kills that a stage of short runs cannot
    rng = np.random.default_rng(3)
    ratios = rng.uniform(0.6, 1.0, 50)
    rows = lambda run_s: np.column_stack([ratios, np.full(50, 1000.0), 1000.0 * ratios, np.full(50, run_s),
                                          np.full(50, 1000.0)])  # noqa: E731
    agent = BestAgent(fail_cost_gbh=1.0)
    _, factor_long, rate_long = agent._choose_factor(rows(1e6))
    _, factor_short, rate_short = agent._choose_factor(rows(10.0))
    assert factor_long < factor_short and rate_long > rate_short
    assert BestAgent()._choose_factor(rows(1e6))[1] == BestAgent()._choose_factor(rows(10.0))[1]  # relative: same
