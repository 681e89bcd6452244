"""The watcher between ticks (asad/daemon/wake.py): the wake file and the stages' end markers."""

from __future__ import annotations

import os

from asad.daemon.wake import EndMarker, KillLog, Watch, wake_daemon


def test_a_wake_request_is_due_once(tmp_path):
    watch = Watch(tmp_path)
    assert watch.due() == []
    wake_daemon(tmp_path)
    os.utime(tmp_path / "wake", (1e9, 1e9))  # a stamp the first look did not see
    assert watch.due() == [0]
    assert watch.due() == []


def test_an_array_job_is_due_when_every_task_has_its_end_marker(tmp_path):
    paths = tuple(tmp_path / f"work.{i}.end" for i in range(3))
    watch = Watch(None)
    watch.set_markers([EndMarker(paths, 42, since=100.0)])
    for path in paths[:2]:
        path.write_text("0 150\n")
    assert watch.due() == []  # a task still runs
    paths[2].write_text("3 160\n")  # the last task ends (failing: the array job ends all the same)
    assert watch.due() == [42]
    assert watch.due() == []  # once


def test_an_earlier_attempts_array_markers_do_not_count(tmp_path):
    paths = tuple(tmp_path / f"work.{i}.end" for i in range(2))
    for path in paths:
        path.write_text("137 50\n")
        os.utime(path, (50.0, 50.0))  # written by attempt 1, before this job's submission
    watch = Watch(None)
    watch.set_markers([EndMarker(paths, 7, since=100.0)])
    assert watch.due() == []
    for path in paths:
        os.utime(path, (120.0, 120.0))  # this attempt's tasks rewrote them
    assert watch.due() == [7]


def test_a_stage_marker_is_due_once_and_again_for_a_new_job(tmp_path):
    end = (tmp_path / "a.end",)
    watch = Watch(None)
    watch.set_markers([EndMarker(end, 1)])
    end[0].write_text("0 10\n")
    assert watch.due() == [1] and watch.due() == []
    watch.set_markers([EndMarker(end, 2)])  # the retry's job
    assert watch.due() == [2]


def test_slurmstepds_kill_line_in_the_jobs_output_file_is_due_once(tmp_path):
    """An OOM kill or a time-out takes the wrapper with it (no end marker); slurmstepd says why in
    the job's own output file (the lines below are 22.05's, copied from the local cluster)."""
    out = tmp_path / "hog-387.out"
    out.write_text("")
    watch = Watch(None)
    watch.set_markers([], [KillLog(out, 387)])
    assert watch.due() == []
    with out.open("a") as f:
        f.write("asad-stage: hog: waiting for prepare\n")  # the wrapper's own words: no kill
    os.utime(out, (1e9, 1e9))
    assert watch.due() == []
    with out.open("a") as f:
        f.write("slurmstepd-n1: error: StepId=387.batch exceeded memory limit (644476928 > 104857600), being killed\n"
                "slurmstepd-n1: error: Exceeded job memory limit\n"
                "slurmstepd-n1: error: *** JOB 387 ON n1 CANCELLED AT 2026-11-26T18:03:00 ***\n")
    os.utime(out, (1e9 + 5, 1e9 + 5))
    assert watch.due() == [387]
    assert watch.due() == []  # read again only when it changes


def test_a_time_out_and_a_cgroup_oom_kill_are_kills_too(tmp_path):
    for n, line in enumerate(("slurmstepd: error: *** JOB 12 ON c3 CANCELLED AT 2026-11-26T10:00:00 DUE TO TIME LIMIT ***",
                              "slurmstepd: error: Detected 1 oom-kill event(s) in StepId=12.batch. Some of your "
                              "processes may have been killed by the cgroup out-of-memory handler.")):
        out = tmp_path / f"s{n}.out"
        out.write_text(line + "\n")
        watch = Watch(None)
        watch.set_markers([], [KillLog(out, 12)])
        assert watch.due() == [12], line


def test_a_pending_jobs_allocation_marker_is_due_once_and_only_its_own(tmp_path):
    """Issue 35: a 20-s stage started and ended between two polls of pending jobs, so its successor
    was planned at its end, with no lead. Its allocation marker now wakes the daemon."""
    from asad.daemon.wake import StartMarker

    alloc = tmp_path / "s0.alloc"
    watch = Watch(None)
    watch.set_markers([], [], [StartMarker(alloc, 278)])
    assert watch.due() == []
    alloc.write_text("1700000000 n1 277\n")  # an earlier attempt's job wrote it: not this one's start
    assert watch.due() == []
    alloc.write_text("1700000010 n1 278\n")
    os.utime(alloc, (1e9, 1e9))
    assert watch.due() == [0]  # a tick is due; no end is announced
    assert watch.due() == []


def test_start_markers_name_every_pending_job_of_a_stage(tmp_path):
    from types import SimpleNamespace

    from asad.core.model import JobPhase, JobRecord, StageRun, WorkflowRun
    from asad.slurm.backend import JobRequest, JobState
    from asad.spec.load import parse_workflow
    from asad.daemon.wake import StartMarker, start_markers

    spec = parse_workflow("name: t\nstages:\n  - {name: a, cpus: 1, time: 1h, run: 'true'}\n"
                          "  - {name: b, cpus: 1, time: 1h, run: 'true', after: [a]}\n")
    wf = WorkflowRun(id=3, spec=spec, strategy="auto", mode="dependency")
    wf.stages = {"a": StageRun(3, "a"), "b": StageRun(3, "b")}
    for row, (stage, state) in enumerate((("a", JobState.RUNNING), ("b", JobState.PENDING)), 1):
        wf.jobs.append(JobRecord(row_id=row, workflow_id=3, stage=stage, attempt=1, tag=stage, phase=JobPhase.LIVE,
                                 request=JobRequest(name=stage, command="true"), geometry_key="k", job_id=10 + row,
                                 state=state))
    got = start_markers(SimpleNamespace(active={3: wf}), tmp_path)
    assert got == [StartMarker(tmp_path / "3" / "b.alloc", 12)]


def test_asad_run_ticks_when_a_pending_job_starts_not_at_the_next_poll(tmp_path):
    """run_to_completion on a real cluster: between polls it looks at the markers every second; an
    allocation marker ends the pause (before the fix it slept out the 30-s poll interval)."""
    from types import SimpleNamespace

    from asad.daemon.wiring import run_to_completion
    from asad.core.model import JobPhase, JobRecord, StageRun, WorkflowRun
    from asad.daemon.runner import TickReport
    from asad.slurm.backend import JobRequest, JobState
    from asad.spec.load import parse_workflow

    spec = parse_workflow("name: t\nstages:\n  - {name: a, cpus: 1, time: 1h, run: 'true'}\n")
    wf = WorkflowRun(id=1, spec=spec, strategy="auto", mode="dependency")
    wf.stages = {"a": StageRun(1, "a")}
    wf.jobs.append(JobRecord(row_id=1, workflow_id=1, stage="a", attempt=1, tag="a", phase=JobPhase.LIVE,
                             request=JobRequest(name="a", command="true"), geometry_key="k", job_id=5,
                             state=JobState.PENDING))
    ticks: list[int] = []
    slept: list[float] = []

    class Runner:
        active = {1: wf}

        def tick(self):
            ticks.append(len(slept))
            if len(ticks) == 2:
                self.active = {}  # the second tick is the one the marker asked for: done
            return TickReport(now=0.0, wake_at=float("inf"))

        def live_job_ids(self):
            return [5]

    def sleep(s):
        slept.append(s)
        if len(slept) == 3:  # the job starts three seconds into a 30-s pause
            (tmp_path / "1").mkdir(exist_ok=True)
            (tmp_path / "1" / "a.alloc").write_text("1700000000 n1 5\n")

    run_to_completion(Runner(), SimpleNamespace(now=lambda: 0.0), [1], poll_interval_s=30.0, sleep=sleep,
                      run_dir=tmp_path)
    assert ticks == [0, 3]
