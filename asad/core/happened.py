"""What happened to a stage's submission, beside what was planned (``asad explain``).

A plan says "eligible 122 s before the predecessors' expected end"; what a user needs to judge it is
whether that lead was taken and what it bought (issue 35: the explain line quoted a lead no job
ever had). Every instant here is measured against the moment the stage's predecessors ended (the
barrier): the job was submitted and became eligible so long before it, its allocation came before
it (the cores idled at the barrier until then) or after it (the workflow waited).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from asad.core.model import JobRecord, StageRun, WorkflowRun


@dataclass(frozen=True)
class Happened:
    planned_lead_s: float | None  # how far ahead of the predecessors' expected end the plan made it eligible
    planned_end: float | None  # the predecessors' end the plan expected
    barrier: float | None  # when the predecessors actually ended (None: no predecessor, or not ended)
    submitted: float | None
    eligible: float | None
    allocated: float | None  # the job's start in Slurm
    work_start: float | None  # when the stage's own work began (after any barrier)
    cpus: int
    afterok: bool = False  # held by a Slurm dependency: no lead was planned, eligible when they ended

    @property
    def idle_s(self) -> float:
        """Seconds the allocation held its cores before the work could begin."""
        if self.allocated is None or self.work_start is None:
            return 0.0
        return max(0.0, self.work_start - self.allocated)

    def to_dict(self) -> dict:
        return {**asdict(self), "idle_s": self.idle_s, "idle_core_s": self.idle_s * self.cpus}


def happened(wf: WorkflowRun, name: str) -> Happened | None:
    """The current job of stage ``name``, planned against done; None before it was submitted."""
    run: StageRun = wf.stages[name]
    job: JobRecord | None = wf.current_job(name)
    if job is None or job.submitted_at is None or name != job.stage:
        return None
    ends = [wf.stages[p].end_time for p in wf.spec.predecessors(name)]
    barrier = max(ends) if ends and all(e is not None for e in ends) else None
    afterok = job.request.dependency is not None
    lead = run.est_wait_s if job.planned_start is not None and not afterok else None
    return Happened(afterok=afterok, planned_lead_s=lead, planned_end=job.planned_start, barrier=barrier,
                    submitted=job.submitted_at, eligible=job.eligible_time, allocated=job.start_time,
                    work_start=run.start_time, cpus=job.request.cpus)


def _clock(t: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(t))


def _rel(t: float, barrier: float) -> str:
    d = barrier - t
    return f"{d:.0f} s before it" if d >= 0.5 else (f"{-d:.0f} s after it" if d <= -0.5 else "at it")


def describe(h: Happened) -> str:
    """One line: what the plan said, what happened, and what it cost."""
    planned = (f"planned lead {h.planned_lead_s:.0f} s (predecessors expected to end at "
               f"{_clock(h.planned_end)})" if h.planned_lead_s is not None and h.planned_end is not None else "")
    if h.barrier is None:
        parts = [f"submitted at {_clock(h.submitted)}"]
        if h.eligible is not None and h.allocated is not None:
            parts.append(f"waited {h.allocated - h.eligible:.0f} s in the queue")
        elif h.allocated is None:
            parts.append("not started yet")
        return "; ".join(p for p in (planned, ", ".join(parts)) if p)
    b = h.barrier
    parts = [f"predecessors ended at {_clock(b)}",
             f"submitted {_rel(h.submitted, b)}" + (" with afterok" if h.afterok else "")]
    if h.eligible is not None:
        parts.append(f"eligible {_rel(h.eligible, b)}")
    if h.allocated is not None:
        parts.append(f"allocated {_rel(h.allocated, b)}")
        if h.allocated > b:
            parts.append(f"so {h.allocated - b:.0f} s of makespan went to the queue wait")
        elif h.idle_s > 0:
            parts.append(f"so it idled {h.idle_s:.0f} s at the barrier ({h.idle_s * h.cpus:.0f} core-s)")
    else:
        parts.append("not started yet")
    return "; ".join(p for p in (planned, ", ".join(parts)) if p)
