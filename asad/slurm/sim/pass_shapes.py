"""The small compiled loops a backfill pass (``pass_kernel``) runs per job shape: a shape's fit
times (per node, the first time it holds the shape's cores and memory with the running jobs
ending at their limits) and their order, from the fit-time cache (``fit_cache``) or one sweep
over the running pieces; the tested jobs' shapes; how many nodes fit now; the running jobs'
groups. Split from ``pass_kernel`` (which was two ideas in ~630 lines): these read the
partition's state, the pass's loop decides on it.
"""

from __future__ import annotations

import numpy as np

from asad.slurm.sim import fit_cache, plan_kernel
from asad.slurm.sim.numba_cache import LEAF

INF = np.inf


def _shape_times(out, free_c, free_m, pe, pn, pc, pm, n_p, cores, mem, now):  # noqa: ANN001, ANN202
    """PartitionState.fit_times into ``out``: per node the first time it holds (cores, mem)
    with running jobs ending at their limits (now: free already; inf: never). One sweep over
    the pieces in end order (a node's pieces in end order, as _node_time)."""
    n = len(free_c)
    fc = free_c.copy()
    fm = free_m.copy()
    for i in range(n):
        out[i] = now if (fc[i] >= cores and fm[i] >= mem) else INF
    for p in range(n_p):
        node = pn[p]
        if out[node] == INF:
            fc[node] += pc[p]
            fm[node] += pm[p]
            if fc[node] >= cores and fm[node] >= mem:
                out[node] = pe[p]


def _shape_times_sorted(out, order, sorted_out, free_c, free_m, pe, pn, pc, pm, n_p, cores, mem,
                        now):  # noqa: ANN001, ANN202
    """``_shape_times_sorted_into`` with scratch of its own (the tests' entry)."""
    _shape_times_sorted_into(out, order, sorted_out, free_c, free_m, pe, pn, pc, pm, n_p, cores, mem,
                             now, np.empty((4, len(free_c) + 1), dtype=np.int64))


def _shape_times_sorted_into(out, order, sorted_out, free_c, free_m, pe, pn, pc, pm, n_p, cores,
                             mem, now, work):  # noqa: ANN001, ANN202
    """_shape_times, and the nodes in order of those times (``order``) with the times so ordered
    (``sorted_out``), without a sort: the sweep over the pieces in end order gives each node its
    time in non-decreasing order, so the order is that sweep's nodes merged with the nodes that
    fit now (time ``now``; an overdue piece's end is before it), then those that never fit.
    Ties come in another order than a stable sort's; the pass reads only the times' values in
    order (the k-th smallest, and plan_kernel._kth_avail's count of usable nodes). ``work``:
    scratch, four rows of ``n`` words (it allocates nothing: ``numba_cache.LEAF``)."""
    n = len(free_c)
    fc, fm, now_nodes = work[0], work[1], work[2]
    for i in range(n):
        fc[i] = free_c[i]
        fm[i] = free_m[i]
    n_now = 0
    for i in range(n):
        if fc[i] >= cores and fm[i] >= mem:
            out[i] = now
            now_nodes[n_now] = i
            n_now += 1
        else:
            out[i] = INF
    swept = work[3]
    n_swept = 0
    for p in range(n_p):
        node = pn[p]
        if out[node] == INF:
            fc[node] += pc[p]
            fm[node] += pm[p]
            if fc[node] >= cores and fm[node] >= mem:
                out[node] = pe[p]
                swept[n_swept] = node
                n_swept += 1
    at = 0
    j = 0
    while j < n_swept and out[swept[j]] < now:  # overdue pieces' nodes first
        order[at] = swept[j]
        at += 1
        j += 1
    for t in range(n_now):
        order[at] = now_nodes[t]
        at += 1
    while j < n_swept:
        order[at] = swept[j]
        at += 1
        j += 1
    for i in range(n):  # never fit
        if out[i] == INF:
            order[at] = i
            at += 1
    for i in range(n):
        sorted_out[i] = out[order[i]]


def count_fitting(free_c, free_m, cores, mem):  # noqa: ANN001, ANN202
    """How many nodes hold (cores, mem) now: plan_kernel.find_consec picks nodes (a non-empty
    pick) exactly when at least the job's node count do, so this answers "does it fit ignoring
    plans" without the pick, its O(nodes) arrays and runs (~200 such tests a saturated pass)."""
    got = 0
    for i in range(len(free_c)):
        if free_c[i] >= cores and free_m[i] >= mem:
            got += 1
    return got


def _job_groups(pe, pj, n_p, first, ends):  # noqa: ANN001, ANN202
    """BackfillMap.running_jobs: per running job (pieces grouped by end and job), its first
    piece and its end; returns how many."""
    m = 0
    for p in range(n_p):
        if p == 0 or pj[p] != pj[p - 1] or pe[p] != pe[p - 1]:
            first[m] = p
            ends[m] = pe[p]
            m += 1
    return m



def _ensure_sorted(si, s_ok, s_times, s_order, s_sort, sh_c, sh_m, free_c, free_m,
                   pe, pn, pc, pm, n_p, now, sh_slot, fc, head, lst, csr_ok, work):  # noqa: ANN001, ANN202
    """BackfillMap.node_times / time_order / sorted_times for shape ``si``: from its slot of the
    fit-time cache ``fc`` (``fit_cache``; only the nodes changed since move) if it has one, else
    one sweep over the pieces. ``work``: scratch, four rows of ``n + 1`` words."""
    if not s_ok[si]:
        slot = sh_slot[si]
        if slot >= 0:
            fit_cache.ensure_slot_into(slot, fc[3], fc[4], fc[5], fc[6], fc[7], fc[8], fc[9], free_c,
                                       free_m, pe, pn, pc, pm, n_p, head, lst, csr_ok, sh_c[si], sh_m[si],
                                       now, s_times[si], s_order[si], work)
        else:
            _shape_times_sorted_into(s_times[si], s_order[si], s_sort[si], free_c, free_m, pe, pn, pc,
                                     pm, n_p, sh_c[si], sh_m[si], now, work)
        s_ok[si] = True


def _py_min(a, lo, hi):  # noqa: ANN001, ANN202
    """Python's min() over a[lo:hi], NaN included (a NaN first stays; later ones never win)."""
    m = a[lo]
    for i in range(lo + 1, hi):
        if a[i] < m:
            m = a[i]
    return m


def _job_shapes(j_cpn, j_mem, j_shape, sh_c, sh_m):  # noqa: ANN001, ANN202
    """The tested jobs' shapes (cores, memory per node), in order of first appearance, into
    ``sh_c``/``sh_m``; each job's into ``j_shape``; how many."""
    n_sh = 0
    for i in range(len(j_cpn)):
        s = -1
        for t in range(n_sh):
            if sh_c[t] == j_cpn[i] and sh_m[t] == j_mem[i]:
                s = t
                break
        if s < 0:
            s = n_sh
            sh_c[s] = j_cpn[i]
            sh_m[s] = j_mem[i]
            n_sh += 1
        j_shape[i] = s
    return n_sh


if plan_kernel.njit is not None:
    _shape_times = plan_kernel.njit(cache=True)(_shape_times)
    _shape_times_sorted_into = plan_kernel.njit(**LEAF)(_shape_times_sorted_into)
    _shape_times_sorted = plan_kernel.njit(cache=True)(_shape_times_sorted)
    _job_groups = plan_kernel.njit(**LEAF)(_job_groups)
    count_fitting = plan_kernel.njit(**LEAF)(count_fitting)
    _ensure_sorted = plan_kernel.njit(**LEAF)(_ensure_sorted)
    _job_shapes = plan_kernel.njit(**LEAF)(_job_shapes)
    _py_min = plan_kernel.njit(**LEAF)(_py_min)
