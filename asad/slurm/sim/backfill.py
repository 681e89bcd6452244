"""One pass of Slurm 22.05's sched/backfill (``src/plugins/sched/backfill/backfill.c``,
``_attempt_backfill``), on the simulator's partitions.

What it does, as Slurm does it:

- Pending jobs are visited in priority order, at most ``bf_max_job_test`` of them.
- A job starts now if it fits on nodes that no earlier job of this pass has reserved over
  [now, now + time limit] (a reservation blocks a whole node: Slurm's backfill map is a node
  bitmap per time slice; the reserved job's spare cores are not lent out).
- A job that cannot start now gets a planned start, found as ``_attempt_backfill``'s TRY_LATER
  loop and cons_tres's will-run test find it (``planned_start_slurm``, ``will_run``): running
  jobs (each to its time limit) are taken away in batches of end times, and the start is the end
  of the batch after which the job fits, on nodes no higher plan holds while it would run; its
  nodes are reserved for [start, start + limit], both rounded down to ``bf_resolution``, unless
  the start lies beyond ``bf_window``. Every later (lower-priority) job then works around all of
  these plans: nothing is started that would delay any of them. (``will_run="exact"``: the
  earliest instant instead, ``planned_start``.)
- The nodes are chosen like cons_tres's default node selection (``consec_pick``).
- A job whose nodes are still completing (epilog) is planned a second later instead of started.

Not modelled: ``bf_continue`` and lock yielding (a simulated pass takes no time), per-user and
per-partition limits (``bf_max_job_user`` ...), licenses, advance reservations, features,
``bf_min_prio_reserve``. A job in several partitions plans in the one where it starts earliest.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from asad.slurm.sim import fit_cache, pass_inputs, pass_kernel, plan_kernel, plan_maps
from asad.slurm.sim.backfill_map import BackfillMap
from asad.slurm.sim.cluster import PartitionState, Reservation
from asad.slurm.sim.config import SimConfig
from asad.slurm.sim.jobs import SimJob
from asad.slurm.sim.planner import planned_start, planned_start_slurm


class Scheduler(Protocol):
    """What a backfill pass reads and calls of the scheduler that runs it (scheduler.py), named
    here because the scheduler imports this module."""

    config: SimConfig
    parts: list[PartitionState]
    queues: list[Any]  # the scheduler's JobQueue, one per partition

    def start_fn(self, job: SimJob, part: PartitionState, nodes: Any) -> None: ...

    def _in_order(self) -> Iterator[SimJob]: ...

INF = float("inf")


def backfill_pass(sched: Scheduler, now: float) -> int:
    """One pass. Plans are made lazily but with exactly the eager outcome: a plan only matters to
    a later job that could start now, so the plans of jobs that failed to start are computed (in
    priority order) just before a later job that fits on the free resources as they are, and only
    those that could begin before that job would end; jobs after the last such job never need
    theirs. ``part.reservations`` therefore lists the plans that were needed, not all of them."""
    if compiled_enabled(sched):
        return compiled_pass(sched, now)
    cfg = sched.config
    parts = sched.parts
    plans = [BackfillMap(p) for p in parts]
    for part in parts:
        part.reservations = []
    max_test = cfg.bf_max_job_test
    if len(parts) == 1:
        queue = sched.queues[0]
        jobs = queue.jobs
        order = (jobs[i] for i in range(queue.first_live(), len(jobs)))
    else:
        order = sched._in_order()
    tested = started = 0
    res = cfg.bf_resolution_s
    unplanned: list[SimJob] = []
    # per unplanned job, the earliest time it could start, ignoring plans and rounded down to
    # bf_resolution: a lower bound of its plan's begin (plans and starts only delay)
    bounds: list[float] = []
    unplanned_min = INF
    any_plan = False
    for job in order:
        if not job.queued:
            continue
        tested += 1
        if tested > max_test:
            break
        free_nodes = _fits_now_ignoring_plans(job, plans)
        if free_nodes is None:
            unplanned.append(job)
            bound = (_earliest_bound(plans, job, now) // res) * res
            bounds.append(bound)
            if bound < unplanned_min:
                unplanned_min = bound
            continue
        end = now + job.time_limit_s
        if unplanned and unplanned_min <= end:
            # An earlier job's plan might hold nodes while this one runs: make the plans, in
            # priority order, up to the last unplanned job whose plan could begin before this
            # one's end. Those after it begin after this job ends whatever happens, so starting
            # this job first does not change their plans (it only makes nodes fit later at
            # times before they begin) and they can wait until a later job needs them.
            last = len(bounds) - 1
            while bounds[last] > end:
                last -= 1
            for earlier in unplanned[: last + 1]:
                any_plan |= _plan(cfg, earlier, plans, now)
            del unplanned[: last + 1]
            del bounds[: last + 1]
            unplanned_min = min(bounds) if bounds else INF
        if not any_plan:
            part, nodes = free_nodes
            if part.completing and not part.completing.keys().isdisjoint(nodes):
                any_plan |= _plan_at(cfg, job, plans[part.index], nodes, now + 1.0)
                continue
            sched.start_fn(job, part, nodes)
            plans[part.index].started(nodes, now)
            started += 1
            continue
        got = _try_start_now(sched, job, plans, now)
        if got is True:
            started += 1
            continue
        if got is not False:  # its nodes are still completing: planned for a second later
            any_plan |= _plan_at(cfg, job, plans[got[0].index], got[1], now + 1.0)
            continue
        # Held off by a plan: it needs one of its own, made (like every plan) in priority order
        # after those of the unplanned jobs before it; it could start now were it not for plans.
        unplanned.append(job)
        bound = (now // res) * res
        bounds.append(bound)
        unplanned_min = min(unplanned_min, bound)
    if cfg.bf_plan_all:
        for job in unplanned:
            _plan(cfg, job, plans, now)
    for part in parts:
        part.reservations.sort(key=lambda r: r.start)
    return started


# The compiled pass (pass_kernel) where it applies; ASAD_SIM_COMPILED_PASS=0 (or tests, through
# ``_COMPILED``) keep the Python pass above, its reference.
_COMPILED = os.environ.get("ASAD_SIM_COMPILED_PASS", "1") != "0"


def compiled_enabled(sched: Scheduler) -> bool:
    """Whether this pass runs compiled: one partition, cons_tres's node pick, Slurm's will-run
    test, numba available (the compiled pass does what the Python one does only there)."""
    return (_COMPILED and pass_kernel.backfill_pass is not None and plan_kernel.enabled()
            and len(sched.parts) == 1 and sched.config.will_run == "slurm"
            and sched.parts[0].select == "consec")


def compiled_pass(sched: Scheduler, now: float) -> int:
    """backfill_pass through ``pass_kernel``: the kernel decides on copies of the partition's
    state, then its starts are made here and its plans recorded, in the kernel's order (the
    Python pass's order: starts reach the simulator in the same sequence). The tested jobs'
    arrays are gathered from the queue's in one compiled loop (``pass_inputs.tested_inputs``),
    the plans are kept as the kernel's events until read (``pass_inputs.PassEvents``) and the
    fit-time cache is told the nodes the partition marked changed: no Python work per tested
    job or per plan but the planned jobs' earliest planned start."""
    cfg = sched.config
    part = sched.parts[0]
    part.reservations = []
    queue = sched.queues[0]
    live, t_nodes, t_cpn, t_cpus, t_mem, t_limit, t_id = pass_inputs.tested_inputs(queue, cfg.bf_max_job_test)
    if not len(live):
        return 0
    pe, pn, pc, pm, pj = pass_inputs.running_sorted(part)  # BackfillMap.running_ends' order
    completing = np.zeros(part.n, dtype=np.bool_)
    if part.completing:
        completing[list(part.completing)] = True
    cache = getattr(part, "fit_cache", None)
    if cache is None:  # (a snapshot pickled before the cache had none)
        cache = part.fit_cache = fit_cache.FitCache(part.n)
    # the nodes an allocation or release touched since the last pass get new versions (what
    # pass_kernel.run_pass's note_pass found by comparing this pass's inputs with the last's)
    changed = part.fit_changed
    cache.note_marked(changed)
    changed[:] = False
    kinds, which, ts, offs, lens, flat = pass_kernel.backfill_pass(
        float(now), float(now + cfg.bf_window_s), float(cfg.bf_resolution_s),
        float(cfg.kill_wait_s + cfg.over_time_limit_s), part.n, part.cores, part.mem,
        part.max_free_cores(), part.free_cores_total, part.np_free_c.copy(), part.np_free_m.copy(),
        completing, t_nodes, t_cpn, t_cpus, t_mem, t_limit, t_id,
        pe, pn, pc, pm, pj, bool(cfg.bf_plan_all), cache.arrays)
    jobs = queue.jobs  # the queue is frozen during the pass: positions stay valid
    # the plans first: a start does not read them, nor a job's earliest planned start
    plans, s_pos, s_off, s_len = pass_inputs.split_events(queue, live, kinds, which, ts, offs, lens, flat,
                                                          (t_id, t_limit, t_cpn, t_mem), pass_kernel.EV_PLAN)
    part.set_plans(plans)
    for p, off, n in zip(s_pos, s_off, s_len):  # the kernel's order
        sched.start_fn(jobs[p], part, flat[off: off + n].tolist())
    return len(s_pos)


def _fits_now_ignoring_plans(job: SimJob, plans: list[BackfillMap]) -> tuple[PartitionState, list[int]] | None:
    """Nodes the job would get now if nothing were planned (None: it cannot start now at all)."""
    cpn, nn, mem = job.cpus_per_node, job.nodes, job.mem_per_node_mb
    for part in job.parts:
        plan = plans[part.index]
        if cpn > plan.max_free or part.free_cores_total < job.cpus:
            continue
        for fn, fc, fm in plan.failed_free:
            if nn >= fn and cpn >= fc and mem >= fm:
                break
        else:
            nodes = part.find_nodes(nn, cpn, mem, completing_ok=True)
            if nodes is not None:
                return part, nodes
            plan.failed_free.append((nn, cpn, mem))
    return None


def _earliest_bound(plans: list[BackfillMap], job: SimJob, now: float) -> float:
    """A lower bound of the job's planned start: when enough nodes fit it, ignoring plans."""
    best = INF
    k = job.nodes
    for part in job.parts:
        if not part.fits_empty(k, job.cpus_per_node, job.mem_per_node_mb):
            continue
        kth = float(plans[part.index].sorted_times(job.cpus_per_node, job.mem_per_node_mb, now)[k - 1])
        if kth < INF:
            best = min(best, max(now, kth))
    return best


def _plan(cfg, job: SimJob, plans: list[BackfillMap], now: float) -> bool:  # noqa: ANN001
    """Give a job that cannot start now its planned start; False if it gets none."""
    best: tuple[float, list[int], BackfillMap] | None = None
    for part in job.parts:
        plan = plans[part.index]
        if cfg.will_run == "slurm":
            got = planned_start_slurm(plan, job, now, now + cfg.bf_window_s,
                                       cfg.kill_wait_s + cfg.over_time_limit_s, cfg.bf_resolution_s)
        else:
            got = planned_start(plan, job, now, now + cfg.bf_window_s)
        if got is not None and (best is None or got[0] < best[0]):
            best = (got[0], got[1], plan)
    if best is None or best[0] > now + cfg.bf_window_s:
        return False  # never fits, or too far ahead to plan for
    t_start, nodes, plan = best
    return _plan_at(cfg, job, plan, nodes, t_start)


def _plan_at(cfg, job: SimJob, plan: BackfillMap, nodes: list[int], t_start: float) -> bool:  # noqa: ANN001
    """Reserve ``nodes`` for the job from ``t_start`` for its time limit (both rounded down to
    bf_resolution, as _add_reservation does)."""
    res = cfg.bf_resolution_s
    plan.reserve(nodes, *plan_maps.plan_span(t_start, job.time_limit_s, res))
    _record_plan(job, plan.part, nodes, t_start)
    return True


def _record_plan(job: SimJob, part: PartitionState, nodes: list[int], t_start: float) -> None:
    """The plan's record: in the partition's reservations (what ``estimate_start`` reads) and
    the job's earliest planned start."""
    part.reservations.append(Reservation(
        job_id=job.job_id, start=t_start, end=t_start + job.time_limit_s, nodes=nodes,
        cores=job.cpus_per_node, mem_mb=job.mem_per_node_mb, slack_c=dict.fromkeys(nodes, 0),
        slack_m=dict.fromkeys(nodes, 0)))
    if job.res_time_min is None or t_start < job.res_time_min:
        job.res_time_min = t_start


def _try_start_now(sched: Scheduler, job: SimJob, plans: list[BackfillMap],
                   now: float) -> bool | tuple[PartitionState, list[int]]:
    """Start the job now on nodes no plan holds while it would run; True if it started. If the
    nodes it would get are still completing, it cannot start yet: (partition, nodes)."""
    cpn, nn, mem = job.cpus_per_node, job.nodes, job.mem_per_node_mb
    end = now + job.time_limit_s
    for part in job.parts:
        plan = plans[part.index]
        if cpn > plan.max_free or part.free_cores_total < job.cpus:
            continue
        for fn, fc, fm, fe in plan.failed:
            if nn >= fn and cpn >= fc and mem >= fm and end >= fe:
                break
        else:
            held = [node for node, b in plan.min_b.items() if b <= end]
            nodes = part.find_nodes(nn, cpn, mem, blocked=held, completing_ok=True)
            if nodes is not None:
                if part.completing and not part.completing.keys().isdisjoint(nodes):
                    return part, nodes
                sched.start_fn(job, part, nodes)
                plan.started(nodes, now)
                return True
            plan.failed.append((nn, cpn, mem, end))
    return False
