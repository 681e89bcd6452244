"""Shared jobs (asad/strategies/share.py, ``share_jobs = true``): under the default strategy,
adjacent stages of one shape run in one Slurm job, so the later ones wait in no queue and no core
idles. Off by default (docs/results/strategies.md, "Shared jobs")."""

from __future__ import annotations

import subprocess
from dataclasses import replace

import pytest

from asad.daemon.wiring import CommandBuilder, make_runner, run_in_process
from asad.core.attempts import stage_attempts
from asad.common.config import Settings
from asad.core.model import JobPhase
from asad.slurm.backend import JobRequest
from asad.slurm.sim import make_simulator
from asad.spec.load import load_workflow, parse_workflow
from asad.view.explain import render_explain
from asad.view.status import _stage_rows
from asad.store.repo import Store
from tests.conftest import EXAMPLES
from tests.test_crash import crash_and_restart

SHARE = Settings(share_jobs="on")
MONTAGE_GROUPS = [("mProjectPP", "mDiffFit"), ("mConcatFit", "mBgModel"), ("mBackground",),
                  ("mImgtbl", "mAdd", "mShrink", "mJPEG")]


def _run(db_url, strategy="auto", *, priority="multifactor", load=0.9, seed=4, settings=None, spec=None):
    spec = spec or load_workflow(EXAMPLES / "montage.yaml")
    store = Store(db_url)
    sim = make_simulator("small", load=load, seed=seed, priority=priority)
    try:
        (summary,) = run_in_process(store, sim, [spec], settings=settings or SHARE, strategy=strategy,
                                    warmup_s=0 if load == 0 else 6 * 3600)
        wf = store.load_workflows(active_only=False)[-1]
    finally:
        store.close()
    return spec, summary, wf


def test_montage_runs_its_same_shape_stages_in_shared_jobs(db_url):
    spec, summary, wf = _run(db_url)
    assert summary["state"] == "COMPLETED", summary["message"]
    assert [j.stages for j in wf.jobs] == MONTAGE_GROUPS
    stages = {s["name"]: s for s in summary["stages"]}
    for job in wf.jobs:
        limits = [spec.stage(s).time_s for s in job.stages]
        assert job.request.time_limit_s == sum(limits)
        assert job.request.total_mem_mb() == max(spec.stage(s).total_mem_mb() for s in job.stages)
        for prev, rider in zip(job.stages, job.rides):
            # the rider starts the instant the stage before it ends, in the same allocation
            assert stages[rider]["start"] == pytest.approx(stages[prev]["end"])
            assert stages[rider]["perceived_wait_s"] == 0.0 and stages[rider]["idle_s"] == 0.0
            assert stages[rider]["job_id"] == stages[job.stage]["job_id"]
            assert "runs in mProjectPP's job" in render_explain(wf, "mDiffFit")
        for name in job.stages:  # each stage ran as long as the simulator's truth says
            assert stages[name]["end"] - stages[name]["start"] == pytest.approx(spec.stage(name).simulate.runtime_s)
    assert summary["overhead_core_hours"] == 0.0
    assert "mDiffFit run in the same job" in wf.stages["mProjectPP"].plan_why


def test_sharing_hides_waits_at_the_core_hours_of_one_job_per_stage(tmp_path):
    """Same cluster, same queue: the default with and without sharing. Sharing pays no wait after
    a stage that shares its job and exactly the core-hours of the stages' own jobs."""
    _, shared, _ = _run(f"sqlite:///{tmp_path}/a.db")
    _, alone, wf_alone = _run(f"sqlite:///{tmp_path}/b.db", settings=Settings(share_jobs="off"))
    assert len(wf_alone.jobs) == 9 and all(not j.rides for j in wf_alone.jobs)
    riders = {r for g in MONTAGE_GROUPS for r in g[1:]}
    waits = {s["name"]: s["perceived_wait_s"] for s in alone["stages"]}
    assert sum(waits[r] for r in riders) > 0  # alone, those stages did queue on this loaded cluster
    assert all(s["perceived_wait_s"] == 0.0 for s in shared["stages"] if s["name"] in riders)
    assert shared["core_hours"] == pytest.approx(alone["core_hours"], rel=1e-6)


def test_explicit_strategies_keep_one_job_per_stage(db_url):
    _, summary, wf = _run(db_url, "chain")
    assert summary["state"] == "COMPLETED" and len(wf.jobs) == 9 and all(not j.rides for j in wf.jobs)


def test_sharing_is_off_unless_asked_for(db_url):
    _, summary, wf = _run(db_url, settings=Settings())
    assert summary["state"] == "COMPLETED" and len(wf.jobs) == 9 and all(not j.rides for j in wf.jobs)


OOM_IN_RIDER = """
name: oom-in-rider
stages:
  - name: a
    cpus: 4
    mem: 1G
    time: 10m
    run: "true"
    simulate: {runtime: 2m, peak_mem: 500M}
  - name: b
    cpus: 4
    mem: 1G
    time: 10m
    after: [a]
    run: "true"
    simulate: {runtime: 2m, peak_mem: 1500M}
"""


def test_a_shared_job_that_ends_in_its_second_stage_keeps_the_first_and_retries_the_second(db_url):
    spec = parse_workflow(OOM_IN_RIDER)
    _, summary, wf = _run(db_url, priority="fifo", load=0.0, spec=spec, settings=SHARE)
    assert summary["state"] == "COMPLETED", summary["message"]
    first, retry = wf.jobs
    assert first.stages == ("a", "b") and first.state.value == "OUT_OF_MEMORY"
    stages = {s["name"]: s for s in summary["stages"]}
    # a finished inside the shared job (2 min of work) and is not run again; b ran out of memory
    # there and runs again alone, with more memory (the usual OOM retry)
    assert stages["a"]["end"] - stages["a"]["start"] == pytest.approx(120.0)
    assert stages["a"]["job_id"] == first.job_id and wf.stages["a"].attempt == 1
    assert retry.stages == ("b",) and retry.state.value == "COMPLETED"
    assert retry.request.total_mem_mb() > first.request.total_mem_mb() >= 1024
    assert "OUT_OF_MEMORY" in wf.stages["b"].message
    assert [a.state for a in stage_attempts(wf, "b")] == ["OUT_OF_MEMORY", "COMPLETED"]


@pytest.mark.parametrize("after_submit", [False, True], ids=["before-sbatch", "after-sbatch"])
@pytest.mark.parametrize("crash_on", [1, 2])
def test_restart_after_a_crash_neither_loses_nor_doubles_a_shared_job(db_url, crash_on, after_submit):
    per_head, summary = crash_and_restart(db_url, load_workflow(EXAMPLES / "montage.yaml"), "auto", crash_on,
                                          after_submit, SHARE)
    assert summary["state"] == "COMPLETED"
    assert per_head == {g[0]: 1 for g in MONTAGE_GROUPS}, per_head


def _script_run(tmp_path, first_command: str):
    spec = parse_workflow(f"""
name: two
stages:
  - {{name: a, cpus: 2, run: "{first_command}"}}
  - {{name: b, cpus: 2, after: [a], run: "echo b ran > b.txt"}}
""")
    spec = replace(spec, workdir=str(tmp_path))
    store = Store(f"sqlite:///{tmp_path}/s.db")
    wf = store.add_workflow(spec, 0.0, strategy="auto")
    store.close()
    script = CommandBuilder(tmp_path / "runs")(wf, "a", JobRequest(name="x", command=""), rides=("b",))
    proc = subprocess.run(["bash", "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    return proc, tmp_path / "runs" / str(wf.id)


def test_a_shared_jobs_script_runs_the_stages_in_turn(tmp_path):
    proc, run_dir = _script_run(tmp_path, "echo a ran > a.txt")
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "a.txt").read_text() == "a ran\n" and (tmp_path / "b.txt").read_text() == "b ran\n"
    a_end, b_start = (float((run_dir / f).read_text().split()[i]) for f, i in (("a.end", 1), ("b.start", 0)))
    assert b_start >= a_end  # each stage writes its own markers, b after a
    assert (run_dir / "b.end").read_text().split()[0] == "0"


def test_a_failed_stage_ends_its_shared_job_before_the_next_runs(tmp_path):
    proc, run_dir = _script_run(tmp_path, "exit 3")
    assert proc.returncode == 3
    assert not (tmp_path / "b.txt").exists() and not (run_dir / "b.start").exists()


def test_status_shows_a_rider_pending_in_its_job_until_its_turn(db_url):
    spec = load_workflow(EXAMPLES / "montage.yaml")
    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    runner = make_runner(SHARE, store, sim)
    wf = store.add_workflow(spec, sim.now(), strategy="auto")
    runner.load()
    runner.tick()
    sim.run_until(sim.now() + 60)  # mProjectPP runs (7 min of work); mDiffFit waits its turn in the job
    runner.tick()
    rows = {r["stage"]: r for r in _stage_rows(store.load_workflows([wf.id])[0], sim.now())}
    store.close()
    assert rows["mProjectPP"]["st"] == "R"
    assert rows["mDiffFit"]["st"] == "PD" and rows["mDiffFit"]["reason"] == "(SharedJob:mProjectPP)"
    assert rows["mDiffFit"]["job_id"] == rows["mProjectPP"]["job_id"]


def test_the_stage_wrappers_markers_say_which_stages_a_real_shared_job_finished(tmp_path):
    from asad.core.context import Context, EngineConfig
    from asad.core.learned import Learned
    from asad.core.model import JobRecord
    from asad.slurm.backend import JobState
    from asad.strategies.share import finished_stages

    spec = parse_workflow("""
name: two
stages:
  - {name: a, cpus: 2, time: 10m, run: "true"}
  - {name: b, cpus: 2, time: 30m, after: [a], run: "true"}
""")
    store = Store(f"sqlite:///{tmp_path}/s.db")
    wf = store.add_workflow(spec, 0.0, strategy="auto")
    ctx = Context(EngineConfig(run_dir=str(tmp_path / "runs")), Learned(store.load_learner, ""), [])
    job = JobRecord(row_id=1, workflow_id=wf.id, stage="a", attempt=1, tag="t", phase=JobPhase.DONE,
                    request=JobRequest(name="x", command=""), geometry_key="k", job_id=42, rides=("b",),
                    state=JobState.FAILED, start_time=100.0, end_time=170.0)
    folder = tmp_path / "runs" / str(wf.id)
    folder.mkdir(parents=True)
    (folder / "a.start").write_text("100 n1 42\n")
    (folder / "a.end").write_text("0 150\n")
    (folder / "b.start").write_text("150 n1 42\n")
    (folder / "b.end").write_text("3 170\n")
    assert finished_stages(wf, job, ctx) == ([(100.0, 150.0)], True)  # b failed: only a finished
    (folder / "a.start").write_text("100 n1 41\n")  # a marker of another job says nothing of this one
    assert finished_stages(wf, job, ctx) == ([], True)
    # a completed job whose markers are missing finished every stage; its length is shared out by
    # the stages' expected run times (their limits until learned), and that split is not measured
    job.state = JobState.COMPLETED
    assert finished_stages(wf, job, ctx) == ([(100.0, 117.5), (117.5, 170.0)], False)
    store.close()


def test_a_naive_stages_work_starts_when_its_command_does_not_when_its_predecessor_ended(tmp_path):
    # audit 6: the wrapper sees the predecessor's end marker only at its next look (every 2 s); the
    # allocation idled until the command's start marker, but IDLE, the overhead and the learned run
    # time counted from the predecessor's end
    from asad.core.context import Context, EngineConfig
    from asad.core.engine import Engine
    from asad.core.learned import Learned
    from asad.core.model import JobRecord
    from asad.slurm.backend import JobState

    spec = parse_workflow("""
name: two
strategy: asa
mode: naive
stages:
  - {name: a, cpus: 2, time: 10m, run: "true"}
  - {name: b, cpus: 8, time: 30m, after: [a], run: "true"}
""")
    store = Store(f"sqlite:///{tmp_path}/s.db")
    wf = store.add_workflow(spec, 0.0, strategy="asa", mode="naive")
    ctx = Context(EngineConfig(run_dir=str(tmp_path / "runs")), Learned(store.load_learner, ""), [])
    wf.stages["a"].end_time = 930.0
    job = JobRecord(row_id=2, workflow_id=wf.id, stage="b", attempt=1, tag="t", phase=JobPhase.LIVE,
                    request=JobRequest(name="x", command=""), geometry_key="k", job_id=7,
                    state=JobState.RUNNING, start_time=925.0)
    engine = Engine(ctx)
    assert engine._work_start(wf, "b", job) == 930.0  # no marker (yet): the predecessor's end
    folder = tmp_path / "runs" / str(wf.id)
    folder.mkdir(parents=True)
    (folder / "b.start").write_text("932 n1 7\n")
    assert engine._work_start(wf, "b", job) == 932.0
    (folder / "b.start").write_text("940 n1 6\n")  # another job's marker says nothing of this one
    assert engine._work_start(wf, "b", job) == 930.0
    store.close()
