"""An array stage's tasks as ``asad status`` and ``show`` count them: per squeue state code over
the current attempt's array jobs, from the daemon's last poll brought up to the moment by the
tasks' own markers."""

from __future__ import annotations

import os
from pathlib import Path

from asad import markers
from asad.model import JobRecord, WorkflowRun

_TASK_ORDER = ("R", "PD", "CD", "F", "OOM", "TO", "CA", "NF")


def array_tasks(wf: WorkflowRun, stage: str) -> dict[str, int] | None:
    """An array stage's tasks per squeue state code over its current attempt's array jobs, or None."""
    if wf.spec.stage(stage).array is None:
        return None
    counts: dict[str, int] = {}
    for job in wf.current_jobs(stage):
        polled = dict(job.array_tasks or {})
        if polled and job.request.output and job.job_id is not None and not job.state.is_final:
            polled = with_task_markers(polled, os.path.dirname(job.request.output), stage, job)
        for code, n in polled.items():
            counts[code] = counts.get(code, 0) + n
    return counts or None


_TASK_ENDED = ("CD", "F", "OOM", "TO", "CA", "NF")


def with_task_markers(polled: dict[str, int], folder: str, stage: str, job: JobRecord) -> dict[str, int]:
    """An array job's task counts from the daemon's last poll, brought up to now by the markers its
    tasks wrote since (``<stage>.<task>.alloc`` when a task started, ``.end`` when it ended): the
    daemon polls an array only as often as its pauses allow, and a status between two polls showed
    tasks long done as running or pending."""
    from asad.arrays import parse_array

    since = (job.submitted_at or 0.0) - 5.0  # an earlier attempt's markers do not count
    ok = failed = running = 0
    for i in parse_array(job.request.array).indices:
        task = f"{stage}.{job.request.array_offset + i}"
        ended = _marker_fields(markers.end_path(folder, task), since, epoch_at=1)
        if ended is not None:
            ok, failed = (ok + 1, failed) if ended[0] == "0" else (ok, failed + 1)
        elif _marker_fields(os.path.join(folder, f"{task}.alloc"), since, epoch_at=0) is not None:
            running += 1
    if not ok + failed + running:
        return polled
    out = dict(polled, CD=max(ok, polled.get("CD", 0)), F=max(failed, polled.get("F", 0)))
    live = sum(polled.values()) - sum(out.get(code, 0) for code in _TASK_ENDED)
    out["R"] = max(0, min(running, live))
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
