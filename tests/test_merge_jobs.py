"""Merged jobs (``share_jobs = "cost"``, issue 35): adjacent stages of different CPUs in one job,
sized to the largest, where the cost rule (asad/strategies/merge_cost.py) prices the merged job's
idle cores below a job of its own; under the quantile rule of sites that enforce limits too."""

from __future__ import annotations

import numpy as np
import pytest

from asad.common.config import ConfigError, Settings, load_settings
from asad.daemon.wiring import run_in_process
from asad.slurm.backend import JobRequest, SimTruth
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store
from asad.strategies.expected_start import GRID
from asad.strategies.merge_cost import StageCost, idle_core_s, merged_cost_s, own_job_cost_s
from asad.strategies.share import shared_request
from asad.view.explain import render_explain

POINT = [100.0] * len(GRID)  # a wait known exactly: 100 s


def test_a_merged_job_idles_the_cores_its_smaller_stages_leave():
    small, big = StageCost(4, (15.0,)), StageCost(28, (30.0,))
    assert idle_core_s([big]) == 0.0
    assert idle_core_s([big, small]) == 24 * 15.0
    # a larger rider raises the job: the earlier, smaller stage idles the difference for its run time
    assert merged_cost_s([small], big, 0.3) == pytest.approx(0.3 * 24 * 15.0)
    assert merged_cost_s([big], StageCost(28, (10.0,)), 0.3) == 0.0  # one shape: nothing idles


def test_a_merged_job_that_waits_longer_pays_that_wait_too():
    small, big = StageCost(4, (15.0,)), StageCost(28, (30.0,))
    idle = 0.3 * 24 * 15.0
    assert merged_cost_s([big], small, 0.3, extra_wait_s=200.0) == pytest.approx(idle + 200.0)
    assert merged_cost_s([big], small, 0.3, extra_wait_s=-50.0) == pytest.approx(idle)  # no gain counted


def test_under_the_chain_rules_a_job_of_its_own_costs_its_whole_wait():
    waits = list(np.linspace(50, 150, len(GRID)))
    cost, how = own_job_cost_s("chain", POINT, [StageCost(8, (20.0,))], StageCost(28, (30.0,)), waits, 0.3)
    assert cost == pytest.approx(100.0) and "wait 100 s" in how


def test_under_the_quantile_rule_a_known_wait_is_hidden_by_the_lead_at_no_cost():
    # the group's job waits 100 s and runs 20 s; the rider's own job would wait 100 s, exactly:
    # submitted 100 s ahead of the group's end, it starts at that end and nothing idles
    cost, how = own_job_cost_s("quantile", POINT, [StageCost(8, (20.0,))], StageCost(28, (30.0,)), POINT, 0.3)
    assert cost == pytest.approx(0.0, abs=1e-9) and "ahead at a barrier" in how


def test_under_the_quantile_rule_an_uncertain_wait_costs_idle_or_makespan():
    spread = list(np.linspace(20, 180, len(GRID)))
    group = [StageCost(8, (20.0,))]
    cheap, _ = own_job_cost_s("quantile", POINT, group, StageCost(2, (30.0,)), spread, 0.3)
    dear, _ = own_job_cost_s("quantile", POINT, group, StageCost(28, (30.0,)), spread, 0.3)
    assert 0.0 < cheap < dear  # idling 28 cores is dearer than idling 2, so the lead hides less


def test_under_the_quantile_rule_a_short_lead_means_afterok_and_the_whole_wait():
    # a 30-s wait after a 20-s run: the lead (30 s) is under MIN_LEAD_S, the rule would use afterok
    short = [30.0] * len(GRID)
    cost, how = own_job_cost_s("quantile", short, [StageCost(8, (20.0,))], StageCost(28, (30.0,)), short, 0.3)
    assert cost == pytest.approx(30.0) and "afterok" in how


def test_a_merged_request_is_sized_to_its_largest_stage():
    a = JobRequest(name="a", command="", ntasks=1, cpus_per_task=8, mem_mb=2000, time_limit_s=600,
                   truth=SimTruth(20.0, 1000.0, 1.0))
    b = JobRequest(name="b", command="", ntasks=28, cpus_per_task=1, mem_mb=1000, time_limit_s=900,
                   truth=SimTruth(30.0, 500.0, 1.0))
    req = shared_request(a, [b])
    assert (req.ntasks, req.cpus_per_task, req.cpus) == (28, 1, 28)
    assert req.time_limit_s == 1500 and req.total_mem_mb() == 2000
    # the simulator's truth: 8 of 28 cores busy for 20 s, 28 for 30 s
    assert req.truth.runtime_s == 50.0
    assert req.truth.cpu_efficiency == pytest.approx((8 * 20 + 28 * 30) / (28 * 50))


def test_the_setting_takes_cost():
    assert load_settings({"share_jobs": "cost"}).share_jobs == "cost"
    with pytest.raises(ConfigError):
        load_settings({"share_jobs": "sometimes"})


PIPELINE = """
name: sizes
idle_price: {price}
stages:
  - {{name: a, cpus: 16, mem: 2G, time: 20m, run: "true", simulate: {{runtime: 10m}}}}
  - {{name: b, cpus: 4, mem: 1G, time: 20m, after: [a], run: "true", simulate: {{runtime: 5m}}}}
  - {{name: c, cpus: 2, mem: 1G, time: 20m, after: [b], run: "true", simulate: {{runtime: 5m}}}}
"""
# The 16-core head is the largest and the limits sum to 1 h: the merged job keeps the head's
# geometry key (cpus=16, walltime<=1h), so the learner sees no longer wait for it.


def _runs(db_url, price, runs=2):
    spec = parse_workflow(PIPELINE.format(price=price))
    store = Store(db_url)
    sim = make_simulator("small", load=0.9, seed=4, priority="multifactor", accounting_enforce_limits=True)
    summaries = []
    try:
        for i in range(runs):  # later runs price the merge with the run times and waits earlier ones taught
            (summary,) = run_in_process(store, sim, [spec], settings=Settings(share_jobs="cost"), strategy="auto",
                                        warmup_s=0 if i else 6 * 3600)
            summaries.append(summary)
        wfs = store.load_workflows(active_only=False)
    finally:
        store.close()
    return spec, summaries, wfs


def test_where_limits_are_enforced_stages_of_different_sizes_merge_when_idle_is_cheap(db_url):
    spec, summaries, wfs = _runs(db_url, 0.0001)
    assert all(s["state"] == "COMPLETED" for s in summaries), [s["message"] for s in summaries]
    first, last = wfs[0], wfs[-1]
    assert all(not j.rides for j in first.jobs)  # nothing learned yet: a job per stage
    assert "not learned yet" in first.stages["a"].plan_why
    (job,) = [j for j in last.jobs if j.rides]
    assert job.stages == ("a", "b", "c") and job.request.cpus == 16  # sized to the largest
    assert job.request.time_limit_s == 3 * 1200
    stages = {s["name"]: s for s in summaries[-1]["stages"]}
    for prev, rider in zip(job.stages, job.rides):  # each stage still has its own times
        assert stages[rider]["start"] == pytest.approx(stages[prev]["end"])
        assert stages[rider]["perceived_wait_s"] == 0.0
    for name in job.stages:
        assert stages[name]["end"] - stages[name]["start"] == pytest.approx(spec.stage(name).simulate.runtime_s)
    assert "rule quantile" in last.stages["a"].plan_why and "cost rule: b rides" in last.stages["a"].plan_why
    explain = render_explain(last, "c")
    assert "a merged job of 16 CPUs (this stage asks for 2)" in explain and "c rides" in explain
    # the idle it pays for: the 4- and 2-core stages in the 16-core job
    idle_core_h = (12 * 300 + 14 * 300) / 3600
    assert summaries[-1]["core_hours"] == pytest.approx(16 * 1200 / 3600)
    assert summaries[-1]["core_hours"] - summaries[0]["core_hours"] == pytest.approx(idle_core_h, abs=0.05)


def test_where_idling_is_dear_every_stage_keeps_its_own_job(tmp_path):
    _, summaries, wfs = _runs(f"sqlite:///{tmp_path}/s.db", 1000.0)
    assert all(s["state"] == "COMPLETED" for s in summaries)
    assert all(not j.rides for wf in wfs for j in wf.jobs)
    assert "b gets its own job: in one job of 16 CPUs it idles" in wfs[-1].stages["a"].plan_why


BARRIER_PIPE = """
name: barrier
stages:
  - {name: a, cpus: 4, time: 20m, run: "true"}
  - {name: b, cpus: 16, time: 20m, after: [a], run: "true"}
"""


def _learned_pair(db_url):
    """A real engine context (simulator with limits: the quantile rule) where a and b have run
    times and waits learned, a short and b long: b would ride with a (4 s of priced idle against
    19 s expected of a job of its own)."""
    from asad.core.model import StageRun, WorkflowRun
    from asad.daemon.wiring import make_runner

    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1, priority="multifactor", accounting_enforce_limits=True)
    ctx = make_runner(Settings(share_jobs="cost", idle_price=0.01), store, sim).ctx
    wf = WorkflowRun(id=1, spec=parse_workflow(BARRIER_PIPE), strategy="auto", mode="dependency")
    wf.stages = {n: StageRun(1, n) for n in ("a", "b")}
    for n in ("a", "b"):
        key = ctx.geometry_key(ctx.request_for(wf, n))
        for i in range(10):
            ctx.learned.observe_wait(key, 100.0 + 20 * i, at_s=1000.0 + i)
            ctx.learned.observe_runtime(ctx.runtime_key(wf, n), 30.0 if n == "a" else 300.0)
    return store, ctx, wf


def test_a_larger_rider_does_not_join_a_head_planned_ahead_at_a_barrier(db_url):
    from asad.strategies.share import riders

    store, ctx, wf = _learned_pair(db_url)
    try:
        head_req = ctx.request_for(wf, "a")
        rides, why = riders(wf, "a", head_req, ctx)
        assert rides == ("b",) and "b rides" in why  # submitted with nothing to wait for: it merges
        # a planned ahead of its predecessors' end: its lead priced 4 idle cores at the barrier, not 16
        rides, why = riders(wf, "a", head_req, ctx, at_barrier=True)
        assert rides == () and "needs more CPUs (16) than a" in why
    finally:
        store.close()
