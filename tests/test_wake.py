"""The watcher between ticks (asad/wake.py): the wake file and the stages' end markers."""

from __future__ import annotations

import os

from asad.wake import EndMarker, Watch, wake_daemon


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
