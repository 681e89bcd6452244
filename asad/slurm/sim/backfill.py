"""One pass of Slurm 22.05's sched/backfill (``src/plugins/sched/backfill/backfill.c``,
``_attempt_backfill``), on the simulator's partitions.

What it does, as Slurm does it:

- Pending jobs are visited in priority order, at most ``bf_max_job_test`` of them.
- A job starts now if it fits on nodes that no earlier job of this pass has reserved over
  [now, now + time limit] (a reservation blocks a whole node: Slurm's backfill map is a node
  bitmap per time slice; the reserved job's spare cores are not lent out).
- A job that cannot start now gets a planned start, found as ``_attempt_backfill``'s TRY_LATER
  loop and cons_tres's will-run test find it (``_planned_start_slurm``, ``_will_run``): running
  jobs (each to its time limit) are taken away in batches of end times, and the start is the end
  of the batch after which the job fits, on nodes no higher plan holds while it would run; its
  nodes are reserved for [start, start + limit], both rounded down to ``bf_resolution``, unless
  the start lies beyond ``bf_window``. Every later (lower-priority) job then works around all of
  these plans: nothing is started that would delay any of them. (``will_run="exact"``: the
  earliest instant instead, ``_planned_start``.)
- The nodes are chosen like cons_tres's default node selection (``consec_pick``).
- A job whose nodes are still completing (epilog) is planned a second later instead of started.

Not modelled: ``bf_continue`` and lock yielding (a simulated pass takes no time), per-user and
per-partition limits (``bf_max_job_user`` ...), licenses, advance reservations, features,
``bf_min_prio_reserve``. A job in several partitions plans in the one where it starts earliest.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

import numpy as np

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.cluster import PartitionState, Reservation, consec_pick
from asad.slurm.sim.jobs import SimJob

if TYPE_CHECKING:
    from asad.slurm.sim.scheduler import Scheduler

INF = float("inf")


class _PartPlan:
    """The backfill map of one partition during one pass: reservations as whole-node intervals."""

    __slots__ = ("part", "n_iv", "_iv_node", "_iv_b", "_iv_e", "min_b", "times", "max_free", "failed",
                 "failed_free", "_sorted", "_order", "_merged", "no_plan", "_ends", "_frees", "_jobs", "_ends_l")

    def __init__(self, part: PartitionState):
        self.part = part
        # the plans' node intervals: [0, n_iv) of growing arrays (node, begin, end)
        self.n_iv = 0
        self._iv_node = np.empty(64, dtype=np.int64)
        self._iv_b = np.empty(64)
        self._iv_e = np.empty(64)
        self.min_b: dict[int, float] = {}  # node -> earliest reservation begin on it
        self.times: dict[tuple[int, int], np.ndarray] = {}  # shape -> per-node time it fits
        self._sorted: dict[tuple[int, int], np.ndarray] = {}  # shape -> those times, sorted
        self._order: dict[tuple[int, int], np.ndarray] = {}  # shape -> nodes by those times
        self._merged: tuple[np.ndarray, ...] | None = None
        self._ends: tuple[np.ndarray, ...] | None = None  # running pieces by end: running_ends()
        self._jobs: tuple[np.ndarray, np.ndarray] | None = None  # running_jobs()
        self._ends_l: list[float] | None = None
        self._frees: tuple[np.ndarray, ...] | None = None  # see free_instants()
        self.max_free = part.max_free_cores()
        self.failed: list[tuple[int, int, int, float]] = []  # (shape, end) that could not start now
        self.failed_free: list[tuple[int, int, int]] = []  # shapes that do not fit even unplanned
        # (nodes, cores, mem, limit) that got no plan (never fit, or beyond bf_window): a job
        # needing at least as much of each gets none either, since within a pass plans and
        # starts only make nodes usable later
        self.no_plan: list[tuple[int, int, int, int]] = []

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = self.n_iv
        return self._iv_node[:n], self._iv_b[:n], self._iv_e[:n]

    def merge_base(self) -> tuple[np.ndarray, ...]:
        """The plans' node intervals sorted by node, then begin, with what merging them for any
        job length needs: each interval's running max end within its node (``run_hi``) and the
        gap from the previous interval's running end (inf at a new node). For a job of length L
        the blocked spans are [b - L, e); two consecutive ones of a node merge iff gap <= L."""
        if self._merged is None:
            node, b, e = self.arrays()
            order = np.lexsort((b, node))
            node, b, e = node[order], b[order], e[order]
            big = 1e12  # times are < 1e11: node * big keeps the running max inside each node
            run_hi = np.maximum.accumulate(node * big + e) - node * big
            gap = np.full(len(node), np.inf)
            same = node[1:] == node[:-1]
            gap[1:][same] = b[1:][same] - run_hi[:-1][same]
            self._merged = (node, b, run_hi, gap)
        return self._merged

    def running_ends(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Every running job's pieces (one per node) as (end, node, cores, job), sorted by end
        and job (a job's pieces are next to each other)."""
        if self._ends is None:
            part = self.part
            hi = part.p_hi
            act = part.p_active[:hi]
            ends, nodes, cores = part.p_end[:hi][act], part.p_node[:hi][act], part.p_c[:hi][act]
            jobs = part.p_job[:hi][act]
            order = np.lexsort((jobs, ends))
            self._ends = (ends[order], nodes[order], cores[order], jobs[order])
        return self._ends

    def running_jobs(self) -> tuple[np.ndarray, np.ndarray]:
        """Per running job, in end order: the index of its first piece in running_ends(), and
        its end."""
        if self._jobs is None:
            p_end, _, _, p_job = self.running_ends()
            first = np.flatnonzero(np.concatenate([[len(p_end) > 0], (p_job[1:] != p_job[:-1]) | (p_end[1:] != p_end[:-1])]))
            self._jobs = (first, p_end[first])
        return self._jobs

    def running_ends_list(self) -> list[float]:
        """running_jobs()'s ends as a Python list (for bisect in scalar loops)."""
        if self._ends_l is None:
            self._ends_l = self.running_jobs()[1].tolist()
        return self._ends_l

    def free_cores_at(self, t: float) -> np.ndarray:
        """Free cores per node once every running job ending by ``t`` (its limit) has gone."""
        ends, nodes, cores, _ = self.running_ends()
        gone = int(np.searchsorted(ends, t, side="right"))
        return self.part.np_free_c + np.bincount(nodes[:gone], weights=cores[:gone],
                                                 minlength=self.part.n).astype(np.int64)

    def free_instants(self) -> tuple[np.ndarray, ...]:
        """The plans as merged spans per node, (node, begin, end), and every instant at which a
        plan begins or ends (node_space's segment boundaries), sorted."""
        if self._frees is None:
            node, b, run_hi, gap = self.merge_base()
            new = gap > 0  # a span that starts when the previous one ended joins it
            first = np.flatnonzero(new)
            last = np.empty(len(first), dtype=np.int64)
            last[:-1] = first[1:] - 1
            if len(first):
                last[-1] = len(node) - 1
            bounds = np.unique(np.concatenate([self.arrays()[1], self.arrays()[2]]))
            self._frees = (node[first], b[first], run_hi[last], bounds)
        return self._frees

    def time_order(self, cores: int, mem: int, now: float) -> np.ndarray:
        """The nodes in order of node_times (for the compiled planner's k-th fit time)."""
        key = (cores, mem)
        order = self._order.get(key)
        if order is None:
            order = np.argsort(self.node_times(cores, mem, now))  # ties: any order gives the same k-th time
            self._order[key] = order
        return order

    def sorted_times(self, cores: int, mem: int, now: float) -> np.ndarray:
        key = (cores, mem)
        st = self._sorted.get(key)
        if st is None:
            st = self.node_times(cores, mem, now)[self.time_order(cores, mem, now)]  # one sort for both
            self._sorted[key] = st
        return st

    def node_times(self, cores: int, mem: int, now: float) -> np.ndarray:
        key = (cores, mem)
        t = self.times.get(key)
        if t is None:
            t = self.part.fit_times(cores, mem, now)
            self.times[key] = t
        return t

    def started(self, nodes: list[int], now: float) -> None:
        """A job started on ``nodes``: their fit times change, everything else stays."""
        part = self.part
        for (cores, mem), t in self.times.items():
            for node in nodes:
                t[node] = part._node_time(node, cores, mem, now)
        self._sorted.clear()
        self._order.clear()
        self._ends = self._jobs = self._ends_l = None
        self.max_free = part.max_free_cores()

    def reserve(self, nodes: list[int], begin: float, end: float) -> None:
        n, k = self.n_iv, len(nodes)
        if n + k > len(self._iv_node):
            grow = max(2 * len(self._iv_node), n + k)
            self._iv_node = np.resize(self._iv_node, grow)
            self._iv_b = np.resize(self._iv_b, grow)
            self._iv_e = np.resize(self._iv_e, grow)
        self._iv_node[n: n + k] = nodes
        self._iv_b[n: n + k] = begin
        self._iv_e[n: n + k] = end
        self.n_iv = n + k
        for node in nodes:
            if begin < self.min_b.get(node, INF):
                self.min_b[node] = begin
        self._merged = None
        self._frees = None


def backfill_pass(sched: Scheduler, now: float) -> int:
    """One pass. Plans are made lazily but with exactly the eager outcome: a plan only matters to
    a later job that could start now, so the plans of jobs that failed to start are computed (in
    priority order) just before a later job that fits on the free resources as they are, and only
    those that could begin before that job would end; jobs after the last such job never need
    theirs. ``part.reservations`` therefore lists the plans that were needed, not all of them."""
    cfg = sched.config
    parts = sched.parts
    plans = [_PartPlan(p) for p in parts]
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


def _fits_now_ignoring_plans(job: SimJob, plans: list[_PartPlan]) -> tuple[PartitionState, list[int]] | None:
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


def _earliest_bound(plans: list[_PartPlan], job: SimJob, now: float) -> float:
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


def _plan(cfg, job: SimJob, plans: list[_PartPlan], now: float) -> bool:  # noqa: ANN001
    """Give a job that cannot start now its planned start; False if it gets none."""
    best: tuple[float, list[int], _PartPlan] | None = None
    for part in job.parts:
        plan = plans[part.index]
        if cfg.will_run == "slurm":
            got = _planned_start_slurm(plan, job, now, now + cfg.bf_window_s,
                                       cfg.kill_wait_s + cfg.over_time_limit_s)
        else:
            got = _planned_start(plan, job, now, now + cfg.bf_window_s)
        if got is not None and (best is None or got[0] < best[0]):
            best = (got[0], got[1], plan)
    if best is None or best[0] > now + cfg.bf_window_s:
        return False  # never fits, or too far ahead to plan for
    t_start, nodes, plan = best
    return _plan_at(cfg, job, plan, nodes, t_start)


def _plan_at(cfg, job: SimJob, plan: _PartPlan, nodes: list[int], t_start: float) -> bool:  # noqa: ANN001
    """Reserve ``nodes`` for the job from ``t_start`` for its time limit (both rounded down to
    bf_resolution, as _add_reservation does)."""
    res = cfg.bf_resolution_s
    plan.reserve(nodes, (t_start // res) * res, ((t_start + job.time_limit_s) // res) * res)
    plan.part.reservations.append(Reservation(
        job_id=job.job_id, start=t_start, end=t_start + job.time_limit_s, nodes=nodes,
        cores=job.cpus_per_node, mem_mb=job.mem_per_node_mb, slack_c={n: 0 for n in nodes},
        slack_m={n: 0 for n in nodes}))
    if job.res_time_min is None or t_start < job.res_time_min:
        job.res_time_min = t_start
    return True


def _try_start_now(sched: Scheduler, job: SimJob, plans: list[_PartPlan],
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


def _fit_times(plan: _PartPlan, job: SimJob, now: float,
               horizon: float) -> tuple[np.ndarray, np.ndarray, float] | None:
    """Per node, when the job's shape fits it (running jobs to their limits), those times
    sorted, and the earliest instant enough nodes fit; None (and the shape remembered as
    getting no plan) if that is never or beyond ``horizon``."""
    k, cpn, mem, limit = job.nodes, job.cpus_per_node, job.mem_per_node_mb, job.time_limit_s
    if not plan.part.fits_empty(k, cpn, mem):
        return None
    for fk, fc, fm, fl in plan.no_plan:
        if k >= fk and cpn >= fc and mem >= fm and limit >= fl:
            return None
    times = plan.node_times(cpn, mem, now)
    sorted_fit = plan.sorted_times(cpn, mem, now)
    t_min = max(now, float(sorted_fit[k - 1]))
    if t_min > horizon:  # also when fewer than k nodes ever fit (inf)
        if len(plan.no_plan) < 64:
            plan.no_plan.append((k, cpn, mem, limit))
        return None
    return times, sorted_fit, t_min


def _planned_start(plan: _PartPlan, job: SimJob, now: float,
                   horizon: float) -> tuple[float, list[int]] | None:
    """Earliest start of ``job`` on ``plan``'s partition, and the nodes it would take; None if
    it never fits or only after ``horizon`` (the end of bf_window)."""
    got = _fit_times(plan, job, now, horizon)
    if got is None:
        return None
    times, sorted_fit, t_min = got
    k, cpn, mem, limit = job.nodes, job.cpus_per_node, job.mem_per_node_mb, job.time_limit_s
    ok = times <= t_min
    if not plan.n_iv:
        return t_min, _choose(ok, k)
    iv_node, iv_b, iv_e = plan.arrays()
    ok[iv_node[(iv_e > t_min) & (iv_b <= t_min + limit)]] = False
    if np.count_nonzero(ok) >= k:  # the earliest possible time works: no sweep needed
        return t_min, _choose(ok, k)
    t = _earliest_sweep(times, sorted_fit, plan.merge_base(), limit, k, t_min)
    if t is None or t > horizon:
        if len(plan.no_plan) < 64:
            plan.no_plan.append((k, cpn, mem, limit))
        return None
    ok = times <= t
    ok[iv_node[(iv_e > t) & (iv_b <= t + limit)]] = False
    return t, _choose(ok, k)


WILL_RUN_WINDOW_S = 30.0  # cons_common/job_test.c: _will_run_test's first time_window


def _will_run(plan: _PartPlan, times: np.ndarray, avail: np.ndarray, job: SimJob, now: float,
              guess_s: float) -> tuple[float, np.ndarray] | None:
    """cons_tres's will-run test on the nodes ``avail``: the start it reports and the nodes
    that fit then, or None. First the job is tried on the nodes as they are now. Then running
    jobs are taken away in order of their end (the time limit), in batches: the first batch
    ends 30 s past the first end rounded up to 30 s, each next one doubles that window
    (``_will_run_test``). After each batch the job is tried again; the start is the end of the
    batch's last job, not the first instant the job would fit, and for a job already past its
    limit a guess (``_guess_job_end``: its limit plus ``guess_s``, at least a second ahead)."""
    k = job.nodes
    part = plan.part
    fits = avail & (part.np_free_c >= job.cpus_per_node) & (part.np_free_m >= job.mem_per_node_mb)
    if np.count_nonzero(fits) >= k:
        return now, fits
    p_end, p_node, _, _ = plan.running_ends()
    if not len(p_end):
        return None
    # After a batch whose last job ends at ``last`` the job fits iff at least k usable nodes fit
    # by max(last, now), i.e. iff their k-th smallest fit time is <= that: one number to test
    # per batch instead of a pass over the nodes.
    cand = times[avail]
    if len(cand) < k:
        return None
    kth = float(np.partition(cand, k - 1)[k - 1])
    if kth == INF:
        return None
    first_piece, ends = plan.running_jobs()
    # per running job (in end order): does it have a usable node
    usable = np.flatnonzero(np.maximum.reduceat(avail[p_node].astype(np.int8), first_piece)).tolist()
    if not usable:
        return None
    ends_l = plan.running_ends_list()  # the batches are walked on scalars: lists and bisect
    n = len(ends_l)
    first = ends_l[usable[0]]
    anchor = first + (WILL_RUN_WINDOW_S - first % WILL_RUN_WINDOW_S)
    window = WILL_RUN_WINDOW_S
    pos = 0  # the next job _will_run_test's iterator returns
    while True:
        # Take jobs away until the one after a removed job ends past anchor + window. Jobs on no
        # usable node are passed over without that check, so a batch may reach past the window
        # by one job (as the C loop does).
        q = max(pos, bisect_right(ends_l, anchor + window))  # the first job past the window
        lo = bisect_left(usable, pos)
        hi = bisect_left(usable, q, lo)
        if hi > lo and usable[hi - 1] == q - 1:
            last_i = q - 1
        elif hi < len(usable):
            last_i = usable[hi]
        elif hi > lo:
            last_i = usable[hi - 1]
        else:
            return None
        pos = last_i + 1
        if pos < n:
            window *= 2
            while ends_l[pos] > anchor + window:
                window *= 2
        last = ends_l[last_i]
        if kth <= max(last, now):  # a fit time <= now means free already
            fits = avail & (times <= max(last, now))
            if last <= now:  # the batch's last job is past its limit: still being killed
                last = max(last + guess_s, now + 1.0)
            return last, fits
        if pos >= n:
            return None


def _planned_start_slurm(plan: _PartPlan, job: SimJob, now: float, horizon: float,
                         guess_s: float) -> tuple[float, list[int]] | None:
    """The planned start as sched/backfill finds it (``_attempt_backfill``'s TRY_LATER loop):
    from ``start_res`` (first: now), the usable nodes are those no plan holds during
    [start_res, start_res + limit]; the will-run test on them gives a start; if that is after the
    next instant a planned node comes free (``later_start``), or the chosen nodes meet a plan
    before the job would end, try again from that instant."""
    got = _fit_times(plan, job, now, horizon)
    if got is None:
        return None
    if plan_kernel.enabled():
        planned = _try_later_compiled(plan, got[0], job, now, horizon, guess_s)
    else:
        planned = _try_later(plan, got[0], job, now, horizon, guess_s)
    if planned is None and len(plan.no_plan) < 64:
        plan.no_plan.append((job.nodes, job.cpus_per_node, job.mem_per_node_mb, job.time_limit_s))
    return planned


def _try_later_compiled(plan: _PartPlan, times: np.ndarray, job: SimJob, now: float, horizon: float,
                        guess_s: float) -> tuple[float, list[int]] | None:
    """_try_later, compiled (``plan_kernel``): the same plan."""
    iv_node, iv_b, iv_e = plan.arrays()
    p_end, p_node, p_c, _ = plan.running_ends()
    first_piece, job_ends = plan.running_jobs()
    part = plan.part
    by_time = plan.time_order(job.cpus_per_node, job.mem_per_node_mb, now)
    start, nodes = plan_kernel.planned_start(
        times, by_time, part.np_free_c, part.np_free_m, int(job.nodes), int(job.cpus_per_node),
        int(job.mem_per_node_mb), float(job.time_limit_s), float(now), float(horizon), float(guess_s),
        iv_node, iv_b, iv_e, p_end, p_node, p_c, first_piece, job_ends)
    return None if start == -np.inf else (float(start), nodes.tolist())


def _try_later(plan: _PartPlan, times: np.ndarray, job: SimJob, now: float, horizon: float,
               guess_s: float) -> tuple[float, list[int]] | None:
    """The TRY_LATER loop of _planned_start_slurm, on numpy (the reference of plan_kernel)."""
    part = plan.part
    k, cpn, limit = job.nodes, job.cpus_per_node, job.time_limit_s
    iv_node, iv_b, iv_e = plan.arrays()
    _, span_b, span_e, bounds = plan.free_instants()
    start_res = now
    for _ in range(1000):
        if start_res > horizon:
            break
        end_time = start_res + limit
        avail = np.ones(part.n, dtype=bool)
        avail[iv_node[(iv_e > start_res) & (iv_b <= end_time)]] = False
        # later_start: the first segment end after which a node held so far is free again;
        # Slurm looks only at the segments up to the one after the job's end
        i_res, i_end = np.searchsorted(bounds, (start_res, end_time), side="right")
        cap = bounds[min(i_end + 1, len(bounds) - 1)] if i_res < len(bounds) else INF
        frees = span_e[(span_e > start_res) & (span_b <= end_time) & (span_e <= cap)]
        later = float(frees.min()) if len(frees) else INF
        got = _will_run(plan, times, avail, job, now, guess_s)
        if got is None:
            if later == INF:
                break
            start_res = later
            continue
        at, fits = got  # the will-run test's own instant: the nodes' free cores are those then
        start = max(at, start_res)
        if start > later:
            start_res = later
            continue
        idx = np.flatnonzero(fits)
        nodes = consec_pick(idx, plan.free_cores_at(at)[idx], k, cpn)
        chosen = np.zeros(part.n, dtype=bool)
        chosen[nodes] = True
        clash = chosen[iv_node] & (iv_e > start) & (iv_b <= start + limit)
        if clash.any():
            start_res = start if start > start_res else float(iv_e[clash].min())
            continue
        return start, nodes
    return None


def _earliest_sweep(times: np.ndarray, sorted_fit: np.ndarray, merged: tuple[np.ndarray, ...],
                    limit: float, k: int, t_min: float) -> float | None:
    """The earliest t >= t_min at which at least k nodes are usable: fit by t (``times``;
    ``sorted_fit`` = the same, sorted) and not held by a plan during [t, t + limit], i.e. t
    outside every [b - limit, e) of the node (``merged``: ``_PartPlan.merge_base``).

    One sweep over +1/-1 events: +1 at each node's fit time; for each node's merged blocked
    spans, -1 where a span starts (not before the fit time) and +1 where it ends."""
    node, b, run_hi, gap = merged
    new = gap > limit  # a new merged span starts here (inf at each node's first interval)
    first = np.flatnonzero(new)
    m_node = node[first]
    m_lo = b[first] - limit
    last = np.empty(len(first), dtype=np.int64)
    last[:-1] = first[1:] - 1
    last[-1] = len(node) - 1
    m_hi = run_hi[last]
    fit = times[m_node]
    keep = (m_hi > fit) & (fit < INF)  # spans that end before the node fits do not matter
    if not keep.any():
        return t_min
    m_lo, m_hi, fit = m_lo[keep], m_hi[keep], fit[keep]
    nk = len(fit)
    ev_t = np.concatenate([np.maximum(m_lo, fit), m_hi])
    ev_d = np.ones(2 * nk, dtype=np.int64)
    ev_d[:nk] = -1
    o = np.argsort(ev_t, kind="stable")
    ev_t, run = ev_t[o], np.cumsum(ev_d[o])
    lo = np.searchsorted(sorted_fit, t_min, side="right")
    hi = np.searchsorted(sorted_fit, INF, side="left")
    cand = np.concatenate([[t_min], ev_t[ev_t > t_min], sorted_fit[lo:hi]])
    cand.sort()
    i = np.searchsorted(ev_t, cand, side="right")
    span = np.where(i > 0, run[np.maximum(i - 1, 0)], 0)
    count = np.searchsorted(sorted_fit, cand, side="right") + span
    hit = np.flatnonzero(count >= k)
    return float(cand[hit[0]]) if len(hit) else None


def _choose(ok: np.ndarray, k: int) -> list[int]:
    """cons_tres's default pick: the smallest run of consecutive usable nodes that holds the job
    (the first such run on ties), from its start; if no run is big enough, the first k nodes."""
    idx = np.flatnonzero(ok)
    if k == len(idx):
        return idx.tolist()
    breaks = np.flatnonzero(np.diff(idx) != 1) + 1
    starts = np.concatenate([[0], breaks])
    lengths = np.diff(np.concatenate([starts, [len(idx)]]))
    big = np.flatnonzero(lengths >= k)
    if len(big):
        best = big[np.argmin(lengths[big])]
        s = int(starts[best])
        return idx[s: s + k].tolist()
    return idx[:k].tolist()
