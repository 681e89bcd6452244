"""Where a job that cannot start now is planned to start: sched/backfill's TRY_LATER loop with
cons_tres's will-run test (``planned_start_slurm``, the default; compiled in ``plan_kernel``, whose
readable reference is ``try_later``), or the earliest instant the job fits (``planned_start``,
``will_run="exact"``). Both search a ``BackfillMap``: the running jobs to their time limits and
the plans of higher-priority jobs made earlier in the pass."""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from typing import TYPE_CHECKING

import numpy as np

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.cluster import consec_pick

if TYPE_CHECKING:
    from asad.slurm.sim.backfill_map import BackfillMap
    from asad.slurm.sim.jobs import SimJob

INF = float("inf")


def fit_times(plan: BackfillMap, job: SimJob, now: float,
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


def planned_start(plan: BackfillMap, job: SimJob, now: float,
                   horizon: float) -> tuple[float, list[int]] | None:
    """Earliest start of ``job`` on ``plan``'s partition, and the nodes it would take; None if
    it never fits or only after ``horizon`` (the end of bf_window)."""
    got = fit_times(plan, job, now, horizon)
    if got is None:
        return None
    times, sorted_fit, t_min = got
    k, cpn, mem, limit = job.nodes, job.cpus_per_node, job.mem_per_node_mb, job.time_limit_s
    ok = times <= t_min
    if not plan.n_iv:
        return t_min, choose(ok, k)
    iv_node, iv_b, iv_e = plan.arrays()
    ok[iv_node[(iv_e > t_min) & (iv_b <= t_min + limit)]] = False
    if np.count_nonzero(ok) >= k:  # the earliest possible time works: no sweep needed
        return t_min, choose(ok, k)
    t = earliest_sweep(times, sorted_fit, plan.merge_base(), limit, k, t_min)
    if t is None or t > horizon:
        if len(plan.no_plan) < 64:
            plan.no_plan.append((k, cpn, mem, limit))
        return None
    ok = times <= t
    ok[iv_node[(iv_e > t) & (iv_b <= t + limit)]] = False
    return t, choose(ok, k)


WILL_RUN_WINDOW_S = 30.0  # cons_common/job_test.c: _will_run_test's first time_window


def will_run(plan: BackfillMap, times: np.ndarray, avail: np.ndarray, job: SimJob, now: float,
              guess_s: float) -> tuple[float, np.ndarray, int] | None:
    """cons_tres's will-run test on the nodes ``avail``: the start it reports, the nodes that
    fit then and how many of ``plan.running_ends()``'s pieces it took away to get there (their
    cores are free for the node pick), or None. First the job is tried on the nodes as they are
    now. Then running jobs are taken away in order of their end (the time limit), in batches:
    the first batch ends 30 s past the first end rounded up to 30 s, each next one doubles that
    window (``_will_run_test``). After each batch the job is tried again; the start is the end
    of the batch's last job, not the first instant the job would fit, and for a job already past
    its limit a guess (``_guess_job_end``: its limit plus ``guess_s``, at least the second after
    ``now``'s whole second: time(NULL) + 1).

    A batch holds exactly the jobs it took away: when one reaches past the window (jobs on no
    usable node are passed over unchecked), the next job is left for the next batch even if it
    ends at the same instant, so a node that fits only once that job has gone does not fit yet
    (issue 37: deps-fifo's plan of b14 at 70 s)."""
    k = job.nodes
    part = plan.part
    fits = avail & (part.np_free_c >= job.cpus_per_node) & (part.np_free_m >= job.mem_per_node_mb)
    if np.count_nonzero(fits) >= k:
        return now, fits, 0
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
        by = max(last, now)  # a fit time <= now means free already
        if kth <= by:
            gone = int(first_piece[pos]) if pos < n else len(p_end)
            if pos < n and ends_l[pos] <= by:
                # a job not taken away yet ends by then: count only what the batch freed
                free_c, free_m = plan.free_after(gone)
                fits = avail & (free_c >= job.cpus_per_node) & (free_m >= job.mem_per_node_mb)
            else:
                fits = avail & (times <= by)
            if np.count_nonzero(fits) >= k:
                if last <= now:  # the batch's last job is past its limit: still being killed
                    # _guess_job_end: at least now + 1 on time(NULL)'s whole second (f37o)
                    last = max(last + guess_s, math.floor(now) + 1.0)
                return last, fits, gone
        if pos >= n:
            return None


def planned_start_slurm(plan: BackfillMap, job: SimJob, now: float, horizon: float,
                         guess_s: float, res: float = 1.0) -> tuple[float, list[int]] | None:
    """The planned start as sched/backfill finds it (``_attempt_backfill``'s TRY_LATER loop):
    from ``start_res`` (first: now), the usable nodes are those no plan holds during
    [start_res, start_res + limit]; the will-run test on them gives a start; if that is after the
    next instant a planned node comes free (``later_start``), or the chosen nodes meet a plan
    before the job would end (``_test_resv_overlap``, on the plan rounded to ``res``:
    bf_resolution), try again from that instant."""
    got = fit_times(plan, job, now, horizon)
    if got is None:
        return None
    if plan_kernel.enabled():
        planned = try_later_compiled(plan, got[0], job, now, horizon, guess_s, res)
    else:
        planned = try_later(plan, got[0], job, now, horizon, guess_s, res)
    if planned is None and len(plan.no_plan) < 64:
        plan.no_plan.append((job.nodes, job.cpus_per_node, job.mem_per_node_mb, job.time_limit_s))
    return planned


def try_later_compiled(plan: BackfillMap, times: np.ndarray, job: SimJob, now: float, horizon: float,
                        guess_s: float, res: float = 1.0) -> tuple[float, list[int]] | None:
    """try_later, compiled (``plan_kernel``): the same plan."""
    iv_node, iv_b, iv_e = plan.arrays()
    p_end, p_node, p_c, _ = plan.running_ends()
    first_piece, job_ends = plan.running_jobs()
    part = plan.part
    by_time = plan.time_order(job.cpus_per_node, job.mem_per_node_mb, now)
    start, nodes = plan_kernel.planned_start(
        times, by_time, part.np_free_c, part.np_free_m, int(job.nodes), int(job.cpus_per_node),
        int(job.mem_per_node_mb), float(job.time_limit_s), float(now), float(horizon), float(guess_s),
        iv_node, iv_b, iv_e, p_end, p_node, p_c, plan.running_mem(), first_piece, job_ends,
        plan_kernel.distinct_bounds(iv_b, iv_e), float(res))
    return None if start == -np.inf else (float(start), nodes.tolist())


def try_later(plan: BackfillMap, times: np.ndarray, job: SimJob, now: float, horizon: float,
               guess_s: float, res: float = 1.0) -> tuple[float, list[int]] | None:
    """The TRY_LATER loop of planned_start_slurm, on numpy (the reference of plan_kernel)."""
    part = plan.part
    k, cpn, limit = job.nodes, job.cpus_per_node, job.time_limit_s
    iv_node, iv_b, iv_e = plan.arrays()
    _, _, span_e, bounds = plan.free_instants()
    start_res = now
    for _ in range(1000):
        if start_res > horizon:
            break
        end_time = start_res + limit
        avail = np.ones(part.n, dtype=bool)
        avail[iv_node[(iv_e > start_res) & (iv_b <= end_time)]] = False
        later = later_start(span_e, bounds, start_res, end_time)
        got = will_run(plan, times, avail, job, now, guess_s)
        if got is None:
            if later == INF:
                break
            start_res = later
            continue
        at, fits, gone = got  # the will-run test's own state: the nodes' free cores are those then
        start = max(at, start_res)
        if start > later:
            start_res = later
            continue
        idx = np.flatnonzero(fits)
        nodes = consec_pick(idx, plan.free_after(gone)[0][idx], k, cpn)
        chosen = np.zeros(part.n, dtype=bool)
        chosen[nodes] = True
        # _test_resv_overlap (backfill.c): end > start_time and begin < end_reserve, both of the
        # plan rounded down to bf_resolution (a reservation beginning as this plan ends is no clash)
        b_res, e_res = (start // res) * res, ((start + limit) // res) * res
        clash = chosen[iv_node] & (iv_e > b_res) & (iv_b < e_res)
        # a window rounded to one instant meets no segment at a cut: a plan's bound or the pass's
        # start rounded down (plan_kernel's search, the same rule)
        if e_res == b_res and (b_res <= (now // res) * res or b_res in bounds):
            clash[:] = False
        if clash.any():
            start_res = start if start > start_res else float(iv_e[clash].min())
            continue
        return start, nodes
    return None


def later_start(span_e: np.ndarray, bounds: np.ndarray, start_res: float, end_time: float) -> float:
    """``_attempt_backfill``'s ``later_start`` for the try window [start_res, end_time]: the end of
    the first node_space segment (ending after start_res) whose next segment frees a usable node
    the current one lacks, among the segments the loop looks at: those up to the first that
    begins after end_time, which is looked at too (the test comes before the loop's ``break``,
    backfill.c 2390-2425). A node comes free at a merged plan span's end, so this is the first
    span end after start_res up to that segment's end (the cap: the second boundary after
    end_time). Any span counts, also one that begins after end_time: a plan filling exactly the
    segment after the window ends at the cap and frees its node there (issue 37, f37o; until
    then only spans that overlapped the window counted, and such a job got no plan at all)."""
    i_res, i_end = np.searchsorted(bounds, (start_res, end_time), side="right")
    cap = bounds[min(i_end + 1, len(bounds) - 1)] if i_res < len(bounds) else INF
    frees = span_e[(span_e > start_res) & (span_e <= cap)]
    return float(frees.min()) if len(frees) else INF


def earliest_sweep(times: np.ndarray, sorted_fit: np.ndarray, merged: tuple[np.ndarray, ...],
                    limit: float, k: int, t_min: float) -> float | None:
    """The earliest t >= t_min at which at least k nodes are usable: fit by t (``times``;
    ``sorted_fit`` = the same, sorted) and not held by a plan during [t, t + limit], i.e. t
    outside every [b - limit, e) of the node (``merged``: ``BackfillMap.merge_base``).

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


def choose(ok: np.ndarray, k: int) -> list[int]:
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
