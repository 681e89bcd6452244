"""How a started job ends, from its hidden truth against its limits, and what Slurm then shows
of it (``squeue``/``sacct``'s fields as :class:`asad.slurm.backend.JobStatus` and ``Usage``)."""

from __future__ import annotations

import math
from collections.abc import Collection

from asad.slurm.backend import JobState, JobStatus, Usage
from asad.slurm.sim.config import SimConfig
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.limit_checks import limit_checks

FAIL_SIGNAL = {JobState.TIMEOUT: 15, JobState.CANCELLED: 15, JobState.OUT_OF_MEMORY: 9}


def kill_time(job: SimJob, cfg: SimConfig) -> float:
    """When slurmctld kills a job for its time limit: at the first periodic time-limit check
    (every 30 s, PERIODIC_TIMEOUT, in whole seconds; see limit_checks.py) whose second reaches the
    whole-second start + limit + OverTimeLimit; that check's time is the end Slurm records."""
    due = math.floor(job.start_time) + job.time_limit_s + cfg.over_time_limit_s
    return limit_checks(cfg.timer_origin_s, cfg.loop_tick_s, cfg.time_limit_check_s).kill_at(math.ceil(due))


def work_end(job: SimJob, cfg: SimConfig, work_start: float,
             launch_delay_s: float | None = None, oom_lag_s: float = 0.0) -> tuple[float, JobState]:
    """(when, how) the job ends once its real work begins at ``work_start``: out of memory part-way
    through, killed at the time-limit check, or done (FAILED with a non-zero true exit code).
    ``launch_delay_s``: this job's draw (None: the configured fixed delay); ``oom_lag_s``: its
    OOM kill's lag after the limit is passed (config oom_kill_lag_dist_s)."""
    if work_start == job.start_time:
        work_start += cfg.launch_delay_s if launch_delay_s is None else launch_delay_s
    kill_at = kill_time(job, cfg)
    phases = job.phases or ((job.runtime_s, job.peak_mem_mb, job.fail_code),)
    t = work_start
    for runtime_s, peak_mb, code in phases:  # a shared job: its stages in turn; the first to fail ends it
        runtime = runtime_s / job.part.speed
        if peak_mb is not None and peak_mb > job.mem_total_mb:
            oom_at = t + runtime * cfg.oom_time_fraction + oom_lag_s
            if cfg.mem_sample_s is not None:
                oom_at = oom_kill_at(job.start_time, oom_at, cfg)
            if oom_at < kill_at:
                return oom_at, JobState.OUT_OF_MEMORY
        if t + runtime >= kill_at:  # still running at the check: killed there
            return kill_at, JobState.TIMEOUT
        if code:
            job.fail_code = int(code)
            return t + runtime, JobState.FAILED
        t += runtime
    if math.floor(t) > math.floor(job.start_time) + job.time_limit_s + cfg.over_time_limit_s:
        # Done, but in a second past its limit before a check killed it: job_complete (job_mgr.c,
        # 22.05) records a clean exit as TIMEOUT when end_time + OverTimeLimit < now (whole
        # seconds), at its own end. A job that runs exactly its limit is TIMEOUT or COMPLETED by
        # where its launch latency puts its end (issue 37).
        return t, JobState.TIMEOUT
    return t, JobState.COMPLETED


def oom_kill_at(start: float, over_at: float, cfg: SimConfig) -> float:
    """The end of a job whose memory passes its limit at ``over_at``: slurmstepd's first RSS
    sample at or after it (samples every ``mem_sample_s`` on the step's own clock, the first
    ``mem_sample_phase_s`` after the start; see config.py) plus ``oom_kill_end_s``."""
    first = start + cfg.mem_sample_phase_s
    k = max(0, math.ceil((over_at - first) / cfg.mem_sample_s - 1e-9))
    return first + k * cfg.mem_sample_s + cfg.oom_kill_end_s


def draw_latency(rng, dist: tuple[float, float, float]) -> float:  # noqa: ANN001 -- numpy Generator
    """One latency from (min, median, max): uniform below or above the median, half the time each."""
    lo, mid, hi = dist
    u = float(rng.random())
    return lo + 2 * u * (mid - lo) if u < 0.5 else mid + (2 * u - 1) * (hi - mid)


def takes_reply(share: float, rng, k: int) -> bool:  # noqa: ANN001 -- numpy Generator or None
    """Whether the k-th job end (from 0) brings its nodes back by slurmd's ALREADY_COMPLETE reply
    rather than the epilog-complete message (config ``already_complete_share``): drawn with
    probability ``share`` when ``rng`` is given, else end k of an evenly spread sequence, which
    takes exactly ``share`` of the ends (floor((k + 1) * share) > floor(k * share))."""
    if rng is not None:
        return bool(rng.random() < share)
    return math.floor((k + 1) * share) > math.floor(k * share)


def status(job: SimJob, blockers: Collection[int]) -> JobStatus:
    """What squeue (or sacct, once it ended) shows of the job; ``blockers``: the jobs the last
    pass found waiting for resources (the rest of the eligible queue waits for priority)."""
    state = job.state
    if state is JobState.PENDING:
        if job.queued:
            reason = "Resources" if job.job_id in blockers else "Priority"
        else:
            reason = job.wait_reason or "Priority"
    else:
        reason = "None"
    started = job.start_time is not None
    part = job.part
    return JobStatus(
        job_id=job.job_id, state=state, reason=reason, name=job.name, comment=job.comment,
        partition=part.name if part is not None else job.partition_names,
        submit_time=job.submit_time,
        eligible_time=job.eligible_time if job.wait_reason is None or started else None,
        start_time=job.start_time, end_time=job.end_time,
        alloc_cpus=job.cpus if started else 0, alloc_nodes=job.nodes if started else 0,
        nodelist=",".join(f"{part.name}-{n}" for n in job.alloc_nodes) if started else "",
        time_limit_s=job.time_limit_s, exit_code=job.exit_code, signal=job.signal,
    )


def usage(job: SimJob) -> Usage:
    """What sacct records of an ended job's use: its peak memory and CPU time from its truth."""
    req_mem = float(job.mem_total_mb)
    if job.start_time is None:
        return Usage(job.job_id, peak_rss_mb=0.0, total_cpu_s=0.0, elapsed_s=0.0,
                     req_mem_mb=req_mem, alloc_cpus=0)
    elapsed = job.end_time - job.start_time
    work = job.end_time - job.work_start if job.work_start is not None else 0.0
    if job.state is JobState.OUT_OF_MEMORY:
        peak = req_mem  # the cgroup limit is what was reached when the kill came
    elif job.peak_mem_mb is None:
        peak = None
    elif job.work_start is None:
        peak = 0.0
    else:
        peak = min(float(job.peak_mem_mb), req_mem)
    return Usage(job.job_id, peak_rss_mb=peak, total_cpu_s=work * job.cpus * job.cpu_efficiency,
                 elapsed_s=elapsed, req_mem_mb=req_mem, alloc_cpus=job.cpus)
