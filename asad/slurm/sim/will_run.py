"""The will-run walk of a plan search, compiled with numba: ``planner.will_run`` (the readable
reference) on the running jobs in end order, asked only at its batches' edges; and
``_walk_past``, the bound that skips a walk which can only end past ``later_start``.

Why a module of its own: ``plan_kernel`` (the search's tries, the node pick) had grown past the
~600 lines a module may have (twelfth session); the walk is one job with its own tests and
reads nothing of the search's window. ``plan_kernel`` compiles these into the search (numba
freezes a compiled callee into its caller), so ``plan_kernel`` stamps this file's hash beside its
own cache (``numba_cache.drop_stale_cache``) and an edit here recompiles the search.
"""

from __future__ import annotations

import math

import numpy as np

from asad.slurm.sim.numba_cache import LEAF
from asad.slurm.sim.plan_maps import (_bisect_left, _bisect_right)

try:  # numba is a dependency; its absence (or ASAD_SIM_COMPILED=0) leaves the plain functions
    from numba import njit
except ImportError:  # pragma: no cover - exercised only on a machine without numba
    njit = None

INF = np.inf
WILL_RUN_WINDOW_S = 30.0  # cons_common/job_test.c: _will_run_test's first time_window
WALK_PAST_CAP = 16  # jobs _walk_past looks at per side before it gives up (and the walk runs)


def _will_run(times, by_time, avail, free_now, k, now, guess_s, p_node, first_piece,
              job_ends, free_c, free_m, p_c, p_m, cpn, mem):  # noqa: ANN001, ANN202
    """planner.will_run: (start, fit-by instant, pieces gone, counted), start -inf for none.
    The nodes that fit are those in ``avail`` free now (fit-by instant -inf, start = now) or
    fitting by the fit-by instant, or where ``counted``, fitting once the first ``gone``
    pieces have gone. ``by_time``: the nodes in order of ``times``; ``free_now``: how many
    nodes in ``avail`` the job fits on now."""
    if free_now >= k:
        return now, -INF, 0, False
    return _will_run_kth(_kth_avail(times, by_time, avail, k), avail, k, now, guess_s, p_node,
                         first_piece, job_ends, free_c, free_m, p_c, p_m, cpn, mem)


def _kth_avail(times, by_time, avail, k):  # noqa: ANN001, ANN202
    """The k-th smallest fit time of the usable nodes (inf if fewer than k ever fit)."""
    seen = 0
    for i in by_time:
        if avail[i]:
            seen += 1
            if seen == k:
                return times[i]
    return INF


def _will_run_kth(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c, free_m,
                  p_c, p_m, cpn, mem):  # noqa: ANN001, ANN202
    """``will_run_kth_into`` with scratch of its own (the tests' and the reference's entry)."""
    return will_run_kth_into(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c,
                             free_m, p_c, p_m, cpn, mem, np.empty(len(free_c), dtype=np.int64),
                             np.empty(len(free_c), dtype=np.int64))


def _will_run_kth_into(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c, free_m,
                       p_c, p_m, cpn, mem, fc, fm):  # noqa: ANN001, ANN202
    """_will_run's walk once the job does not fit now, given ``kth`` (``_kth_avail``); ``fc`` and
    ``fm``: scratch of one word a node (it allocates nothing: ``numba_cache.LEAF``). The start
    it returns is never before ``kth``: a batch ends at ``last`` with ``kth <= max(last, now)``,
    and when ``last <= now`` the start is after ``now``. Also how many pieces (in end order) the
    batches took away, and whether the nodes were counted on them: when a job left for the next
    batch ends by the fit-by instant too (planner.will_run)."""
    n_jobs = len(job_ends)
    if n_jobs == 0:
        return -INF, 0.0, 0, False
    if kth == INF:
        return -INF, 0.0, 0, False
    # Per running job (in end order) the walk needs to know only whether it has a piece on a
    # usable node, and only at its batches' edges: asked job by job, not for all ~1,500.
    n_pieces = len(p_node)
    first_use = 0
    while first_use < n_jobs and not _usable(first_use, avail, p_node, first_piece, n_jobs, n_pieces):
        first_use += 1
    if first_use == n_jobs:
        return -INF, 0.0, 0, False
    none_from = n_jobs  # no job from this index on is usable (learned by a forward search)
    first = job_ends[first_use]
    anchor = first + (WILL_RUN_WINDOW_S - first % WILL_RUN_WINDOW_S)
    window = WILL_RUN_WINDOW_S
    pos = 0
    while True:
        q = max(pos, _bisect_right(job_ends, anchor + window))
        # the batch ends at its last job (q - 1) if usable; else at the first usable job after
        # it; else at the last usable job in it; no usable job at all: no start
        last_i = -1
        if q > pos and _usable(q - 1, avail, p_node, first_piece, n_jobs, n_pieces):
            last_i = q - 1
        else:
            j = q
            while j < none_from and not _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):
                j += 1
            if j < none_from:
                last_i = j
            else:
                none_from = min(none_from, q)
                j = q - 2
                while j >= pos and not _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):
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
            if counted:  # a job not taken away yet ends by then: count what the batch freed
                for i in range(len(free_c)):
                    fc[i] = free_c[i]
                    fm[i] = free_m[i]
                for p in range(gone):
                    fc[p_node[p]] += p_c[p]
                    fm[p_node[p]] += p_m[p]
                fit = 0
                for i in range(len(fc)):
                    if avail[i] and fc[i] >= cpn and fm[i] >= mem:
                        fit += 1
                counted = fit >= k
                if not counted:
                    if pos >= n_jobs:
                        return -INF, 0.0, 0, False
                    continue
            if last <= now:  # the batch's last job is past its limit: still being killed
                # _guess_job_end: at least now + 1 on time(NULL)'s whole second (f37o)
                last = max(last + guess_s, math.floor(now) + 1.0)
            return last, by, gone, counted
        if pos >= n_jobs:
            return -INF, 0.0, 0, False


def _walk_past(kth, later, now, avail, p_node, first_piece, job_ends, cap):  # noqa: ANN001, ANN202
    """True only if ``_will_run_kth(kth, ...)`` would give no start or one past ``later``, found
    without the walk (False: unknown, walk). Why: of a search's ~10 tries ~5.8 walked only to
    learn that (eleventh session), and ``kth``, the bound the search had, is itself the end of a
    usable job. The walk's batches end at ``anchor + 30 * 2**i``, its start is the ``last`` of
    such an edge E with ``last >= kth`` (``kth > now``), and ``last`` is a usable job's end: the
    last one ending by E, or the first one ending after E. For E below ``kth`` the latter is at
    least ``kth`` only if no usable job ends in (E, kth): none if one ends in (E_lo, kth), E_lo
    the highest edge below ``kth``. For E from E1, the lowest edge at or past ``kth``, on, both
    are past ``later`` once a usable job ends in (later, E1]. ``cap``: jobs looked at per side."""
    n_jobs = len(job_ends)
    if not (later < INF and now < kth <= later) or n_jobs == 0:
        return False
    n_pieces = len(p_node)
    first_use = 0
    while first_use < n_jobs and not _usable(first_use, avail, p_node, first_piece, n_jobs, n_pieces):
        first_use += 1
    if first_use == n_jobs:
        return True  # the walk finds no usable job: no start
    first = job_ends[first_use]
    anchor = first + (WILL_RUN_WINDOW_S - first % WILL_RUN_WINDOW_S)
    window = WILL_RUN_WINDOW_S
    while anchor + window < kth:  # the walk's window: 30 * 2**i, as it doubles it
        window *= 2
    e1 = anchor + window
    if not e1 > later:
        return False
    # a usable job ending in (later, e1]: the jobs ending by e1, from the last, down past later
    j = _bisect_right(job_ends, e1) - 1
    seen = 0
    while j >= 0 and job_ends[j] > later and not _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):
        j -= 1
        seen += 1
        if seen == cap:
            return False
    if j < 0 or not job_ends[j] > later:
        return False
    if window == WILL_RUN_WINDOW_S:  # no edge below kth
        return True
    e_lo = anchor + window / 2
    # a usable job ending in (e_lo, kth), or else the last job ending by e_lo usable: the jobs
    # ending before kth, from the last, down to the first ending by e_lo. Why the second (twelfth
    # session: every walk the first alone missed, 8,234 of 17,719, had no usable job in (e_lo,
    # kth)): the walk's next edge after a batch is at or past the next job's end, so a batch's
    # edge E has a job ending in (previous end, E] and its last job is bisect_right(E) - 1. With
    # no usable job in (e_lo, kth), an edge E <= e_lo whose last job ends after E is followed
    # by the usable job ending by e_lo, below kth; one whose last job is that job ends there:
    # either way the batch ends below kth, and the start is not kth.
    j = _bisect_left(job_ends, kth) - 1
    seen = 0
    while j >= 0:
        if _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):
            return True
        if not job_ends[j] > e_lo:  # the last job ending by e_lo, not usable
            return False
        j -= 1
        seen += 1
        if seen == cap:
            return False
    return False


def _usable(j, avail, p_node, first_piece, n_jobs, n_pieces):  # noqa: ANN001, ANN202
    """Whether running job ``j`` (in end order) has a piece on an ``avail`` node."""
    stop = first_piece[j + 1] if j + 1 < n_jobs else n_pieces
    for p in range(first_piece[j], stop):
        if avail[np.uint64(p_node[p])]:
            return True
    return False


will_run_kth_into = _will_run_kth_into

if njit is not None:  # (plan_kernel compiles the search with these whenever numba is there)
    _usable = njit(**LEAF)(_usable)
    _kth_avail = njit(**LEAF)(_kth_avail)
    will_run_kth_into = _will_run_kth_into = njit(**LEAF)(_will_run_kth_into)
    _will_run_kth = njit(cache=True)(_will_run_kth)
    _walk_past = njit(**LEAF)(_walk_past)
    _will_run = njit(cache=True)(_will_run)
