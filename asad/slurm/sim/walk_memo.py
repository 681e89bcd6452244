"""The will-run walk of the backfill plan search (``plan_kernel``), writing down what its answer
rests on, so that the next try of the same search can take the answer without walking again
(numba, as plan_kernel).

Why: on a saturated ``hpc2n`` queue a plan search makes ~10 tries of the TRY_LATER loop, ~7 of
them walk the running jobs in end order (~9 batches, ~22 jobs looked at), and ~6 of those walks
end past ``later_start`` so the try moves on; from one try to the next the window holds a few
nodes more or fewer and the k-th fit time moves little. Measured on recorded passes
(``scripts/sim_plan_search_profile.py``), 72 % of the walks would give their search's previous
walk's answer by the test below, and none of those differs.

What the walk reads, and so what the memo checks:
- ``avail`` only through ``_usable_noted``: a running job's pieces until one is on a usable
  node. A True answer rests on that piece's node staying usable (others turning usable keep
  it True); a False answer on every piece's node staying held. Those nodes get
  ``stamp[node] = gen``; the search drops the memo when the window turns such a node.
- ``kth`` only in ``kth <= by`` per batch (the batches' edges depend on ``avail`` and the
  ends, not on ``kth``): the answer holds for every ``kth`` in ``(memo[0], memo[1]]``, the
  largest ``by`` found short and the returning batch's ``by``.
- the counted scan (a job left for the next batch ends by ``by`` too) reads every node's
  usable flag: a walk that ran it is not kept (``memo[2] = 0``), nor one that found no start.
``job_ends``, the pieces, ``free_c``/``free_m``, ``now`` and ``guess_s`` are fixed within a
search. ``tests/test_sim_walk_memo.py`` checks the memo against the walk made afresh.
"""

from __future__ import annotations

import numpy as np

from asad.slurm.sim.plan_maps import _bisect_right

try:  # numba is a dependency; without it these stay plain Python (plan_kernel then falls back)
    from numba import njit
except ImportError:  # pragma: no cover - exercised only on a machine without numba
    njit = None

INF = np.inf
WILL_RUN_WINDOW_S = 30.0  # cons_common/job_test.c: _will_run_test's first time_window


def _usable_noted(j, avail, p_node, first_piece, n_jobs, n_pieces, stamp, gen):  # noqa: ANN001, ANN202
    """Whether running job ``j`` (in end order) has a piece on an ``avail`` node, stamping the
    nodes the answer rests on (see the module's docstring)."""
    stop = first_piece[j + 1] if j + 1 < n_jobs else n_pieces
    for p in range(first_piece[j], stop):
        if avail[p_node[p]]:
            stamp[p_node[p]] = gen
            return True
    for p in range(first_piece[j], stop):
        stamp[p_node[p]] = gen
    return False


def _will_run_noted(kth, avail, k, now, guess_s, p_node, first_piece, job_ends, free_c, free_m,
                    p_c, p_m, cpn, mem, stamp, gen, memo):  # noqa: ANN001, ANN202
    """plan_kernel's will-run walk once the job does not fit now, given ``kth`` (the k-th fit
    time of the usable nodes): (start, fit-by instant, pieces gone, counted), start -inf for
    none. The start is never before ``kth``: a batch ends at ``last`` with
    ``kth <= max(last, now)``, and when ``last <= now`` the start is after ``now``. Also how many
    pieces (in end order) the batches took away, and whether the nodes were counted on them:
    when a job left for the next batch ends by the fit-by instant too (planner.will_run).
    ``stamp``/``gen``/``memo``: what the answer rests on (the module's docstring)."""
    memo[0] = -INF
    memo[1] = INF
    memo[2] = 0.0
    n_jobs = len(job_ends)
    if n_jobs == 0:
        return -INF, 0.0, 0, False
    if kth == INF:
        return -INF, 0.0, 0, False
    # Per running job (in end order) the walk needs to know only whether it has a piece on a
    # usable node, and only at its batches' edges: asked job by job, not for all ~1,500.
    n_pieces = len(p_node)
    first_use = 0
    while first_use < n_jobs and not _usable_noted(first_use, avail, p_node, first_piece, n_jobs,
                                                   n_pieces, stamp, gen):
        first_use += 1
    if first_use == n_jobs:
        return -INF, 0.0, 0, False
    none_from = n_jobs  # no job from this index on is usable (learned by a forward search)
    first = job_ends[first_use]
    anchor = first + (WILL_RUN_WINDOW_S - first % WILL_RUN_WINDOW_S)
    window = WILL_RUN_WINDOW_S
    pos = 0
    scanned = False
    while True:
        q = max(pos, _bisect_right(job_ends, anchor + window))
        # the batch ends at its last job (q - 1) if usable; else at the first usable job after
        # it; else at the last usable job in it; no usable job at all: no start
        last_i = -1
        if q > pos and _usable_noted(q - 1, avail, p_node, first_piece, n_jobs, n_pieces, stamp, gen):
            last_i = q - 1
        else:
            j = q
            while j < none_from and not _usable_noted(j, avail, p_node, first_piece, n_jobs,
                                                      n_pieces, stamp, gen):
                j += 1
            if j < none_from:
                last_i = j
            else:
                none_from = min(none_from, q)
                j = q - 2
                while j >= pos and not _usable_noted(j, avail, p_node, first_piece, n_jobs,
                                                     n_pieces, stamp, gen):
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
        if not kth <= by:
            memo[0] = by  # the batches' ``by`` grow, so the last one short is the largest
        else:
            gone = first_piece[pos] if pos < n_jobs else n_pieces
            counted = pos < n_jobs and job_ends[pos] <= by
            if counted:  # a job not taken away yet ends by then: count what the batch freed
                scanned = True
                fc = free_c.copy()
                fm = free_m.copy()
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
                last = max(last + guess_s, now + 1.0)
            memo[1] = by
            memo[2] = 0.0 if scanned else 1.0
            return last, by, gone, counted
        if pos >= n_jobs:
            return -INF, 0.0, 0, False


if njit is not None:
    _usable_noted = njit(cache=True)(_usable_noted)
    will_run_noted = njit(cache=True)(_will_run_noted)
else:  # pragma: no cover
    will_run_noted = _will_run_noted
