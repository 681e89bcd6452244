"""Job arrays: the ``array:`` key, chunking under MaxArraySize, Slurm's array lines folded into one
status, and array stages run by the engine on the simulator."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from asad.daemon.wiring import make_runner, run_to_completion
from asad.common.arrays import ArrayError, compress, parse_array
from asad.common.config import Settings
from asad.core.model import StageState, WorkflowState
from asad.slurm.backend import JobRequest, JobState
from asad.slurm.cli import SlurmCLI, batch_script, sbatch_args
from asad.slurm.sim import make_simulator
from asad.slurm.slurm_text import SEP, parse_sacct, parse_squeue
from asad.spec.load import SpecError, parse_workflow
from asad.view.status import status_rows
from asad.store.repo import Store
from test_slurm_cli_parse import backend


# ------------------------------------------------------------------ the key -------------------
@pytest.mark.parametrize(("value", "indices", "throttle", "text"), [
    ("0-4", (0, 1, 2, 3, 4), None, "0-4"),
    ("0-4%2", (0, 1, 2, 3, 4), 2, "0-4%2"),
    (3, (0, 1, 2), None, "0-2"),
    ("1,3,10-14:2", (1, 3, 10, 12, 14), None, "1,3,10,12,14"),
    (" 7 ", (7,), None, "7"),
])
def test_array_forms(value, indices, throttle, text):
    spec = parse_array(value)
    assert (spec.indices, spec.throttle, spec.text()) == (indices, throttle, text)


@pytest.mark.parametrize(("value", "problem"), [
    ("a-3", "is not an index"), ("5-2", "ends before it starts"), ("0-3%0", "throttle"), (0, "at least 1"),
    ("0-9:0", "step"), (True, "index list"), ("", "index list"), ("0-2000000", "limit"),
])
def test_array_errors(value, problem):
    with pytest.raises(ArrayError, match=problem):
        parse_array(value)


@given(st.sets(st.integers(0, 5000), min_size=1, max_size=300), st.integers(1, 1200),
       st.one_of(st.none(), st.integers(1, 50)))
def test_chunks_cover_every_index_once_below_max_array_size(indices, max_size, throttle):
    spec = replace(parse_array(compress(sorted(indices))), throttle=throttle)
    chunks = spec.chunks(max_size)
    seen = []
    for c in chunks:
        local = parse_array(c.text)
        assert local.indices[-1] < max_size  # Slurm accepts every chunk
        assert local.throttle == throttle and local.count == c.count
        seen += [i + c.offset for i in local.indices]
    assert seen == sorted(indices)  # the global ids the command sees, each once
    if max(indices) < max_size:
        assert len(chunks) == 1 and chunks[0].offset == 0


def test_stage_key_errors_name_the_line():
    text = "name: w\nstages:\n  - name: a\n    run: echo\n    array: 0-x\n"
    with pytest.raises(SpecError) as err:
        parse_workflow(text)
    assert "<string>:5: stages[0].array" in str(err.value) and "array: 0-99%10" in str(err.value)
    with pytest.raises(SpecError, match="big-job"):
        parse_workflow("name: w\nstrategy: big-job\nstages:\n  - {name: a, run: echo, array: 4}\n")
    with pytest.raises(SpecError, match="big-job"):
        parse_workflow("name: w\nstages:\n  - {name: a, run: echo, array: 4}\n", strategy="big-job")
    spec = parse_workflow("name: w\nstages:\n  - {name: a, run: echo, array: '0-9%2'}\n")
    assert type(spec).from_dict(spec.to_dict()).stages[0].array == "0-9%2"


def test_sbatch_gets_array_and_a_chunk_its_offset():
    req = JobRequest(name="asad.1.fan", command="#!/bin/bash\necho $SLURM_ARRAY_TASK_ID\n", array="0-9%2",
                     array_offset=1001)
    assert "--array=0-9%2" in sbatch_args(req)
    assert batch_script(req).splitlines()[:2] == [
        "#!/bin/bash", "export SLURM_ARRAY_TASK_ID=$((SLURM_ARRAY_TASK_ID + 1001))"]
    assert "SLURM_ARRAY_TASK_ID +" not in batch_script(replace(req, array_offset=0))


# ------------------------------------------------------------------ Slurm's lines -------------
def _sq(jobid, state, reason, start, end, array_id):  # noqa: ANN001, ANN202
    return SEP.join([jobid, state, reason, "asad.1.fan", "asad:x:1:fan:1", "main", "1700000000", "1700000000",
                     start, end, "1", "1", "main-0" if start != "N/A" else "", "5:00", array_id, ""])


def test_squeue_array_lines_fold_into_one_status():
    # what squeue -O printed on the local cluster for `--array=0-5%2` (see tests/slurm/test_arrays_real.py)
    text = "\n".join([_sq("16", "PENDING", "JobArrayTaskLimit", "N/A", "N/A", "16_[2-5%2]"),
                      _sq("18", "RUNNING", "None", "1700000010", "N/A", "16_1"),
                      _sq("17", "COMPLETED", "None", "1700000005", "1700000009", "16_0"),
                      _sq("30", "RUNNING", "None", "1700000010", "N/A", "30")])
    out = parse_squeue(text)
    assert set(out) == {16, 30}
    assert out[16].state is JobState.RUNNING and out[16].array_tasks == {"PD": 4, "R": 1, "CD": 1}
    assert out[16].start_time == 1700000005
    assert out[30].array_tasks is None


def _sa(jobid, raw, state, code, rss=""):  # noqa: ANN001, ANN202
    return SEP.join([raw, "asad.1.fan", state, code, rss, "100M", "4", "00:00.010", "1700000000", "1700000000",
                     "1700000001", "1700000005", "asad:x:1:fan:1", "main", "1", "1", "main-0", "5", "None", jobid])


def test_sacct_array_tasks_fold_into_one_record_with_the_worst_ending():
    text = "\n".join([_sa("16_0", "17", "COMPLETED", "0:0"), _sa("16_0.batch", "17.batch", "COMPLETED", "0:0", "20M"),
                      _sa("16_1", "16", "FAILED", "3:0"), _sa("16_1.batch", "16.batch", "FAILED", "3:0", "50M")])
    rec = parse_sacct(text)
    assert set(rec) == {16}
    assert rec[16].status.state is JobState.FAILED and rec[16].status.exit_code == 3
    assert rec[16].status.array_tasks == {"CD": 1, "F": 1}
    assert rec[16].usage.peak_rss_mb == 50


def _array_poll(squeue: str, sacct: list[str], *, submitted: str | None = None) -> SlurmCLI:
    """A SlurmCLI whose squeue always prints ``squeue`` and whose sacct prints ``sacct`` in turn."""
    slurm, _, _ = backend({"squeue": [squeue], "sacct": sacct, "sbatch": ["16\n"]}, clock=lambda: 1700000006.0)
    if submitted:
        slurm.submit(JobRequest(name="asad.1.fan", command="true", array=submitted))
    return slurm


# what the local cluster printed for `--array=0-2` where task 1 fails, polled 0.4 s apart: slurmctld
# knows all three ended tasks, while slurmdbd first has only the array's own record (task 2, as a
# plain job or as 16_2) and the two others' a second later.
_ENDED = "\n".join([_sq("16", "COMPLETED", "None", "1700000001", "1700000005", "16_2"),
                    _sq("17", "COMPLETED", "None", "1700000001", "1700000005", "16_0"),
                    _sq("18", "FAILED", "NonZeroExitCode", "1700000001", "1700000005", "16_1")])
_ALL = "\n".join([_sa("16_0", "17", "COMPLETED", "0:0"), _sa("16_1", "18", "FAILED", "1:0"),
                  _sa("16_2", "16", "COMPLETED", "0:0")])


@pytest.mark.parametrize("lagging", [_sa("16", "16", "COMPLETED", "0:0"), _sa("16_2", "16", "COMPLETED", "0:0")])
def test_an_array_waits_for_every_task_in_sacct_before_it_ends(lagging):
    slurm = _array_poll(_ENDED, [lagging, _ALL])
    first = slurm.poll([16])[16]
    assert first.state is JobState.RUNNING and first.reason == "AccountingPending"
    assert first.array_tasks == {"CD": 2, "F": 1}
    then = slurm.poll([16])[16]
    assert then.state is JobState.FAILED and then.exit_code == 1 and then.array_tasks == {"CD": 2, "F": 1}


def test_an_array_slurmdbd_never_completes_ends_on_slurmctld_s_word_after_a_minute():
    slurm = _array_poll(_ENDED, [_sa("16_2", "16", "COMPLETED", "0:0")])
    slurm.clock = lambda: 1700000005 + 30
    assert slurm.poll([16])[16].state is JobState.RUNNING
    slurm.clock = lambda: 1700000005 + 61
    late = slurm.poll([16])[16]
    assert late.state is JobState.FAILED and late.array_tasks == {"CD": 2, "F": 1}


def test_a_forgotten_array_waits_for_as_many_tasks_as_were_submitted():
    # squeue no longer knows the job: the count asad submitted stands in for squeue's view
    slurm = _array_poll("", [_sa("16_2", "16", "COMPLETED", "0:0"), _ALL], submitted="0-2")
    assert slurm.poll([16])[16].state is JobState.RUNNING
    assert slurm.poll([16])[16].state is JobState.FAILED


# ------------------------------------------------------------------ the engine, on the sim ------
FAN = """
name: fan
strategy: {strategy}
stages:
  - {{name: prep, run: "echo prep", time: 10m, simulate: {{runtime: 60s}}}}
  - {{name: fan, run: "work $SLURM_ARRAY_TASK_ID", time: 10m, array: "{array}", simulate: {{runtime: 100s}}}}
  - {{name: gather, run: "cat out.*", time: 10m, simulate: {{runtime: 30s}}}}
"""


def _run(db_url, text, *, max_array_size=1001, fail_tasks=(), strategy="chain", sim=None):  # noqa: ANN001, ANN202
    store = Store(db_url)
    sim = sim or make_simulator("small", load=0.0, seed=1)
    sim.max_array_size = max_array_size
    if fail_tasks:
        submit = sim.submit

        def failing(req):  # noqa: ANN001, ANN202
            if req.array and req.truth is not None:
                req = replace(req, truth=replace(req.truth, fail_tasks=tuple(fail_tasks)))
            return submit(req)
        sim.submit = failing
    wf = store.add_workflow(parse_workflow(text), sim.now(), strategy=strategy)
    runner = make_runner(Settings(), store, sim)
    run_to_completion(runner, sim, [wf.id], poll_interval_s=30)
    return store, sim, store.load_workflows([wf.id])[0]


@pytest.mark.parametrize("strategy", ["per-stage", "chain", "auto", "asa"])
def test_array_stage_runs_every_task_then_its_dependant(db_url, strategy):
    store, sim, wf = _run(db_url, FAN.format(strategy=strategy, array="0-9%3"), strategy=strategy)
    assert wf.state is WorkflowState.COMPLETED, wf.message
    fan = [j for j in wf.jobs if j.stage == "fan"]
    assert len(fan) == 1 and fan[0].array_tasks == {"CD": 10}
    tasks = [sim.jobs[t] for t in sim.arrays.tasks[fan[0].job_id]]
    assert len(tasks) == 10 and all(t.state is JobState.COMPLETED for t in tasks)
    # throttle 3: never more than 3 tasks at once
    events = sorted([(t.start_time, 1) for t in tasks] + [(t.end_time, -1) for t in tasks])
    running, peak = 0, 0
    for _, delta in events:
        running += delta
        peak = max(peak, running)
    assert peak == 3
    assert wf.stages["gather"].start_time >= max(t.end_time for t in tasks)
    assert wf.stages["fan"].end_time == max(t.end_time for t in tasks)
    rows, _ = status_rows(store, wf.id)
    assert [r["stage"] for r in rows] == ["prep", "fan", "gather"]  # one row for the array
    assert rows[1]["array_tasks"] == {"CD": 10}
    store.close()


def test_a_failed_task_fails_the_stage_and_its_dependant_never_runs(db_url):
    store, sim, wf = _run(db_url, FAN.format(strategy="chain", array="0-4"), fail_tasks=(3,))
    assert wf.state is WorkflowState.FAILED
    assert wf.stages["fan"].state is StageState.FAILED and "FAILED" in wf.stages["fan"].message
    assert wf.stages["gather"].state is StageState.CANCELLED
    assert [j.array_tasks for j in wf.jobs if j.stage == "fan"] == [{"CD": 4, "F": 1}]
    assert all(j.start_time is None for j in wf.jobs if j.stage == "gather")
    store.close()


class _LaggingAccounting:
    """The simulator seen through a slurmdbd that lags: an ended array job is reported as still
    ending for a few polls (what SlurmCLI does while sacct lacks some tasks), while its
    dependants already say DependencyNeverSatisfied, as slurmctld does."""

    def __init__(self, sim, polls: int):  # noqa: ANN001
        self._sim, self._polls, self._seen = sim, polls, Counter()

    def poll(self, job_ids):  # noqa: ANN001, ANN201
        out = self._sim.poll(job_ids)
        for jid, st in out.items():
            if st.array_tasks is not None and st.state.is_final and self._seen[jid] < self._polls:
                self._seen[jid] += 1
                out[jid] = replace(st, state=JobState.RUNNING, reason="AccountingPending", end_time=None)
        return out

    def __getattr__(self, item):  # noqa: ANN001, ANN204
        return getattr(self._sim, item)


@pytest.mark.parametrize("array", ["0-4", "0-9"])  # one array job, and chunks of four
def test_a_dependant_waits_for_its_failed_predecessor_to_be_seen_ending(db_url, array):
    sim = make_simulator("small", load=0.0, seed=1)
    store, _, wf = _run(db_url, FAN.format(strategy="chain", array=array), fail_tasks=(3,),
                        max_array_size=4, sim=_LaggingAccounting(sim, polls=3))
    assert wf.state is WorkflowState.FAILED
    assert wf.stages["gather"].attempt == 1  # never resubmitted against the same failed job
    store.close()


def test_more_tasks_than_max_array_size_go_as_chunks_with_global_ids(db_url):
    store, sim, wf = _run(db_url, FAN.format(strategy="chain", array="0-9"), max_array_size=4)
    assert wf.state is WorkflowState.COMPLETED, wf.message
    chunks = [j for j in wf.jobs if j.stage == "fan"]
    assert [(j.request.array, j.request.array_offset) for j in chunks] == [("0-3", 0), ("0-3", 4), ("0-1", 8)]
    assert len({j.tag for j in chunks}) == 3 and all(j.attempt == 1 for j in chunks)
    task_ids = [sim.jobs[t].job_id for j in chunks for t in sim.arrays.tasks[j.job_id]]
    assert len(task_ids) == 10
    gather = next(j for j in wf.jobs if j.stage == "gather")
    assert set(gather.request.dependency.job_ids) == {j.job_id for j in chunks}  # afterok on every chunk
    ends = [sim.jobs[t].end_time for j in chunks for t in sim.arrays.tasks[j.job_id]]
    assert wf.stages["gather"].start_time >= max(ends)
    rows, _ = status_rows(store, wf.id)
    assert len(rows) == 3 and rows[1]["array_tasks"] == {"CD": 10}
    store.close()


def test_a_failed_chunk_fails_the_stage_and_cancels_the_other_chunks(db_url):
    store, sim, wf = _run(db_url, FAN.format(strategy="chain", array="0-9"), max_array_size=4, fail_tasks=(5,))
    assert wf.state is WorkflowState.FAILED
    assert all(j.state.is_final for j in wf.jobs)
    store.close()


def test_oom_retries_the_whole_array_with_more_memory(db_url):
    text = FAN.format(strategy="per-stage", array="0-3").replace(
        'simulate: {runtime: 100s}}', 'mem: 1G, max_oom_retries: 1, simulate: {runtime: 100s, peak_mem: 1500M}}')
    store, sim, wf = _run(db_url, text)
    assert wf.state is WorkflowState.COMPLETED, wf.message
    fan = sorted((j for j in wf.jobs if j.stage == "fan"), key=lambda j: j.attempt)
    assert [j.state for j in fan] == [JobState.OUT_OF_MEMORY, JobState.COMPLETED]
    assert fan[1].request.total_mem_mb() > fan[0].request.total_mem_mb()
    assert fan[1].request.array == "0-3"  # every task again
    store.close()


def test_status_mid_run_shows_tasks_per_state(db_url):
    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    wf = store.add_workflow(parse_workflow(FAN.format(strategy="chain", array="0-9%3")), sim.now(), strategy="chain")
    runner = make_runner(Settings(), store, sim)
    for _ in range(40):
        runner.tick()
        if runner.active[wf.id].stages["fan"].state is StageState.RUNNING:
            break
        sim.run_until(sim.now() + 20)
    sim.run_until(sim.now() + 150)
    runner.tick()
    rows, _ = status_rows(store, wf.id)
    fan = rows[1]
    assert fan["st"] == "R" and sum(fan["array_tasks"].values()) == 10
    assert fan["reason"].startswith("R 3, PD ") and "CD" in fan["reason"]
    from asad.view.status import render_status

    assert fan["reason"] in render_status(rows)  # the NODELIST(REASON) column of asad status
    store.close()


def test_resume_after_a_failed_task_reruns_the_array(db_url):
    from asad.store.resume import resume_workflow

    store, sim, wf = _run(db_url, FAN.format(strategy="chain", array="0-4"), fail_tasks=(2,))
    assert wf.state is WorkflowState.FAILED
    sim.submit = type(sim).submit.__get__(sim)  # the "fix": tasks no longer fail
    resume_workflow(store, wf.id)
    runner = make_runner(Settings(), store, sim)
    run_to_completion(runner, sim, [wf.id], poll_interval_s=30)
    wf2 = store.load_workflows([wf.id])[0]
    assert wf2.state is WorkflowState.COMPLETED
    assert [j.array_tasks for j in wf2.jobs if j.stage == "fan"] == [{"CD": 4, "F": 1}, {"CD": 5}]
    store.close()


class _Crash(Exception):
    pass


def test_a_crash_between_chunk_submissions_resubmits_the_stage_whole(db_url):
    """The daemon dies after the first array job reached Slurm and the second's intent was written:
    the restarted runner finds the second never reached Slurm and runs the stage again whole."""
    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    sim.max_array_size = 4
    wf = store.add_workflow(parse_workflow(FAN.format(strategy="per-stage", array="0-9")), sim.now(),
                            strategy="per-stage")
    submit = sim.submit

    def crashing(req):  # noqa: ANN001, ANN202
        if req.array and req.array_offset == 4:
            raise _Crash
        return submit(req)
    sim.submit = crashing
    runner = make_runner(Settings(), store, sim)
    with pytest.raises(_Crash):
        for _ in range(40):
            runner.tick()
            sim.run_until(sim.now() + 30)
    sim.submit = submit
    store.session.rollback()
    runner = make_runner(Settings(), store, sim)  # the restart
    run_to_completion(runner, sim, [wf.id], poll_interval_s=30)
    wf2 = store.load_workflows([wf.id])[0]
    assert wf2.state is WorkflowState.COMPLETED, wf2.message
    final = [j for j in wf2.jobs if j.stage == "fan" and j.attempt == wf2.stages["fan"].attempt]
    assert sorted(j.request.array_offset for j in final) == [0, 4, 8]
    first = [j for j in wf2.jobs if j.stage == "fan" and j.attempt == 1 and j.job_id is not None]
    assert [j.state for j in first] == [JobState.CANCELLED] or all(j.cancelled_by_asad for j in first)
    store.close()


# ------------------------------------------------------------------ between polls, and after a cancel ----
ONE = """
name: arrc
stages:
  - {name: w, run: "sleep 10", time: 5m, array: "0-9%2", simulate: {runtime: 100s}}
"""


def test_status_between_polls_follows_the_task_markers_of_an_array_not_polled_yet(db_url, tmp_path):
    """Audit 5, finding 3: an array submitted but not yet polled showed `PD (None)` while its tasks'
    markers said 6 had started and 4 ended; a plain stage's row follows its markers between polls."""
    import time

    from asad.core.metrics import summarize

    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    wf = store.add_workflow(parse_workflow(ONE), sim.now(), strategy="per-stage")
    runner = make_runner(Settings(), store, sim)
    runner.ctx.config.run_dir = str(tmp_path)  # the job's output (and its tasks' markers) go there
    runner.tick()  # submitted; the daemon's next poll is ~30 s away
    job = store.load_workflows([wf.id])[0].jobs[0]
    assert job.job_id is not None and job.array_tasks is None and job.request.output.startswith(str(tmp_path))
    folder = tmp_path / str(wf.id)  # made by the stage wrapper on a real cluster
    folder.mkdir()
    t0 = int(job.submitted_at) + 1
    for task in range(6):  # 0-5 started (two at a time), 0-3 ended well
        (folder / f"w.{task}.alloc").write_text(f"{t0 + 10 * (task // 2)} n1 {job.job_id + 1 + task}\n")
    for task in range(4):
        (folder / f"w.{task}.end").write_text(f"0 {t0 + 10 * (task // 2) + 10}\n")
    store.set_status("clock", {"now": t0 + 25, "wall": time.time(), "speed": 1.0})
    store.commit()
    (row,), _ = status_rows(store, wf.id)
    assert (row["st"], row["state_long"], row["reason"]) == ("R", "RUNNING", "R 2, PD 4, CD 4")
    assert 24 <= row["time_s"] <= 27  # since the first task's allocation
    assert summarize(store.load_workflows([wf.id])[0])["stages"][0]["array_tasks"] == {"R": 2, "PD": 4, "CD": 4}
    for task in range(4, 10):  # every task ended: the row says so before Slurm's end reaches asad
        (folder / f"w.{task}.alloc").write_text(f"{t0 + 10 * (task // 2)} n1 {job.job_id + 1 + task}\n")
        (folder / f"w.{task}.end").write_text(f"0 {t0 + 10 * (task // 2) + 10}\n")
    (row,), _ = status_rows(store, wf.id)
    assert (row["st"], row["reason"], row["time_s"]) == ("CD", "CD 10", 50)
    store.close()


def test_a_cancelled_array_counts_what_slurm_recorded_not_the_last_poll(db_url):
    """Audit 5, finding 4: an array cancelled with 2 tasks done, 2 running and 6 pending kept
    `tasks R 2, PD 6, CD 2` in asad show forever (its jobs were never polled again)."""
    from asad.core.metrics import summarize
    from asad.core.model import JobPhase

    store = Store(db_url)
    sim = make_simulator("small", load=0.0, seed=1)
    wf = store.add_workflow(parse_workflow(ONE), sim.now(), strategy="per-stage")
    runner = make_runner(Settings(), store, sim)
    runner.tick()
    sim.run_until(sim.now() + 150)  # tasks 0 and 1 done, 2 and 3 running
    runner.tick()
    assert runner.active[wf.id].jobs[0].array_tasks == {"CD": 2, "R": 2, "PD": 6}
    store.request_cancel(wf.id)
    runner.tick()  # the cancel: scancel, the workflow ends
    ended = store.load_workflows([wf.id])[0]
    assert ended.state is WorkflowState.CANCELLED
    # before Slurm's word on the cancelled job is in: nothing of a cancelled stage runs or waits
    assert summarize(ended)["stages"][0]["array_tasks"] == {"CD": 2, "CA": 8}
    sim.run_until(sim.now() + 30)
    runner.tick()  # the next poll takes Slurm's word on the jobs of the ended workflow
    job = store.load_workflows([wf.id])[0].jobs[0]
    assert (job.state, job.phase, job.array_tasks) == (JobState.CANCELLED, JobPhase.DONE, {"CD": 2, "CA": 8})
    assert summarize(store.load_workflows([wf.id])[0])["stages"][0]["array_tasks"] == {"CD": 2, "CA": 8}
    store.close()


def test_a_cancelled_arrays_sacct_records_count_each_task_once():
    """What sacct printed on the local cluster for `--array=0-9%2` cancelled with 0-1 done and 2-3
    running: the pending-range record still names 2 and 3, which have records of their own."""
    text = "\n".join([_sa("11_0", "12", "COMPLETED", "0:0"), _sa("11_1", "13", "COMPLETED", "0:0"),
                      _sa("11_2", "14", "CANCELLED by 0", "0:0"), _sa("11_2.batch", "14.batch", "FAILED", "15:0"),
                      _sa("11_3", "15", "CANCELLED by 0", "0:0"), _sa("11_[2-9%2]", "11", "CANCELLED by 0", "0:0")])
    rec = parse_sacct(text)[11]
    assert rec.status.state is JobState.CANCELLED and rec.status.array_tasks == {"CD": 2, "CA": 8}
    pending = parse_sacct(_sa("11_[2-9%2]", "11", "PENDING", "0:0"))[11]  # not cancelled: still waiting
    assert pending.status.state is JobState.PENDING and pending.status.array_tasks == {"PD": 8}


def test_spec_show_names_an_array_stages_indices_and_task_count():
    """Audit 5, finding 12: `python -m asad.spec.show` listed a `0-5%3` stage as a plain 1-CPU stage."""
    from asad.spec.show import describe

    text = describe(parse_workflow(FAN.format(strategy="chain", array="0-5%3")))
    header, prep, fan, gather = text.splitlines()[1:]
    assert header.split()[:4] == ["STAGE", "AFTER", "ARRAY", "NODES"]
    assert fan.split()[:5] == ["fan", "prep", "0-5%3", "(6", "tasks)"]
    assert prep.split()[2] == gather.split()[2] == "-"
    plain = describe(parse_workflow("name: p\nstages:\n  - {name: a, run: 'true'}\n"))
    assert "ARRAY" not in plain  # no column for a workflow without arrays
