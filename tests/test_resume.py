"""``asad resume N`` on the simulator: completed stages kept, the rest run again under the same id."""

from __future__ import annotations

from dataclasses import replace

import pytest

from asad.daemon.wiring import make_runner, run_to_completion
from asad.cli.main import main
from asad.common.config import Settings
from asad.core.model import StageState, WorkflowState
from asad.store.resume import ResumeRefused, resume_workflow
from asad.slurm.sim import make_simulator
from asad.spec.load import parse_workflow
from asad.store.repo import Store

WORKFLOW = """
name: three
stages:
  - name: a
    run: echo a
    time: 10m
    simulate: {runtime: 60s}
  - name: b
    run: echo b
    time: 10m
    after: [a]
    simulate: {runtime: 60s}
  - name: c
    run: echo c
    time: 10m
    after: [b]
    simulate: {runtime: 60s}
"""


def _failing_once(sim, stage: str, times: int = 1):  # noqa: ANN001, ANN202
    """The simulator, with the first ``times`` jobs of ``stage`` ending FAILED (exit 3): a bug the
    user then fixes."""
    submit = sim.submit
    left = {"n": times}

    def patched(req):  # noqa: ANN001, ANN202
        if req.name.endswith(f".{stage}") and left["n"] > 0:
            left["n"] -= 1
            req = replace(req, truth=replace(req.truth, exit_code=3))
        return submit(req)
    sim.submit = patched
    return sim


def _run(store: Store, sim, wf_id: int, strategy: str | None = None):  # noqa: ANN001, ANN202
    runner = make_runner(Settings(), store, sim)
    run_to_completion(runner, sim, [wf_id], poll_interval_s=30)
    return store.load_workflows([wf_id])[0]


def _jobs_by_stage(wf) -> dict[str, int]:  # noqa: ANN001
    out: dict[str, int] = {}
    for j in wf.jobs:
        out[j.stage] = out.get(j.stage, 0) + 1
    return out


@pytest.mark.parametrize("strategy", ["per-stage", "chain", "auto"])
def test_failed_workflow_resumes_from_the_failed_stage(db_url, strategy):
    store = Store(db_url)
    sim = _failing_once(make_simulator("small", load=0.0, seed=1), "b")
    wf = store.add_workflow(parse_workflow(WORKFLOW), sim.now(), strategy=strategy)
    wf = _run(store, sim, wf.id)
    assert wf.state is WorkflowState.FAILED
    assert [wf.stages[n].state for n in "abc"] == [StageState.COMPLETED, StageState.FAILED, StageState.CANCELLED]

    done = resume_workflow(store, wf.id)
    assert done.kept == ("a",) and done.rerun == ("b", "c") and done.was == "FAILED"
    wf2 = _run(store, sim, wf.id)
    assert wf2.state is WorkflowState.COMPLETED
    assert all(r.state is StageState.COMPLETED for r in wf2.stages.values())
    jobs = _jobs_by_stage(wf2)
    assert jobs["a"] == 1  # not run again
    assert jobs["b"] == 2  # the failed attempt and the resumed one
    b_jobs = sorted((j for j in wf2.jobs if j.stage == "b"), key=lambda j: j.attempt)
    assert b_jobs[-1].start_time >= wf2.stages["a"].end_time
    assert wf2.stages["c"].start_time >= wf2.stages["b"].end_time
    from asad.view.status import status_rows

    rows, _ = status_rows(store, wf.id, include_finished=True)  # squeue names a finished job's nodes
    assert [r["reason"] for r in rows] == [wf2.current_job(n).nodelist for n in "abc"], rows
    store.close()


def test_cancelled_workflow_resumes_and_a_running_daemon_picks_it_up(db_url):
    """One runner across cancel and resume, as a daemon: the resumed workflow (an old id) is adopted."""
    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    runner = make_runner(Settings(), store, sim)
    wf = store.add_workflow(parse_workflow(WORKFLOW), sim.now(), strategy="per-stage")
    runner.load()
    # run until b runs, then cancel at once (a b that ended before the cancel would stay COMPLETED)
    for _ in range(50):
        runner.tick()
        if runner.active[wf.id].stages["b"].state is StageState.RUNNING:
            break
        sim.run_until(sim.now() + 30)
    store.request_cancel(wf.id)
    runner.tick()
    assert wf.id not in runner.active
    assert store.workflow_rows([wf.id])[0].state == "CANCELLED"
    resume_workflow(store, wf.id)
    runner.tick()
    assert wf.id in runner.active  # adopted again
    run_to_completion(runner, sim, [wf.id], poll_interval_s=30)
    wf2 = store.load_workflows([wf.id])[0]
    assert wf2.state is WorkflowState.COMPLETED
    assert _jobs_by_stage(wf2) == {"a": 1, "b": 2, "c": 1}
    store.close()


def test_resume_refuses_running_completed_unknown_and_a_second_resume(db_url):
    store = Store(db_url)
    sim = _failing_once(make_simulator("small", load=0.0, seed=1), "a")
    wf = store.add_workflow(parse_workflow(WORKFLOW), sim.now(), strategy="per-stage")
    with pytest.raises(ResumeRefused, match="is active"):
        resume_workflow(store, wf.id)
    with pytest.raises(ResumeRefused, match="no workflow 99"):
        resume_workflow(store, 99)
    _run(store, sim, wf.id)
    resume_workflow(store, wf.id)
    before = [(r.name, r.state, r.retry_from) for r in store.load_workflows([wf.id])[0].stages.values()]
    with pytest.raises(ResumeRefused, match="is active"):  # run twice: the second changes nothing
        resume_workflow(store, wf.id)
    assert [(r.name, r.state, r.retry_from) for r in store.load_workflows([wf.id])[0].stages.values()] == before
    assert _run(store, sim, wf.id).state is WorkflowState.COMPLETED
    with pytest.raises(ResumeRefused, match="completed"):
        resume_workflow(store, wf.id)
    store.close()


def test_resume_gives_a_fresh_retry_budget(db_url):
    text = WORKFLOW.replace("    run: echo b\n", "    run: echo b\n    retries: 1\n")
    store = Store(db_url)
    sim = _failing_once(make_simulator("small", load=0.0, seed=1), "b", times=3)
    wf = store.add_workflow(parse_workflow(text), sim.now(), strategy="per-stage")
    assert _run(store, sim, wf.id).state is WorkflowState.FAILED  # 2 attempts, both failed
    resume_workflow(store, wf.id)
    wf2 = _run(store, sim, wf.id)  # attempt 3 fails, its retry (attempt 4) completes
    assert wf2.state is WorkflowState.COMPLETED, wf2.message
    assert _jobs_by_stage(wf2)["b"] == 4
    store.close()


def test_big_job_resume_runs_the_whole_job_again(db_url):
    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    submit = sim.submit
    calls = {"n": 0}

    def failing_first(req):  # noqa: ANN001, ANN202
        calls["n"] += 1
        return submit(replace(req, truth=replace(req.truth, exit_code=1)) if calls["n"] == 1 else req)
    sim.submit = failing_first
    wf = store.add_workflow(parse_workflow(WORKFLOW), sim.now(), strategy="big-job")
    assert _run(store, sim, wf.id).state is WorkflowState.FAILED
    resume_workflow(store, wf.id)
    wf2 = _run(store, sim, wf.id)
    assert wf2.state is WorkflowState.COMPLETED
    assert [j.attempt for j in wf2.jobs] == [1, 2]
    store.close()


def test_cli_resume_messages_and_exit_codes(tmp_path, capsys, monkeypatch):
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    assert main(["resume", "7", "--db", db]) == 3
    err = capsys.readouterr().err
    assert "no workflow 7" in err and "Traceback" not in err
    store = Store(db)
    sim = _failing_once(make_simulator("small", load=0.0, seed=1), "b")
    wf = store.add_workflow(parse_workflow(WORKFLOW), sim.now(), strategy="per-stage")
    store.close()
    assert main(["resume", str(wf.id), "--db", db]) == 1
    assert "is active" in capsys.readouterr().err
    store = Store(db)
    _run(store, sim, wf.id)
    store.close()
    assert main(["resume", str(wf.id), "--db", db]) == 0
    out, err = capsys.readouterr()
    assert f"workflow {wf.id} resumed (was FAILED): running again b, c; kept completed a" in out
    assert f"asad resume {wf.id} --run" in err  # no daemon: how to drive it here
    # no daemon: --run drives the already-resumed workflow in this process (on a fresh simulator)
    assert main(["resume", str(wf.id), "--db", db, "--run", "--backend", "sim", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"state": "COMPLETED"' in out
    assert main(["status", str(wf.id), "--db", db, "--json"]) == 0
    assert main(["resume", str(wf.id), "--db", db]) == 1
    assert "completed; nothing to resume" in capsys.readouterr().err


def test_resume_says_when_the_workflow_file_changed_since_submission(tmp_path, capsys):
    """resume runs the stages as submitted; a user who edited the file to fix the failure is told."""
    from asad.spec.load import load_workflow

    path = tmp_path / "three.yaml"
    path.write_text(WORKFLOW)
    db = f"sqlite:///{tmp_path / 'cli.db'}"
    store = Store(db)
    sim = _failing_once(make_simulator("small", load=0.0, seed=1), "b", times=2)
    ids = [store.add_workflow(load_workflow(path), sim.now(), strategy="per-stage").id for _ in range(2)]
    for wf_id in ids:
        _run(store, sim, wf_id)
    store.close()
    assert main(["resume", str(ids[0]), "--db", db]) == 0
    assert "has changed" not in capsys.readouterr().err  # the same file: nothing to say
    path.write_text(WORKFLOW.replace("run: echo b", "run: echo b fixed"))
    assert main(["resume", str(ids[1]), "--db", db]) == 0
    err = capsys.readouterr().err
    assert f"{path} has changed since workflow {ids[1]} was submitted (stage b)" in err, err
    assert "asad submit FILE" in err
