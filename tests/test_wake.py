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
