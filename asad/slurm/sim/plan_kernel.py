"""The backfill planner's inner loop, compiled with numba: the same TRY_LATER loop, will-run
test and node pick as ``planner.planned_start_slurm``, ``planner.will_run`` and
``cluster.consec_pick`` (the readable reference), on scalars instead of small numpy calls; and
``find_consec``, the node pick for a job that starts now (``PartitionState.find_nodes``).

Why: a backfill pass on a full ``hpc2n`` queue makes ~300 plans, each some 13 will-run tests
over 602 nodes and ~1,700 running pieces; as numpy calls a plan costs ~0.6 ms, most of it call
overhead. Compiled, it takes ~55-80 us. The will-run walk itself (asked only at its batches'
edges) is ``will_run``'s, compiled into the search here. ``tests/test_sim_plan_kernel.py`` checks that both give
the same plan on random partitions; without numba the reference is used. Only plain loops and
arrays here: numba compiles library calls such as ``np.partition`` or ``np.unique`` slowly.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from asad.slurm.sim import plan_maps, will_run
from asad.slurm.sim.numba_cache import LEAF, drop_stale_cache

# the plans' map; add_span_twice, insert_bound, distinct_bounds and _cap are re-exported for pass_kernel
# and the tests, which read them here
from asad.slurm.sim.plan_maps import (  # noqa: F401
    _bisect_left, _bisect_right, _bits_clear, _bits_reset, _bits_select, _bits_set, _cap, _cap_sorted,
    _floor_to, _free_spans, _lowest, add_span_twice, by_end, distinct_bounds, insert_bound)

# the will-run walk (its own module since the twelfth session); re-exported for the tests and
# scripts that read it here
from asad.slurm.sim.will_run import (  # noqa: F401
    WALK_PAST_CAP, WILL_RUN_WINDOW_S, _kth_avail, _usable, _walk_past, _will_run, _will_run_kth,
    will_run_kth_into)

try:  # numba is a dependency; its absence (or ASAD_SIM_COMPILED=0) falls back to the reference
    from numba import njit
except ImportError:  # pragma: no cover - exercised only on a machine without numba
    njit = None

INF = np.inf


_ENABLED = njit is not None and os.environ.get("ASAD_SIM_COMPILED", "1") != "0"


def enabled() -> bool:
    """Whether the simulator uses the compiled planner (tests switch ``_ENABLED``)."""
    return _ENABLED


def _consec_pick(idx, free, nodes, cores):  # noqa: ANN001, ANN202
    """``consec_pick_into`` with scratch of its own: the nodes picked."""
    m = len(idx)
    out = np.empty(max(nodes, m), dtype=np.int64)
    got = consec_pick_into(idx, free, nodes, cores, out, np.empty(m, dtype=np.int64),
                           np.empty(m, dtype=np.int64), np.empty(m, dtype=np.int64),
                           np.empty(m, dtype=np.bool_))
    return out[:got]


def _consec_pick_into(idx, free, nodes, cores, out, starts, ends, run_cpus, alive):  # noqa: ANN001, ANN202
    """cluster.consec_pick: the tightest run of consecutive usable nodes that holds the rest of
    the job (else the biggest run, and go on); the last node is the run's tightest. Into ``out``
    (how many: ``nodes``); ``starts``, ``ends``, ``run_cpus``, ``alive``: scratch of
    ``len(idx)`` (it allocates nothing: ``numba_cache.LEAF``)."""
    m = len(idx)
    if m == 1:
        out[0] = idx[0]
        return nodes
    for i in range(m):
        run_cpus[i] = 0
    nrun = 0
    for i in range(m):
        if i == 0 or idx[i] != idx[i - 1] + 1:
            starts[nrun] = i
            nrun += 1
        ends[nrun - 1] = i + 1
        run_cpus[nrun - 1] += free[i]
    for j in range(nrun):
        alive[j] = True
    got = 0
    rem = nodes
    while rem > 0:
        r = -1
        for j in range(nrun):  # the tightest sufficient run, first on ties
            if alive[j] and run_cpus[j] >= rem * cores and ends[j] - starts[j] >= rem:
                if r < 0 or run_cpus[j] < run_cpus[r]:
                    r = j
        if r < 0:  # none holds the rest: the biggest run, first on ties
            best = -2  # np.argmax: the first of the largest, dead runs counting -1
            for j in range(nrun):
                val = run_cpus[j] if alive[j] else -1
                if val > best:
                    best = val
                    r = j
        alive[r] = False
        a, b = starts[r], ends[r]
        if rem == 1:
            t = a
            for i in range(a + 1, b):
                if free[i] < free[t]:
                    t = i
            out[got] = idx[t]
            return nodes
        take = min(rem, b - a)
        for i in range(a, a + take):
            out[got] = idx[i]
            got += 1
        rem -= take
    return got


def _find_consec(free_c, free_m, blocked, nodes, cores, mem):  # noqa: ANN001, ANN202
    """``find_consec_into`` with scratch of its own: the nodes (an empty array if too few fit)."""
    iwork, bwork, _ = new_scratch(len(free_c))
    got = find_consec_into(free_c, free_m, blocked, nodes, cores, mem, iwork, bwork)
    return iwork[W_OUT, :got].copy()


def _find_consec_into(free_c, free_m, blocked, nodes, cores, mem, iwork, bwork):  # noqa: ANN001, ANN202
    """cluster.PartitionState._find_consec on arrays: how many nodes (into ``iwork[W_OUT]``) the
    job gets now on the nodes that hold ``cores`` and ``mem`` and are not in ``blocked``; 0 if
    too few do. ``iwork``, ``bwork``: ``new_scratch``'s (it allocates nothing:
    ``numba_cache.LEAF``)."""
    n = len(free_c)
    ok = bwork[0]
    for i in range(n):
        ok[i] = free_c[i] >= cores and free_m[i] >= mem
    for b in blocked:
        ok[b] = False
    idx = iwork[W_IDX]
    m = 0
    for i in range(n):
        if ok[i]:
            idx[m] = i
            m += 1
    if m < nodes:
        return 0
    out = iwork[W_OUT]
    if m == 1:
        out[0] = idx[0]
        return 1
    free = iwork[W_FREE]
    for j in range(m):
        free[j] = free_c[idx[j]]
    return consec_pick_into(idx[:m], free[:m], nodes, cores, out, iwork[W_STARTS], iwork[W_ENDS],
                            iwork[W_RUN], bwork[1])


def _planned_start(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                   iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds, res):  # noqa: ANN001, ANN202
    """planner.planned_start_slurm's loop: (start, nodes), start -inf for no plan. ``bounds``:
    ``_distinct_bounds(iv_b, iv_e)``; ``res``: bf_resolution."""
    span_b, span_e, span_n = _free_spans(len(times), iv_node, iv_b, iv_e)
    order = np.argsort(span_b, kind="mergesort")
    span_b, span_e, span_n = span_b[order], span_e[order], span_n[order]
    return _planned_start_spans(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon,
                                guess_s, iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece,
                                job_ends, bounds, res, span_b, span_e, span_n)


def _planned_start_spans(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                         iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds, res,
                         span_b, span_e, span_n):  # noqa: ANN001, ANN202
    """``planned_start_cursor`` with a cursor of its own (``new_cursor``), for one search."""
    cur_c, cur_m, cur_g = new_cursor(len(times))
    end_b, end_e, end_n = by_end(span_b, span_e, span_n)
    return _planned_start_cursor(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon,
                                 guess_s, iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece,
                                 job_ends, bounds, res, span_b, span_e, span_n, cur_c, cur_m, cur_g,
                                 end_b, end_e, end_n)


def new_cursor(n):  # noqa: ANN001, ANN202
    """A cursor for ``_free_after``, pointing nowhere yet: free cores, free memory, pieces gone."""
    return np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.full(1, -1, dtype=np.int64)


def _free_after(cur_c, cur_m, cur_g, gone, free_c, free_m, p_node, p_c, p_m):  # noqa: ANN001, ANN202
    """Move the cursor to the free cores and memory per node once the first ``gone`` running
    pieces (in end order) have gone: ``cur_c``/``cur_m`` hold them for ``cur_g[0]`` pieces gone
    (-1: nothing yet), and get there by adding or taking away only the pieces between, or, when
    that is longer, from ``free_c``/``free_m`` again. Exact (sums of integers in any order).
    Why: a plan's node pick built these from scratch (two copies of every node and a walk over
    every piece gone, hundreds on a saturated queue, ~1.3 times a plan); the plans of a pass
    see the same pieces between two starts and often the same ``gone``. The caller resets
    ``cur_g[0] = -1`` when ``free_c``, ``free_m`` or the pieces change."""
    g = cur_g[0]
    if g < 0 or abs(gone - g) > gone:
        for i in range(len(free_c)):
            cur_c[i] = free_c[i]
            cur_m[i] = free_m[i]
        g = 0
    while g < gone:
        node = np.uint64(p_node[g])
        cur_c[node] += p_c[g]
        cur_m[node] += p_m[g]
        g += 1
    while g > gone:
        g -= 1
        node = np.uint64(p_node[g])
        cur_c[node] -= p_c[g]
        cur_m[node] -= p_m[g]
    cur_g[0] = gone


def _planned_start_cursor(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                          iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds,
                          res, span_b, span_e, span_n, cur_c, cur_m, cur_g, end_b, end_e, end_n):  # noqa: ANN001, ANN202
    """``_planned_start`` given the plans' merged spans (``_free_spans``, or kept by the pass
    kernel with ``add_span_twice`` as it adds plans instead of rebuilt per plan: ~a fifth of a plan's
    cost on a saturated queue).

    The spans come twice: ``span_*`` in order of their begins and ``end_*`` in order of their
    ends (``add_span_twice`` keeps both). The tries'
    window [start_res, start_res + limit] only moves forward (each try ends at a later
    ``start_res``: a span's end past it, a will-run start past it, or a clashing plan's end, a
    multiple of ``res`` past ``start_res``'s own multiple), so the held nodes are kept from try
    to try instead of found again: spans enter in begin order as the window's end passes their
    begin, and leave in end order as the window's start passes their end (every span that ends
    by the start has entered: it began before it); a count per node of the spans that overlap
    the window. ``later_start`` is then the first span in end order from the leaving cursor on,
    if it ends by the cap (``planner.later_start``: entered or not, as Slurm's segment walk
    counts it; until f37o only an entered one counted). (Until the ninth session a min-heap of
    the entered spans' ends did this, ~17 % of a search.) The k-th fit time of the usable nodes
    is a select over the nodes in fit-time order (a saturated queue's ~200 held nodes came first
    in that order and were walked past on every try, ~10 tries a plan): a Fenwick tree built per
    search until the tenth session, a bitmap by fit-time position now. The per-try version
    (each try looking at every span) is this one's reference in ``tests/test_sim_plan_kernel.py``.

    This entry makes the per-shape state (fits-now marks, ranks, the intervals per node) for
    one search and calls ``_planned_start_kept``, which the pass calls with its kept copies."""
    n = len(times)
    fits_now = np.empty(n, dtype=np.bool_)
    n_fits_now = shape_fits(fits_now, free_c, free_m, cpn, mem)
    rank = np.empty(n, dtype=np.int64)
    shape_rank(by_time, rank)
    iv_next, node_iv = node_intervals(n, iv_node)
    return _planned_start_kept(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon,
                               guess_s, iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece,
                               job_ends, bounds, res, span_b, span_e, span_n, cur_c, cur_m, cur_g,
                               end_b, end_e, end_n, fits_now, n_fits_now, rank, iv_next, node_iv)


def shape_fits(fits_now, free_c, free_m, cpn, mem):  # noqa: ANN001, ANN202
    """Into ``fits_now`` the nodes a (cpn, mem) job fits on now; how many (the pass keeps both
    per shape)."""
    n = len(free_c)
    n_fits_now = 0
    for i in range(n):
        fits_now[i] = free_c[i] >= cpn and free_m[i] >= mem
        n_fits_now += fits_now[i]
    return n_fits_now


def shape_rank(by_time, rank):  # noqa: ANN001, ANN202
    """Each node's position in fit-time order, into ``rank`` (the pass keeps it per shape)."""
    for p in range(len(by_time)):
        rank[by_time[p]] = p


def node_intervals(n, iv_node):  # noqa: ANN001, ANN202
    """Each node's plan intervals as a list (``node_iv[node]``: its last, -1 none; ``iv_next[i]``:
    the one before ``i`` on its node). The pass keeps them as it adds plans."""
    iv_next = np.empty(len(iv_node), dtype=np.int64)
    node_iv = np.full(n, -1, dtype=np.int64)
    for i in range(len(iv_node)):
        iv_next[i] = node_iv[iv_node[i]]
        node_iv[iv_node[i]] = i
    return iv_next, node_iv


def _pick_from_bits(bits, times, by_time, by, idx, mark):  # noqa: ANN001, ANN202
    """Into ``idx`` (ascending) the usable nodes whose fit time is <= ``by``; how many.
    ``by_time`` is in non-decreasing time order, so those nodes are the fit-time positions
    [0, end); a node is usable exactly when its position's bit is set (the search keeps the
    bitmap beside ``avail``). Each such node is marked in ``mark``, a bitmap by node number
    (scratch of as many words as ``bits``), read back in node order. Why: the pick's scan of every
    node with its three-way test was ~15 % of the kernel (eleventh session, a doubled scan); the
    prefix is ~150 positions of 602 and its usable ones ~30, read here ~64 positions a word. Until
    the fifteenth session the nodes were sorted by insertion (~15 % of the search, perf) and more
    than 64 of them fell back to the scan (a fifth of the picks)."""
    n = len(by_time)
    lo, hi = 0, n  # end: the first position whose time is > by
    while lo < hi:
        mid = (lo + hi) // 2
        if times[by_time[mid]] <= by:
            lo = mid + 1
        else:
            hi = mid
    end = lo
    for w in range(len(mark)):
        mark[w] = np.uint64(0)
    m = 0
    for w in range((end + 63) // 64):
        x = bits[w]
        left = end - 64 * w
        if left < 64:
            x &= (np.uint64(1) << np.uint64(left)) - np.uint64(1)
        while x:
            node = np.uint64(by_time[np.uint64(64 * w + _lowest(x))])
            x &= x - np.uint64(1)  # the lowest set bit dropped
            mark[node >> np.uint64(6)] |= np.uint64(1) << (node & np.uint64(63))
            m += 1
    at = 0
    for w in range(len(mark)):
        x = mark[w]
        while x:
            idx[at] = 64 * w + _lowest(x)
            x &= x - np.uint64(1)
            at += 1
    return m


def _is_bound(bounds, t):  # noqa: ANN001, ANN202
    """Whether ``t`` is one of the sorted distinct plan bounds."""
    i = _bisect_left(bounds, t)
    return i < len(bounds) and bounds[i] == t


def _later_start(end_e, ne, ns, bounds, start_res, end_time):  # noqa: ANN001, ANN202
    """planner.later_start for the search's window: ``end_e[ne]`` (the first span end after
    ``start_res``) if it is by ``_cap_sorted(bounds, start_res, end_time)``, else inf. A span end
    is one of the plans' boundaries (``bounds`` holds every begin and end), and the cap is the
    second boundary past ``end_time`` or else the last boundary, so an end by ``end_time`` is
    always by the cap: the cap's bisection (~540 boundaries, every try) only for an end past it
    (twelfth session: ~2 % of the kernel)."""
    if ne < ns and (end_e[ne] <= end_time or end_e[ne] <= _cap_sorted(bounds, start_res, end_time)):
        return end_e[ne]
    return INF


# the rows of the search's integer scratch (``new_scratch``): what it allocated per search or try
# until the fourteenth session (its window's counts, the pick's candidates, their free cores, the
# nodes picked, ``_consec_pick``'s runs, the will-run test's free cores and memory)
W_OVER, W_IDX, W_FREE, W_OUT, W_STARTS, W_ENDS, W_RUN, W_FC, W_FM = range(9)


def new_scratch(n):  # noqa: ANN001, ANN202
    """Scratch for ``search_kept`` on ``n`` nodes: integer rows (``W_*``), two boolean rows (the
    window's usable nodes, the pick's live runs) and two bitmaps' words (the usable fit-time
    positions, the pick's nodes)."""
    return (np.empty((9, max(n, 1)), dtype=np.int64), np.empty((2, max(n, 1)), dtype=np.bool_),
            np.empty((2, max((n + 63) // 64, 1)), dtype=np.uint64))


def _planned_start_kept(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                        iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds,
                        res, span_b, span_e, span_n, cur_c, cur_m, cur_g, end_b, end_e, end_n,
                        fits_now, n_fits_now, rank, iv_next, node_iv):  # noqa: ANN001, ANN202
    """``search_kept`` with scratch of its own: (start, nodes), start -inf for no plan (the
    reference's and the tests' entry; the pass calls ``search_in_pass``)."""
    iwork, bwork, bits = new_scratch(len(times))
    start, got = search_kept(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                             iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends,
                             bounds, res, span_b, span_e, span_n, cur_c, cur_m, cur_g, end_b, end_e,
                             end_n, fits_now, n_fits_now, rank, iv_next, node_iv, iwork, bwork, bits)
    return start, iwork[W_OUT, :got].copy()


def _search_in_pass(times2, by_time2, si, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                    iv_node, iv_b, iv_e, n_iv, p_end, p_node, p_c, p_m, n_p, first_piece, job_ends,
                    n_groups, bounds, n_bnd, res, span_b, span_e, span_n, cur_c, cur_m, cur_g, end_b,
                    end_e, end_n, n_sp, fits2, n_fits_now, rank2, iv_next, node_iv, iwork, bwork,
                    bits):  # noqa: ANN001, ANN202
    """``search_kept`` as the pass calls it: its arrays whole, with their lengths, and the per-shape
    ones as the pass keeps them (a row ``si`` of each), sliced here, where slicing counts no
    references (``numba_cache.LEAF``); (start, how many nodes, in ``iwork[W_OUT]``)."""
    return search_kept(times2[si], by_time2[si], free_c, free_m, k, cpn, mem, limit, now, horizon,
                       guess_s, iv_node[:n_iv], iv_b[:n_iv], iv_e[:n_iv], p_end[:n_p], p_node[:n_p],
                       p_c[:n_p], p_m[:n_p], first_piece[:n_groups], job_ends[:n_groups],
                       bounds[:n_bnd], res, span_b[:n_sp], span_e[:n_sp], span_n[:n_sp], cur_c, cur_m,
                       cur_g, end_b[:n_sp], end_e[:n_sp], end_n[:n_sp], fits2[si], n_fits_now,
                       rank2[si], iv_next[:n_iv], node_iv, iwork, bwork, bits)


def _search_kept(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                 iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds,
                 res, span_b, span_e, span_n, cur_c, cur_m, cur_g, end_b, end_e, end_n,
                 fits_now, n_fits_now, rank, iv_next, node_iv, iwork, bwork, bits):  # noqa: ANN001, ANN202
    """``planned_start_cursor`` given what depends only on the job's shape and the pass's state
    between two starts, which the pass keeps instead of making it per search (tenth session: a
    pass's ~260 searches are of a few shapes and a start comes ~0.8 times a pass): ``fits_now``
    and ``n_fits_now`` (``shape_fits``), ``rank`` (``shape_rank`` of ``by_time``), and the plan
    intervals per node (``node_intervals``: the clash test walks the chosen nodes' intervals,
    not every plan interval with an O(nodes) mark of the chosen ones). The usable nodes in
    fit-time order are a bitmap (``plan_maps._bits_*``) moved as spans enter and leave, not a
    Fenwick tree built per search. (start, how many nodes), the nodes in ``iwork[W_OUT]``;
    ``iwork``, ``bwork``, ``bits``: ``new_scratch``'s (it allocates nothing: ``numba_cache.LEAF``)."""
    n = len(times)
    ns = len(span_e)
    # the spans that entered the window ([:nb] in begin order) and left it ([:ne] in end order)
    ne = 0
    n_over = iwork[W_OVER]  # spans of the node overlapping the window
    avail = bwork[0]
    for i in range(n):
        n_over[i] = 0
        avail[i] = True
    # the usable nodes by fit-time position, a bitmap (plan_maps._bits_*); the pick's by node
    fit_bits, node_bits = bits[0], bits[1]
    _bits_reset(fit_bits, n)
    nb = 0
    held_fit = 0
    start_res = now
    last_start = now
    for _ in range(1000):
        if start_res > horizon:
            break
        if start_res < last_start:  # not expected (see above); if ever, begin again exactly
            for i in range(n):
                n_over[i] = 0
                avail[i] = True
            _bits_reset(fit_bits, n)
            nb = ne = held_fit = 0
        last_start = start_res
        end_time = start_res + limit
        while nb < ns and span_b[np.uint64(nb)] <= end_time:  # spans that begin by the window's end enter
            node = np.uint64(span_n[np.uint64(nb)])  # (unsigned: no negative-index wrap, numba_cache)
            nb += 1
            n_over[node] += 1
            if n_over[node] == 1:
                avail[node] = False
                held_fit += fits_now[node]
                _bits_clear(fit_bits, rank[node])
        while ne < ns and end_e[np.uint64(ne)] <= start_res:  # those that end by its start leave
            node = np.uint64(end_n[np.uint64(ne)])
            ne += 1
            n_over[node] -= 1
            if n_over[node] == 0:
                avail[node] = True
                held_fit -= fits_now[node]
                _bits_set(fit_bits, rank[node])
        # later_start: the first span end after start_res, if by the cap (planner.later_start:
        # also a span that has not entered the window, one filling the segment after it)
        later = later_start(end_e, ne, ns, bounds, start_res, end_time)
        if n_fits_now - held_fit >= k:
            at, by, gone, counted = now, -INF, 0, False
        else:
            kth = INF
            pos = _bits_select(fit_bits, k)  # (-1: fewer than k usable)
            if pos >= 0:
                kth = times[by_time[pos]]
            if kth > later:
                # The will-run start would be at kth or after, past later_start (or there is
                # none): either way this try ends in start_res = later, without the walk.
                start_res = later
                continue
            if _walk_past(kth, later, now, avail, p_node, first_piece, job_ends, WALK_PAST_CAP):
                start_res = later  # as the walk's answer would give: no start, or one past later
                continue
            at, by, gone, counted = will_run_kth_into(kth, avail, k, now, guess_s, p_node, first_piece,
                                                      job_ends, free_c, free_m, p_c, p_m, cpn, mem,
                                                      iwork[W_FC], iwork[W_FM])
        if at == -INF:
            if later == INF:
                break
            start_res = later
            continue
        start = max(at, start_res)
        if start > later:
            start_res = later
            continue
        # the nodes that fit in the will-run test's state (the running jobs it took away gone),
        # and their free cores then
        _free_after(cur_c, cur_m, cur_g, gone, free_c, free_m, p_node, p_c, p_m)
        free_then = cur_c
        free_m_then = cur_m
        idx = iwork[W_IDX]
        if by != -INF and not counted:
            # the usable nodes fitting by ``by`` are the set bits of the usable bitmap among the
            # fit-time positions whose time is <= by (a prefix): read by words, not a scan of
            # every node (eleventh session)
            m = pick_from_bits(fit_bits, times, by_time, by, idx, node_bits)
        else:
            m = 0
            for i in range(n):
                if avail[i] and ((by == -INF and free_c[i] >= cpn and free_m[i] >= mem)
                                 or (counted and free_then[i] >= cpn and free_m_then[i] >= mem)):
                    idx[m] = i
                    m += 1
        if m < k:  # never on a true state (the test above counted k); a stale one: say so
            raise RuntimeError("plan search: fewer usable nodes than counted (stale kept state)")
        free_idx = iwork[W_FREE, :m]
        for j in range(m):
            free_idx[j] = free_then[idx[j]]
        nodes = iwork[W_OUT]
        got = consec_pick_into(idx[:m], free_idx, k, cpn, nodes, iwork[W_STARTS], iwork[W_ENDS],
                               iwork[W_RUN], bwork[1])
        clash_end = INF
        clash = False
        # _test_resv_overlap (backfill.c): the plan [start, start + limit], both rounded down to
        # bf_resolution, meets a reservation when end > start_time and begin < end_reserve: a
        # reservation that begins as this plan ends does not clash (issue 37)
        b_res = _floor_to(start, res)
        e_res = _floor_to(start + limit, res)
        # A window rounded to one instant (a limit under bf_resolution) meets Slurm's node_space
        # segments only where one holds that instant strictly inside: never at a cut, which is
        # every plan's bound and the pass's start rounded down (issue 37, fourteenth session:
        # found by test_sim_try_later_slurm). Otherwise the test below is the segments' test.
        if not (e_res == b_res and (b_res <= _floor_to(now, res) or _is_bound(bounds, b_res))):
            for j in range(got):  # (distinct nodes: each interval looked at once)
                i = node_iv[nodes[j]]
                while i >= 0:
                    if iv_e[i] > b_res and iv_b[i] < e_res:
                        clash = True
                        clash_end = min(clash_end, iv_e[i])
                    i = iv_next[i]
        if clash:
            start_res = start if start > start_res else clash_end
            continue
        return start, got
    return -INF, 0



consec_pick_into, search_kept, find_consec_into = _consec_pick_into, _search_kept, _find_consec_into

if njit is not None:
    # the plans' map is compiled into the search: a cache made with an older plan_maps.py is stale
    drop_stale_cache(Path(__file__).with_name("__pycache__"), Path(__file__).stem, Path(plan_maps.__file__))
    drop_stale_cache(Path(__file__).with_name("__pycache__"), Path(__file__).stem, Path(will_run.__file__))
    consec_pick_into = njit(**LEAF)(_consec_pick_into)
    _consec_pick = consec_pick = njit(cache=True)(_consec_pick)
    find_consec_into = njit(**LEAF)(_find_consec_into)
    find_consec = njit(cache=True)(_find_consec)
    new_cursor = njit(cache=True)(new_cursor)
    _free_after = njit(**LEAF)(_free_after)
    pick_from_bits = njit(**LEAF)(_pick_from_bits)
    later_start = njit(**LEAF)(_later_start)
    _is_bound = njit(**LEAF)(_is_bound)
    shape_fits = njit(**LEAF)(shape_fits)
    shape_rank = njit(**LEAF)(shape_rank)
    node_intervals = njit(cache=True)(node_intervals)
    new_scratch = njit(cache=True)(new_scratch)
    search_kept = njit(**LEAF)(_search_kept)
    search_in_pass = njit(**LEAF)(_search_in_pass)
    planned_start_kept = _planned_start_kept = njit(cache=True)(_planned_start_kept)
    planned_start_cursor = _planned_start_cursor = njit(cache=True)(_planned_start_cursor)
    planned_start_spans = njit(cache=True)(_planned_start_spans)
    _planned_start_spans = planned_start_spans
    planned_start = njit(cache=True)(_planned_start)
else:  # pragma: no cover
    planned_start = consec_pick = find_consec = planned_start_spans = planned_start_cursor = None
    planned_start_kept = search_in_pass = None
    pick_from_bits = _pick_from_bits
    later_start = _later_start
