"""Shared jobs: a run of adjacent stages of one shape goes to Slurm as one job.

When stage B follows only A, only B follows A, and both ask for the same nodes, tasks, CPUs,
partition, account, QOS and `env:`, B can run in A's allocation the moment A's command ends: no queue
wait for B, and no core idles (the allocation is the size B needs). The job asks for the sum of
the stages' time limits and the largest of their memory requests; its script runs the stages'
wrappers in turn, each writing its own markers and log.

Only the default strategy shares, and only under the rules that submit with a dependency
(``chain`` and ``aged-chain``): there a stage's successor would otherwise queue again when it
ends. The explicit strategies keep one job per stage, so they stay what a user does by hand.
Only first attempts share: a stage that failed runs again in a job of its own.

**Merged jobs** (``share_jobs = "cost"``, issue 35): stages of *different* sizes may share a job too,
under every rule of the default strategy, the quantile rule of sites that enforce limits included.
The job is sized to the largest CPUs and memory of its stages, its time limit is their sum, and a
stage rides only where the cost rule (``asad.strategies.merge_cost``) prices the idle cores of the
merged job below what a job of its own would cost (its expected wait, or under the quantile rule
its expected barrier idle and lost makespan), in the quantile rule's unit: makespan seconds, with
``idle_price`` per idle core-second. Only single-node stages on the same partition, account, QOS,
GPUs and node options merge, and only once their run times and waits are learned.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from asad.core.share_choice import SHARED
from asad.core.model import JobPhase, JobRecord, StageState
from asad.slurm.backend import JobRequest, JobState, SimTruth
from asad.strategies.expected_start import GRID as WAIT_GRID
from asad.strategies.merge_cost import StageCost, idle_core_s, merged_cost_s, own_job_cost_s

if TYPE_CHECKING:
    from asad.core.context import Context
    from asad.core.model import WorkflowRun

SHARING_RULES = ("chain", "aged-chain")
COST_RULES = ("chain", "aged-chain", "quantile")  # share_jobs = "cost": every rule of the default
FINISHED_TOL_S = 1.0  # the simulator's truth: a stage ending this close to the job's end ended it


def _shape(req: JobRequest) -> tuple:
    return (req.nodes, req.ntasks, req.cpus_per_task, req.partition, req.account, req.qos, req.constraint,
            req.gpus, req.gres, req.exclusive)


def _site_shape(req: JobRequest) -> tuple:
    """What a merged job cannot change for a rider: where it runs and what it must have besides
    CPUs and memory (one node: a rider's CPUs fit in the largest stage's node)."""
    return (req.nodes, req.partition, req.account, req.qos, req.constraint, req.gpus, req.gres, req.exclusive)


def riders(wf: WorkflowRun, head: str, head_req: JobRequest, ctx: Context, at_barrier: bool = False
           ) -> tuple[tuple[str, ...], str]:
    """The stages after ``head`` that run in its job, in order (none: the head runs alone), and
    with ``share_jobs = "learned"`` or ``"cost"`` why they do or do not (``asad.core.share_choice``,
    ``asad.strategies.merge_cost``). ``at_barrier``: the head goes ahead of its predecessors' end,
    its lead priced for its own CPUs."""
    candidates = tuple(_candidates(wf, head, head_req, ctx))
    if candidates and ctx.config.share_jobs == "cost":
        return _by_cost(wf, head, head_req, candidates, ctx, at_barrier)
    if not candidates or ctx.config.share_jobs != "learned":
        return candidates, ""
    key = f"{ctx.runtime_key(wf, head)}|nodes={head_req.nodes}|cpus={head_req.cpus}"
    choice, why = ctx.learned.choose_sharing(key, wf.id, [head, *candidates])
    if choice == SHARED:
        return candidates, f"shared (learned: {why})"
    return (), f"{', '.join(candidates)} could run in this job but each gets its own (learned: {why})"


def _candidates(wf: WorkflowRun, head: str, head_req: JobRequest, ctx: Context) -> list[str]:
    """The stages after ``head`` that can run in its job, in order."""
    by_cost = ctx.config.share_jobs == "cost"
    rules = COST_RULES if by_cost else SHARING_RULES
    if ctx.config.share_jobs == "off" or wf.strategy != "auto" or ctx.priority_rules.rule not in rules:
        return []
    if (not _first_attempt(wf, head) or wf.spec.stage(head).array is not None
            or ctx.learned.sharing_decided(wf.id, head)):
        return []
    head_options = replace(wf.spec.stage(head).slurm, setup=())
    head_env = wf.spec.stage(head).env_dict()
    part = ctx.partitions.get(head_req.partitions[0] if head_req.partitions else ctx.config.default_partition)
    max_time = part.max_time_s if part and part.max_time_s else None
    out: list[str] = []
    prev, total_s = head, head_req.time_limit_s
    while True:
        after = wf.spec.successors(prev)
        if len(after) != 1 or wf.spec.predecessors(after[0]) != (prev,):
            return out
        name = after[0]
        run, spec = wf.stages[name], wf.spec.stage(name)
        if (run.state is not StageState.WAITING or not _first_attempt(wf, name) or spec.array is not None
                or spec.slurm.output is not None or replace(spec.slurm, setup=()) != head_options
                or spec.env_dict() != head_env):
            # its own Slurm log, mail or node options, or its own env: values (they travel in the
            # job's environment, never its script: asad/core/job_env.py): only a job of its own gives it them
            return out
        ctx.size_first_attempt(wf, name, run)
        req = ctx.request_for(wf, name)
        same = _shape(req) == _shape(head_req)
        merges = by_cost and req.nodes == 1 and _site_shape(req) == _site_shape(head_req)
        if not (same or merges) or (max_time is not None and total_s + req.time_limit_s > max_time):
            return out
        out.append(name)
        prev, total_s = name, total_s + req.time_limit_s


def _by_cost(wf: WorkflowRun, head: str, head_req: JobRequest, candidates: tuple[str, ...], ctx: Context,
             at_barrier: bool = False) -> tuple[tuple[str, ...], str]:
    """The leading candidates whose ride the cost rule prefers to a job of their own
    (``asad.strategies.merge_cost``), and why the first one that does not ride does not."""
    price = ctx.idle_price(wf)
    head_cost = _stage_cost(wf, head, head_req, ctx)
    if head_cost is None:
        return (), f"{candidates[0]} could run in this job, but {head}'s run time is not learned yet"
    group, group_reqs, rides, why = [head_cost], [head_req], [], []
    for name in candidates:
        req = ctx.request_for(wf, name)
        cost = _stage_cost(wf, name, req, ctx)
        if cost is None:
            why.append(f"{name} gets its own job: its run time or its wait is not learned yet")
            break
        if at_barrier and cost.cpus > head_req.cpus:
            # the head's lead priced the idle of its own CPUs at the barrier: a larger job would
            # idle more cores there than its plan paid for
            why.append(f"{name} gets its own job: it needs more CPUs ({cost.cpus}) than {head}, which goes "
                       f"ahead of its predecessors' end at a barrier priced for its own {head_req.cpus}")
            break
        # the group's job waits as the merged job so far would, or as the head alone until that is learned
        group_key = ctx.geometry_key(shared_request(head_req, group_reqs[1:]))
        if ctx.learned.wait_observations(group_key) == 0:
            group_key = ctx.geometry_key(head_req)
        group_waits = ctx.learned.wait_quantiles(group_key, list(WAIT_GRID))
        rider_waits = ctx.learned.wait_quantiles(ctx.geometry_key(req), list(WAIT_GRID))
        merged = merged_cost_s(group, cost, price, _extra_wait_s(head_req, group_reqs, req, ctx))
        alone, how = own_job_cost_s(ctx.priority_rules.rule, group_waits, group, cost, rider_waits, price)
        top = max(c.cpus for c in (*group, cost))
        idle = idle_core_s([*group, cost]) - idle_core_s(group)
        extra = merged - price * idle
        numbers = (f"in one job of {top} CPUs it idles {idle:.0f} core-s ({price * idle:.0f} s at idle_price "
                   f"{price:g})" + (f" and the larger job waits {extra:.0f} s longer" if extra > 0 else "")
                   + f": {merged:.0f} s; {how}: {alone:.0f} s")
        if merged >= alone:
            why.append(f"{name} gets its own job: {numbers}")
            break
        why.append(f"{name} rides: {numbers}")
        group.append(cost)
        group_reqs.append(req)
        rides.append(name)
    return tuple(rides), "cost rule: " + "; ".join(why)


def _extra_wait_s(head_req: JobRequest, group_reqs: list[JobRequest], req: JobRequest, ctx: Context) -> float:
    """How much longer the job is expected to wait with ``req`` added than without it: the
    difference of the learned mean waits of the two geometries, where both were seen (0 where they
    are one geometry key, or one of them was never seen)."""
    without = ctx.geometry_key(shared_request(head_req, group_reqs[1:]))
    merged = ctx.geometry_key(shared_request(head_req, [*group_reqs[1:], req]))
    if without == merged or not all(ctx.learned.wait_observations(k) for k in (without, merged)):
        return 0.0
    mean_wait = [sum(w) / len(w) for w in (ctx.learned.wait_quantiles(k, list(WAIT_GRID)) for k in (without, merged))]
    return mean_wait[1] - mean_wait[0]


def _stage_cost(wf: WorkflowRun, stage: str, req: JobRequest, ctx: Context) -> StageCost | None:
    """The stage's CPUs and recent run times, None until a run time and a wait of its geometry
    are learned (nothing to price the merge with)."""
    runs = ctx.learned.runtime(ctx.runtime_key(wf, stage)).recent
    if not runs or ctx.learned.wait_observations(ctx.geometry_key(req)) == 0:
        return None
    return StageCost(req.cpus, tuple(float(r) for r in runs))


def _first_attempt(wf: WorkflowRun, stage: str) -> bool:
    """No job that ran ``stage`` ever reached Slurm (an intent lost in a crash, or held back by a
    site's submit limit, is not an attempt)."""
    return not any(stage in j.stages and j.phase is not JobPhase.ABANDONED for j in wf.jobs)


def shared_request(head_req: JobRequest, rider_reqs: list[JobRequest]) -> JobRequest:
    """The head's request grown to hold its riders: the time limits summed, the largest memory, the
    tasks and CPUs of the stage with the most CPUs (a merged job's riders may be smaller or larger
    than its head), and for the simulator the stages' truths played one after another."""
    reqs = [head_req, *rider_reqs]
    mems = [r.total_mem_mb() for r in reqs]
    mem_mb = -(-max(m for m in mems if m is not None) // head_req.nodes) if any(m is not None for m in mems) \
        else None
    top = max(reqs, key=lambda r: r.cpus)  # the first of the largest: a job of one shape keeps the head's
    truth = head_req.truth
    if all(r.truth is not None for r in reqs):
        runtime = sum(r.truth.runtime_s for r in reqs)
        peaks = [r.truth.peak_mem_mb for r in reqs if r.truth.peak_mem_mb is not None]
        # busy core-seconds over the allocation's: a smaller stage leaves the rest of the job idle
        busy = sum(r.truth.runtime_s * r.truth.cpu_efficiency * r.cpus for r in reqs) / top.cpus
        truth = SimTruth(runtime, max(peaks) if peaks else None, busy / runtime if runtime else 1.0,
                         wait_for=head_req.truth.wait_for,
                         phases=tuple((r.truth.runtime_s, r.truth.peak_mem_mb, r.truth.exit_code) for r in reqs))
    return replace(head_req, ntasks=top.ntasks, cpus_per_task=top.cpus_per_task,
                   time_limit_s=sum(r.time_limit_s for r in reqs), mem_mb=mem_mb, mem_per_cpu_mb=None, truth=truth)


def finished_stages(wf: WorkflowRun, job: JobRecord, ctx: Context) -> tuple[list[tuple[float, float]], bool]:
    """(start, end) of each stage a final shared job finished, in order, and whether those times
    were measured. On a real cluster the stage wrappers' markers say it (a stage finished when
    its own end marker says exit 0 after a start in this job); on the simulator its truth does;
    a job that completed without either finished every stage, its length shared out by the
    stages' expected run times (not measured)."""
    start, end = job.start_time, job.end_time
    marks = ctx.stage_marks(wf, job)  # None on the simulator
    completed = job.state is JobState.COMPLETED
    if marks is not None and (len(marks) == len(job.stages) or not completed):
        return marks, True
    if start is None or end is None:
        return [], False
    if marks is None and all(wf.spec.stage(s).simulate is not None for s in job.stages):
        lengths = [ctx.request_for(wf, s).truth.runtime_s for s in job.stages]
        times = _in_turn(start, lengths)
        if completed:
            return times, True
        # the stage that ended the job ended with it (or was cut short): only those before it finished
        return [t for t in times if t[1] < end - FINISHED_TOL_S], True
    if not completed:
        return [], False  # nothing says which stage ended the job: none counts as done
    lengths = [max(1.0, ctx.expected_runtime(wf, s)) for s in job.stages]
    scale = (end - start) / sum(lengths)
    return _in_turn(start, [length * scale for length in lengths]), False


def _in_turn(start: float, lengths: list[float]) -> list[tuple[float, float]]:
    out, t = [], start
    for length in lengths:
        out.append((t, t + length))
        t += length
    return out
