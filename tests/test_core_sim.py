"""End to end on the simulator: every example under every strategy, through the real store."""

from __future__ import annotations

import pytest

from asad.daemon.wiring import run_in_process
from asad.common.config import Settings
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES

EXAMPLE_FILES = ["montage.yaml", "blast.yaml", "statistics.yaml", "dag.yaml"]
STRATEGIES = ["per-stage", "chain", "big-job", "asa", "auto"]


def run(db_url, example, strategy, *, load=0.0, seed=1, mode=None, priority="fifo", preset="small",
        predictor=""):
    spec = load_workflow(EXAMPLES / example)
    store = Store(db_url)
    sim = make_simulator(preset, load=load, seed=seed, priority=priority)
    try:
        (summary,) = run_in_process(store, sim, [spec], settings=Settings(predictor=predictor), strategy=strategy,
                                    mode=mode,
                                    warmup_s=0 if load == 0 else 6 * 3600)
        jobs = sim.find(f"asad:{store.store_id}:")
    finally:
        store.close()
    return spec, summary, jobs


@pytest.mark.parametrize("example", EXAMPLE_FILES)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_every_example_completes_in_order(db_url, example, strategy):
    spec, summary, jobs = run(db_url, example, strategy)
    assert summary["state"] == "COMPLETED", summary["message"]
    expected_jobs = 1 if strategy == "big-job" else len(spec.stages)
    assert summary["jobs"] == expected_jobs == len(jobs)
    stages = {s["name"]: s for s in summary["stages"]}
    for st in spec.stages:
        mine = stages[st.name]
        assert mine["state"] == "COMPLETED"
        for pred in spec.predecessors(st.name):
            assert mine["start"] >= stages[pred]["end"] - 1e-6, f"{st.name} started before {pred} ended"
    if strategy != "big-job":  # each stage ran as long as the simulator's truth says
        for st in spec.stages:
            assert stages[st.name]["end"] - stages[st.name]["start"] == pytest.approx(st.simulate.runtime_s)


@pytest.mark.parametrize("example", ["montage.yaml", "statistics.yaml"])
def test_big_job_has_one_wait_and_most_core_hours_per_stage_the_fewest(db_url, tmp_path, example):
    results = {}
    for i, strategy in enumerate(STRATEGIES):
        _, summary, _ = run(f"sqlite:///{tmp_path}/s{i}.db", example, strategy, load=0.9, seed=3)
        results[strategy] = summary
    big = results["big-job"]
    assert sum(1 for s in big["stages"] if s["wait_s"]) <= 1
    assert big["core_hours"] == max(r["core_hours"] for r in results.values())
    assert results["per-stage"]["core_hours"] == pytest.approx(min(r["core_hours"] for r in results.values()))
    assert results["per-stage"]["overhead_core_hours"] == pytest.approx(0.0, abs=1e-9)
    assert big["overhead_core_hours"] > 0


def test_asa_presubmits_while_predecessor_runs(db_url):
    spec, summary, _ = run(db_url, "montage.yaml", "asa", load=0.9, seed=5)
    stages = summary["stages"]
    pre = [s for s in stages[1:] if s["submit"] is not None and s["est_wait_s"] is not None]
    # at least one stage was submitted before its predecessor ended
    ends = {s["name"]: s["end"] for s in stages}
    early = [s for s in pre if any(s["submit"] < ends[p] for p in spec.predecessors(s["name"]))]
    assert early, "no stage was pre-submitted"


def test_naive_mode_charges_idle_allocation(db_url):
    # asa-full: its untrained prior is a large wait (the default learner predicts 0 s until it has seen one)
    spec, summary, _ = run(db_url, "montage.yaml", "asa", mode="naive", load=0.0, predictor="asa-full")
    # With an empty queue and an untrained learner (large estimated wait), naive jobs start at once
    # and idle at their barrier until the predecessor ends: overhead must show it.
    assert summary["state"] == "COMPLETED"
    assert summary["overhead_core_hours"] > 0
    assert sum(s["idle_s"] for s in summary["stages"]) > 0


def test_three_concurrent_workflows_share_one_runner(db_url):
    specs = [load_workflow(EXAMPLES / f) for f in ("montage.yaml", "blast.yaml", "dag.yaml")]
    store = Store(db_url)
    sim = make_simulator("small", load=0.5, seed=2)
    try:
        summaries = run_in_process(store, sim, specs, strategy="asa", warmup_s=3600)
    finally:
        store.close()
    assert [s["state"] for s in summaries] == ["COMPLETED"] * 3
    assert sum(s["jobs"] for s in summaries) == sum(len(s.stages) for s in specs)


def test_learner_state_carries_across_runs(db_url):
    run(db_url, "blast.yaml", "per-stage", load=0.9, seed=7)
    store = Store(db_url)
    try:
        learners = store.learners("wait")
        observations = sum(len(store.observations(r.key)) for r in learners)
    finally:
        store.close()
    assert learners and observations == 2  # one wait per stage, each under its geometry


def test_a_job_keeps_what_the_wait_learner_told_it_and_hands_it_back_with_its_wait(db_url):
    run(db_url, "blast.yaml", "per-stage", load=0.9, seed=7)
    run(db_url, "blast.yaml", "per-stage", load=0.9, seed=8)  # now the learner has something to tell
    store = Store(db_url)
    try:
        first, second = store.jobs_for(1), store.jobs_for(2)
        learners = {row.key: row.state for row in store.learners("wait")}
    finally:
        store.close()
    assert first[0].wait_told is None  # nothing learned yet
    told = [job.wait_told for job in [*first, *second] if job.wait_told is not None]
    assert len(told) >= len(second) and all(isinstance(t[0], float) and isinstance(t[1], str) for t in told)
    cluster = next(state for key, state in learners.items() if "|" not in key)  # the coarsest key
    strata = cluster["stats"]["strata"]
    assert {t[1] for t in told} <= set(strata)  # each residual landed in the stratum it was told
    assert sum(len(w["residuals"]) for w in strata.values()) == len(told)
