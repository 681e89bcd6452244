"""The plans' map that the compiled plan search reads and the pass keeps (numba, as plan_kernel):
each node's plans merged into spans, the plans' boundaries sorted and distinct (what ``_cap``
bisects), the same spans in end order (the tries' window lets spans leave in that order;
``add_span_twice`` keeps both orders in one walk, the reference; ``add_interval`` every form of
a plan's node and ``add_plan`` of all its nodes, each order sorted by (key, node) since the
thirteenth session), and the bitmap of usable fit-time positions (the k-th one) the window keeps from
try to try. The Fenwick tree (until the tenth session) and the heap of span ends (until the
ninth) that earlier searches used live in ``scripts/_plan_search_legacy.py`` now, beside the
scripts that still time those searches (``scripts/sim_plan_search_*``).

Split from ``plan_kernel`` (the search itself) so that each file holds one idea. Plain Python
functions first, the readable reference when numba is absent; compiled at the bottom.
"""

from __future__ import annotations

import math

import numpy as np

from asad.slurm.sim.numba_cache import LEAF

try:  # numba is a dependency; without it these stay plain Python (plan_kernel then falls back)
    from numba import njit
    from llvmlite import ir
    from numba.core import types as nb_types
    from numba.extending import intrinsic
except ImportError:  # pragma: no cover - exercised only on a machine without numba
    njit = None

INF = np.inf

def _bisect_right(a, x):  # noqa: ANN001, ANN202
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if x < a[mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _bisect_left(a, x):  # noqa: ANN001, ANN202
    """The first index whose value is >= x (``a`` sorted)."""
    lo, hi = 0, len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _floor_to(x, res):  # noqa: ANN001, ANN202
    """``(x // res) * res`` as Python computes it, without the call to ``fmod`` numba makes for a
    float's floor division (~1,500 a saturated pass, ~1.5 % of a day's CPU: perf, the fourteenth
    session). For a whole-number ``res`` and |x| < 2**52 both are the exact floor of x / res
    times res (Python's ``x - fmod(x, res)`` is then exact); otherwise Python's own."""
    if res == math.floor(res) and abs(x) < 4503599627370496.0:
        q = math.floor(x / res)
        if q * res > x:
            q -= 1
        elif (q + 1) * res <= x:
            q += 1
        return q * res
    return (x // res) * res


def plan_span(start, limit, res):  # noqa: ANN001, ANN202
    """The node span a plan starting at ``start`` holds: [start, start + limit] both rounded down
    to ``res`` (bf_resolution), at least one ``res`` slot long (``_add_reservation``)."""
    b = _floor_to(start, res)
    return b, max(_floor_to(start + limit, res), b + res)


def _free_spans(n, iv_node, iv_b, iv_e):  # noqa: ANN001, ANN202
    """backfill_map.BackfillMap.free_instants' spans: the plans merged per node (a plan that begins
    by the time the previous one ends joins it), as (begin, end, node). Plans are grouped by node
    (counting sort) and each node's few are sorted by begin (insertion sort)."""
    m = len(iv_node)
    head = np.zeros(n + 1, dtype=np.int64)
    for i in range(m):
        head[iv_node[i] + 1] += 1
    for node in range(n):
        head[node + 1] += head[node]
    fill = head[:n].copy()
    order = np.empty(m, dtype=np.int64)
    for i in range(m):  # stable: a node's plans keep their order of creation
        order[fill[iv_node[i]]] = i
        fill[iv_node[i]] += 1
    span_b = np.empty(m)
    span_e = np.empty(m)
    span_n = np.empty(m, dtype=np.int64)
    ns = 0
    for node in range(n):
        a, b = head[node], head[node + 1]
        for j in range(a + 1, b):  # by begin, ties in creation order (as np.lexsort)
            x = order[j]
            t = j
            while t > a and iv_b[order[t - 1]] > iv_b[x]:
                order[t] = order[t - 1]
                t -= 1
            order[t] = x
        for j in range(a, b):
            i = order[j]
            if j > a and iv_b[i] <= span_e[ns - 1]:
                span_e[ns - 1] = max(span_e[ns - 1], iv_e[i])
            else:
                span_b[ns] = iv_b[i]
                span_e[ns] = iv_e[i]
                span_n[ns] = node
                ns += 1
    return span_b[:ns], span_e[:ns], span_n[:ns]


def _cap(iv_b, iv_e, start_res, end_time):  # noqa: ANN001, ANN202
    """Where Slurm stops looking for a plan's next free node: the second plan boundary (begin
    or end, distinct values) after ``end_time``, else the last boundary; inf if no boundary is
    after ``start_res``. (backfill: ``bounds[min(i_end + 1, len - 1)]`` on the sorted bounds.)"""
    first = INF
    second = INF
    last = -INF
    for arr in (iv_b, iv_e):
        for v in arr:
            if v > last:
                last = v
            if v > end_time:
                if v < first:
                    second = first
                    first = v
                elif first < v < second:
                    second = v
    if not last > start_res:
        return INF
    return second if second < INF else last


def _distinct_bounds(iv_b, iv_e):  # noqa: ANN001, ANN202
    """The plans' boundaries (begins and ends), sorted, each value once: what ``_cap`` reads.
    The pass kernel keeps this array as it adds plans (``insert_bound``) instead."""
    m = len(iv_b)
    out = np.empty(2 * m)
    out[:m] = iv_b
    out[m:] = iv_e
    out.sort()
    u = 0
    for i in range(2 * m):
        if u == 0 or out[i] != out[u - 1]:
            out[u] = out[i]
            u += 1
    return out[:u]


def _insert_bound(bnd, u, v):  # noqa: ANN001, ANN202
    """Insert ``v`` into the sorted distinct ``bnd[:u]`` (room for it behind); the new count."""
    i = _bisect_right(bnd[:u], v)
    if i > 0 and bnd[i - 1] == v:
        return u
    for j in range(u, i, -1):
        bnd[j] = bnd[j - 1]
    bnd[i] = v
    return u + 1


def _cap_sorted(bnd, start_res, end_time):  # noqa: ANN001, ANN202
    """``_cap`` by bisection of the sorted distinct boundaries (the same value; ``_cap`` scans
    every plan twice per try, about a quarter of a plan's cost on a saturated queue): the second
    boundary after ``end_time``, else the last; inf if no boundary is after ``start_res``."""
    u = len(bnd)
    if u == 0 or not bnd[u - 1] > start_res:
        return INF
    i = _bisect_right(bnd, end_time)
    return bnd[i + 1] if i + 1 < u else bnd[u - 1]


def _add_span_twice(span_b, span_e, span_n, end_b, end_e, end_n, ns, node, b, e):  # noqa: ANN001, ANN202
    """Add the plan interval [b, e] of ``node`` to the merged spans ``[:ns]``, kept twice: in
    order of their begins (``span_*``, the order they enter the plan search's window) and of their
    ends (``end_*``, the order they leave it); room for one more behind in each; the new count.
    A node's spans are the union of its plans, those that meet or touch joined (what
    ``_free_spans`` makes by merging in begin order), so the interval absorbs every span of the
    node it meets, in each order (both hold the same set, so the merged span's bounds come from
    the begin order); the merged span goes after every span that begins by its begin in one
    order and after every span that ends by its end in the other. One walk keeps both, so the
    absorb rule cannot drift apart between them (a span absorbed in one order and not the other
    would make the window's counts wrong), and one loop over ~500 spans costs less than two."""
    lo, hi = b, e
    kb = 0
    ke = 0
    for i in range(ns):
        if span_n[i] == node and span_b[i] <= e and b <= span_e[i]:
            lo = min(lo, span_b[i])
            hi = max(hi, span_e[i])
        else:  # kept, moved down over the absorbed ones
            span_b[kb] = span_b[i]
            span_e[kb] = span_e[i]
            span_n[kb] = span_n[i]
            kb += 1
        if not (end_n[i] == node and end_b[i] <= e and b <= end_e[i]):
            end_b[ke] = end_b[i]
            end_e[ke] = end_e[i]
            end_n[ke] = end_n[i]
            ke += 1
    at = kb  # after every span that begins by lo
    while at > 0 and span_b[at - 1] > lo:
        at -= 1
    for i in range(kb, at, -1):
        span_b[i] = span_b[i - 1]
        span_e[i] = span_e[i - 1]
        span_n[i] = span_n[i - 1]
    span_b[at] = lo
    span_e[at] = hi
    span_n[at] = node
    at = ke  # after every span that ends by hi
    while at > 0 and end_e[at - 1] > hi:
        at -= 1
    for i in range(ke, at, -1):
        end_b[i] = end_b[i - 1]
        end_e[i] = end_e[i - 1]
        end_n[i] = end_n[i - 1]
    end_b[at] = lo
    end_e[at] = hi
    end_n[at] = node
    return kb + 1


def _insert_sorted(keys, arr_b, arr_e, arr_n, ns, key, b, e, node):  # noqa: ANN001, ANN202
    """Insert (b, e, node) into one span order, sorted by (``keys`` value, node) (``keys``: ``arr_b``
    or ``arr_e`` itself; ``_bisect_kn``): the place by bisection, the tail moved up by one."""
    lo = _bisect_kn(keys, arr_n, ns, key, node, True)
    for i in range(ns, lo, -1):
        arr_b[i] = arr_b[i - 1]
        arr_e[i] = arr_e[i - 1]
        arr_n[i] = arr_n[i - 1]
    arr_b[lo] = b
    arr_e[lo] = e
    arr_n[lo] = node


def _insert_span_twice(span_b, span_e, span_n, end_b, end_e, end_n, ns, node, b, e):  # noqa: ANN001, ANN202
    """``add_span_twice`` for an interval that meets no span of its node (nothing to absorb):
    the same places up to ties, found by bisection (both orders are sorted by (key, node), the
    key ``b`` in one and ``e`` in the other) and the tails moved up by one; the new count."""
    _insert_sorted(span_b, span_b, span_e, span_n, ns, b, b, e, node)
    _insert_sorted(end_e, end_b, end_e, end_n, ns, e, b, e, node)
    return ns + 1


def _absorb_sorted(keys, arr_b, arr_e, arr_n, ns, node, b, e, lo, hi, key):  # noqa: ANN001, ANN202
    """One span order of ``add_span_twice`` when [b, e] meets spans of ``node`` whose union with
    it is [lo, hi]: those spans go (the others keep their order) and [lo, hi] goes to its
    (``keys`` value, node) place (``keys``: ``arr_b`` or ``arr_e`` itself; ``key``: lo or hi;
    ``add_interval`` calls this only when more than one span goes); the new count. Every span it absorbs lies in [lo, hi], so its key does too: only the spans whose
    key is in [lo, hi], found by bisection, are looked at, and the tail past them moves only
    when more than one span went (twelfth session: the walk over every span of both orders was
    most of the plans' map upkeep, ~13 % of the kernel, and ~60 % of the intervals added meet a
    span of their node). The merged span's place is before the looked-at range's end: every
    span after it has a key > hi >= ``key``."""
    r0 = _bisect_left(keys[:ns], lo)
    r1 = _bisect_right(keys[:ns], hi)
    w = r0
    for p in range(r0, r1):
        if arr_n[p] == node and arr_b[p] <= e and b <= arr_e[p]:
            continue  # absorbed (the same test as add_span_twice's)
        arr_b[w] = arr_b[p]
        arr_e[w] = arr_e[p]
        arr_n[w] = arr_n[p]
        w += 1
    gone = r1 - w
    q = _bisect_kn(keys, arr_n, w, key, node, True)  # its (key, node) place among the kept spans
    if gone != 1:  # the tail [r1, ns) moves to [w + 1, ...)
        if gone == 0:
            for i in range(ns - 1, r1 - 1, -1):
                arr_b[i + 1] = arr_b[i]
                arr_e[i + 1] = arr_e[i]
                arr_n[i + 1] = arr_n[i]
        else:
            for i in range(r1, ns):
                arr_b[i - gone + 1] = arr_b[i]
                arr_e[i - gone + 1] = arr_e[i]
                arr_n[i - gone + 1] = arr_n[i]
    for i in range(w, q, -1):
        arr_b[i] = arr_b[i - 1]
        arr_e[i] = arr_e[i - 1]
        arr_n[i] = arr_n[i - 1]
    arr_b[q] = lo
    arr_e[q] = hi
    arr_n[q] = node
    return ns - gone + 1


def _bisect_kn(keys, arr_n, ns, key, node, right):  # noqa: ANN001, ANN202
    """In one span order sorted by (key, node): the first index whose (key, node) is > (key,
    node) (``right``) or >= it. Why the node as a second key (thirteenth session; until then
    ties kept their order of insertion): a span of a node is then found by bisection alone, not
    by a walk along the spans that share its key (a plan's nodes, and plans that end together, do),
    and the search reads each order's ties together (a window lets every span with one key enter,
    or leave, in one step; ``later_start`` reads the value), so their order changes no answer."""
    lo, hi = 0, ns
    while lo < hi:
        mid = (lo + hi) // 2
        k = keys[mid]
        if k < key or (k == key and (arr_n[mid] < node or (right and arr_n[mid] == node))):
            lo = mid + 1
        else:
            hi = mid
    return lo


def _move_one(keys, arr_b, arr_e, arr_n, ns, p, lo, hi, node, key):  # noqa: ANN001, ANN202
    """One span order when the span at ``p`` (of ``node``) is the only one absorbed and the merged
    span [lo, hi] has another ``key`` there: it goes to its (key, node) place and only the spans
    between the two places move (not every span keyed in [lo, hi]: a long plan's range holds
    ~100 spans of other nodes, thirteenth session)."""
    q = _bisect_kn(keys, arr_n, ns, key, node, True)  # counting the old span when before
    if p < q:
        q -= 1  # its place among the kept spans
        for i in range(p, q):
            arr_b[i] = arr_b[i + 1]
            arr_e[i] = arr_e[i + 1]
            arr_n[i] = arr_n[i + 1]
    else:
        for i in range(p, q, -1):
            arr_b[i] = arr_b[i - 1]
            arr_e[i] = arr_e[i - 1]
            arr_n[i] = arr_n[i - 1]
    arr_b[q] = lo
    arr_e[q] = hi
    arr_n[q] = node


def _absorb_span_twice(span_b, span_e, span_n, end_b, end_e, end_n, ns, node, b, e, lo, hi):  # noqa: ANN001, ANN202
    """``add_span_twice`` given the merged span [lo, hi] (``add_interval`` finds it from the
    node's own intervals), by bisection in each order (``_absorb_sorted``); the new count."""
    _absorb_sorted(span_b, span_b, span_e, span_n, ns, node, b, e, lo, hi, lo)
    return _absorb_sorted(end_e, end_b, end_e, end_n, ns, node, b, e, lo, hi, hi)


def _add_interval(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e, sp_n, se_b, se_e, se_n, n_sp,
                  min_b, node, b, e):  # noqa: ANN001, ANN202
    """BackfillMap.reserve for one node of a plan, in every form the pass keeps the plans in:
    the interval itself, its node's list of intervals (the plan search's clash test), the
    merged spans in both orders, the node's earliest plan begin. One function for both places
    that add plans (a search's plan, a start on completing nodes) so no form is left behind.
    Returns the new counts of intervals and spans."""
    # Does [b, e] meet (or touch) one of the node's spans? A span is its plans' union, joined
    # where they meet or touch, so it has no gap: it meets the span exactly when it meets one of
    # the node's own intervals, a few on the list, not ~200 spans. Usually none: the new span
    # goes in by bisection (``insert_span_twice``); else the walk that absorbs (eleventh session:
    # that walk per plan node was ~15 % of the kernel with the boundaries, a doubled upkeep).
    meets = False
    i = node_iv[node]
    while i >= 0:
        if iv_b[i] <= e and b <= iv_e[i]:
            meets = True
            break
        i = iv_next[i]
    sb, se = INF, -INF
    if meets:
        # the merged span: [b, e] and the node's spans it meets; a span is the closure of its
        # intervals by meeting, so grow [lo, hi] by the node's intervals until none adds
        # (another span of the node neither meets nor touches [b, e] or the spans it meets)
        lo, hi = b, e
        grew = True
        while grew:
            grew = False
            i = node_iv[node]
            while i >= 0:
                if iv_b[i] <= hi and lo <= iv_e[i] and (iv_b[i] < lo or iv_e[i] > hi):
                    lo = min(lo, iv_b[i])
                    hi = max(hi, iv_e[i])
                    grew = True
                i = iv_next[i]
        # the node's intervals it absorbs reach from sb to se: one span when the span that
        # begins at sb ends at se (it holds them all), which is what usually happens
        i = node_iv[node]
        while i >= 0:
            if iv_b[i] <= hi and lo <= iv_e[i]:
                sb = min(sb, iv_b[i])
                se = max(se, iv_e[i])
            i = iv_next[i]
    iv_node[n_iv] = node
    iv_b[n_iv] = b
    iv_e[n_iv] = e
    iv_next[n_iv] = node_iv[node]
    node_iv[node] = n_iv
    if meets:
        pb = _bisect_kn(sp_b, sp_n, n_sp, sb, node, False)  # the span that begins at sb
        if sp_e[pb] == se:  # one span absorbed: its two places found by bisection
            pe = _bisect_kn(se_e, se_n, n_sp, se, node, False)
            if lo == sb:  # the same place in begin order: a longer span
                sp_e[pb] = hi
            else:
                _move_one(sp_b, sp_b, sp_e, sp_n, n_sp, pb, lo, hi, node, lo)
            if hi == se:  # the same place in end order
                se_b[pe] = lo
            else:
                _move_one(se_e, se_b, se_e, se_n, n_sp, pe, lo, hi, node, hi)
        else:
            n_sp = absorb_span_twice(sp_b, sp_e, sp_n, se_b, se_e, se_n, n_sp, node, b, e, lo, hi)
    else:
        n_sp = insert_span_twice(sp_b, sp_e, sp_n, se_b, se_e, se_n, n_sp, node, b, e)
    if b < min_b[node]:
        min_b[node] = b
    return n_iv + 1, n_sp


def _merge_fresh(keys, arr_b, arr_e, arr_n, ns, fresh, nf, b, e, key):  # noqa: ANN001, ANN202
    """Into one span order (sorted by (``keys`` value, node): ``keys`` is ``arr_b`` or ``arr_e``)
    the spans [b, e] of the nodes ``fresh[:nf]`` (ascending, none of them with a span that meets
    [b, e]), keyed ``key``, in one merge from the back: the spans past the first place move once,
    not once per node."""
    i = ns - 1
    w = ns + nf - 1
    j = nf - 1
    while j >= 0:
        if i >= 0 and (keys[i] > key or (keys[i] == key and arr_n[i] > fresh[j])):
            arr_b[w] = arr_b[i]
            arr_e[w] = arr_e[i]
            arr_n[w] = arr_n[i]
            i -= 1
        else:
            arr_b[w] = b
            arr_e[w] = e
            arr_n[w] = fresh[j]
            j -= 1
        w -= 1


def _add_plan(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e, sp_n, se_b, se_e, se_n, n_sp,
              min_b, nodes, b, e, fresh):  # noqa: ANN001, ANN202
    """``add_interval`` for every node of a plan ([b, e] on each, ``nodes`` distinct), with the
    nodes whose interval meets none of their intervals (a new span each, ~2/3 of them) put into
    both span orders by one merge (``_merge_fresh``) instead of one tail move per node
    (thirteenth session: a plan holds ~2 nodes on a saturated queue, up to 10). ``fresh``: room
    for the nodes. The spans are those of ``add_interval`` one node at a time, in the same
    (key, node) order. Returns the new counts."""
    nf = 0
    for node in nodes:
        meets = False
        i = node_iv[node]
        while i >= 0:
            if iv_b[i] <= e and b <= iv_e[i]:
                meets = True
                break
            i = iv_next[i]
        if meets:
            n_iv, n_sp = add_interval(iv_node, iv_b, iv_e, iv_next, node_iv, n_iv, sp_b, sp_e, sp_n,
                                      se_b, se_e, se_n, n_sp, min_b, node, b, e)
            continue
        iv_node[n_iv] = node
        iv_b[n_iv] = b
        iv_e[n_iv] = e
        iv_next[n_iv] = node_iv[node]
        node_iv[node] = n_iv
        n_iv += 1
        if b < min_b[node]:
            min_b[node] = b
        t = nf  # ascending by node (insertion: a few nodes)
        while t > 0 and fresh[t - 1] > node:
            fresh[t] = fresh[t - 1]
            t -= 1
        fresh[t] = node
        nf += 1
    if nf:
        _merge_fresh(sp_b, sp_b, sp_e, sp_n, n_sp, fresh, nf, b, e, b)
        _merge_fresh(se_e, se_b, se_e, se_n, n_sp, fresh, nf, b, e, e)
    return n_iv, n_sp + nf


def _popcount(x):  # noqa: ANN001, ANN202
    """How many bits of the word ``x`` are set (compiled: one ``popcnt``, ``_ctpop``)."""
    return bin(int(x)).count("1")


def _lowest(x):  # noqa: ANN001, ANN202
    """The position of the lowest set bit of the word ``x`` (not 0) (compiled: one ``tzcnt``)."""
    x = int(x)
    return (x & -x).bit_length() - 1


def _bits_reset(bits, n):  # noqa: ANN001, ANN202
    """The usable-positions bitmap with every position < n usable: ``bits[w]`` holds positions
    64 w .. 64 w + 63. Why a bitmap and not the Fenwick tree it replaced (tenth session): the tree
    was built per search from every node (O(nodes) reads and sums) at its first try that needed
    it, then moved in O(log n) per span that entered or left; the bitmap starts full in ~10 word
    writes, moves in O(1), and its select counts ~10 words' bits. (Until the fifteenth session it
    kept each word's count beside it, moved with every bit: a second read-modify-write per span
    in the window's loops, which are ~30 % of the search (perf), for a count ``popcnt`` makes in
    one instruction; 1.02x on the kernel without it.)"""
    nw = len(bits)
    for w in range(nw):
        left = n - 64 * w
        if left >= 64:
            bits[w] = np.uint64(0xFFFFFFFFFFFFFFFF)
        else:
            bits[w] = (np.uint64(1) << np.uint64(left)) - np.uint64(1) if left > 0 else np.uint64(0)


def _bits_clear(bits, p):  # noqa: ANN001, ANN202
    """Position ``p`` (set) becomes unusable."""
    bits[np.uint64(p >> 6)] &= ~(np.uint64(1) << np.uint64(p & 63))


def _bits_set(bits, p):  # noqa: ANN001, ANN202
    """Position ``p`` (clear) becomes usable."""
    bits[np.uint64(p >> 6)] |= np.uint64(1) << np.uint64(p & 63)


def _bits_select(bits, k):  # noqa: ANN001, ANN202
    """The 0-based position of the k-th set bit, -1 if fewer are set: the word by its bits'
    count, then the word's lowest set bits dropped until the k-th is the lowest. (The search
    kept a count of its usable nodes for that until the fifteenth session, moved per span.)"""
    w = 0
    nw = len(bits)
    while True:
        if w == nw:
            return -1
        c = _popcount(bits[w])
        if c >= k:
            break
        k -= c
        w += 1
    x = bits[w]
    for _ in range(k - 1):
        x &= x - np.uint64(1)
    return 64 * w + _lowest(x)


def _by_end(span_b, span_e, span_n):  # noqa: ANN001, ANN202
    """The spans in order of their ends (stable: ties in begin order), for a search given only
    the begin order (``plan_kernel.planned_start_spans``)."""
    m = len(span_e)
    order = np.arange(m)
    for j in range(1, m):  # insertion sort: a few hundred spans at most, mostly in order
        x = order[j]
        t = j
        while t > 0 and span_e[order[t - 1]] > span_e[x]:
            order[t] = order[t - 1]
            t -= 1
        order[t] = x
    return span_b[order], span_e[order], span_n[order]


if njit is not None:
    _bisect_right = njit(**LEAF)(_bisect_right)
    _bisect_left = njit(**LEAF)(_bisect_left)
    _floor_to = njit(**LEAF)(_floor_to)
    plan_span = njit(**LEAF)(plan_span)
    _free_spans = njit(cache=True)(_free_spans)
    _cap = njit(**LEAF)(_cap)
    _cap_sorted = njit(**LEAF)(_cap_sorted)
    distinct_bounds = njit(cache=True)(_distinct_bounds)
    insert_bound = njit(**LEAF)(_insert_bound)
    add_span_twice = njit(**LEAF)(_add_span_twice)
    _insert_sorted = njit(**LEAF)(_insert_sorted)
    insert_span_twice = njit(**LEAF)(_insert_span_twice)
    _absorb_sorted = njit(**LEAF)(_absorb_sorted)
    absorb_span_twice = njit(**LEAF)(_absorb_span_twice)
    _bisect_kn = njit(**LEAF)(_bisect_kn)
    _move_one = njit(**LEAF)(_move_one)
    add_interval = njit(**LEAF)(_add_interval)
    _merge_fresh = njit(**LEAF)(_merge_fresh)
    add_plan = njit(**LEAF)(_add_plan)

    @intrinsic
    def _ctpop(typingctx, x):  # noqa: ANN001, ANN202, ARG001
        """LLVM's ``ctpop`` of a 64-bit word: numba has no popcount of its own."""
        return nb_types.uint64(nb_types.uint64), lambda context, builder, sig, args: builder.ctpop(args[0])

    @intrinsic
    def _cttz(typingctx, x):  # noqa: ANN001, ANN202, ARG001
        """LLVM's ``cttz`` of a non-zero 64-bit word (its lowest set bit's position)."""
        return nb_types.uint64(nb_types.uint64), lambda context, builder, sig, args: builder.cttz(args[0], ir.Constant(ir.IntType(1), 1))

    def _popcount(x):  # noqa: ANN001, ANN202
        return np.int64(_ctpop(np.uint64(x)))

    def _lowest(x):  # noqa: ANN001, ANN202
        return np.int64(_cttz(np.uint64(x)))

    _popcount = njit(**LEAF)(_popcount)
    _lowest = njit(**LEAF)(_lowest)
    _bits_reset = njit(**LEAF)(_bits_reset)
    _bits_clear = njit(**LEAF)(_bits_clear)
    _bits_set = njit(**LEAF)(_bits_set)
    _bits_select = njit(**LEAF)(_bits_select)
    by_end = njit(cache=True)(_by_end)
else:  # pragma: no cover
    distinct_bounds, insert_bound = _distinct_bounds, _insert_bound
    by_end, add_span_twice = _by_end, _add_span_twice
    insert_span_twice = _insert_span_twice
    absorb_span_twice = _absorb_span_twice
    add_interval = _add_interval
    add_plan = _add_plan
