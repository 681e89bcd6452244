"""What ``backfill.compiled_pass`` hands the pass kernel and takes back, without a Python loop
per job: the tested jobs as positions in the queue's shape arrays, and the pass's plans kept as
the kernel returned them until someone reads them, and the running pieces in (end, job) order
kept from pass to pass.

Why: on a saturated ``hpc2n`` span (0.1 day from a day-4 snapshot) the Python around the kernel
was 13–15 % of the CPU (~1 ms a pass), most of it per-job work in ``compiled_pass``: a loop over
the queue to pick the ≤ 500 tested jobs and six list comprehensions to make their arrays (~0.44 ms),
the pieces masked and lexsorted (~0.3 ms), and a loop over the ~260 plan events to build
(job, nodes, start) records that only ``estimate_start`` and ``bf_poll`` read (~0.33 ms). The
queue already keeps its live jobs' shapes in arrays in priority order (``JobQueue``), so the
tested jobs are a gather of those; the plan records are made when first read
(``PartitionState.reservations``) from the arrays kept here (docs/results/sim.md, ninth session).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.cluster import Reservation


def tested_positions(queue: Any, max_test: int) -> np.ndarray:
    """Queue positions of the jobs a pass tests: the live (queued) ones from the head, in
    priority order, at most ``max_test`` (``max_test <= 0``: all, as the loop this replaces,
    which stopped only when it had ``max_test`` jobs). ``a_live[i]`` is ``jobs[i].queued``:
    ``JobQueue.add`` sets it as the job is queued, ``remove`` clears it as it leaves, and the
    queue is frozen (no compaction) during a pass."""
    head = queue.first_live()
    live = np.flatnonzero(queue.a_live[head: len(queue.jobs)])
    if max_test > 0:
        live = live[:max_test]
    return live + head


@dataclass
class PassPlans:
    """One pass's plans as the kernel made them, in its order: per plan the planned job's id,
    time limit, cores and memory per node (gathered from the queue's arrays at the pass: the
    queue's positions move later), its start and its nodes (``offs``/``lens`` into ``flat``).
    ``reservations()`` gives the records ``backfill._record_plan`` made, sorted by start, built
    only when the partition's reservations are read."""

    job_ids: np.ndarray
    limits: np.ndarray
    cores: np.ndarray
    mem: np.ndarray
    starts: np.ndarray
    offs: np.ndarray
    lens: np.ndarray
    flat: np.ndarray

    def reservations(self) -> list[Reservation]:
        flat = self.flat.tolist()
        made = []
        for jid, limit, c, m, t, off, n in zip(self.job_ids.tolist(), self.limits.tolist(),
                                                self.cores.tolist(), self.mem.tolist(),
                                                self.starts.tolist(), self.offs.tolist(),
                                                self.lens.tolist()):
            nodes = flat[off: off + n]
            made.append(Reservation(job_id=jid, start=t, end=t + limit, nodes=nodes, cores=c, mem_mb=m,
                                    slack_c=dict.fromkeys(nodes, 0), slack_m=dict.fromkeys(nodes, 0)))
        made.sort(key=lambda r: r.start)
        return made


def record_plans(queue: Any, live: np.ndarray, which: np.ndarray, ts: np.ndarray, offs: np.ndarray,
                 lens: np.ndarray, flat: np.ndarray) -> PassPlans:
    """The pass's plans (events ``which``/``ts``/``offs``/``lens`` of the kernel's, positions
    ``live``) as a ``PassPlans``, and each planned job's earliest planned start
    (``SimJob.res_time_min``) lowered where this plan begins earlier. Only ~4 % of a saturated
    pass's plans lower it, so the queue's ``a_res_min`` (never below the job's own value: it
    takes only the job's value when queued and the values written to the job here) picks
    those, and only they are read and written job by job."""
    pos = live[which]
    lower = np.flatnonzero(ts < queue.a_res_min[pos])
    if len(lower):
        _lower(queue, pos[lower], ts[lower])
    return PassPlans(queue.a_id[pos], queue.a_limit_f[pos], queue.a_cpn[pos], queue.a_mem[pos],
                     ts, offs, lens, flat)


def _gather_tested(a_live, head, end, max_test, a_nodes, a_cpn, a_cpus, a_mem, a_limit_f,
                   a_id):  # noqa: ANN001, ANN202
    """``tested_positions`` and the six gathers of the tested jobs' shapes the kernel reads, in
    one compiled loop (numpy: a flatnonzero, a slice, an add and six fancy gathers, ~30 µs a
    saturated pass of mostly call overhead)."""
    n = 0
    for i in range(head, end):
        if a_live[i]:
            n += 1
            if n == max_test:
                break
    live = np.empty(n, dtype=np.int64)
    k = 0
    for i in range(head, end):
        if k == n:
            break
        if a_live[i]:
            live[k] = i
            k += 1
    nodes = np.empty(n, dtype=np.int64)
    cpn = np.empty(n, dtype=np.int64)
    cpus = np.empty(n, dtype=np.int64)
    mem = np.empty(n, dtype=np.int64)
    limit = np.empty(n)
    ids = np.empty(n, dtype=np.int64)
    for k in range(n):
        p = live[k]
        nodes[k] = a_nodes[p]
        cpn[k] = a_cpn[p]
        cpus[k] = a_cpus[p]
        mem[k] = a_mem[p]
        limit[k] = a_limit_f[p]
        ids[k] = a_id[p]
    return live, nodes, cpn, cpus, mem, limit, ids


def tested_inputs(queue: Any, max_test: int) -> tuple[np.ndarray, ...]:
    """The tested positions (``tested_positions``) and the tested jobs' nodes, cores per node,
    cores, memory per node, time limit and id, as the pass kernel takes them."""
    head = queue.first_live()
    if _gather_tested_jit is None:  # pragma: no cover
        live = tested_positions(queue, max_test)
        return (live, queue.a_nodes[live], queue.a_cpn[live], queue.a_cpus[live], queue.a_mem[live],
                queue.a_limit_f[live], queue.a_id[live])
    return _gather_tested_jit(queue.a_live, head, len(queue.jobs), max_test if max_test > 0 else -1,
                              queue.a_nodes, queue.a_cpn, queue.a_cpus, queue.a_mem, queue.a_limit_f,
                              queue.a_id)


@dataclass
class PassEvents:
    """One pass's kernel events kept as the kernel returned them, with the tested jobs' id, time
    limit, cores and memory per node (the pass's own gathers: the queue's positions move later).
    ``reservations()`` gives the records ``PassPlans`` gives for the plan events, built only
    when the partition's reservations are read (``estimate_start``, ``bf_poll``): no gather per
    plan at the pass."""

    kinds: np.ndarray
    which: np.ndarray
    ts: np.ndarray
    offs: np.ndarray
    lens: np.ndarray
    flat: np.ndarray
    t_id: np.ndarray
    t_limit: np.ndarray
    t_cpn: np.ndarray
    t_mem: np.ndarray
    ev_plan: int

    def reservations(self) -> list[Reservation]:
        pl = np.flatnonzero(self.kinds == self.ev_plan)
        w = self.which[pl]
        return PassPlans(self.t_id[w], self.t_limit[w], self.t_cpn[w], self.t_mem[w], self.ts[pl],
                         self.offs[pl], self.lens[pl], self.flat).reservations()


def _outcome(kinds, which, ts, live, a_res_min, ev_plan):  # noqa: ANN001, ANN202
    """The events that need Python work, in the kernel's order: first the plans that lower their
    job's kept earliest start (``ts`` below ``a_res_min`` as it was before any of them, as
    ``record_plans`` compares), then the starts; and how many of the first kind."""
    n = len(kinds)
    out = np.empty(n, dtype=np.int64)
    n_low = 0
    for e in range(n):
        if kinds[e] == ev_plan and ts[e] < a_res_min[live[which[e]]]:
            out[n_low] = e
            n_low += 1
    k = n_low
    for e in range(n):
        if kinds[e] != ev_plan:
            out[k] = e
            k += 1
    return out[:k], n_low


def split_events(queue: Any, live: np.ndarray, kinds: np.ndarray, which: np.ndarray, ts: np.ndarray,
                 offs: np.ndarray, lens: np.ndarray, flat: np.ndarray, tested: tuple[np.ndarray, ...],
                 ev_plan: int) -> tuple[PassEvents, list[int], list[int], list[int]]:
    """What ``record_plans`` and the start loop did with the kernel's events: the plans kept
    (``PassEvents``, read back as ``record_plans``' records), the planned jobs' earliest planned
    starts lowered, and the starts as (queue position, offset into ``flat``, node count) lists
    in the kernel's order. ``tested``: the tested jobs' (id, time limit, cores per node, memory
    per node). One compiled loop picks the few events that need Python work (numpy's masks,
    flatnonzero and gathers per pass were ~15 µs, mostly call overhead)."""
    events = PassEvents(kinds, which, ts, offs, lens, flat, *tested, ev_plan)
    if _outcome_jit is None:  # pragma: no cover
        ev, n_low = _outcome(kinds, which, ts, live, queue.a_res_min, ev_plan)
    else:
        ev, n_low = _outcome_jit(kinds, which, ts, live, queue.a_res_min, ev_plan)
    if n_low:
        low = ev[:n_low]
        _lower(queue, live[which[low]], ts[low])
    if n_low == len(ev):
        return events, [], [], []
    st = ev[n_low:]
    return events, live[which[st]].tolist(), offs[st].tolist(), lens[st].tolist()


def _lower(queue: Any, pos: np.ndarray, ts: np.ndarray) -> None:
    """Each job at ``pos`` gets its earliest planned start lowered to ``ts`` where earlier
    (``record_plans``' loop)."""
    jobs, a_res_min = queue.jobs, queue.a_res_min
    for p, t in zip(pos.tolist(), ts.tolist()):
        job = jobs[p]
        if job.res_time_min is None or t < job.res_time_min:
            job.res_time_min = t
        a_res_min[p] = job.res_time_min


def _sort_slots(idx, p_end, p_job):  # noqa: ANN001, ANN202
    """``idx`` (slot numbers in increasing order) stably sorted by (end, job): ties stay in
    slot order, as ``np.lexsort((p_job, p_end))`` over them. A bottom-up merge sort."""
    n = len(idx)
    idx = idx.copy()
    tmp = np.empty(n, dtype=np.int64)
    width = 1
    while width < n:
        lo = 0
        while lo < n:
            mid = min(lo + width, n)
            top = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < top:
                a, b = idx[i], idx[j]
                # from the right run only when strictly before: stable
                if p_end[b] < p_end[a] or (p_end[b] == p_end[a] and p_job[b] < p_job[a]):
                    tmp[k] = b
                    j += 1
                else:
                    tmp[k] = a
                    i += 1
                k += 1
            while i < mid:
                tmp[k] = idx[i]
                i += 1
                k += 1
            while j < top:
                tmp[k] = idx[j]
                j += 1
                k += 1
            lo = top
        idx, tmp = tmp, idx
        width *= 2
    return idx


def _running_merged(p_end, p_node, p_c, p_m, p_job, p_active, hi,
                    q_slot, q_end, q_node, q_c, q_m, q_job):  # noqa: ANN001, ANN202
    """The active slots of [0, hi) in (end, job, slot) order, which is ``np.lexsort((p_job,
    p_end))``'s over them (stable: ties in slot order), as the slots and their five fields.
    ``q_*``: the previous call's answer. Its entries whose slot still holds the same piece (all
    five fields equal) are in that order already; only the slots not among them (pieces added
    since, ~7 events a pass on a saturated queue) are sorted, and the two lists merged on
    (end, job, slot). Sorting all ~1,600 pieces each pass (numpy: a mask, a lexsort, ten
    gathers) was ~240 µs a saturated pass, a quarter of the Python around the kernel."""
    kept_mark = np.zeros(hi, dtype=np.bool_)
    kept = np.empty(len(q_slot), dtype=np.int64)
    n_k = 0
    for t in range(len(q_slot)):
        s = q_slot[t]
        if (s < hi and p_active[s] and not kept_mark[s] and p_end[s] == q_end[t]
                and p_job[s] == q_job[t] and p_node[s] == q_node[t] and p_c[s] == q_c[t]
                and p_m[s] == q_m[t]):
            kept_mark[s] = True
            kept[n_k] = s
            n_k += 1
    n_new = 0
    for s in range(hi):
        if p_active[s] and not kept_mark[s]:
            n_new += 1
    new = np.empty(n_new, dtype=np.int64)
    k = 0
    for s in range(hi):
        if p_active[s] and not kept_mark[s]:
            new[k] = s
            k += 1
    new = _sort_slots(new, p_end, p_job)
    n = n_k + n_new
    slot = np.empty(n, dtype=np.int64)
    i, j = 0, 0
    for t in range(n):
        take_new = False
        if i >= n_k:
            take_new = True
        elif j < n_new:
            a, b = kept[i], new[j]
            take_new = (p_end[b] < p_end[a] or (p_end[b] == p_end[a] and (
                p_job[b] < p_job[a] or (p_job[b] == p_job[a] and b < a))))
        if take_new:
            slot[t] = new[j]
            j += 1
        else:
            slot[t] = kept[i]
            i += 1
    pe = np.empty(n)
    pn = np.empty(n, dtype=np.int64)
    pc = np.empty(n, dtype=np.int64)
    pm = np.empty(n, dtype=np.int64)
    pj = np.empty(n, dtype=np.int64)
    for t in range(n):
        s = slot[t]
        pe[t] = p_end[s]
        pn[t] = p_node[s]
        pc[t] = p_c[s]
        pm[t] = p_m[s]
        pj[t] = p_job[s]
    return slot, pe, pn, pc, pm, pj


def running_sorted_numpy(part: Any) -> tuple[np.ndarray, ...]:
    """The reference (and the fallback without numba): the numpy form the kernel's caller used."""
    hi = part.p_hi
    act = part.p_active[:hi]
    p_end, p_job = part.p_end[:hi][act], part.p_job[:hi][act]
    order = np.lexsort((p_job, p_end))  # BackfillMap.running_ends' order
    return (p_end[order], part.p_node[:hi][act][order], part.p_c[:hi][act][order],
            part.p_m[:hi][act][order], p_job[order])


def running_sorted(part: Any) -> tuple[np.ndarray, ...]:
    """The partition's running pieces by (end, job): end, node, cores, memory, job. The order is
    kept on the partition (``run_order``) from call to call and updated (``_running_merged``).
    The arrays returned are that kept state: callers must not change them (the pass kernel and
    the fit-time cache copy what they keep)."""
    if _running_merged_jit is None:  # pragma: no cover
        return running_sorted_numpy(part)
    prev = part.__dict__.get("run_order")
    if prev is None:
        prev = _EMPTY
    got = _running_merged_jit(part.p_end, part.p_node, part.p_c, part.p_m, part.p_job,
                              part.p_active, part.p_hi, *prev)
    part.run_order = got
    return got[1:]


_EMPTY = (np.zeros(0, dtype=np.int64), np.zeros(0), *(np.zeros(0, dtype=np.int64) for _ in range(4)))

if plan_kernel.njit is not None:
    _sort_slots = plan_kernel.njit(cache=True)(_sort_slots)
    _running_merged_jit = plan_kernel.njit(cache=True)(_running_merged)
    _gather_tested_jit = plan_kernel.njit(cache=True)(_gather_tested)
    _outcome_jit = plan_kernel.njit(cache=True)(_outcome)
else:  # pragma: no cover
    _running_merged_jit = _gather_tested_jit = _outcome_jit = None
