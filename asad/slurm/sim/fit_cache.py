"""Each job shape's fit times kept from one backfill pass to the next (issue 37, seventh session).

A job shape (cores, memory per node) has a fit time per node: ``now`` if the node holds the shape
now, else the end of the running piece after whose end (pieces in end order) it does, else
never (``pass_shapes._shape_times_sorted``). The pass kernel swept the ~1,600 running pieces once
per shape and pass (~76 shapes a saturated ``hpc2n`` pass), although between two passes only the
few nodes where a job started or ended change. This cache keeps, per shape, each node's time as
of when it was computed ("now" kept as a mark, the others absolute ends), the non-now nodes in
order of those times and the now nodes, and a version per node: a node whose free cores or
memory or running pieces changed since (``note_changes`` at each pass, a start inside a pass)
gets a new version, and only such nodes are computed again and moved in the order.

Exact: a node's fit time for a shape reads only its free cores and memory, its own pieces in
end order and ``now`` (for the nodes that hold the shape now), so a node whose version did not
change has the time it had, and ``now`` is put in when the times are handed to the pass. Only
the times' values in order are read (as for the sweep's order), so ties may come in another
order. ``tests/test_sim_fit_cache.py`` checks the kept times against the sweep's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from asad.slurm.sim import plan_kernel
from asad.slurm.sim.numba_cache import LEAF

INF = np.inf
FITS_NOW = -np.inf  # the kept time of a node that holds the shape now: ``now`` when handed out
MAX_SLOTS = 192  # shapes kept; a pass's shapes beyond the free slots are swept as before
REBUILD_FRACTION = 4  # more changed nodes than n / this: one sweep instead of moving each


@dataclass
class FitCache:
    """The kept fit times of one partition's job shapes (``PartitionState.fit_cache``), and the
    previous pass's inputs that ``note_changes`` compares the next pass's with."""

    n: int
    slots: int = MAX_SLOTS
    arrays: tuple = field(init=False)
    prev: tuple | None = field(init=False, default=None)
    noted: bool = field(init=False, default=False)  # a pass was noted since made or loaded

    def __post_init__(self) -> None:
        s, n = self.slots, self.n
        rows = MAX_SLOTS if s else 0  # (no cache: a pass of its own, made per pass)
        self.arrays = (
            np.full(s, -1, dtype=np.int64),  # 0 sl_c: the slot's cores per node (-1: free)
            np.zeros(s, dtype=np.int64),  # 1 sl_m: its memory per node
            np.zeros(s, dtype=np.int64),  # 2 sl_last: the pass that last used it
            np.full((s, n), -1, dtype=np.int64),  # 3 sl_nv: each node's version when computed
            np.empty((s, n)),  # 4 sl_raw: each node's kept time (FITS_NOW, an end, INF)
            np.empty((s, n), dtype=np.int64),  # 5 sl_srt: the other nodes by kept time
            np.zeros(s, dtype=np.int64),  # 6 sl_nsrt
            np.empty((s, n), dtype=np.int64),  # 7 sl_nowl: the nodes that hold it now
            np.zeros(s, dtype=np.int64),  # 8 sl_nnow
            np.zeros(n, dtype=np.int64),  # 9 node_ver
            np.zeros(1, dtype=np.int64),  # 10 the pass counter
            # 11-15: the pass's per-shape arrays (pass_kernel._pass: fit times, their order, the
            # sweep's sorted times, the nodes that hold the shape now, each node's rank), kept
            # here so that a pass does not allocate ~1 MB afresh: freed and allocated again each
            # pass, they went back to the system and page-faulted back in, ~8 % of a saturated
            # day's CPU (perf, the fourteenth session). A pass with more shapes allocates its own.
            np.empty((rows, n)),
            np.empty((rows, n), dtype=np.int64),
            np.empty((rows, n)),
            np.empty((rows, n), dtype=np.bool_),
            np.empty((rows, n), dtype=np.int64),
        )

    def __getstate__(self) -> dict:
        """Pickled empty (a simulator's snapshot, ~4 MB less on ``hpc2n``): the first pass after
        loading computes every shape again, which ``note_pass`` asks for when ``prev`` is None."""
        return {"n": self.n, "slots": self.slots}

    def __setstate__(self, state: dict) -> None:
        self.n, self.slots, self.prev, self.noted = state["n"], state["slots"], None, False
        self.__post_init__()

    def note_pass(self, free_c: np.ndarray, free_m: np.ndarray, pieces: tuple) -> None:
        """Give a new version to every node whose free resources or running pieces differ from
        the previous pass's inputs (all of them the first time), and keep these inputs."""
        node_ver = self.arrays[9]
        if self.prev is None or len(self.prev[0]) != len(free_c):
            node_ver += 1
        else:
            note_changes(node_ver, self.prev[0], self.prev[1], free_c, free_m, *self.prev[2], *pieces)
        self.prev = (free_c.copy(), free_m.copy(), tuple(a.copy() for a in pieces))
        self.noted = True
        self.arrays[10][0] += 1

    def note_marked(self, changed: np.ndarray) -> None:
        """``note_pass`` told by the partition instead of by comparing: a new version for every
        node marked in ``changed`` (``PartitionState.fit_changed``: every node an allocation or a
        release touched since the last pass, a superset of the nodes whose free resources or
        pieces differ), all of them the first time. A node given a version it did not need is
        only computed again (the same time), so the kept times are those of ``note_pass``.
        Why: the comparison copied seven arrays and merged ~1,600 pieces a pass (~45 µs, 1.4 %
        of a saturated span) to find the ~7 nodes the simulator itself knows it changed."""
        node_ver = self.arrays[9]
        if not self.noted or len(changed) != len(node_ver):
            node_ver += 1
        else:
            node_ver += changed
        self.noted = True
        self.prev = None  # a later note_pass (only tests mix them) starts from all nodes again
        self.arrays[10][0] += 1


def note_changes(node_ver, old_c, old_m, free_c, free_m, ope, opn, opc, opm, opj,
                 pe, pn, pc, pm, pj):  # noqa: ANN001, ANN202
    """A new version for each node whose free cores or memory changed, or that has a running
    piece in one list and not in the other (both sorted by (end, job); a job's pieces are one
    run of equal (end, job)). One merge over both lists."""
    n = len(free_c)
    for i in range(n):
        if old_c[i] != free_c[i] or old_m[i] != free_m[i]:
            node_ver[i] += 1
    a, b = 0, 0
    na, nb = len(ope), len(pe)
    while a < na or b < nb:
        # the runs of one job at a and at b
        a2 = a
        while a2 < na and ope[a2] == ope[a] and opj[a2] == opj[a]:
            a2 += 1
        b2 = b
        while b2 < nb and pe[b2] == pe[b] and pj[b2] == pj[b]:
            b2 += 1
        if a < na and b < nb and ope[a] == pe[b] and opj[a] == pj[b]:
            same = a2 - a == b2 - b
            if same:
                for t in range(a2 - a):
                    if opn[a + t] != pn[b + t] or opc[a + t] != pc[b + t] or opm[a + t] != pm[b + t]:
                        same = False
                        break
            if not same:
                for t in range(a, a2):
                    node_ver[opn[t]] += 1
                for t in range(b, b2):
                    node_ver[pn[t]] += 1
            a, b = a2, b2
        elif b >= nb or (a < na and (ope[a] < pe[b] or (ope[a] == pe[b] and opj[a] < pj[b]))):
            for t in range(a, a2):  # gone
                node_ver[opn[t]] += 1
            a = a2
        else:
            for t in range(b, b2):  # new
                node_ver[pn[t]] += 1
            b = b2


def slot_for(sl_c, sl_m, sl_last, sl_nv, pass_no, cores, mem):  # noqa: ANN001, ANN202
    """The slot keeping shape (cores, mem): its own, else a free one, else the one least recently
    used by an earlier pass (emptied: no node's version is current there); -1 if every slot is
    this pass's."""
    free = -1
    old = -1
    for s in range(len(sl_c)):
        if sl_c[s] == cores and sl_m[s] == mem:
            sl_last[s] = pass_no
            return s
        if sl_c[s] < 0:
            if free < 0:
                free = s
        elif sl_last[s] < pass_no and (old < 0 or sl_last[s] < sl_last[old]):
            old = s
    s = free if free >= 0 else old
    if s >= 0:
        sl_c[s] = cores
        sl_m[s] = mem
        sl_last[s] = pass_no
        sl_nv[s, :] = -1
    return s


def _node_time(node, free_c, free_m, cores, mem, pe, pc, pm, head, lst):  # noqa: ANN001, ANN202
    """One node's kept time: FITS_NOW, or the end of its piece (in end order) after which it
    holds (cores, mem), or INF (``_shape_times``' sweep restricted to the node)."""
    fc = free_c[node]
    fm = free_m[node]
    if fc >= cores and fm >= mem:
        return FITS_NOW
    for t in range(head[node], head[node + 1]):
        p = lst[t]
        fc += pc[p]
        fm += pm[p]
        if fc >= cores and fm >= mem:
            return pe[p]
    return INF


def node_pieces(pn, n_p, n, head, lst, fill):  # noqa: ANN001, ANN202
    """Each node's pieces (indices into the end-ordered pieces, in that order): ``lst[head[i]:
    head[i + 1]]``; ``fill``: scratch of ``n`` words."""
    for i in range(n + 1):
        head[i] = 0
    for p in range(n_p):
        head[pn[p] + 1] += 1
    for i in range(n):
        head[i + 1] += head[i]
    for i in range(n):
        fill[i] = head[i]
    for p in range(n_p):
        lst[fill[pn[p]]] = p
        fill[pn[p]] += 1


def _rebuild(s, sl_raw, sl_srt, sl_nsrt, sl_nowl, sl_nnow, free_c, free_m, pe, pn, pc, pm, n_p,
             cores, mem, fc, fm):  # noqa: ANN001, ANN202
    """Slot ``s`` from scratch: the sweep over the pieces in end order (as _shape_times_sorted);
    ``fc``, ``fm``: scratch of a word a node."""
    n = len(free_c)
    raw = sl_raw[s]
    srt = sl_srt[s]
    nowl = sl_nowl[s]
    for i in range(n):
        fc[i] = free_c[i]
        fm[i] = free_m[i]
    n_now = 0
    for i in range(n):
        if fc[i] >= cores and fm[i] >= mem:
            raw[i] = FITS_NOW
            nowl[n_now] = i
            n_now += 1
        else:
            raw[i] = INF
    n_srt = 0
    for p in range(n_p):
        node = pn[p]
        if raw[node] == INF:
            fc[node] += pc[p]
            fm[node] += pm[p]
            if fc[node] >= cores and fm[node] >= mem:
                raw[node] = pe[p]
                srt[n_srt] = node
                n_srt += 1
    for i in range(n):
        if raw[i] == INF:
            srt[n_srt] = i
            n_srt += 1
    sl_nsrt[s] = n_srt
    sl_nnow[s] = n_now


def _keep_unchanged(nodes, count, nv, node_ver):  # noqa: ANN001, ANN202
    """Compact ``nodes[:count]`` in place to the nodes whose kept version is current; their count."""
    k = 0
    for p in range(count):
        node = nodes[p]
        if nv[node] == node_ver[node]:
            nodes[k] = node
            k += 1
    return k


def ensure_slot(s, sl_nv, sl_raw, sl_srt, sl_nsrt, sl_nowl, sl_nnow, node_ver, free_c, free_m,
                pe, pn, pc, pm, n_p, head, lst, csr_ok, cores, mem, now, out, order):  # noqa: ANN001, ANN202
    """``ensure_slot_into`` with scratch of its own (the tests' entry)."""
    ensure_slot_into(s, sl_nv, sl_raw, sl_srt, sl_nsrt, sl_nowl, sl_nnow, node_ver, free_c, free_m,
                     pe, pn, pc, pm, n_p, head, lst, csr_ok, cores, mem, now, out, order,
                     np.empty((3, len(free_c) + 1), dtype=np.int64))


def ensure_slot_into(s, sl_nv, sl_raw, sl_srt, sl_nsrt, sl_nowl, sl_nnow, node_ver, free_c, free_m,
                     pe, pn, pc, pm, n_p, head, lst, csr_ok, cores, mem, now, out, order, work):  # noqa: ANN001, ANN202
    """Bring slot ``s`` up to the nodes' versions and hand its times out as _shape_times_sorted
    does (``out``: per node, ``order``: the nodes by time; the times so ordered are not written:
    the pass reads ``out[order[k - 1]]``).
    ``head``/``lst``: ``node_pieces`` of the current pieces, built here if ``csr_ok[0]`` is
    False. ``work``: scratch, three rows of ``n + 1`` words (it allocates nothing:
    ``numba_cache.LEAF``)."""
    n = len(free_c)
    nv = sl_nv[s]
    raw = sl_raw[s]
    srt = sl_srt[s]
    nowl = sl_nowl[s]
    changed = 0
    for i in range(n):
        if nv[i] != node_ver[i]:
            changed += 1
    if changed * REBUILD_FRACTION > n:
        _rebuild(s, sl_raw, sl_srt, sl_nsrt, sl_nowl, sl_nnow, free_c, free_m, pe, pn, pc, pm, n_p,
                 cores, mem, work[0], work[1])
        for i in range(n):
            nv[i] = node_ver[i]
    elif changed:
        if not csr_ok[0]:
            node_pieces(pn, n_p, n, head, lst, work[2])
            csr_ok[0] = True
        # take the changed nodes out of both lists, then put each back where its new time goes
        n_srt = _keep_unchanged(srt, sl_nsrt[s], nv, node_ver)
        n_now = _keep_unchanged(nowl, sl_nnow[s], nv, node_ver)
        for i in range(n):
            if nv[i] == node_ver[i]:
                continue
            nv[i] = node_ver[i]
            t = _node_time(i, free_c, free_m, cores, mem, pe, pc, pm, head, lst)
            raw[i] = t
            if t == FITS_NOW:
                nowl[n_now] = i
                n_now += 1
                continue
            lo, hi = 0, n_srt  # after every node whose time is <= t
            while lo < hi:
                mid = (lo + hi) // 2
                if t < raw[srt[mid]]:
                    hi = mid
                else:
                    lo = mid + 1
            for p in range(n_srt, lo, -1):
                srt[p] = srt[p - 1]
            srt[lo] = i
            n_srt += 1
        sl_nsrt[s] = n_srt
        sl_nnow[s] = n_now
    # hand out: the kept times with ``now`` put in; the order: the nodes whose time is before now
    # (an overdue piece's end), the now nodes, then the rest
    for i in range(n):
        t = raw[i]
        out[i] = now if t == FITS_NOW else t
    n_srt = sl_nsrt[s]
    split = 0
    while split < n_srt and raw[srt[split]] < now:
        split += 1
    at = 0
    for p in range(split):
        order[at] = srt[p]
        at += 1
    for p in range(sl_nnow[s]):
        order[at] = nowl[p]
        at += 1
    for p in range(split, n_srt):
        order[at] = srt[p]
        at += 1


if plan_kernel.njit is not None:
    note_changes = plan_kernel.njit(**LEAF)(note_changes)
    slot_for = plan_kernel.njit(**LEAF)(slot_for)
    _node_time = plan_kernel.njit(**LEAF)(_node_time)
    node_pieces = plan_kernel.njit(**LEAF)(node_pieces)
    _rebuild = plan_kernel.njit(**LEAF)(_rebuild)
    _keep_unchanged = plan_kernel.njit(**LEAF)(_keep_unchanged)
    ensure_slot_into = plan_kernel.njit(**LEAF)(ensure_slot_into)
    ensure_slot = plan_kernel.njit(cache=True)(ensure_slot)
