"""Learned sharing (``share_jobs = "learned"``, asad/core/share_choice.py): each run of same-shape
stages is tried as one job and as a job each, then runs the way that waited less."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asad.daemon.wiring import run_in_process
from asad.common.config import ConfigError, Settings, load_settings
from asad.core.share_choice import ALONE, EXPLORE_EVERY, SHARED, WINDOW, ShareChoice
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.view.explain import render_explain
from asad.store.repo import Store
from tests.conftest import EXAMPLES


def test_each_choice_is_tried_once_then_the_one_that_waited_less_is_taken():
    choice = ShareChoice()
    assert choice.choose()[0] == ALONE  # first: what the default does without sharing
    choice.observe(ALONE, 100.0)
    assert choice.choose()[0] == SHARED
    choice.observe(SHARED, 900.0)
    arm, why = choice.choose()
    assert arm == ALONE and "median 900 s" in why and "100 s" in why


def test_the_choice_not_taken_is_tried_again_after_a_while():
    choice = ShareChoice()
    choice.observe(SHARED, 900.0)
    choice.observe(ALONE, 100.0)
    arms = []
    for _ in range(60):
        arm = choice.choose()[0]
        arms.append(arm)
        if arm == SHARED:
            choice.observe(SHARED, 900.0)  # it keeps losing
    tries = [i for i, arm in enumerate(arms) if arm == SHARED]
    # re-tried after 6, then 12, 18 ... decisions: the slower way costs fewer and fewer runs
    assert tries == [EXPLORE_EVERY, 3 * EXPLORE_EVERY + 1, 6 * EXPLORE_EVERY + 2]


@given(st.lists(st.tuples(st.sampled_from([SHARED, ALONE]), st.floats(0, 1e6)), max_size=40))
def test_state_round_trips_and_keeps_a_window(observations):
    choice = ShareChoice()
    for arm, cost in observations:
        choice.observe(arm, cost)
        choice.choose()
    again = ShareChoice.from_state(choice.to_state())
    assert again.costs == choice.costs and again.since == choice.since
    assert all(len(c) <= WINDOW for c in choice.costs.values())
    assert again.choose() == choice.choose()


def test_share_jobs_setting_takes_learned_and_the_old_booleans():
    assert load_settings({"share_jobs": "learned"}, config_file=None).share_jobs == "learned"
    assert load_settings({"share_jobs": True}).share_jobs == "on"
    assert load_settings({"share_jobs": "0"}).share_jobs == "off"
    with pytest.raises(ConfigError, match="off, on, learned"):
        load_settings({"share_jobs": "sometimes"})


def test_montage_learns_whether_to_share_from_what_each_choice_waited(tmp_path):
    """Three runs on one store and one queue: a job each first, shared second, then per run of
    stages whichever waited less. What each choice cost is the sum of its stages' perceived
    waits, as the run's own summary counts them."""
    spec = load_workflow(EXAMPLES / "montage.yaml")
    store = Store(f"sqlite:///{tmp_path}/a.db")
    try:
        runs, learned = [], []
        for _ in range(3):
            sim = make_simulator("small", load=1.1, seed=4, priority="multifactor")
            (summary,) = run_in_process(store, sim, [spec], settings=Settings(share_jobs="learned"),
                                        warmup_s=12 * 3600)
            assert summary["state"] == "COMPLETED", summary["message"]
            runs.append((summary, store.load_workflows(active_only=False)[-1]))
            learned.append({row.key: row.state for row in store.learners("share")})
    finally:
        store.close()
    (first, wf1), (second, wf2), (_, wf3) = runs
    assert len(wf1.jobs) == 9 and len(wf2.jobs) == 4  # a job each, then shared
    assert "each gets its own (learned" in render_explain(wf1, "mProjectPP")
    assert "shared (learned: one job: not tried yet" in render_explain(wf2, "mProjectPP")
    groups = {j.stage: j.stages for j in wf2.jobs if j.rides}
    assert len(learned[1]) == len(groups) == 3  # one learner per run of stages that could share
    waits = [{s["name"]: s["perceived_wait_s"] for s in summary["stages"]} for summary in (first, second)]
    assert any(w > 0 for w in waits[0].values())  # a queue that makes the choice matter
    for key, state in learned[1].items():
        head = key.split("/")[1].split("|")[0]
        (shared,), (alone,) = state["costs"]["shared"], state["costs"]["alone"]
        assert alone == pytest.approx(sum(waits[0][s] for s in groups[head]), abs=1e-6)
        assert shared == pytest.approx(sum(waits[1][s] for s in groups[head]), abs=1e-6)
        job = next(j for j in wf3.jobs if j.stage == head)
        assert bool(job.rides) == (shared <= alone), (head, state)


def test_open_trials_settle_when_their_stages_complete_and_drop_with_the_workflow():
    from types import SimpleNamespace

    from asad.core.share_choice import OpenTrials, Trial
    from asad.core.model import StageState, WorkflowState

    def workflow(state, **stages):
        return SimpleNamespace(id=7, state=state, stages={n: SimpleNamespace(state=s) for n, s in stages.items()})

    trials = OpenTrials()
    trials.open(7, Trial("k", SHARED, ("a", "b", "c")))
    assert trials.decided(7, "b") and trials.decided(7, "c")
    assert not trials.decided(7, "a") and not trials.decided(8, "b")
    running = workflow(WorkflowState.ACTIVE, a=StageState.COMPLETED, b=StageState.RUNNING, c=StageState.WAITING)
    assert trials.settle(running) == [] and trials.decided(7, "b")  # still open
    failed = workflow(WorkflowState.FAILED, a=StageState.COMPLETED, b=StageState.FAILED, c=StageState.CANCELLED)
    assert trials.settle(failed) == []
    assert not trials.decided(7, "b")  # the workflow ended: its trial is dropped, nothing learned
