"""Where a plan search's work goes, try by try, on recorded passes (issue 37, ninth session): every
plan search of the passes recorded by ``sim_pass_replay.py capture`` is made again by a counting
copy of ``plan_kernel.planned_start_cursor`` (the same loop, with a counter at each step), its
answer checked against the compiled search's, and the tries are tallied by how they end:

- ``fits now``: the job fits now on the usable nodes (no will-run walk), then the node pick;
- ``kth > later``: the k-th usable fit time is past ``later_start``, so the try moves on without a
  walk (cheap: the window's heap and the Fenwick select only);
- ``walk: none``: the will-run walk finds no start (then ``later_start``);
- ``walk: past later``: its start is past ``later_start``;
- ``pick: clash``: the node pick's nodes meet a plan (then the start or the clash's end);
- ``plan``: the try that ends the search with a plan.

and the work inside them: running jobs looked at by the walk (``_usable`` calls, pieces read),
nodes scanned and plan intervals tested by the pick, spans entering and leaving the window.

    python scripts/sim_plan_search_profile.py passes.pkl --passes 56

Why: the brief asks for a cheaper search; this says which tries are the bulk (and so which a
necessary condition or a jump would have to skip) before anything is built.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sim_plan_certificate as cert  # noqa: E402

from asad.slurm.sim import fit_cache, plan_kernel  # noqa: E402
from _plan_search_legacy import _heap_pop, _heap_push, _tree_add, _tree_select  # noqa: E402

from asad.slurm.sim.plan_kernel import (  # noqa: E402
    WILL_RUN_WINDOW_S, _bisect_right, _cap_sorted, _consec_pick, _free_after)
from asad.slurm.sim.plan_kernel import njit  # noqa: E402

INF = np.inf
# counters (st[...])
SEARCH, TRY, FITS_NOW, KTH_SKIP, WALK, WALK_NONE, WALK_LATE, PICK, CLASH, PLAN, NO_PLAN, \
    USABLE, PIECES, PICK_SCAN, CLASH_IV, SPAN_IN, SPAN_OUT, FIRST_TRY_PLAN, CLASH_FITS_NOW, \
    WALK_BATCHES, CLASH_RETRY_START, COUNTED_SCAN, PICK_CAND, WALK_PAST, WALK_PAST_WRONG = range(25)
NAMES = ["searches", "tries", "tries: fits now", "tries: kth > later (no walk)", "tries: walked",
         "tries: walk found none", "tries: walk start past later", "tries: node pick",
         "tries: pick clashed", "tries: plan", "searches without a plan", "walk: running jobs looked at",
         "walk: pieces read", "pick: nodes scanned", "pick: plan intervals tested",
         "window: spans in", "window: spans out", "searches planned at the first try",
         "clashes on the fits-now path", "walk: batches", "clash retried at start (start > start_res)",
         "walk: counted scans (nodes)", "pick: candidate nodes",
         "tries walked that plan_kernel._walk_past skips (eleventh session, second cut)",
         "of those, walks that did start by later_start (must be 0)"]


def _usable(j, avail, p_node, first_piece, n_jobs, n_pieces, st):  # noqa: ANN001, ANN202
    st[USABLE] += 1
    stop = first_piece[j + 1] if j + 1 < n_jobs else n_pieces
    for p in range(first_piece[j], stop):
        st[PIECES] += 1
        if avail[p_node[p]]:
            return True
    return False


def _walk(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c, free_m,
          p_c, p_m, cpn, mem, st):  # noqa: ANN001, ANN202
    """plan_kernel._will_run_kth, counting."""
    n_jobs = len(job_ends)
    if n_jobs == 0:
        return -INF, 0.0, 0, False
    if kth == INF:
        return -INF, 0.0, 0, False
    n_pieces = len(p_node)
    first_use = 0
    while first_use < n_jobs and not _usable(first_use, avail, p_node, first_piece, n_jobs, n_pieces, st):
        first_use += 1
    if first_use == n_jobs:
        return -INF, 0.0, 0, False
    none_from = n_jobs
    first = job_ends[first_use]
    anchor = first + (WILL_RUN_WINDOW_S - first % WILL_RUN_WINDOW_S)
    window = WILL_RUN_WINDOW_S
    pos = 0
    while True:
        st[WALK_BATCHES] += 1
        q = max(pos, _bisect_right(job_ends, anchor + window))
        last_i = -1
        if q > pos and _usable(q - 1, avail, p_node, first_piece, n_jobs, n_pieces, st):
            last_i = q - 1
        else:
            j = q
            while j < none_from and not _usable(j, avail, p_node, first_piece, n_jobs, n_pieces, st):
                j += 1
            if j < none_from:
                last_i = j
            else:
                none_from = min(none_from, q)
                j = q - 2
                while j >= pos and not _usable(j, avail, p_node, first_piece, n_jobs, n_pieces, st):
                    j -= 1
                if j >= pos:
                    last_i = j
        if last_i < 0:
            return -INF, 0.0, 0, False
        pos = last_i + 1
        if pos < n_jobs:
            window *= 2
            while job_ends[pos] > anchor + window:
                window *= 2
        last = job_ends[last_i]
        by = max(last, now)
        if kth <= by:
            gone = first_piece[pos] if pos < n_jobs else n_pieces
            counted = pos < n_jobs and job_ends[pos] <= by
            if counted:
                fc = free_c.copy()
                fm = free_m.copy()
                for p in range(gone):
                    fc[p_node[p]] += p_c[p]
                    fm[p_node[p]] += p_m[p]
                fit = 0
                for i in range(len(fc)):
                    st[COUNTED_SCAN] += 1
                    if avail[i] and fc[i] >= cpn and fm[i] >= mem:
                        fit += 1
                counted = fit >= k
                if not counted:
                    if pos >= n_jobs:
                        return -INF, 0.0, 0, False
                    continue
            if last <= now:
                last = max(last + guess_s, now + 1.0)
            return last, by, gone, counted
        if pos >= n_jobs:
            return -INF, 0.0, 0, False


def counting_search(times, by_time, free_c, free_m, k, cpn, mem, limit, now, horizon, guess_s,
                    iv_node, iv_b, iv_e, p_end, p_node, p_c, p_m, first_piece, job_ends, bounds,
                    res, span_b, span_e, span_n, cur_c, cur_m, cur_g, st):  # noqa: ANN001, ANN202
    """plan_kernel._planned_start_cursor with counters (``st``); the same answer."""
    st[SEARCH] += 1
    n = len(times)
    n_iv = len(iv_node)
    ns = len(span_e)
    fits_now = np.empty(n, dtype=np.bool_)
    n_fits_now = 0
    for i in range(n):
        fits_now[i] = free_c[i] >= cpn and free_m[i] >= mem
        n_fits_now += fits_now[i]
    rank = np.empty(n, dtype=np.int64)
    for p in range(n):
        rank[by_time[p]] = p
    heap_e = np.empty(ns)
    heap_n = np.empty(ns, dtype=np.int64)
    n_heap = 0
    n_over = np.zeros(n, dtype=np.int64)
    avail = np.ones(n, dtype=np.bool_)
    n_avail = n
    tree = np.zeros(n + 1, dtype=np.int64)
    top = 1
    while top * 2 <= n:
        top *= 2
    built = False
    nb = 0
    held_fit = 0
    start_res = now
    last_start = now
    n_try = 0
    for _ in range(1000):
        if start_res > horizon:
            break
        st[TRY] += 1
        n_try += 1
        if start_res < last_start:
            n_over[:] = 0
            avail[:] = True
            n_avail = n
            built = False
            nb = n_heap = held_fit = 0
        last_start = start_res
        end_time = start_res + limit
        while nb < ns and span_b[nb] <= end_time:
            st[SPAN_IN] += 1
            node = span_n[nb]
            n_heap = _heap_push(heap_e, heap_n, n_heap, span_e[nb], node)
            nb += 1
            n_over[node] += 1
            if n_over[node] == 1:
                avail[node] = False
                n_avail -= 1
                held_fit += fits_now[node]
                if built:
                    _tree_add(tree, rank[node] + 1, -1)
        while n_heap > 0 and heap_e[0] <= start_res:
            st[SPAN_OUT] += 1
            node = heap_n[0]
            n_heap = _heap_pop(heap_e, heap_n, n_heap)
            n_over[node] -= 1
            if n_over[node] == 0:
                avail[node] = True
                n_avail += 1
                held_fit -= fits_now[node]
                if built:
                    _tree_add(tree, rank[node] + 1, 1)
        cap = _cap_sorted(bounds, start_res, end_time)
        later = heap_e[0] if n_heap > 0 and heap_e[0] <= cap else INF
        on_now = False
        if n_fits_now - held_fit >= k:
            st[FITS_NOW] += 1
            on_now = True
            at, by, gone, counted = now, -INF, 0, False
        else:
            if not built:
                for p in range(n):
                    tree[p + 1] = avail[by_time[p]]
                for i in range(1, n + 1):
                    up = i + (i & -i)
                    if up <= n:
                        tree[up] += tree[i]
                built = True
            kth = INF
            if n_avail >= k:
                kth = times[by_time[_tree_select(tree, n, top, k)]]
            if kth > later:
                st[KTH_SKIP] += 1
                start_res = later
                continue
            st[WALK] += 1
            past = plan_kernel._walk_past(kth, later, now, avail, p_node, first_piece, job_ends,
                                          plan_kernel.WALK_PAST_CAP)
            at, by, gone, counted = _walk(kth, avail, k, now, guess_s, p_node, first_piece,
                                          job_ends, free_c, free_m, p_c, p_m, cpn, mem, st)
            if past:
                st[WALK_PAST] += 1
                if at != -INF and max(at, start_res) <= later:
                    st[WALK_PAST_WRONG] += 1
        if at == -INF:
            st[WALK_NONE] += 1
            if later == INF:
                break
            start_res = later
            continue
        start = max(at, start_res)
        if start > later:
            st[WALK_LATE] += 1
            start_res = later
            continue
        st[PICK] += 1
        _free_after(cur_c, cur_m, cur_g, gone, free_c, free_m, p_node, p_c, p_m)
        free_then = cur_c
        free_m_then = cur_m
        idx = np.empty(n, dtype=np.int64)
        m = 0
        for i in range(n):
            st[PICK_SCAN] += 1
            if avail[i] and ((by == -INF and free_c[i] >= cpn and free_m[i] >= mem)
                             or (counted and free_then[i] >= cpn and free_m_then[i] >= mem)
                             or (by != -INF and not counted and times[i] <= by)):
                idx[m] = i
                m += 1
        st[PICK_CAND] += m
        free_idx = np.empty(m, dtype=np.int64)
        for j in range(m):
            free_idx[j] = free_then[idx[j]]
        nodes = _consec_pick(idx[:m], free_idx, k, cpn)
        chosen = np.zeros(n, dtype=np.bool_)
        for node in nodes:
            chosen[node] = True
        clash_end = INF
        clash = False
        b_res = (start // res) * res
        e_res = ((start + limit) // res) * res
        for i in range(n_iv):
            st[CLASH_IV] += 1
            if chosen[iv_node[i]] and iv_e[i] > b_res and iv_b[i] < e_res:
                clash = True
                clash_end = min(clash_end, iv_e[i])
        if clash:
            st[CLASH] += 1
            if on_now:
                st[CLASH_FITS_NOW] += 1
            if start > start_res:
                st[CLASH_RETRY_START] += 1
            start_res = start if start > start_res else clash_end
            continue
        st[PLAN] += 1
        if n_try == 1:
            st[FIRST_TRY_PLAN] += 1
        return start, nodes, n_try
    st[NO_PLAN] += 1
    return -INF, np.empty(0, dtype=np.int64), n_try


if njit is not None:
    _usable = njit(_usable)
    _walk = njit(_walk)
    counting_search = njit(counting_search)


def searches_of(calls: list) -> list[tuple]:
    """Every plan search of the recorded passes, with its arguments as the kernel gave them."""
    out = []

    def on_search(*a):  # noqa: ANN002, ANN202
        out.append(tuple(x.copy() if isinstance(x, np.ndarray) else x for x in a))
        return plan_kernel.planned_start_cursor(*a)

    ns = cert.python_pass(on_search)
    for a in calls:
        ns["_pass"](*[x.copy() if isinstance(x, np.ndarray) else x for x in a],
                    fit_cache.FitCache(len(a[9]), slots=0).arrays)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("calls")
    parser.add_argument("--passes", type=int, default=56)
    parser.add_argument("--start", type=int, default=0)
    args = parser.parse_args()
    with open(args.calls, "rb") as fh:
        calls = pickle.load(fh)["calls"][args.start: args.start + args.passes]
    searches = searches_of(calls)
    st = np.zeros(len(NAMES), dtype=np.int64)
    tries = []
    bad = 0
    for a in searches:
        want = plan_kernel.planned_start_cursor(*[x.copy() if isinstance(x, np.ndarray) else x for x in a])
        # (the counting copy is main's search at e9e0e93: the spans in end order that the ninth
        # session's search also takes are not among its arguments)
        n_args = counting_search.py_func.__code__.co_argcount - 1
        got_s, got_n, n_try = counting_search(*[x.copy() if isinstance(x, np.ndarray) else x for x in a[:n_args]], st)
        tries.append(n_try)
        if not (want[0] == got_s or (np.isnan(want[0]) and np.isnan(got_s))) or list(want[1]) != list(got_n):
            bad += 1
    print(f"{len(calls)} passes, {len(searches)} searches; answers differing from the compiled search: {bad}")
    n_s = max(st[SEARCH], 1)
    n_t = max(st[TRY], 1)
    for i, name in enumerate(NAMES):
        print(f"| {name} | {st[i]:,} | {st[i] / n_s:.2f} a search | {st[i] / n_t:.3f} a try |")
    t = np.array(tries)
    print("tries a search: median", int(np.median(t)), "p90", int(np.percentile(t, 90)), "max", int(t.max()),
          "; share of tries in searches with > 20 tries:", round(float(t[t > 20].sum() / t.sum()), 3))
    return 0 if bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
