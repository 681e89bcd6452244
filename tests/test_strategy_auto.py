"""The default strategy: the site's priority rules pick chain or the quantile rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asad.app import run_in_process
from asad.slurm.priority_rules import PriorityRules, rules_from_scontrol, rules_of
from asad.slurm.sim import make_simulator
from asad.spec import load_workflow
from asad.status import render_explain
from asad.store.repo import Store
from asad.strategies.auto import quantile_level
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


def test_simulator_reports_its_own_rules():
    assert rules_of(make_simulator("small", load=0.0, priority="fifo")).type == "basic"
    multi = rules_of(make_simulator("small", load=0.0, priority="multifactor"))
    assert multi.type == "multifactor" and multi.age_counts and multi.source == "simulator"


@given(st.floats(0.0, 10.0), st.integers(1, 512))
def test_quantile_level_falls_as_idling_gets_dearer(price, cpus):
    tau = quantile_level(price, cpus)
    assert 0.0 < tau <= 1.0
    assert quantile_level(price * 2 + 0.01, cpus) < tau or price * cpus == 0 and tau == 1.0
    assert quantile_level(price, cpus + 1) <= tau


def _run(db_url, priority, *, load=0.0, seed=1, example="montage.yaml", runs=1):
    spec = load_workflow(EXAMPLES / example)
    store = Store(db_url)
    sim = make_simulator("small", load=load, seed=seed, priority=priority)
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


def test_auto_submits_without_dependency_where_age_counts(db_url):
    spec, summary, wf, jobs = _run(db_url, "multifactor", load=0.9, seed=4, runs=2)
    assert summary["state"] == "COMPLETED", summary["message"]
    stages = {s["name"]: s for s in summary["stages"]}
    for st_ in spec.stages[1:]:
        job = jobs[st_.name]
        assert job.request.dependency is None  # no afterok: the job accrues age while its predecessor runs
        assert "rule quantile" in wf.stages[st_.name].plan_why
        for pred in spec.predecessors(st_.name):
            assert stages[st_.name]["start"] >= stages[pred]["end"] - 1e-6  # the barrier held
    early = [s for s in spec.stages[1:] if jobs[s.name].submitted_at < max(
        stages[p]["end"] for p in spec.predecessors(s.name))]
    assert early, "no stage was submitted before its predecessors ended"
    text = render_explain(wf, spec.stages[1].name)
    assert "quantile" in text and "idle_price" in text
