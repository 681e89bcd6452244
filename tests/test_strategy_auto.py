"""The default strategy: the site's priority rules pick chain, aged-chain or the quantile rule."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asad.daemon.wiring import run_in_process
from asad.common.config import DEFAULT_IDLE_PRICE
from asad.slurm.priority_rules import PriorityRules, rules_from_scontrol, rules_of
from asad.slurm.sim import make_simulator
from asad.spec.load import SpecError, WorkflowSpec, load_workflow, parse_workflow
from asad.view.explain import render_explain
from asad.store.repo import Store
from asad.strategies.auto import begin_offset, quantile_level
from tests.conftest import EXAMPLES


def test_scontrol_config_gives_the_rules():
    basic = rules_from_scontrol({"PriorityType": "priority/basic"})
    assert basic.type == "basic" and not basic.age_counts
    multi = rules_from_scontrol({"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000",
                                 "PriorityMaxAge": "1-00:00:00", "PriorityFlags": "",
                                 "PriorityWeightFairShare": "10000"})
    assert multi.age_counts and multi.max_age_s == 86400 and multi.weight_fairshare == 10000
    always = rules_from_scontrol({"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000",
                                  "PriorityFlags": "SMALL_RELATIVE_TO_TIME,ACCRUE_ALWAYS"})
    assert always.accrue_always and not always.age_counts
    no_age = rules_from_scontrol({"PriorityType": "priority/multifactor", "PriorityWeightAge": "0"})
    assert not no_age.age_counts
    assert not PriorityRules().age_counts  # unknown: never slower than a chain
    assert (basic.rule, always.rule, no_age.rule, PriorityRules().rule) == ("chain",) * 4
    # Slurm's default AccountingStorageEnforce (none, or without limits) keeps a --begin's age
    assert multi.begin_keeps_age and multi.rule == "aged-chain"
    for enforce, rule in (("none", "aged-chain"), ("associations,qos", "aged-chain"),
                          ("associations,limits,qos", "quantile"), ("safe", "quantile"), ("all", "quantile")):
        got = rules_from_scontrol({"PriorityType": "priority/multifactor", "PriorityWeightAge": "1000",
                                   "AccountingStorageEnforce": enforce})
        assert got.rule == rule, enforce


def test_simulator_reports_its_own_rules():
    assert rules_of(make_simulator("small", load=0.0, priority="fifo")).type == "basic"
    multi = rules_of(make_simulator("small", load=0.0, priority="multifactor"))
    assert multi.type == "multifactor" and multi.age_counts and multi.source == "simulator"
    assert multi.rule == "aged-chain"
    limits = rules_of(make_simulator("small", load=0.0, priority="multifactor", accounting_enforce_limits=True))
    assert limits.rule == "quantile"


@given(st.floats(0.0, 10.0), st.integers(1, 512))
def test_quantile_level_falls_as_idling_gets_dearer(price, cpus):
    tau = quantile_level(price, cpus)
    assert 0.0 < tau <= 1.0
    assert quantile_level(price * 2 + 0.01, cpus) < tau or price * cpus == 0 and tau == 1.0
    assert quantile_level(price, cpus + 1) <= tau


def _run(db_url, priority, *, load=0.0, seed=1, example="montage.yaml", runs=1, **sim_settings):
    spec = load_workflow(EXAMPLES / example)
    store = Store(db_url)
    sim = make_simulator("small", load=load, seed=seed, priority=priority, **sim_settings)
    try:
        for i in range(runs):  # later runs plan with the run times and waits the earlier ones taught
            (summary,) = run_in_process(store, sim, [spec], strategy="auto",
                                        warmup_s=0 if load == 0 or i else 6 * 3600)
        wf = store.load_workflows(active_only=False)[-1]
        jobs = {j.stage: j for j in wf.jobs}
    finally:
        store.close()
    return spec, summary, wf, jobs


def test_auto_is_a_chain_where_a_dependent_job_keeps_its_place(db_url):
    spec, summary, wf, jobs = _run(db_url, "fifo")
    assert summary["state"] == "COMPLETED"
    first = spec.stages[0].name
    for st_ in spec.stages[1:]:
        job = jobs[st_.name]
        assert job.request.dependency is not None and job.request.dependency.type.value == "afterok"
        assert job.submitted_at == pytest.approx(jobs[first].submitted_at)  # all at once, as a chain
        assert "rule chain" in wf.stages[st_.name].plan_why
    assert "rule chain: priority/basic" in render_explain(wf, spec.stages[1].name)


def test_auto_under_multifactor_submits_an_aged_chain(db_url):
    spec, summary, wf, jobs = _run(db_url, "multifactor", load=0.9, seed=4)
    assert summary["state"] == "COMPLETED", summary["message"]
    stages = {s["name"]: s for s in summary["stages"]}
    first = jobs[spec.stages[0].name]
    for st_ in spec.stages[1:]:
        job = jobs[st_.name]
        assert job.request.dependency is not None and job.request.dependency.type.value == "afterok"
        assert job.submitted_at == pytest.approx(first.submitted_at)  # all at once
        assert job.request.begin == pytest.approx(job.submitted_at + 10.0)  # ... ageing from then
        assert "rule aged-chain" in wf.stages[st_.name].plan_why
        for pred in spec.predecessors(st_.name):
            assert stages[st_.name]["start"] >= stages[pred]["end"] - 1e-6
    assert summary["overhead_core_hours"] == 0.0
    assert "rule aged-chain" in render_explain(wf, spec.stages[1].name)


def test_auto_under_multifactor_with_limits_completes_in_order_and_says_why(db_url):
    spec, summary, wf, jobs = _run(db_url, "multifactor", load=0.9, seed=4, runs=3, accounting_enforce_limits=True)
    assert summary["state"] == "COMPLETED", summary["message"]
    stages = {s["name"]: s for s in summary["stages"]}
    for st_ in spec.stages[1:]:
        assert "rule quantile" in wf.stages[st_.name].plan_why
        for pred in spec.predecessors(st_.name):
            assert stages[st_.name]["start"] >= stages[pred]["end"] - 1e-6  # afterok or the barrier held
    assert "rule quantile" in render_explain(wf, spec.stages[1].name)


@given(st.lists(st.floats(0, 1e5), min_size=1, max_size=20), st.floats(0, 1e4), st.floats(0.02, 0.98))
def test_one_run_time_seen_leads_by_the_wait_quantile(waits, runtime, tau):
    waits = sorted(waits)
    assert begin_offset([runtime], waits, tau) == pytest.approx(runtime - float(np.quantile(waits, tau)), abs=1e-6)


def test_a_run_time_that_varies_moves_the_instant_later_when_idling_is_dear():
    waits = [100.0, 200.0, 300.0, 400.0, 500.0]
    steady = begin_offset([1000.0] * 4, waits, tau=0.15)
    varied = begin_offset([700.0, 900.0, 1100.0, 1300.0], waits, tau=0.15)  # same mean, spread
    assert varied > steady  # a predecessor that may run long must not find the allocation idling
    # and earlier when idling is cheap (a high quantile of the wait is worth leading by)
    assert begin_offset([700.0, 900.0, 1100.0, 1300.0], waits, tau=0.9) < begin_offset([1000.0] * 4, waits, tau=0.9)


class _Runtime:
    n_observations = 3


class _Learned:
    def runtime(self, key):
        return _Runtime()


class _Ctx:
    """Just what Auto.plan consults: rules, run-time knowledge, expected ends and the lead."""

    def __init__(self, rules, lead_s):
        self.priority_rules = rules
        self.learned = _Learned()
        self.lead_s = lead_s
        self.config = type("C", (), {"idle_price": 0.05})()

    def runtime_key(self, wf, stage):
        return stage

    def expected_end(self, wf, stage):
        return 1000.0

    def predicted_end(self, wf, stage, now):
        return self.expected_end(wf, stage)

    def work_start_grid(self, wf, stage, now):
        return None  # a stage that has not started: nothing learned

    def quantile_begin(self, wf, stage, preds, now):
        return self.expected_end(wf, preds[0]) - self.lead_s, 0.4, 10

    def idle_price(self, wf):
        return self.config.idle_price


def _two_stage_running_first(now):
    from asad.core.model import StageState, WorkflowRun
    from asad.spec.load import parse_workflow

    spec = parse_workflow("name: t\nstages:\n  - {name: a, cpus: 4, time: 1h, run: 'true'}\n"
                          "  - {name: b, cpus: 4, time: 1h, run: 'true'}\n")
    wf = WorkflowRun(id=1, spec=spec, strategy="auto", mode="dependency")
    from asad.core.model import StageRun

    wf.stages = {"a": StageRun(1, "a", state=StageState.RUNNING, start_time=now - 100), "b": StageRun(1, "b")}
    return wf


def test_auto_quantile_rule_hands_the_instant_to_slurm_without_dependency():
    from asad.strategies.auto import Auto

    rules = PriorityRules(type="multifactor", weight_age=1000, enforce_limits=True)
    wf = _two_stage_running_first(now=500.0)
    plan = Auto().plan(wf, "b", 500.0, _Ctx(rules, lead_s=300.0))
    assert plan.dependency_on == () and plan.barrier_on == ("a",)
    assert plan.begin == pytest.approx(700.0) and plan.est_wait_s == 300.0
    # a short lead wins no age: afterok, which starts the job the moment its predecessor ends
    short = Auto().plan(wf, "b", 500.0, _Ctx(rules, lead_s=10.0))
    assert short.dependency_on == ("a",) and short.begin is None and "afterok" in short.why
    # the lead exceeds what is left: eligible at once, still without a dependency
    now = Auto().plan(wf, "b", 500.0, _Ctx(rules, lead_s=900.0))
    assert now.dependency_on == () and now.begin is None


def test_auto_is_chain_whatever_the_lead_where_age_does_not_count():
    from asad.strategies.auto import Auto

    wf = _two_stage_running_first(now=500.0)
    from asad.core.model import JobPhase, JobRecord
    from asad.slurm.backend import JobRequest

    job = JobRecord(row_id=7, workflow_id=1, stage="a", attempt=1, tag="t", phase=JobPhase.LIVE,
                    request=JobRequest(name="a", command="true"), geometry_key="k", job_id=41)
    wf.jobs.append(job)
    wf.stages["a"].job_row = 7
    for rules in (PriorityRules(type="basic"), PriorityRules(type="multifactor", weight_age=1000, accrue_always=True)):
        plan = Auto().plan(wf, "b", 500.0, _Ctx(rules, lead_s=5000.0))
        assert plan.dependency_on == ("a",) and plan.begin is None and "rule chain" in plan.why


def test_a_workflow_sets_its_own_idle_price(tmp_path):
    from asad.core.engine import EngineConfig

    text = "name: w\nidle_price: 0.02\nstages:\n  - {name: a, cpus: 28, time: 1h, run: x}\n"
    spec = parse_workflow(text)
    assert spec.idle_price == 0.02
    assert WorkflowSpec.from_dict(spec.to_dict()).idle_price == 0.02  # kept by the store
    assert parse_workflow(text.replace("idle_price: 0.02\n", "")).idle_price is None
    with pytest.raises(SpecError, match="idle_price: must be a number ≥ 0, got '-1'"):
        parse_workflow(text.replace("0.02", "-1"))
    with pytest.raises(SpecError, match="idle_price: must be a number"):
        parse_workflow(text.replace("0.02", "cheap"))
    assert EngineConfig().idle_price == DEFAULT_IDLE_PRICE > 0


def test_the_cli_offers_every_simulated_priority_policy():
    from asad.cli.main import SIM_PRIORITIES
    from asad.slurm.sim import PRIORITY_PRESETS

    assert SIM_PRIORITIES == tuple(PRIORITY_PRESETS)


def test_a_running_daemon_plans_new_workflows_with_the_sites_rules_as_they_are_now(db_url, monkeypatch):
    """The audit switched the cluster from priority/basic to multifactor under a running daemon: its
    new workflows were still planned as a plain chain until the daemon was restarted."""
    import asad.daemon.runner
    import asad.slurm.priority_rules as priority_rules
    from asad.daemon.wiring import make_runner
    from asad.common.config import Settings
    from asad.slurm.priority_rules import PriorityRules
    from asad.slurm.sim import make_simulator
    from asad.spec.load import parse_workflow
    from asad.store.repo import Store

    site = {"rules": PriorityRules(type="basic")}
    monkeypatch.setattr(priority_rules, "rules_of", lambda backend: site["rules"])
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    assert runner.ctx.priority_rules.type == "basic"
    spec = parse_workflow("name: two\nstages:\n  - {name: a, cpus: 1, time: 10m, run: 'true', simulate: {runtime: 5m}}\n"
                          "  - {name: b, cpus: 1, time: 10m, run: 'true', simulate: {runtime: 5m}}\n")
    site["rules"] = PriorityRules(type="multifactor", weight_age=1000)  # the site's admin restarts slurmctld
    store.add_workflow(spec, sim.now())
    store.commit()
    runner.refresh()
    assert runner.ctx.priority_rules.type == "basic"  # read again at most every RULES_TTL_S
    monkeypatch.setattr(asad.daemon.runner, "RULES_TTL_S", 0.0)
    store.add_workflow(spec, sim.now())
    store.commit()
    runner.refresh()
    assert runner.ctx.priority_rules == site["rules"]
    store.close()
