"""An array job seen as one job: its tasks' statuses folded into one :class:`JobStatus` (with the
tasks per state in ``array_tasks``), and their accounting into one :class:`Usage`.

The array is RUNNING while any task runs or some ended and some still wait, PENDING while all
wait, and final when every task is: COMPLETED when all completed, else the worst ending of a
task (OUT_OF_MEMORY before TIMEOUT before FAILED before NODE_FAIL before CANCELLED), so the stage
fails, and an out-of-memory task makes the retry ask for more memory.
"""

from __future__ import annotations

import re
from dataclasses import replace

from asad.slurm.backend import JobState, JobStatus, Usage

_ARRAY_ID_RE = re.compile(r"(\d+)_(\[?[\d,\-:%]+\]?)\Z")
_WORST = (JobState.OUT_OF_MEMORY, JobState.TIMEOUT, JobState.FAILED, JobState.NODE_FAIL, JobState.CANCELLED)


def split_array_id(text: str) -> tuple[int, str] | None:
    """``16_3`` -> (16, "3"); ``16_[2-5%2]`` -> (16, "[2-5%2]"); a plain id -> None."""
    m = _ARRAY_ID_RE.match(text.strip())
    return (int(m.group(1)), m.group(2)) if m else None


def fold(array_id: int, tasks: list[tuple[JobStatus, int]]) -> JobStatus:
    """One status for the array ``array_id`` from (task status, how many tasks it stands for)."""
    counts: dict[str, int] = {}
    for st, n in tasks:
        counts[st.state.short] = counts.get(st.state.short, 0) + n
    states = [st.state for st, _ in tasks]
    statuses = [st for st, _ in tasks]
    starts = [s.start_time for s in statuses if s.start_time is not None]
    first = statuses[0]
    if all(s.is_final for s in states):
        worst = next((w for w in _WORST if w in states), JobState.COMPLETED)
        lead = next(s for s in statuses if s.state is worst)
        ends = [s.end_time for s in statuses if s.end_time is not None]
        codes = [s.exit_code for s in statuses if s.exit_code is not None]
        return replace(lead, job_id=array_id, state=worst, reason=lead.reason,
                       start_time=min(starts) if starts else None, end_time=max(ends) if ends else None,
                       submit_time=_min(s.submit_time for s in statuses),
                       eligible_time=_min(s.eligible_time for s in statuses),
                       exit_code=max(codes) if codes else None, array_tasks=counts)
    if any(s is JobState.RUNNING for s in states) or any(s.is_final for s in states):
        lead = next((s for s in statuses if s.state is JobState.RUNNING), first)
        return replace(lead, job_id=array_id, state=JobState.RUNNING, reason="None",
                       start_time=min(starts) if starts else None, end_time=None, exit_code=None, signal=None,
                       submit_time=_min(s.submit_time for s in statuses),
                       eligible_time=_min(s.eligible_time for s in statuses), array_tasks=counts)
    never = next((s for s in statuses if s.reason == "DependencyNeverSatisfied"), None)
    lead = never or first
    return replace(lead, job_id=array_id, state=JobState.PENDING, start_time=None, end_time=None,
                   submit_time=_min(s.submit_time for s in statuses),
                   eligible_time=_min(s.eligible_time for s in statuses), array_tasks=counts)


def fold_usage(array_id: int, usages: list[Usage]) -> Usage:
    """The array's accounting: the largest peak memory and elapsed time of a task, the CPU time of all."""
    peaks = [u.peak_rss_mb for u in usages if u.peak_rss_mb is not None]
    cpu = [u.total_cpu_s for u in usages if u.total_cpu_s is not None]
    elapsed = [u.elapsed_s for u in usages if u.elapsed_s is not None]
    first = usages[0]
    return replace(first, job_id=array_id, peak_rss_mb=max(peaks) if peaks else None,
                   total_cpu_s=sum(cpu) if cpu else None, elapsed_s=max(elapsed) if elapsed else None)


def _min(values) -> float | None:  # noqa: ANN001
    vals = [v for v in values if v is not None]
    return min(vals) if vals else None
