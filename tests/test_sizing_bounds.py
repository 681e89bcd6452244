"""The hindsight ceilings of the sizing replay (asad/bench/sizing_bounds.py)."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest

from asad.bench.sizing_bounds import (COLD_START, Option, gap_closed, gap_rows, hindsight_sizes, lagrangian_sizes,
                                      optimal_sizes, process_options, replay_hindsight)
from asad.bench.sizing_trace import TraceTask


def task(i: int, peak: float, process: str = "p", run_s: float = 10.0, request: float = 4000.0) -> TraceTask:
    return TraceTask(task_id=i, process=process, cpus=1, mem_mb=request, time_s=600, peak_mb=peak,
                     realtime_s=run_s, cpu_usage=1.0, input_bytes=None)


def six_outliers() -> list[TraceTask]:
    """100 tasks: 94 peak at 100 MB, 6 at 1000 MB (every 16th), 10 s each."""
    return [task(i, 1000.0 if i % 16 == 5 else 100.0) for i in range(100)]


def test_the_allowance_decides_the_size():
    tasks = six_outliers()
    assert sum(t.peak_mb > 100 for t in tasks) == 6
    # 3 % of 100 tasks: 3 failures may be spent, but any size below 1000 MB fails 6 tasks
    at3 = replay_hindsight(tasks, 0.5, fail_budget=0.03)
    assert (at3.attempts, at3.oom) == (100, 0)
    assert at3.alloc_mb_s == pytest.approx(100 * 1000 * 10)
    # 6 %: all six may fail: size 100, each outlier killed at half its run and retried at 1000
    at6 = replay_hindsight(tasks, 0.5, fail_budget=0.06)
    assert (at6.attempts, at6.oom) == (106, 6)
    assert at6.alloc_mb_s == pytest.approx(94 * 100 * 10 + 6 * (100 * 5 + 1000 * 10))
    assert at6.maq > at3.maq


def test_the_budget_is_spent_across_the_workflow_not_per_process():
    # a: 10 tasks, one outlier; b: 90 tasks, two outliers; 3 % of 100 tasks = 3 failures
    tasks = [task(i, 1000.0 if i == 3 else 100.0, "a") for i in range(10)]
    tasks += [task(10 + i, 1000.0 if i in (7, 50) else 100.0, "b") for i in range(90)]
    sizes = hindsight_sizes(tasks, 0.5, fail_budget=0.03)
    # a per-process 3 % (0 of 10 for a) would keep a at 1000 MB
    assert {p: (o.size_mb, o.fails) for p, o in sizes.items()} == {"a": (100, 1), "b": (100, 2)}
    t = replay_hindsight(tasks, 0.5)
    assert (t.tasks, t.oom) == (100, 3)
    # with 2 % (2 failures) either a's one or b's two: b's two let 88 tasks run at 100 MB, a's one 9
    sizes2 = hindsight_sizes(tasks, 0.5, fail_budget=0.02)
    assert {p: o.fails for p, o in sizes2.items()} == {"a": 0, "b": 2}


def test_process_options_cost_by_hand():
    peaks, runs = np.array([50.0, 100.0, 300.0]), np.array([10.0, 20.0, 40.0])
    opts = {o.fails: o for o in process_options(peaks, runs, ttf=0.5, max_fails=5)}
    assert opts[0] == Option(300, 0, 300 * 70.0)
    assert opts[1] == Option(100, 1, 100 * 30 + 100 * 0.5 * 40 + 300 * 40)
    assert opts[2] == Option(50, 2, 50 * 10 + 50 * 0.5 * 60 + 300 * 60)
    assert set(opts) == {0, 1, 2}  # the largest peak's size is the only one failing none
    assert [o.fails for o in process_options(peaks, runs, 0.5, max_fails=1)] == [0, 1]


def test_dynamic_programme_is_exact_where_the_lagrangian_sweep_is_not():
    # a saves 100 with 3 failures (33 per failure), b saves 50 with 1 (50 per failure); budget 3
    options = {"a": [Option(10, 0, 100.0), Option(1, 3, 0.0)], "b": [Option(10, 0, 100.0), Option(1, 1, 50.0)]}
    exact = optimal_sizes(options, 3)
    assert {n: o.fails for n, o in exact.items()} == {"a": 3, "b": 0}
    sweep = lagrangian_sizes(options, 3)  # stops at b's hull point, leaving 2 failures unspent
    assert {n: o.fails for n, o in sweep.items()} == {"a": 0, "b": 1}


@pytest.mark.parametrize("seed", range(8))
def test_dynamic_programme_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    options = {}
    for p in range(3):
        n = int(rng.integers(3, 9))
        peaks = rng.lognormal(5.0, 0.6, n)
        options[f"p{p}"] = process_options(peaks, rng.uniform(1, 100, n), 0.5, max_fails=4)
    budget = int(rng.integers(0, 5))
    best = min((sum(o.alloc_mb_s for o in combo), combo) for combo in itertools.product(*options.values())
               if sum(o.fails for o in combo) <= budget)[0]
    got = optimal_sizes(options, budget)
    assert sum(o.fails for o in got.values()) <= budget
    assert sum(o.alloc_mb_s for o in got.values()) == pytest.approx(best)
    lag = lagrangian_sizes(options, budget)
    assert sum(o.fails for o in lag.values()) <= budget
    assert sum(o.alloc_mb_s for o in lag.values()) >= best - 1e-6


def test_cold_start_pays_each_process_first_task_at_the_request():
    tasks = [task(0, 100.0, request=4000.0)] + [task(i, 100.0) for i in range(1, 10)]
    cold = replay_hindsight(tasks, 0.5, cold_start=True)
    assert cold.alloc_mb_s == pytest.approx(4000 * 10 + 9 * 100 * 10)
    assert replay_hindsight(tasks, 0.5).alloc_mb_s == pytest.approx(10 * 100 * 10)
    # the first task's peak is not what the later ones are sized by
    tasks = [task(0, 900.0)] + [task(i, 100.0) for i in range(1, 10)]
    assert hindsight_sizes(tasks, 0.5, cold_start=True)["p"].size_mb == 100
    assert hindsight_sizes(tasks, 0.5, fail_budget=0.0)["p"].size_mb == 900


def test_gap_closed_and_rows():
    assert gap_closed(0.85, 0.80, 0.90) == pytest.approx(0.5)
    assert gap_closed(0.75, 0.80, 0.90) == pytest.approx(-0.5)
    assert gap_closed(0.8, 0.9, 0.9) is None
    per = {"anchor": {"w": {"maq": 0.8}, "mag": {"maq": 0.5}},
           COLD_START: {"w": {"maq": 0.9}, "mag": {"maq": 0.7}},
           "x": {"w": {"maq": 0.88}, "mag": {"maq": 0.5}},
           "lr-max-": {"w": {"maq": 0.85}, "mag": {"maq": 0.6}}}
    tot = {n: {"maq_mean": (v["w"]["maq"] + v["mag"]["maq"]) / 2} for n, v in per.items()}
    g = gap_rows({"per_workflow": per, "totals": tot}, ["w", "mag"], ["x", "lr-max-", COLD_START], "anchor")
    assert g["baselines"] == {"anchor": "anchor", "witt-best": "lr-max-"}
    row = g["rows"]["anchor"]["x"]
    assert row["w"] == pytest.approx(0.8) and row["mag"] == pytest.approx(0.0)
    assert row["mean"] == pytest.approx((0.69 - 0.65) / (0.8 - 0.65))
    assert row["mean-without-mag"] == pytest.approx(0.8)
    assert g["rows"]["witt-best"]["x"]["w"] == pytest.approx(0.6)


def test_bench_refuses_an_unknown_agent_and_an_empty_folder(tmp_path):
    def bench(*args):
        return subprocess.run([sys.executable, "-m", "asad", "bench", "sizing", "--traces", str(tmp_path), *args],
                              capture_output=True, text=True)

    r = bench("--agents", "ceiling-constant")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "unknown agent(s) ceiling-constant" in r.stderr and "sizey-like" in r.stderr
    r = bench()
    assert r.returncode == 2 and "Traceback" not in r.stderr and "no trace_*.csv.gz" in r.stderr


def test_ceilings_on_the_nf_core_traces():
    from asad.bench.sizing import DEFAULT_TRACES, load_traces

    if not DEFAULT_TRACES.is_dir():
        pytest.skip(f"nf-core traces not present at {DEFAULT_TRACES}")
    traces = load_traces(DEFAULT_TRACES)
    for cold, maq in ((False, 0.9090), (True, 0.8876)):
        rows = [replay_hindsight(t, 0.5, cold_start=cold).summary() for t in traces.values()]
        assert sum(r["maq"] for r in rows) / 6 == pytest.approx(maq, abs=0.0005)
        assert all(r["failed_pct"] <= 3.0 for r in rows)  # the budget holds in every workflow
