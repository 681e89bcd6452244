"""Crash safety of the write-ahead submission protocol: a daemon killed between writing its
intent and hearing back from sbatch must, after restart, neither lose nor double the stage."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import select

from asad.daemon.wiring import make_runner, run_to_completion
from asad.common.config import Settings
from asad.core.model import JobPhase
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow
from asad.store.models import WaitObservation
from asad.store.repo import Store
from tests.conftest import EXAMPLES


class Crash(BaseException):
    """Stands for SIGKILL: nothing after it runs (BaseException so no handler swallows it)."""


class CrashingBackend:
    """Delegates to the simulator; dies on the n-th submit, before or after sbatch took effect."""

    def __init__(self, sim, crash_on: int, after_submit: bool):
        self._sim, self.crash_on, self.after_submit, self.submits = sim, crash_on, after_submit, 0
        self.name = sim.name

    def submit(self, req):
        self.submits += 1
        if self.submits == self.crash_on:
            if self.after_submit:
                self._sim.submit(req)
            raise Crash()
        return self._sim.submit(req)

    def __getattr__(self, item):
        return getattr(self._sim, item)


@pytest.mark.parametrize("after_submit", [False, True], ids=["before-sbatch", "after-sbatch"])
@pytest.mark.parametrize("strategy", ["per-stage", "chain", "asa"])
@pytest.mark.parametrize("crash_on", [1, 3])
def test_restart_after_crash_neither_loses_nor_doubles(db_url, strategy, crash_on, after_submit):
    spec = load_workflow(EXAMPLES / "statistics.yaml")
    per_stage, summary = crash_and_restart(db_url, spec, strategy, crash_on, after_submit, Settings())
    assert summary["state"] == "COMPLETED"
    assert per_stage == {s.name: 1 for s in spec.stages}, per_stage
    # and nothing learned is lost or counted twice: a crash during the sbatch that follows a
    # stage's end once lost that stage's wait (nothing revisits a completed stage)
    store = Store(db_url)
    (done,) = store.load_workflows(active_only=False)
    started = [j for j in done.jobs if j.start_time is not None]
    observed = Counter(o.job_id for o in store.session.scalars(select(WaitObservation)))
    runs_learned = sum(row.n_observations for row in store.learners("runtime"))
    store.close()
    assert runs_learned == len(spec.stages)  # each stage's run time, once
    assert all(j.wait_learned for j in started), [(j.stage, j.job_id) for j in started if not j.wait_learned]
    assert observed == Counter(j.job_id for j in started)


def crash_and_restart(db_url, spec, strategy, crash_on, after_submit, settings):  # noqa: ANN001, ANN201
    """Run ``spec`` until the daemon dies at its ``crash_on``-th submission, restart it over the same
    store and cluster, run to the end: (Slurm jobs per tagged stage, the workflow's summary)."""
    sim = make_simulator("small", load=0.3, seed=4)
    store = Store(db_url)
    backend = CrashingBackend(sim, crash_on, after_submit)
    runner = make_runner(settings, store, backend)
    wf = store.add_workflow(spec, sim.now(), strategy=strategy)
    runner.load()
    with pytest.raises(Crash):
        run_to_completion(runner, backend, [wf.id])
    store.session.rollback()
    store.close()

    # restart: a fresh store connection and runner over the same database and the same cluster
    store = Store(db_url)
    (loaded,) = store.load_workflows([wf.id])
    assert any(j.phase is JobPhase.SUBMITTING for j in loaded.jobs), "the intent was not durable"
    runner = make_runner(settings, store, sim)
    run_to_completion(runner, sim, [wf.id])
    summary = store.workflow_rows([wf.id])[0].summary
    store.close()
    return Counter(st.comment.split(":")[3] for st in sim.find(f"asad:{store.store_id}:").values()), summary
