"""Per-workflow measures: waits, perceived waits, makespan, core-hours and idle overhead.

Definitions (ASA.md): a job's *wait* is ``start - eligible``; a stage's *perceived wait* is
``start of its work - end of its latest predecessor`` (for a first stage: ``- workflow
submission``), floored at 0; *core-hours* count every allocation of every attempt for as long
as it was held, idle included; *overhead* is the part of those core-hours no stage used.
A pre-submitted stage is a *hit* when it neither waited nor idled more than the tolerance.
"""

from __future__ import annotations

from asad.core.array_view import array_tasks
from asad.core.attempts import attempts_by_stage, describe, sized_below
from asad.core.attempts import tries as count_tries
from asad.core.model import JobRecord, StageState, WorkflowRun

HIT_TOLERANCE_S = 60.0


def _job_core_s(job: JobRecord) -> float:
    if job.start_time is None or job.end_time is None:
        return 0.0
    cpus = job.alloc_cpus or job.request.cpus
    return cpus * max(0.0, job.end_time - job.start_time)


def perceived_wait(wf: WorkflowRun, name: str, start: float | None = None) -> float | None:
    """The stage's start of work (``start``, else the one asad saw) minus the end of its latest
    predecessor (a first stage: minus the workflow's submission), floored at 0; None before it
    started."""
    run, preds = wf.stages[name], wf.spec.predecessors(name)
    start = run.start_time if start is None else start
    if start is None:
        return None
    pred_end = max((wf.stages[p].end_time or 0.0) for p in preds) if preds else wf.created_at
    return max(0.0, start - pred_end)


def _not_before(end: float | None, start: float | None) -> float | None:
    """A stage's end, never before its start. They come from different clocks: the start of its
    command from the stage wrapper's marker (a fraction of a second), the end from Slurm (whole
    seconds, truncated); a stage that ended within a second of its start showed END before START."""
    return start if end is not None and start is not None and end < start else end


def summarize(wf: WorkflowRun) -> dict:
    stages = []
    used_core_s = 0.0
    big = wf.strategy == "big-job"
    tries = attempts_by_stage(wf)
    for name, run in wf.stages.items():
        spec = wf.spec.stage(name)
        job = wf.current_job(name) if not big else (wf.jobs[-1] if wf.jobs else None)
        preds = wf.spec.predecessors(name)
        rides = job is not None and name != job.stage and name in job.rides  # in a shared job, after its head
        # a stage cancelled or failed before asad saw it run still ran from its job's start
        start = run.start_time if run.start_time is not None or job is None or big or rides else job.start_time
        perceived = perceived_wait(wf, name, start)
        if big and preds:
            perceived = 0.0
        idle_s = 0.0
        if job is not None and job.start_time is not None and run.start_time is not None and not big and not rides:
            idle_s = max(0.0, run.start_time - job.start_time)
        if run.state is StageState.COMPLETED and run.start_time is not None and run.end_time is not None:
            used_core_s += spec.cpus * (run.end_time - run.start_time)
        hit = None
        if job is not None and job.est_wait_s is not None and perceived is not None:
            hit = perceived <= HIT_TOLERANCE_S and idle_s <= HIT_TOLERANCE_S
        stages.append({
            "name": name,
            "job_id": job.job_id if job else None,
            "state": run.state.value,
            "attempts": count_tries(tries[name]) if name in tries else run.attempt,  # asad's resubmissions are no try
            "attempt_list": [dict(a.to_dict(), text=describe(a)) for a in tries.get(name, [])],
            "sized_below": "" if big else sized_below(wf, name),
            "cpus": job.alloc_cpus or job.request.cpus if job else spec.cpus,
            # what it asks of GPUs: --gpus N (the job's) or --gres (per node); "" for none
            "gpus": (str(job.request.gpus) if job.request.gpus else job.request.gres or "") if job
            else (str(spec.slurm.gpus) if spec.slurm.gpus else spec.slurm.gres or ""),
            "mem_mb": job.request.total_mem_mb() if job else spec.total_mem_mb(),
            "submit": job.submitted_at if job else None,
            "eligible": job.eligible_time if job else None,
            "start": start,
            "job_start": job.start_time if job else None,
            # a stage cancelled with the workflow ended then (its job is no longer polled)
            "end": _not_before(
                run.end_time if run.end_time is not None or run.state is not StageState.CANCELLED or job is None
                else (max((j.end_time for j in wf.current_jobs(name) if j.end_time is not None), default=None)
                      or wf.ended_at),  # an array stage's last array job's end
                start),
            "wait_s": (job.wait_s if job and (not big or not preds) and not rides else 0.0) if job else None,
            "perceived_wait_s": perceived,
            "idle_s": idle_s,
            "est_wait_s": job.est_wait_s if job else None,
            "hit": hit,
            "message": run.message,
            "after": list(preds),
        })
        if spec.array is not None:  # one stage, many tasks: their states over the current attempt
            stages[-1].update(array=spec.array, array_tasks=array_tasks(wf, name))
    core_s = sum(_job_core_s(j) for j in wf.jobs)
    ends = [r.end_time for r in wf.stages.values() if r.end_time is not None]
    makespan = (max(ends) - wf.created_at) if ends and wf.state.value == "COMPLETED" else None
    hits = [s["hit"] for s in stages if s["hit"] is not None]
    return {
        "workflow": wf.spec.name,
        "id": wf.id,
        "strategy": wf.strategy,
        "mode": wf.mode,
        "state": wf.state.value,
        "message": wf.message,
        "created_at": wf.created_at,
        "makespan_s": makespan,
        "total_wait_s": sum(s["perceived_wait_s"] or 0.0 for s in stages),
        "queue_wait_s": sum(j.wait_s or 0.0 for j in wf.jobs),
        "core_hours": core_s / 3600.0,
        "used_core_hours": used_core_s / 3600.0,
        "overhead_core_hours": max(0.0, core_s - used_core_s) / 3600.0,
        "jobs": len([j for j in wf.jobs if j.job_id is not None]),
        "hit_ratio": (sum(hits) / len(hits)) if hits else None,
        "stages": stages,
    }
