"""The runner decides only the workflows that may decide differently (jobs changed, wake time
due, a consulted learner moved). It must reach exactly the same results as deciding every
workflow at every tick: same jobs, same times, same measures."""

from __future__ import annotations

import pytest

from asad.daemon.wiring import make_runner, run_to_completion
from asad.common.config import Settings
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.repo import Store
from tests.conftest import EXAMPLES


def _run(db_url: str, strategy: str, mode: str, decide_all: bool,
         timing: str = "daemon") -> tuple[list[dict], list[tuple]]:
    sim = make_simulator("small", load=0.8, seed=11)
    store = Store(db_url)
    runner = make_runner(Settings(seed=3, asa_timing=timing), store, sim)
    runner.decide_all = decide_all
    ids = []
    for name in ("montage.yaml", "statistics.yaml", "dag.yaml", "blast.yaml", "montage.yaml"):
        spec = load_workflow(EXAMPLES / name)
        ids.append(store.add_workflow(spec, sim.now(), strategy=strategy, mode=mode).id)
        sim.run_until(sim.now() + 600)
    runner.load()
    run_to_completion(runner, sim, ids)
    summaries = [r.summary for r in store.workflow_rows(ids)]
    jobs = sorted((st.comment, st.submit_time, st.start_time, st.end_time, st.state.value)
                  for st in sim.find(f"asad:{store.store_id}:").values())
    store.close()
    for s in summaries:  # the store id is random per database; everything else must match
        s.pop("id", None)
    return summaries, [(c.split(":", 2)[2], *rest) for c, *rest in jobs]


@pytest.mark.parametrize("strategy,mode,timing", [("asa", "dependency", "daemon"), ("asa", "naive", "daemon"),
                                                  ("asa", "dependency", "begin"), ("chain", "dependency", "daemon"),
                                                  ("per-stage", "dependency", "daemon"),
                                                  ("big-job", "dependency", "daemon")])
def test_incremental_decisions_equal_full_decisions(tmp_path, strategy, mode, timing):
    full = _run(f"sqlite:///{tmp_path / 'full.db'}", strategy, mode, decide_all=True, timing=timing)
    incremental = _run(f"sqlite:///{tmp_path / 'inc.db'}", strategy, mode, decide_all=False, timing=timing)
    assert [s["state"] for s in full[0]] == ["COMPLETED"] * 5
    assert incremental[1] == full[1]
    assert incremental[0] == full[0]
