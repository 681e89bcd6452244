"""A stage's ``output:`` folder that cannot be made (audit of 2026-11-26: a file named ``logs`` in
the workdir stopped the daemon's every tick, for every workflow). ``asad submit`` refuses it; one
that goes bad after submission fails its own workflow only."""

from __future__ import annotations

import pytest

from asad.daemon.wiring import CommandBuilder, make_runner
from asad.common.config import Settings
from asad.core.model import StageState, WorkflowState
from asad.slurm.sim import make_simulator
from asad.spec.load import SpecError, parse_workflow
from asad.store.repo import Store


def _spec(workdir, output: str = "logs/%x-%j.out"):  # noqa: ANN001, ANN202
    return parse_workflow(f"name: logged\nworkdir: {workdir}\nstages:\n"
                          f"  - {{name: a, cpus: 1, time: 10m, output: '{output}', run: 'true', "
                          "simulate: {runtime: 1m}}\n")


def test_submit_refuses_an_output_folder_that_cannot_be_made(tmp_path):
    (tmp_path / "logs").write_text("a file, where the folder should be\n")
    with pytest.raises(SpecError) as refused:
        _spec(tmp_path)
    text = str(refused.value)
    assert "stages[0].output" in text and f"{tmp_path / 'logs'} is a file" in text
    _spec(tmp_path, "runs/%x-%j.out")  # a folder that can be made is fine (made before the sbatch)
    _spec(tmp_path, "%u/%x-%j.out")  # one named by Slurm's patterns is known per job only


def test_an_output_folder_gone_bad_after_submission_fails_its_own_workflow_only(tmp_path, db_url):
    sim = make_simulator("small", load=0.0, seed=1)
    store = Store(db_url)
    runner = make_runner(Settings(), store, sim)
    runner.engine.ctx.build_command = CommandBuilder(tmp_path / "runs")  # as on a real cluster
    (tmp_path / "bad").mkdir()
    (tmp_path / "good").mkdir()
    bad = store.add_workflow(_spec(tmp_path / "bad"), sim.now(), strategy="per-stage")
    good = store.add_workflow(_spec(tmp_path / "good"), sim.now(), strategy="per-stage")
    (tmp_path / "bad" / "logs").write_text("created after the submission\n")
    runner.load()
    runner.tick()  # raised FileNotFoundError/NotADirectoryError out of the tick before
    (bad_wf, good_wf) = store.load_workflows([bad.id, good.id])
    store.close()
    assert bad_wf.state is WorkflowState.FAILED and bad_wf.stages["a"].state is StageState.FAILED
    assert f"{tmp_path / 'bad' / 'logs'}" in bad_wf.message and "asad resume" in bad_wf.message
    assert not bad_wf.jobs and not sim.find(f"asad:{runner.store.store_id}:{bad.id}:")  # nothing submitted
    assert good_wf.stages["a"].state is StageState.SUBMITTED and good_wf.jobs[0].job_id is not None
