"""An array stage's tasks as ``asad status`` and ``show`` count them: per squeue state code over
the current attempt's array jobs, from the daemon's last poll brought up to the moment by the
tasks' own markers. Once the stage has ended (its workflow cancelled or failed) no task of it runs
or waits any more: until Slurm's final word on its jobs is in, the tasks the last poll saw
running or pending count as cancelled (``CA``)."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

from asad.core import markers
from asad.core.model import JobPhase, JobRecord, WorkflowRun

_TASK_ORDER = ("R", "PD", "CD", "F", "OOM", "TO", "CA", "NF")


@dataclass(frozen=True)
class ArrayProgress:
    counts: dict[str, int]  # tasks per squeue state code
    started: float | None = None  # the first task's allocation, from its marker (None: none seen)
    ended: float | None = None  # the last task's end, from its marker, once no task runs or waits


def array_tasks(wf: WorkflowRun, stage: str) -> dict[str, int] | None:
    """An array stage's tasks per squeue state code over its current attempt's array jobs, or None."""
    progress = array_progress(wf, stage)
    return progress.counts if progress is not None else None


def array_progress(wf: WorkflowRun, stage: str) -> ArrayProgress | None:
    """An array stage's tasks per state, and when its first task started and its last ended as
    their markers say (None when the stage is not an array or has no counts)."""
    if wf.spec.stage(stage).array is None:
        return None
    run = wf.stages.get(stage)
    over = run is not None and run.state.is_final
    cancelled_at = wf.ended_at if over else None
    counts: dict[str, int] = {}
    starts: list[float] = []
    ends: list[float] = []
    for job in wf.current_jobs(stage):
        polled = dict(job.array_tasks or {})
        # Slurm's final word on the job is in (DONE); before it the markers say more, and a job
        # submitted but not polled yet has every task pending
        if job.job_id is not None and job.phase is not JobPhase.DONE:
            if not polled and job.request.array:
                from asad.common.arrays import ArrayError, parse_array

                try:
                    polled = {"PD": parse_array(job.request.array).count}
                except ArrayError:
                    polled = {}
            if polled and job.request.output:
                scan = _scan(os.path.dirname(job.request.output), stage, job, cancelled_at)
                polled = _with_scan(polled, scan)
                starts += [scan.first_start] if scan.first_start is not None else []
                ends += [scan.last_end] if scan.last_end is not None else []
            if over:  # asad cancelled what was left of it: nothing of it runs or waits any more
                live = polled.pop("R", 0) + polled.pop("PD", 0)
                if live:
                    polled["CA"] = polled.get("CA", 0) + live
        for code, n in polled.items():
            counts[code] = counts.get(code, 0) + n
    if not counts:
        return None
    done = not counts.get("R") and not counts.get("PD")
    return ArrayProgress(counts, min(starts) if starts else None, max(ends) if done and ends else None)


_TASK_ENDED = ("CD", "F", "OOM", "TO", "CA", "NF")


@dataclass
class _Scan:
    ok: int = 0
    failed: int = 0
    cancelled: int = 0
    running: int = 0
    first_start: float | None = None
    last_end: float | None = None


def with_task_markers(polled: dict[str, int], folder: str, stage: str, job: JobRecord,
                      cancelled_at: float | None = None) -> dict[str, int]:
    """An array job's task counts from the daemon's last poll, brought up to now by the markers its
    tasks wrote since (``<stage>.<task>.alloc`` when a task started, ``.end`` when it ended): the
    daemon polls an array only as often as its pauses allow, and a status between two polls showed
    tasks long done as running or pending. ``cancelled_at``: asad cancelled the job then; a task
    that ended with an error from then on was killed by that cancel (``CA``), not failed."""
    return _with_scan(polled, _scan(folder, stage, job, cancelled_at))


def _scan(folder: str, stage: str, job: JobRecord, cancelled_at: float | None) -> _Scan:
    from asad.common.arrays import parse_array

    since = (job.submitted_at or 0.0) - 5.0  # an earlier attempt's markers do not count
    killed_from = math.floor(cancelled_at) if cancelled_at is not None else math.inf  # markers: whole seconds
    out = _Scan()
    for i in parse_array(job.request.array).indices:
        task = f"{stage}.{job.request.array_offset + i}"
        allocated = _marker_fields(os.path.join(folder, f"{task}.alloc"), since, epoch_at=0)
        if allocated is not None:
            start = float(allocated[0])
            out.first_start = start if out.first_start is None else min(out.first_start, start)
        ended = _marker_fields(markers.end_path(folder, task), since, epoch_at=1)
        if ended is not None:
            out.last_end = max(out.last_end or 0.0, float(ended[1]))
            if ended[0] == "0":
                out.ok += 1
            elif float(ended[1]) >= killed_from:
                out.cancelled += 1
            else:
                out.failed += 1
        elif allocated is not None:
            out.running += 1
    return out


def _with_scan(polled: dict[str, int], scan: _Scan) -> dict[str, int]:
    if not scan.ok + scan.failed + scan.cancelled + scan.running:
        return polled
    out = dict(polled, CD=max(scan.ok, polled.get("CD", 0)), F=max(scan.failed, polled.get("F", 0)),
               CA=max(scan.cancelled, polled.get("CA", 0)))
    live = sum(polled.values()) - sum(out.get(code, 0) for code in _TASK_ENDED)
    out["R"] = max(0, min(scan.running, live))
    out["PD"] = max(0, live - out["R"])
    return {code: n for code, n in out.items() if n}


def _marker_fields(path, since: float, epoch_at: int) -> list[str] | None:  # noqa: ANN001
    """A marker's fields if it was written for this attempt (its epoch at or after ``since``)."""
    try:
        fields = Path(path).read_text().split()
        return fields if float(fields[epoch_at]) >= since else None
    except (OSError, ValueError, IndexError):
        return None


def format_tasks(counts: dict[str, int]) -> str:
    """``R 3, PD 90, CD 7`` (running first, as a user scans for them)."""
    order = sorted(counts, key=lambda c: (_TASK_ORDER.index(c) if c in _TASK_ORDER else 99, c))
    return ", ".join(f"{c} {counts[c]}" for c in order)
