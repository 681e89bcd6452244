"""The walk memo of the plan search (``walk_memo``): a will-run walk's answer holds for any other
k-th fit time in the range it wrote down and any usable set that agrees on the nodes it stamped;
the plan search that reuses it gives the search's answer (``test_sim_plan_kernel.py`` compares the
search with its numpy reference; here the memo's own claim, on random running jobs)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asad.slurm.sim import walk_memo

pytestmark = pytest.mark.skipif(walk_memo.njit is None, reason="numba is not installed")

NOW = 1_000_020.0
CORES, MEM = 8, 8000
N = 12

running_job = st.tuples(st.lists(st.integers(0, N - 1), min_size=1, max_size=3, unique=True),
                        st.integers(1, CORES), st.integers(-60, 4000))  # nodes, cores, end - now


def _inputs(jobs):  # noqa: ANN001, ANN202
    """The walk's arrays for these running jobs (cores that overflow a node are dropped)."""
    free_c = np.full(N, CORES, dtype=np.int64)
    kept = []
    for nodes, cores, end in jobs:
        on = [x for x in nodes if free_c[x] >= cores]
        for x in on:
            free_c[x] -= cores
        if on:
            kept.append((NOW + end, on, cores))
    kept.sort(key=lambda j: j[0])  # end order (ties in creation order, as the pass's sort)
    p_node, p_c, first_piece, job_ends = [], [], [], []
    for end, on, cores in kept:
        first_piece.append(len(p_node))
        job_ends.append(end)
        p_node += on
        p_c += [cores] * len(on)
    free_m = np.full(N, MEM, dtype=np.int64)
    return (free_c, free_m, np.array(p_node, dtype=np.int64), np.array(p_c, dtype=np.int64),
            np.full(len(p_node), 100, dtype=np.int64), np.array(first_piece, dtype=np.int64),
            np.array(job_ends, dtype=float))


def _walk(kth, avail, k, cpn, guess_s, arrays, stamp, gen, memo):  # noqa: ANN001, ANN202
    free_c, free_m, p_node, p_c, p_m, first_piece, job_ends = arrays
    return walk_memo.will_run_noted(kth, avail, k, NOW, guess_s, p_node, first_piece, job_ends,
                                    free_c, free_m, p_c, p_m, cpn, 100, stamp, gen, memo)


@settings(max_examples=400, deadline=None)
@given(st.lists(running_job, min_size=1, max_size=25), st.lists(st.booleans(), min_size=N, max_size=N),
       st.lists(st.booleans(), min_size=N, max_size=N), st.integers(1, 4), st.integers(1, CORES),
       st.sampled_from([0.0, 35.0]), st.data())
def test_a_kept_answer_is_the_walk_made_again(jobs, use1, use2, k, cpn, guess_s, data) -> None:  # noqa: ANN001
    arrays = _inputs(jobs)
    job_ends = arrays[6]
    if not len(job_ends):
        return
    # k-th fit times as the search meets them: running jobs' ends (and between them)
    kth = data.draw(st.sampled_from(sorted(set(job_ends.tolist())) + [NOW + 17.0, NOW + 5000.0]))
    avail = np.array(use1, dtype=np.bool_)
    stamp = np.zeros(N, dtype=np.int64)
    memo = np.empty(3)
    got = _walk(kth, avail, k, cpn, guess_s, arrays, stamp, 7, memo)
    if memo[2] != 1.0:
        return
    assert memo[0] < kth <= memo[1]
    # another try: nodes not stamped may turn either way, kth anywhere in the range kept
    avail2 = np.where(stamp == 7, avail, np.array(use2, dtype=np.bool_))
    inside = [t for t in sorted(set(job_ends.tolist()) | {kth}) if memo[0] < t <= memo[1]]
    kth2 = data.draw(st.sampled_from(inside))
    again = _walk(kth2, avail2, k, cpn, guess_s, arrays, np.zeros(N, dtype=np.int64), 1, np.empty(3))
    assert again == got


def test_a_false_usable_answer_rests_on_every_piece() -> None:
    # job 0 (the first in end order) has pieces on nodes 0 and 1, both held: the walk skips it
    # and anchors on job 1. Turning node 1 usable moves the anchor, so node 1 must be stamped.
    arrays = _inputs([([0, 1], 8, 100), ([2], 8, 200), ([3], 8, 900)])
    avail = np.array([False, False] + [True] * (N - 2))
    stamp = np.zeros(N, dtype=np.int64)
    memo = np.empty(3)
    _walk(NOW + 200.0, avail, 1, 8, 0.0, arrays, stamp, 3, memo)
    assert stamp[0] == 3 and stamp[1] == 3
    assert stamp[3] != 3  # job 2 was never asked about


def test_a_walk_that_counted_is_not_kept() -> None:
    # Two jobs past their limits (still being killed): A on usable node 0, B on held node 1 (and
    # C, later, on held node 2). The batch ends at A (B is not usable, nor any job after it); B
    # ends by then too, so the walk counts the nodes the batch freed, which reads every node's
    # usable flag: its answer is not kept.
    arrays = _inputs([([0], 8, -60), ([1], 8, -50), ([2], 8, 4000)])
    avail = np.array([True, False, False] + [True] * (N - 3))
    memo = np.empty(3)
    got = _walk(NOW - 60.0, avail, 1, 8, 0.0, arrays, np.zeros(N, dtype=np.int64), 1, memo)
    assert got[3]  # counted
    assert memo[2] == 0.0
