"""Every attempt of a stage, and why each retry happened (for ``asad show``, ``status``, ``explain``).

One row per Slurm job asad submitted for the stage (from the store's job records: each
holds its own request and final state), oldest first. A retry's reason is what ended the
attempt before it: ``OUT_OF_MEMORY`` (with the memory it had and the peak seen),
``TIMEOUT`` (with its limit), another failure (with the exit code), or asad's own
resubmission (an allocation that came too early, a dependency that could not be met).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from asad.core.model import JobPhase, JobRecord, WorkflowRun
from asad.common.units import format_duration, format_mem


@dataclass(frozen=True)
class Attempt:
    attempt: int
    job_id: int | None
    state: str
    cpus: int
    mem_mb: int | None
    time_s: int
    peak_mem_mb: float | None
    elapsed_s: float | None
    why: str  # why this attempt was submitted ("first attempt", "after TIMEOUT at 10:00", ...)
    start_time: float | None = None
    end_time: float | None = None
    by_asad: bool = False  # asad cancelled it to submit it again (replanned): not the stage's own failure

    def to_dict(self) -> dict:
        return asdict(self)


def _ended(job: JobRecord) -> str:
    """What ended ``job``, as the reason for the attempt after it."""
    req = job.request
    if job.cancelled_by_asad:
        return "asad resubmitted it (replanned; the same try)"
    state = job.state.value
    if state == "OUT_OF_MEMORY" or (state == "FAILED" and job.peak_rss_mb and req.total_mem_mb()
                                     and job.peak_rss_mb >= 0.95 * req.total_mem_mb()):
        peak = f", peak {format_mem(job.peak_rss_mb)}" if job.peak_rss_mb else ""
        return f"{state} with {format_mem(req.total_mem_mb())}{peak}"
    if state == "TIMEOUT":
        return f"TIMEOUT at {format_duration(req.time_limit_s)}"
    exit_code = f" (exit {job.exit_code})" if job.exit_code is not None else ""
    return f"{state}{exit_code}"


def attempts_by_stage(wf: WorkflowRun) -> dict[str, list[Attempt]]:
    """Every stage's attempts in one pass over the workflow's jobs (big workflows: not per stage)."""
    jobs: dict[str, list[JobRecord]] = {}
    for j in wf.jobs:
        if j.phase is not JobPhase.ABANDONED:
            for stage in j.stages:  # a shared job is an attempt of every stage it ran
                jobs.setdefault(stage, []).append(j)
    return {stage: _attempts(js) for stage, js in jobs.items()}


def stage_attempts(wf: WorkflowRun, stage: str) -> list[Attempt]:
    """The stage's attempts, oldest first (intents that never reached Slurm are left out)."""
    return _attempts([j for j in wf.jobs if stage in j.stages and j.phase is not JobPhase.ABANDONED])


_FOLD_ORDER = ("OUT_OF_MEMORY", "TIMEOUT", "FAILED", "NODE_FAIL", "CANCELLED", "RUNNING", "PENDING")


def _one_per_attempt(jobs: list[JobRecord]) -> list[JobRecord]:
    """An array stage's attempt may be several array jobs (chunks): its first one speaks for it, with
    the attempt's overall state (COMPLETED only when every chunk completed)."""
    groups: dict[int, list[JobRecord]] = {}
    for j in jobs:
        groups.setdefault(j.attempt, []).append(j)
    out = []
    for group in groups.values():
        lead = group[0]
        states = {j.state.value for j in group}
        if len(states) > 1:
            from dataclasses import replace

            worst = next(s for s in _FOLD_ORDER if s in states)
            lead = replace(lead, state=type(lead.state)(worst),
                           end_time=max((j.end_time for j in group if j.end_time), default=None))
        out.append(lead)
    return out


def _attempts(jobs: list[JobRecord]) -> list[Attempt]:
    jobs = _one_per_attempt(sorted(jobs, key=lambda j: (j.attempt, j.row_id or 0)))
    out: list[Attempt] = []
    for i, job in enumerate(jobs):
        req = job.request
        elapsed = (job.end_time - job.start_time) if job.end_time and job.start_time else None
        why = "first attempt" if i == 0 else f"after {_ended(jobs[i - 1])}"
        out.append(Attempt(attempt=i + 1, job_id=job.job_id, state=job.state.value,
                           cpus=job.alloc_cpus or req.cpus, mem_mb=req.total_mem_mb(),
                           time_s=int(req.time_limit_s), peak_mem_mb=job.peak_rss_mb, elapsed_s=elapsed,
                           why=why, start_time=job.start_time, end_time=job.end_time,
                           by_asad=job.cancelled_by_asad))
    return out


def tries(attempts: list[Attempt]) -> int:
    """How many times the stage has been tried, as its TRY column and ``show`` count: one, plus one
    per retry after the stage's own failure (OUT_OF_MEMORY, TIMEOUT, a failed command). A job asad
    cancelled itself to submit again (an allocation that came too early, a ``--begin`` made too late,
    a dependency that can no longer be met, a site's submit limit) is the same try, as it is for the
    retry budgets (``retries``, ``max_oom_retries``); so is a submission that never reached Slurm."""
    return sum(1 for i, a in enumerate(attempts) if not a.by_asad or i == len(attempts) - 1)


def describe(a: Attempt) -> str:
    """One line: ``attempt 2 (after TIMEOUT at 1:00): job 12 COMPLETED, 1 CPU, 200M, limit 2:00, ran 1:30``."""
    parts = [f"{a.cpus} CPU" + ("s" if a.cpus != 1 else ""), format_mem(a.mem_mb) if a.mem_mb else "mem -",
             f"limit {format_duration(a.time_s)}"]
    if a.elapsed_s is not None:
        parts.append(f"ran {format_duration(a.elapsed_s)}")
    if a.peak_mem_mb:
        parts.append(f"peak {format_mem(a.peak_mem_mb)}")
    job = f"job {a.job_id}" if a.job_id is not None else "not submitted yet"
    return f"attempt {a.attempt} ({a.why}): {job} {a.state}, {', '.join(parts)}"


def retry_note(attempts: list[Attempt]) -> str | None:
    """For a stage with retries: ``attempt 2 after TIMEOUT at 1:00, now 1 CPU, 200M, 2:00``; else None."""
    if len(attempts) < 2 or attempts[-2].by_asad:  # resubmitted by asad: no retry to explain
        return None
    last = attempts[-1]
    return (f"attempt {last.attempt} {last.why}: now {last.cpus} CPU(s), "
            f"{format_mem(last.mem_mb) if last.mem_mb else '-'}, limit {format_duration(last.time_s)}")


def sized_below(wf: WorkflowRun, stage: str) -> str:
    """Empty unless a sizing agent asks less than the workflow file for ``stage`` (its current
    attempt, or its planned size before one is submitted); else what, e.g.
    ``sized below the file: mem 512M (file 1G)``. Every such cut is shown where the user looks
    (``asad status`` and ``show``), not only by ``asad explain``."""
    spec, run = wf.spec.stage(stage), wf.stages[stage]
    job = wf.current_job(stage)
    if job is not None and job.stage != stage:  # a shared job's request is the whole job's
        return ""
    mem = job.request.total_mem_mb() if job is not None else run.mem_mb
    cpus = job.request.cpus if job is not None else run.cpus
    file_mem, cut = spec.total_mem_mb(), []
    if mem and file_mem and mem < file_mem:
        cut.append(f"mem {format_mem(mem)} (file {format_mem(file_mem)})")
    if cpus and cpus < spec.cpus:
        cut.append(f"{cpus} CPU(s) (file {spec.cpus})")
    return "sized below the file: " + ", ".join(cut) if cut else ""
