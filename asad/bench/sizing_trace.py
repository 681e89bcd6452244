"""The replay's primitives: one trace task, the tally of a replay, one attempt played.

Shared by :mod:`asad.bench.sizing` (agents, anchor, requests) and
:mod:`asad.bench.sizing_bounds` (the hindsight ceilings), so both account an attempt the
same way: a kill at ``ttf`` × the run time wastes the whole allocation (Witt eq. 4).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asad.sizing.base import Outcome, Request
from asad.sizing.timelimit import stretched_elapsed_s

DEFAULT_TIME_S = 86400  # a trace without a time request (iwd): a day, as many sites' default


@dataclass(frozen=True)
class TraceTask:
    task_id: int
    process: str
    cpus: int
    mem_mb: float  # requested
    time_s: int | None  # requested
    peak_mb: float
    realtime_s: float
    cpu_usage: float  # cores busy on average (%cpu / 100)
    input_bytes: float | None  # the input-size feature (see ``--input-feature``); None = unknown
    submit_s: float = 0.0  # when the workflow submitted it (trace clock)
    complete_s: float = 0.0  # when it completed in the trace


@dataclass
class Tally:
    tasks: int = 0
    attempts: int = 0
    oom: int = 0
    timeouts: int = 0
    unfit: int = 0  # tasks that could not fit the caps (SizingError)
    used_mb_s: float = 0.0
    alloc_mb_s: float = 0.0
    cpu_alloc_s: float = 0.0  # core·s
    cpu_used_s: float = 0.0
    run_s: float = 0.0  # every attempt's wall time
    limit_s: float = 0.0  # time limits of the successful attempts
    ok_run_s: float = 0.0  # run time of the successful attempts
    limit_ratios: list[float] = field(default_factory=list)  # each successful attempt's limit / run time

    @property
    def maq(self) -> float:
        return self.used_mb_s / self.alloc_mb_s if self.alloc_mb_s else 1.0

    @property
    def failed_attempts(self) -> int:
        return self.oom + self.timeouts

    def summary(self) -> dict:
        gbh = 1024.0 * 3600.0
        return {"tasks": self.tasks, "attempts": self.attempts, "oom": self.oom, "timeouts": self.timeouts,
                "unfit": self.unfit, "maq": self.maq,
                "failed_pct": 100.0 * self.failed_attempts / max(1, self.tasks),
                "mem_alloc_gbh": self.alloc_mb_s / gbh, "mem_used_gbh": self.used_mb_s / gbh,
                "cpu_alloc_coreh": self.cpu_alloc_s / 3600.0, "cpu_used_coreh": self.cpu_used_s / 3600.0,
                "run_h": self.run_s / 3600.0, "limit_h": self.limit_s / 3600.0, "ok_run_h": self.ok_run_s / 3600.0,
                "limit_over_run": self.limit_s / self.ok_run_s if self.ok_run_s else None,
                "limit_over_run_median": float(np.median(self.limit_ratios)) if self.limit_ratios else None}


def play_attempt(tally: Tally, task: TraceTask, req: Request, ttf: float) -> Outcome:
    """One attempt of ``task`` under ``req``: account it and return what Slurm would report."""
    run_s = task.realtime_s * (stretched_elapsed_s(1.0, task.cpu_usage, task.cpus, req.cpus)
                               if task.cpu_usage > 0 else 1.0)
    work_s = task.cpu_usage * task.realtime_s
    tally.attempts += 1
    oom_at = ttf * run_s if req.mem_mb < task.peak_mb else math.inf
    timeout_at = float(req.time_s) if req.time_s < run_s else math.inf
    if oom_at < math.inf or timeout_at < math.inf:
        if oom_at <= timeout_at:
            tally.oom += 1
            end_s, state, peak = oom_at, "OUT_OF_MEMORY", float(req.mem_mb)
        else:
            tally.timeouts += 1
            end_s, state, peak = timeout_at, "TIMEOUT", None
        tally.alloc_mb_s += req.mem_mb * end_s  # all of a failed attempt is waste
        tally.cpu_alloc_s += req.cpus * end_s
        tally.run_s += end_s
        return Outcome(request=req, peak_mem_mb=peak, cpu_s=work_s * end_s / run_s if run_s else 0.0,
                       elapsed_s=end_s, input_bytes=task.input_bytes, state=state)
    tally.used_mb_s += task.peak_mb * run_s
    tally.alloc_mb_s += req.mem_mb * run_s
    tally.cpu_alloc_s += req.cpus * run_s
    tally.cpu_used_s += work_s
    tally.run_s += run_s
    tally.ok_run_s += run_s
    tally.limit_s += req.time_s
    tally.limit_ratios.append(req.time_s / max(1.0, run_s))
    return Outcome(request=req, peak_mem_mb=task.peak_mb, cpu_s=work_s, elapsed_s=run_s,
                   input_bytes=task.input_bytes, state="COMPLETED")


def default_request(task: TraceTask) -> Request:
    return Request(cpus=task.cpus, mem_mb=max(1, int(math.ceil(task.mem_mb))),
                   time_s=task.time_s or DEFAULT_TIME_S)


