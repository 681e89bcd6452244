"""A stage that lists several partitions is placed by the ReASSIGN agent, which learns from outcomes."""

from __future__ import annotations

from asad.app import run_in_process
from asad.slurm.sim import make_simulator
from asad.spec import parse_workflow
from asad.store.repo import Store

WF = """
name: placed
strategy: per-stage
sizing: off
stages:
  - name: work
    partition: fast,slow
    cpus: 8
    mem: 4G
    time: 2h
    run: work
    simulate: {runtime: 30m}
"""


def test_multi_partition_stage_is_placed_and_learned(db_url):
    store = Store(db_url)
    placed = []
    try:
        for seed in range(4):
            sim = make_simulator("two-speed", load=0.0, seed=seed)
            (summary,) = run_in_process(store, sim, [parse_workflow(WF)])
            assert summary["state"] == "COMPLETED"
        for wf in store.load_workflows():
            placed.append(wf.jobs[0].request.partition)
            assert "reassign" in wf.stages["work"].size_why
        rows = store.learners("placement")
    finally:
        store.close()
    assert set(placed) <= {"fast", "slow", "fast,slow"}
    assert len(rows) == 1 and sum(len(v) for v in rows[0].state["times"].values()) == 4
